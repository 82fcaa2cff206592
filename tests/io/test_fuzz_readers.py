"""Fuzzing every reader and importer: any bytes, any nesting, any numbers give either data or a
:class:`crbc.FormatError` naming the file (and, for a bad row, the row and the column); never
another exception, and always within a small budget of time and memory.

Budgets are small (tens of examples each, seconds in all) so this runs in ``make test`` on a
shared 2-core machine; ``HYPOTHESIS_PROFILE=fuzz-long`` would be the place for longer runs.
"""

from __future__ import annotations

import gzip
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crbc.errors import FormatError
from crbc.io import budgets
from crbc.io.importers import read_uploads
from crbc.io.rollouts import parse_rollouts

FAST = settings(max_examples=40, deadline=3000, suppress_health_check=[HealthCheck.too_slow],
                database=None)
BUDGET = budgets.Budget("fuzz", file_bytes=10**6, decoded_bytes=4 * 10**6, rows=5000, text_chars=20_000)

numbers = st.one_of(st.integers(min_value=-(10**400), max_value=10**400),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, 5e-324, 10**400, -(10**30), 2**63]))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20)),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=20)
STEP_KEYS = ["uid", "traj_uid", "step_index", "anchor_obs", "action", "rewards", "success", "episode_rewards",
             "global_step", "advantages", "is_action_valid", "obs", "response", "truncated"]
step_rows = st.lists(st.dictionaries(st.sampled_from(STEP_KEYS), json_values, max_size=len(STEP_KEYS)),
                     min_size=1, max_size=6)


