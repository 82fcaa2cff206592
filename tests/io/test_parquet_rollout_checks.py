"""The Parquet reader's rollout checks, vectorised (meta constant along a rollout, no rollout of a
group twice), against their slow twin: a walk over the rollouts in row order that stops at the
first one whose key was seen or whose meta changes. Random tables, with and without planted
faults, must give the same first error (message, row, column) or the same groups."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crbc.errors import RolloutFormatError
from crbc.io.parquet_rollouts import read_parquet_rollouts


def reference_error(group_N: list, k_N: list, meta_N: list) -> tuple[str, int, str] | None:
    """(column, 1-based row, message) of the first fault, rollout by rollout, or None."""
    seen, a, n = set(), 0, len(k_N)
    while a < n:
        m = 1
        while a + m < n and group_N[a + m] == group_N[a] and k_N[a + m] == k_N[a]:
            m += 1
        g, k = group_N[a], k_N[a]
        if (g, k) in seen:
            return "rollout", a + 1, f"rollout {k} of group {g!r} is not contiguous or appears twice"
        seen.add((g, k))
        if any(meta_N[i] != meta_N[a] for i in range(a + 1, a + m)):
            return "meta", a + 1, "meta differs within a rollout"
        a += m
    return None


def random_rows(rng: random.Random) -> dict[str, list]:
    """Rollouts of 1-4 steps in 1-3 groups (rollout numbers may be large or negative), then maybe a
    repeated rollout key and maybe a changed meta on a later row of some rollout."""
    cols = {c: [] for c in ("group", "rollout", "step", "anchor", "action", "success", "meta")}
    keys = []
    big = rng.random() < 0.2
    for _ in range(rng.randint(1, 12)):
        g = f"g{rng.randint(0, 2)}"
        k = rng.choice([rng.randint(0, 5), rng.randint(-3, 3), 2 ** 61 + rng.randint(0, 3)] if big else [rng.randint(0, 5)])
        if keys and keys[-1] == (g, k):
            continue
        keys.append((g, k))
    again = keys[rng.randrange(len(keys))]
    if rng.random() < 0.4 and again != keys[-1]:  # the same key again, after another rollout
        keys.append(again)
    for g, k in keys:
        length, ok = rng.randint(1, 4), rng.random() < 0.5
        meta = None if rng.random() < 0.2 else json.dumps({"id": f"{g}-{k}"})
        for t in range(length):
            for c, v in (("group", g), ("rollout", k), ("step", t), ("anchor", f"s{rng.randint(0, 3)}"),
                         ("action", "a"), ("success", ok), ("meta", meta)):
                cols[c].append(v)
    if rng.random() < 0.4:
        later = [i for i in range(1, len(cols["step"])) if cols["step"][i] > 0]
        if later:
            cols["meta"][rng.choice(later)] = json.dumps({"other": 1})
    return cols


def write(path, cols: dict[str, list]) -> None:
    table = pa.table({c: pa.array(v, type=pa.int64() if c in ("rollout", "step") else None)
                      for c, v in cols.items()})
    pq.write_table(table.replace_schema_metadata({"schema": "crbc.rollout/1"}), path)


@pytest.mark.parametrize("seed", range(200))
def test_the_first_fault_is_the_one_the_rollout_walk_finds(tmp_path, seed):
    rng = random.Random(seed)
    cols = random_rows(rng)
    path = tmp_path / "r.parquet"
    write(path, cols)
    expected = reference_error(cols["group"], cols["rollout"], cols["meta"])
    if expected is None:
        groups = read_parquet_rollouts(path)
        assert sum(len(r.steps) for g in groups for r in g) == len(cols["step"])
        return
    with pytest.raises(RolloutFormatError) as e:
        read_parquet_rollouts(path)
    assert (e.value.field, e.value.line, e.value.reason) == expected


def test_the_random_tables_plant_both_faults_and_none():
    """The generator reaches each case the twin compares (so the comparison above can fail)."""
    found = {reference_error(c["group"], c["rollout"], c["meta"]) is None for c in
             (random_rows(random.Random(s)) for s in range(200))}
    kinds = {(e or ("none",))[0] for e in (reference_error(c["group"], c["rollout"], c["meta"]) for c in
                                         (random_rows(random.Random(s)) for s in range(200)))}
    assert found == {True, False} and kinds == {"none", "rollout", "meta"}
