"""``crbc.rollout/1`` as Parquet: one row per step, the option of ``crbc.run/1`` iteration files.

Columns (docs/FORMATS.md, "Run folder options"): ``group`` string, ``rollout`` int64, ``step``
int64 (0.. inside the rollout), ``anchor``, ``action`` strings, ``obs``, ``response`` nullable
strings, ``reward``, ``trainer_advantage`` nullable float64, and per rollout (repeated on each of
its rows) ``success``, ``truncated`` bool, ``score`` nullable float64, ``meta`` nullable JSON
text. Strings are dictionary encoded, so an observation repeated across steps is stored once.
The schema metadata holds ``{"schema": "crbc.rollout/1"}``. The reader validates like the JSON
Lines reader (all or nothing, ``file:row: column: message``) and reads only Parquet (pyarrow).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crbc.errors import RolloutFormatError
from crbc.io.gc_pause import gc_paused
from crbc.io.rollouts import SCHEMA, Rollout, RolloutGroup, Step, atomic_write_chunks

__all__ = [
    "columns_table", "groups_table", "read_parquet_rollouts", "REQUIRED", "STEP_COLUMNS",
    "write_parquet_rollouts", "write_table_atomic"
]

STEP_COLUMNS = ("group", "rollout", "step", "anchor", "action", "obs", "response", "reward",
                "trainer_advantage", "success", "truncated", "score", "meta")
REQUIRED = ("group", "rollout", "step", "anchor", "action", "success")


def _schema():
    import pyarrow as pa

    s, d = pa.string(), pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("group", d), ("rollout", pa.int64()), ("step", pa.int64()), ("anchor", d),
                      ("action", d), ("obs", d), ("response", s), ("reward", pa.float64()),
                      ("trainer_advantage", pa.float64()), ("success", pa.bool_()),
                      ("truncated", pa.bool_()), ("score", pa.float64()), ("meta", d)],
                     metadata={"schema": SCHEMA})


def groups_table(groups: Sequence[RolloutGroup]):
    """The pyarrow Table of the groups (one row per step, see the module docstring)."""
    cols: dict[str, list[Any]] = {c: [] for c in STEP_COLUMNS}
    for g in groups:
        for r in g.rollouts:
            meta = json.dumps(r.meta, ensure_ascii=False, allow_nan=False, sort_keys=True) if r.meta else None
            n = len(r.steps)
            cols["group"] += [g.group] * n
            cols["rollout"] += [r.rollout] * n
            cols["step"] += range(n)
            cols["success"] += [r.success] * n
            cols["truncated"] += [r.truncated] * n
            cols["score"] += [r.score] * n
            cols["meta"] += [meta] * n
            for s in r.steps:
                cols["anchor"].append(s.anchor)
                cols["action"].append(s.action)
                cols["obs"].append(s.obs)
                cols["response"].append(s.response)
                cols["reward"].append(s.reward)
                cols["trainer_advantage"].append(s.trainer_advantage)
    return columns_table(cols)


def columns_table(cols: dict[str, Any]):
    """The Table of per-step columns (lists or numpy arrays of length N; every name of
    STEP_COLUMNS; float columns may use NaN for null)."""
    import pyarrow as pa

    schema = _schema()
    arrays = []
    for f in schema:
        typ = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        x = cols[f.name]
        nan = isinstance(x, np.ndarray) and x.dtype.kind == "f"
        a = pa.array(x, type=typ, from_pandas=nan)  # from_pandas: NaN -> null
        arrays.append(a.dictionary_encode() if pa.types.is_dictionary(f.type) else a)
    return pa.Table.from_arrays(arrays, schema=schema)


def write_parquet_rollouts(path: str | os.PathLike, groups: Sequence[RolloutGroup] | Any) -> Path:
    """Write the groups (or a Table from :func:`columns_table`) as a Parquet rollout file (zstd,
    dictionary encoded), atomically."""

    import pyarrow as pa

    return write_table_atomic(path, groups if isinstance(groups, pa.Table) else groups_table(groups))


def write_table_atomic(path: str | os.PathLike, table: Any) -> Path:
    """Write a pyarrow Table as Parquet (zstd, dictionary encoded) to ``path`` atomically (the
    file appears whole or not at all: :func:`crbc.io.rollouts.atomic_write_chunks`)."""
    import io

    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", use_dictionary=True)
    atomic_write_chunks(path, [buf.getvalue()])
    return Path(path)


def _fail(msg: str, source: str, row: int | None = None, column: str | None = None):
    raise RolloutFormatError(msg, source, row, column)


def read_parquet_rollouts(path: str | os.PathLike, data: bytes | None = None) -> list[RolloutGroup]:
    """Read and validate a Parquet rollout file (or its bytes ``data``) into groups."""
    import pyarrow as pa

    from crbc.io.parquet_budget import budgeted_batches, open_parquet, parquet_bytes

    source = str(path)
    data = parquet_bytes(path, source, RolloutFormatError, data)
    schema = open_parquet(pa.BufferReader(data), source)[0].schema_arrow  # text columns dictionary-typed
    try:
        table = pa.Table.from_batches(list(budgeted_batches(pa.BufferReader(data), source)), schema=schema)
    except pa.ArrowException as e:
        _fail(f"not a readable Parquet file ({e})", source)
    meta = table.schema.metadata or {}
    if meta.get(b"schema", SCHEMA.encode()) != SCHEMA.encode():
        _fail(f"unsupported schema {meta[b'schema']!r} (expected {SCHEMA!r})", source, None, "schema")
    for c in REQUIRED:
        if c not in table.column_names:
            _fail("required column is missing", source, None, c)
    with gc_paused():  # a Step per row, all kept: no cycle to look for (crbc.io.gc_pause)
        return _build(table, source)


def _strings(table, c: str) -> list[str | None]:
    """A string column as a Python list; dictionary columns share one object per distinct text."""
    import pyarrow as pa

    if c not in table.column_names:
        return [None] * table.num_rows
    col = table.column(c).combine_chunks()
    if pa.types.is_dictionary(col.type):
        texts = col.dictionary.to_pylist()
        return [None if i is None else texts[i] for i in col.indices.to_pylist()]
    return col.to_pylist()


def _typed(table, c: str, kind: str, source: str) -> np.ndarray | None:
    """A numeric/bool column as numpy (float columns: NaN for null), type-checked."""
    import pyarrow as pa

    if c not in table.column_names:
        return None
    col = table.column(c).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    t = col.type
    ok = {"int": pa.types.is_integer(t), "bool": pa.types.is_boolean(t),
          "float": pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t)}[kind]
    if not ok:
        _fail(f"must be a {kind} column, got {t}", source, None, c)
    if kind == "float":
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if col.null_count:
        _fail("required value is missing (null)", source, int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]) + 1, c)
    return col.to_numpy(zero_copy_only=False)


_TEXT = ("group", "anchor", "action", "obs", "response", "meta")


def _text_columns(table, source: str) -> dict[str, list]:
    """The string columns as lists; ImportError-style failure (:func:`_fail`) on a null in a
    required one or a column that is not a string."""
    text = {c: _strings(table, c) for c in _TEXT}
    for c in ("group", "anchor", "action"):
        if c in table.column_names and table.column(c).null_count:
            row = next(i for i, v in enumerate(text[c]) if v is None) + 1
            _fail("required value is missing (null)", source, row, c)
    for c in _TEXT:
        if c in table.column_names and not _is_string(table.schema.field(c).type):
            _fail(f"must be a string column, got {table.schema.field(c).type}", source, None, c)
    return text


def _number_columns(table, source: str) -> dict[str, np.ndarray | None]:
    """reward, trainer_advantage and score as floats (None when absent); infinities refused, NaN
    only where the cell is null (a score's NaN: no score)."""
    num = {c: _typed(table, c, "float", source) for c in ("reward", "trainer_advantage", "score")}
    for c, x in num.items():
        if x is not None and np.isinf(x).any():
            _fail("non-finite number", source, int(np.flatnonzero(np.isinf(x))[0]) + 1, c)
        if x is not None and c != "score" and np.isnan(x).any() and table.column(c).null_count != np.isnan(x).sum():
            _fail("non-finite number nan", source, int(np.flatnonzero(np.isnan(x))[0]) + 1, c)
    return num


def _check_rollouts(source: str, start_R: np.ndarray, first_N: np.ndarray, t_N: np.ndarray, ok_N: np.ndarray,
                    tr_N: np.ndarray, score: np.ndarray | None) -> None:
    """Steps 0, 1, ... inside each rollout; success, truncation and score constant along it; no
    truncated success."""
    expect = np.arange(len(t_N)) - first_N
    if (t_N != expect).any():
        row = int(np.flatnonzero(t_N != expect)[0])
        _fail(f"expected step {expect[row]}, got {t_N[row]}", source, row + 1, "step")
    for c, x in (("success", ok_N), ("truncated", tr_N),
                 ("score", None if score is None else np.where(np.isnan(score), -np.inf, score))):
        if x is not None and (x != x[first_N]).any():
            row = int(np.flatnonzero(x != x[first_N])[0])
            _fail(f"{c} differs within a rollout", source, row + 1, c)
    if (ok_N & tr_N)[start_R].any():
        row = int(start_R[np.flatnonzero((ok_N & tr_N)[start_R])[0]]) + 1
        _fail("a truncated rollout cannot be a success", source, row, "truncated")


def _check_meta_and_keys(source: str, meta_N: list, first_N: np.ndarray, start_R: np.ndarray,
                         g_codes: np.ndarray, k_R: np.ndarray, groups_N: list) -> None:
    """Each rollout's meta text is the same on all its rows (else: its first row); no (group,
    rollout) pair starts twice (else: the second start's row). Of these two faults, the first in
    row order, as a walk rollout by rollout finds it (its twin: tests/io/test_parquet_rollout_checks.py);
    a meta that is not a JSON object is found after them, while the rollouts are built."""
    meta = np.asarray(meta_N, dtype=object)
    differs = np.flatnonzero(meta != meta[first_N])
    codes = g_codes[start_R].astype(np.int64)
    width = int(k_R.max(initial=0)) + 1
    packs = len(k_R) and int(k_R.min()) >= 0 and width * (int(codes.max()) + 1) < 2 ** 62
    again = _repeats(codes * width + k_R) if packs else _repeats_slow(codes, k_R)
    row_meta = int(first_N[differs[0]]) if len(differs) else None
    row_again = int(start_R[again]) if again is not None else None
    if row_again is not None and (row_meta is None or row_again <= row_meta):  # a rollout's key, then its meta
        g, k = groups_N[row_again], int(k_R[again])
        _fail(f"rollout {k} of group {g!r} is not contiguous or appears twice", source, row_again + 1, "rollout")
    if row_meta is not None:
        _fail("meta differs within a rollout", source, row_meta + 1, "meta")


def _repeats(pair: np.ndarray) -> int | None:
    """The first index whose value appeared at an earlier index (None: all distinct)."""
    _, first = np.unique(pair, return_index=True)
    seen_before = np.ones(len(pair), bool)
    seen_before[first] = False
    hits = np.flatnonzero(seen_before)
    return int(hits[0]) if len(hits) else None


def _repeats_slow(codes: np.ndarray, k_R: np.ndarray) -> int | None:
    """:func:`_repeats` of (code, k) pairs with a set (rollout numbers that cannot pack)."""
    seen: set[tuple[int, int]] = set()
    for i, key in enumerate(zip(codes.tolist(), k_R.tolist(), strict=True)):
        if key in seen:
            return i
        seen.add(key)
    return None


def _rollout_meta(meta_N: list, a: int, source: str) -> dict:
    """The meta of the rollout starting on row ``a`` (the same JSON text on each of its rows:
    :func:`_check_meta_and_keys`)."""
    try:
        meta = _decode_meta(meta_N[a]) if meta_N[a] else {}
    except ValueError as e:
        _fail(f"not valid JSON ({e})", source, a + 1, "meta")
    if not isinstance(meta, dict):
        _fail("must be a JSON object", source, a + 1, "meta")
    return meta


def _nullable(x: np.ndarray | None, n: int) -> list:
    """A float column as a list, NaN (a null cell) and an absent column as None."""
    return [None] * n if x is None else [None if v != v else v for v in x.tolist()]


def _build(table, source: str) -> list[RolloutGroup]:
    """Validate the columns (vectorised) and build the groups; rows of a rollout are contiguous."""
    n = table.num_rows
    if n == 0:
        _fail("no rollouts found (the file is empty)", source)
    text = _text_columns(table, source)
    k_N, t_N = _typed(table, "rollout", "int", source), _typed(table, "step", "int", source)
    ok_N = _typed(table, "success", "bool", source)
    tr_N = _typed(table, "truncated", "bool", source)
    tr_N = np.zeros(n, bool) if tr_N is None else tr_N
    num = _number_columns(table, source)
    g_codes = np.unique(np.asarray(text["group"], dtype=object), return_inverse=True)[1].ravel()
    new = np.ones(n, bool)
    new[1:] = (g_codes[1:] != g_codes[:-1]) | (k_N[1:] != k_N[:-1])
    start_R = np.flatnonzero(new)
    len_R = np.diff(np.append(start_R, n))
    first_N = np.repeat(start_R, len_R)
    _check_rollouts(source, start_R, first_N, t_N, ok_N, tr_N, num["score"])
    _check_meta_and_keys(source, text["meta"], first_N, start_R, g_codes, k_N[start_R], text["group"])
    steps = list(map(Step, text["anchor"], text["action"], text["obs"], text["response"],
                     _nullable(num["reward"], n), _nullable(num["trainer_advantage"], n)))
    groups: dict[str, list[Rollout]] = {}
    sc, ok, tr = _nullable(num["score"], n), ok_N.tolist(), tr_N.tolist()
    group_N, meta_N = text["group"], text["meta"]
    for a, m, k in zip(start_R.tolist(), len_R.tolist(), k_N[start_R].tolist(), strict=True):
        g = group_N[a]
        groups.setdefault(g, []).append(Rollout(g, k, tuple(steps[a:a + m]), ok[a], tr[a], sc[a],
                                                _rollout_meta(meta_N, a, source)))
    return [RolloutGroup(g, tuple(rs)) for g, rs in groups.items()]


def _decode_meta(text: str) -> Any:
    """A rollout's meta JSON text (msgspec: several times faster than json.loads on the many
    short objects of a big file; the same values, NaN and Infinity refused as JSON does not have them)."""
    import msgspec

    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as e:
        raise ValueError(str(e)) from None


def _is_string(t) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t) or (
        pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)))