def dumps(obj) -> str:
    """JSON with NaN/Infinity allowed and huge integers written out (what a hostile file holds)."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.dumps(obj)
    finally:
        sys.set_int_max_str_digits(old)


def read_or_refuse(source: str, files: dict[str, bytes], **kw) -> None:
    """Read under the small budget; any outcome but data or a FormatError fails the test."""
    try:
        out = read_uploads(source, files, budget=BUDGET, **kw)
    except FormatError as e:
        assert e.source in files or any(e.source.startswith(n) for n in files) or ", " in e.source, str(e)
        return
    for groups in out.values():
        for g in groups:
            for r in g.rollouts:
                assert r.steps and all(isinstance(s.anchor, str) for s in r.steps)
                assert all(s.reward is None or math.isfinite(s.reward) for s in r.steps)


@FAST
@given(st.binary(max_size=400), st.sampled_from(["t.jsonl", "t.csv", "t.parquet", "t.jsonl.gz"]),
       st.booleans())
def test_any_bytes_into_a_step_table(data, name, gz):
    read_or_refuse("steps", {name: gzip.compress(data) if gz else data})


@FAST
@given(step_rows, st.sampled_from([None, 0.5]))
def test_any_step_rows(rows, threshold):
    data = "\n".join(dumps(r) for r in rows).encode()
    read_or_refuse("steps", {"rows.jsonl": data}, success_threshold=threshold)


def valid_rows() -> list[dict]:
    return [{"uid": "g", "traj_uid": str(i), "step_index": t, "anchor_obs": f"s{t}", "action": "a",
             "rewards": 0.5, "success": i == 0, "episode_rewards": float(i == 0), "global_step": 3,
             "advantages": 0.1, "is_action_valid": True, "obs": "o", "response": "r", "truncated": False}
            for i in range(2) for t in range(2)]


@FAST
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(STEP_KEYS), json_values), min_size=1, max_size=3),
       st.sampled_from([None, 0.5]))
def test_valid_rows_with_any_field_changed(changes, threshold):
    rows = valid_rows()
    for i, k, v in changes:
        rows[i][k] = v
    read_or_refuse("steps", {"rows.jsonl": "\n".join(dumps(r) for r in rows).encode()}, success_threshold=threshold)


EXTREME = [10**400, -(10**400), 2**63, 1e308, -1e308, 5e-324, float("nan"), float("inf"), -0.0, 10**4000]


@FAST
@given(st.integers(0, 3), st.sampled_from(["rewards", "episode_rewards", "advantages", "step_index", "global_step",
                                            "success", "truncated", "uid", "traj_uid", "anchor_obs"]),
       st.sampled_from(EXTREME), st.sampled_from([None, 0.5]))
def test_valid_rows_with_an_extreme_number(i, col, x, threshold):
    rows = valid_rows()
    rows[i][col] = x
    read_or_refuse("steps", {"rows.jsonl": "\n".join(dumps(r) for r in rows).encode()}, success_threshold=threshold)


@FAST
@given(step_rows)
def test_any_step_rows_as_csv(rows):
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(STEP_KEYS)
    for r in rows:
        w.writerow([dumps(r.get(k)) if not isinstance(r.get(k), str) else r[k] for k in STEP_KEYS])
    read_or_refuse("steps", {"rows.csv": buf.getvalue().encode()})


@FAST
@given(st.lists(st.dictionaries(st.sampled_from(["uid", "input", "output", "score", "step"]), json_values),
                min_size=1, max_size=5), st.lists(st.sampled_from(["p_0_0", "p_1_0", "q_0_1", "x"]), min_size=5, max_size=5))
def test_any_verl_dump(lines, uids):
    for line, uid in zip(lines, uids, strict=False):
        line.setdefault("uid", uid)
    read_or_refuse("verl", {"3.jsonl": "\n".join(dumps(x) for x in lines).encode()}, success_threshold=0.5)


episode = st.fixed_dictionaries(
    {"episode_id": st.one_of(st.sampled_from(["t:0", "t:1", "u:0"]), json_values),
     "trajectories": st.one_of(json_values, st.lists(st.fixed_dictionaries(
         {"reward": json_values, "steps": st.lists(st.dictionaries(
             st.sampled_from(["observation", "action", "reward", "model_response"]), json_values), max_size=3)}),
         max_size=2))},
    optional={"is_correct": json_values, "training_step": json_values, "termination_reason": json_values})


@FAST
@given(st.lists(episode, min_size=1, max_size=3))
def test_any_rllm_episodes(eps):
    read_or_refuse("rllm", {f"ep{i}.json": dumps(e).encode() for i, e in enumerate(eps)})


@FAST
@given(st.lists(st.fixed_dictionaries({"group_index": st.integers(0, 2), "reward": st.floats(),
                                       "metrics": st.sampled_from(['{"success": true}', "{}", "[1]", "{"]),
                                       "messages": st.lists(st.fixed_dictionaries(
                                           {"role": st.sampled_from(["user", "assistant", "tool"]),
                                            "content": st.one_of(st.none(), st.text(max_size=10)),
                                            "trainable": st.booleans()}), max_size=4)}), min_size=1, max_size=4))
def test_any_art_trajectories(rows):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    read_or_refuse("art", {"0003.parquet": buf.getvalue()}, success_threshold=0.5)


@FAST
@given(st.one_of(st.binary(max_size=300), st.lists(json_values, min_size=1, max_size=4).map(
    lambda xs: "\n".join(dumps(x) for x in xs).encode()), st.lists(st.fixed_dictionaries(
        {"group": json_values, "steps": st.lists(st.dictionaries(st.sampled_from(["anchor", "action", "reward"]),
                                                                 json_values), max_size=3),
         "success": json_values}), min_size=1, max_size=3).map(lambda xs: "\n".join(dumps(x) for x in xs).encode())))
def test_any_rollout_file(data):
    with budgets.scope(BUDGET):
        try:
            parse_rollouts(data, "up.jsonl")
        except FormatError as e:
            assert e.source == "up.jsonl"


@FAST
@given(st.binary(max_size=300))
def test_any_bytes_as_a_parquet_rollout_file(data):
    from crbc.io.parquet_rollouts import read_parquet_rollouts

    with budgets.scope(BUDGET):
        try:
            read_parquet_rollouts("it.parquet", b"PAR1" + data + b"PAR1")
        except FormatError as e:
            assert e.source == "it.parquet"


@pytest.mark.parametrize("depth", [50, 5000, 200_000])
def test_any_nesting(depth):
    deep = "[" * depth + "]" * depth
    read_or_refuse("steps", {"n.jsonl": f'{{"uid": "g", "traj_uid": "1", "anchor_obs": "a", "success": 1, "x": {deep}}}'.encode()})
    read_or_refuse("rllm", {"ep.json": f'{{"episode_id": "t:0", "trajectories": [{{"steps": [{{"observation": {deep}}}]}}]}}'.encode()})
    with budgets.scope(BUDGET):
        with pytest.raises(FormatError):
            parse_rollouts(f'{{"group": "g", "steps": [], "success": true, "meta": {deep}}}', "d.jsonl")


@FAST
@given(st.lists(st.tuples(st.sampled_from([1e308, -1e308, 1e300, 5e-324, 0.0, 1.0]), st.booleans()), min_size=2, max_size=6),
       st.sampled_from(["grpo", "crbc", "visit_local", "gigpo", "shortest_path", "rewardflow"]))
def test_estimators_compute_or_refuse_extreme_rewards_naming_the_field(values, name):
    from crbc.estimators import registry
    from crbc.io.creditfile import check_finite
    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    rs = tuple(Rollout("g", i, (Step("s", "a", reward=v), Step(f"t{i % 2}", "b", reward=v)), ok, score=v)
               for i, (v, ok) in enumerate(values))
    try:
        check_finite(registry.compute(name, [RolloutGroup("g", rs)]))
    except ValueError as e:
        assert "field" in str(e) or "score" in str(e) or "reward" in str(e), str(e)
