"""Per-token advantages of recorded steps: ``crbc.tokens/1``, an optional file of a ``crbc.run/1``
folder beside the iteration's rollouts (docs/FORMATS.md, "Token advantages").

``rollouts/iter-NNNN.tokens.parquet``: one row per stored step (``S`` rows, at most the
recorder's ``tokens`` cap per iteration), columns

* ``group`` (string), ``rollout`` (int64), ``step`` (int64): the step, numbered as in the
  iteration's rollout file (rollout = index inside the group, step = 0-based t);
* ``row`` (int64): the trainer batch's row the tokens were taken from;
* ``length`` (int64): M, the response's tokens (its length before the cap, padding excluded);
* ``advantage`` (list<float32>): ``A[l]``, the trainer's advantage on response token l, for
  l = 0 .. L-1 with L = min(M, token cap);
* ``mask`` (list<bool>): the response (loss) mask on the same tokens: True where the token is
  trained, False where the loss never reads it (observation or tool tokens of a multi-turn
  response);
* ``token_id`` (list<int64>, nullable): the token ids, when the batch had ``responses``;
* ``token`` (list<string>, nullable): each token's text, when the recorder had a tokenizer.

Schema metadata: ``{"schema": "crbc.tokens/1", "max_rows": ..., "max_tokens": ...}`` (the caps
the writer used). A step appears at most once. Readers never need the file: a run without it
(or an iteration without it) simply has no token view. The reader validates the whole file and
refuses a bad one naming the file, the row (1-based) and the column.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crbc.errors import RunFormatError

__all__ = [
    "iteration_tokens", "read_tokens", "step_tokens", "StepTokens", "TOKENS_RE", "TOKENS_SCHEMA",
    "tokens_name", "tokens_path", "tokens_table", "write_tokens"
]

TOKENS_SCHEMA = "crbc.tokens/1"
TOKENS_RE = re.compile(r"^iter-(\d{4,})\.tokens\.parquet$")  #: never matches crbc.io.runs.ITER_RE
_REQUIRED = ("group", "rollout", "step", "length", "advantage", "mask")


def tokens_name(iteration: int) -> str:
    """``iter-0007.tokens.parquet``: the token file of an iteration (in ``rollouts/``)."""
    return f"iter-{int(iteration):04d}.tokens.parquet"


def tokens_path(run_dir: str | os.PathLike, iteration: int) -> Path:
    """Where iteration ``iteration``'s token file of the run in ``run_dir`` is (may not exist)."""
    from crbc.io.runs import ROLLOUTS_DIR

    return Path(run_dir) / ROLLOUTS_DIR / tokens_name(iteration)


@dataclass(frozen=True, eq=False)
class StepTokens:
    """The stored response tokens of one step.

    advantage: (L,) float64, the trainer's advantage on each stored token (as it was, float32
    widened; NaN kept). mask: (L,) bool, True where the token is trained. token_ids: (L,) int64
    or None. tokens: L strings or None. length: M >= L, the response's tokens before the cap.
    row: the batch row they came from.
    """

    group: str
    rollout: int
    step: int
    row: int
    length: int
    advantage: np.ndarray
    mask: np.ndarray
    token_ids: np.ndarray | None = None
    tokens: tuple[str, ...] | None = None

    @property
    def n_stored(self) -> int:
        """L: the tokens stored (the first L of :attr:`length`)."""
        return len(self.advantage)

    def labels(self) -> list[str] | None:
        """A text per stored token: the token's text, else ``#<id>``; None when neither was stored."""
        if self.tokens is not None:
            return list(self.tokens)
        if self.token_ids is not None:
            return [f"#{i}" for i in self.token_ids.tolist()]
        return None


def tokens_table(steps: Sequence[StepTokens], max_rows: int, max_tokens: int):
    """The pyarrow Table of ``steps`` (one row each, see the module docstring); ``max_rows`` and
    ``max_tokens``: the caps the writer applied, kept in the schema metadata."""
    import pyarrow as pa

    has_ids = any(s.token_ids is not None for s in steps)
    has_text = any(s.tokens is not None for s in steps)
    cols = {
        "group": pa.array([s.group for s in steps], pa.string()).dictionary_encode(),
        "rollout": pa.array([s.rollout for s in steps], pa.int64()),
        "step": pa.array([s.step for s in steps], pa.int64()),
        "row": pa.array([s.row for s in steps], pa.int64()),
        "length": pa.array([s.length for s in steps], pa.int64()),
        "advantage": pa.array([np.asarray(s.advantage, dtype=np.float32) for s in steps], pa.list_(pa.float32())),
        "mask": pa.array([np.asarray(s.mask, dtype=bool) for s in steps], pa.list_(pa.bool_())),
        "token_id": pa.array([None if s.token_ids is None else np.asarray(s.token_ids, dtype=np.int64)
                              for s in steps] if has_ids else [None] * len(steps), pa.list_(pa.int64())),
        "token": pa.array([None if s.tokens is None else list(s.tokens) for s in steps]
                          if has_text else [None] * len(steps), pa.list_(pa.string())),
    }
    meta = {"schema": TOKENS_SCHEMA, "max_rows": str(int(max_rows)), "max_tokens": str(int(max_tokens))}
    return pa.table(cols).replace_schema_metadata(meta)


def write_tokens(path: str | os.PathLike, table) -> Path:
    """Write a table of :func:`tokens_table` (zstd), atomically; returns the path."""
    from crbc.io.parquet_rollouts import write_table_atomic

    return write_table_atomic(path, table)


def _fail(msg: str, source: str, row: int | None = None, column: str | None = None):
    raise RunFormatError(msg, source, row, column)


def _ints(table, c: str, source: str) -> list[int]:
    import pyarrow as pa

    col = table.column(c)
    if not pa.types.is_integer(col.type):
        _fail(f"must be an integer column, got {col.type}", source, None, c)
    vals = col.to_pylist()
    for i, v in enumerate(vals):
        if v is None or v < 0:
            _fail("required value is missing (null)" if v is None else f"must be >= 0, got {v}", source, i + 1, c)
    return vals


def _lists(table, c: str, kind: str, source: str) -> list[Any]:
    """A list column as a list of Python lists (None where null), its value type checked."""
    import pyarrow as pa

    if c not in table.column_names:
        return [None] * table.num_rows
    t = table.column(c).type
    ok = pa.types.is_list(t) or pa.types.is_large_list(t)
    vt = t.value_type if ok else None
    if ok and pa.types.is_dictionary(vt):
        vt = vt.value_type
    check = {"float": lambda x: pa.types.is_floating(x) or pa.types.is_integer(x),
             "bool": pa.types.is_boolean, "int": pa.types.is_integer,
             "str": lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)}[kind]
    if not ok or not check(vt):
        _fail(f"must be a list of {kind} values, got {t}", source, None, c)
    return table.column(c).to_pylist()


def _row_tokens(i: int, source: str, cols: dict[str, list]) -> StepTokens:
    """Row ``i`` (0-based) of the columns as :class:`StepTokens`, checked."""
    adv, mask = cols["advantage"][i], cols["mask"][i]
    for c, x in (("advantage", adv), ("mask", mask)):
        if x is None:
            _fail("required value is missing (null)", source, i + 1, c)
        if any(v is None for v in x):
            _fail("a list entry is missing (null)", source, i + 1, c)
    n = len(adv)
    for c in ("mask", "token_id", "token"):
        x = cols[c][i]
        if x is not None and len(x) != n:
            _fail(f"holds {len(x)} entries but advantage holds {n} (one per stored token)", source, i + 1, c)
        if c != "mask" and x is not None and any(v is None for v in x):
            _fail("a list entry is missing (null)", source, i + 1, c)
    if cols["length"][i] < n:
        _fail(f"{cols['length'][i]} response tokens, but {n} are stored", source, i + 1, "length")
    ids, text = cols["token_id"][i], cols["token"][i]
    return StepTokens(str(cols["group"][i]), int(cols["rollout"][i]), int(cols["step"][i]), int(cols["row"][i]),
                      int(cols["length"][i]), np.asarray(adv, dtype=np.float64), np.asarray(mask, dtype=bool),
                      None if ids is None else np.asarray(ids, dtype=np.int64), None if text is None else tuple(text))


def _table(path: str | os.PathLike, source: str):
    """The file as a pyarrow Table (None when it holds no row), under the read budget."""
    import pyarrow as pa

    from crbc.io.parquet_budget import budgeted_batches, parquet_bytes

    data = parquet_bytes(path, source, RunFormatError)
    batches = list(budgeted_batches(pa.BufferReader(data), source))
    return pa.Table.from_batches(batches) if batches else None


def read_tokens(path: str | os.PathLike) -> list[StepTokens]:
    """Read and validate a token file (module docstring): all its steps, in file order.

    Raises :class:`crbc.errors.RunFormatError` naming the file, the row and the column: not
    Parquet, another schema, a missing column, a null, lists of different lengths on one row,
    more stored tokens than ``length``, a step stored twice."""
    import pyarrow as pa

    source = str(path)
    table = _table(path, source)
    if table is None:
        return []
    got = (table.schema.metadata or {}).get(b"schema")
    if got != TOKENS_SCHEMA.encode():
        _fail(f"unsupported schema {got!r} (expected {TOKENS_SCHEMA!r})", source, None, "schema")
    for c in _REQUIRED:
        if c not in table.column_names:
            _fail("required column is missing", source, None, c)
    if "row" not in table.column_names:
        table = table.append_column("row", pa.array([0] * table.num_rows, pa.int64()))
    groups = table.column("group").to_pylist()
    if any(g is None for g in groups):
        _fail("required value is missing (null)", source, groups.index(None) + 1, "group")
    cols = {"group": groups, **{c: _ints(table, c, source) for c in ("rollout", "step", "row", "length")},
            "advantage": _lists(table, "advantage", "float", source), "mask": _lists(table, "mask", "bool", source),
            "token_id": _lists(table, "token_id", "int", source), "token": _lists(table, "token", "str", source)}
    out, seen = [], {}
    for i in range(table.num_rows):
        s = _row_tokens(i, source, cols)
        k = (s.group, s.rollout, s.step)
        if k in seen:
            _fail(f"step {s.step} of rollout {s.rollout} of group {s.group[:80]!r} is stored twice "
                  f"(rows {seen[k]} and {i + 1})", source, i + 1, "step")
        seen[k] = i + 1
        out.append(s)
    return out


def iteration_tokens(run_dir: str | os.PathLike, iteration: int) -> list[StepTokens] | None:
    """The stored steps of iteration ``iteration`` of the run in ``run_dir``; None when the
    iteration has no token file (the recorder kept none)."""
    path = tokens_path(run_dir, iteration)
    return read_tokens(path) if path.is_file() else None


def step_tokens(run_dir: str | os.PathLike, iteration: int, group: str, rollout: int,
                step: int) -> StepTokens | None:
    """The stored tokens of step ``step`` (0-based) of rollout ``rollout`` (its index inside the
    group) of group ``group`` in iteration ``iteration``: ``advantage`` (L,), ``mask`` (L,) and
    the tokens; None when the iteration or that step has none stored."""
    for s in iteration_tokens(run_dir, iteration) or ():
        if s.group == group and s.rollout == int(rollout) and s.step == int(step):
            return s
    return None
