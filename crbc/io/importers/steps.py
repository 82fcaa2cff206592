"""``--from steps``: a table with one row per step (JSON Lines, .jsonl.gz, CSV or Parquet).

The format is chosen by the file name (``.parquet``/``.pq``, ``.csv``, anything else JSON Lines,
gzip by its magic bytes) and Parquet is checked by its magic bytes too. Text is UTF-8, with or
without a byte-order mark, LF or CRLF line ends. Rows are numbered from 1: the line for JSON
Lines, the record after the header for CSV, the row for Parquet. Nothing is executed or
unpickled: ``json.loads``, ``csv`` and pyarrow's Parquet reader only.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from crbc.errors import os_reason
from crbc.io import budgets
from crbc.io.anchor_keys import AnchorKeySpec
from crbc.io.importers.rows import Imported, ImportFormatError, Row, build

__all__ = [
    "check_size", "column_values", "csv_rows", "decode_text", "jsonl_rows", "MAX_INPUT_BYTES", "NESTED",
    "PARQUET_MAGIC", "parquet_rows", "read_bytes", "read_steps", "table_rows"
]

MAX_INPUT_BYTES = budgets.CLI.file_bytes  #: refuse an input file beyond this (the CLI's budget)
PARQUET_MAGIC = b"PAR1"


def check_size(path: Path, limit: int | None = None) -> int:
    """The file's size; refuses a missing file, or one beyond ``limit`` or the current budget's
    ``file_bytes`` (crbc.io.budgets)."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ImportFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    if limit is not None and size > limit:
        raise ImportFormatError(f"the file is {budgets.mb(size)}, over the limit of {budgets.mb(limit)}",
                                str(path))
    budgets.meter().file(size, str(path))
    return size


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The file's bytes, gunzipped when it is gzip, charged to the current decoded budget."""
    check_size(path, limit)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ImportFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    m = budgets.meter()
    if data[:2] == b"\x1f\x8b":
        return m.gunzip(data, str(path))
    m.add_bytes(len(data), str(path))
    return data


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 text, a leading byte-order mark dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ImportFormatError(f"not valid UTF-8 ({e.reason})", source, line) from None


NESTED = "not valid JSON (nested too deeply: arrays or objects inside each other beyond Python's limit)"


def _constant(name: str) -> float:
    """NaN and infinities parse as floats, so the field that reads them names the column."""
    return float(name)


_DECODER = json.JSONDecoder(parse_constant=_constant)  # one decoder (json.loads builds one per call)


def _text_lines(lines: Iterable[bytes], source: str) -> Iterator[str]:
    """Streamed lines (bytes, each with its ending) as text: UTF-8, a first byte-order mark dropped."""
    for lineno, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise ImportFormatError(f"not valid UTF-8 ({e.reason})", source, lineno) from None
        yield line.rstrip("\r\n")


def jsonl_rows(data: bytes | Iterable[bytes], source: str) -> Iterator[Row]:
    """One :class:`Row` per non-blank line (row = line number) of the text, or of its lines
    streamed (:meth:`crbc.io.budgets.Meter.gunzip_lines`)."""
    m = budgets.meter()
    text = decode_text(data, source).splitlines() if isinstance(data, bytes) else _text_lines(data, source)
    for lineno, line in enumerate(text, start=1):
        if not line.strip():
            continue
        m.add_rows(1, source)
        try:
            obj = _DECODER.decode(line)
        except ValueError as e:
            raise ImportFormatError(f"not valid JSON ({e})", source, lineno) from None
        except RecursionError:
            raise ImportFormatError(NESTED, source, lineno) from None
        if not isinstance(obj, dict):
            raise ImportFormatError(f"expected a JSON object, got {type(obj).__name__}", source, lineno)
        if len(line) > m.budget.text_chars:  # a text over the budget is refused at its line, not after the file
            for k, v in obj.items():
                if isinstance(v, str):
                    m.text(len(v), source, lineno, k)
        yield Row(source, lineno, obj)


def csv_rows(data: bytes, source: str) -> Iterator[Row]:
    """One :class:`Row` per record after the header (row = record number, 1-based)."""
    m = budgets.meter()
    reader = csv.reader(io.StringIO(decode_text(data, source), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as e:
        raise ImportFormatError(f"not valid CSV ({e})", source, 0) from None
    try:
        for n, rec in enumerate(reader, start=1):
            if not rec:
                continue
            m.add_rows(1, source)
            if len(rec) != len(header):
                raise ImportFormatError(f"{len(rec)} cells, the header has {len(header)}", source, n)
            yield Row(source, n, dict(zip(header, rec, strict=True)))
    except csv.Error as e:
        raise ImportFormatError(f"not valid CSV ({e})", source, reader.line_num) from None


def parquet_rows(path: Path, source: str, columns: Sequence[str] | None = None) -> Iterator[Row]:
    """One :class:`Row` per Parquet row (row = 1-based); only ``columns`` that exist are read,
    in batches under the current budget (:func:`crbc.io.parquet_budget.budgeted_batches`)."""
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(-4 if path.stat().st_size >= 8 else 0, os.SEEK_END)
        tail = f.read(4)
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        raise ImportFormatError("not a Parquet file (no PAR1 magic at its start and end)", source)
    from crbc.io.parquet_budget import budgeted_batches

    n = 0
    for batch in budgeted_batches(path, source, columns):
        names = batch.schema.names
        for values in zip(*(column_values(c) for c in batch.columns), strict=True):
            n += 1
            yield Row(source, n, dict(zip(names, values, strict=True)))


def column_values(col) -> list:
    """A batch's column as Python values; a dictionary column's rows share one str per text."""
    import pyarrow as pa

    if pa.types.is_dictionary(col.type):
        texts = col.dictionary.to_pylist()
        return [None if i is None else texts[i] for i in col.indices.to_pylist()]
    return col.to_pylist()


def table_rows(path: str | os.PathLike, columns: Sequence[str] | None = None,
               limit: int | None = None) -> list[Row]:
    """The rows of one step table (format by name, see the module docstring)."""
    path = Path(path)
    source = str(path)
    name = path.name.lower()
    check_size(path, limit)
    if name.endswith((".parquet", ".pq")):
        return list(parquet_rows(path, source, columns))
    if not name.endswith((".csv", ".csv.gz")):
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise ImportFormatError(f"cannot read file ({os_reason(e)})", source) from None
        if raw[:2] == b"\x1f\x8b":  # JSON Lines in gzip: streamed, never decoded whole
            return list(jsonl_rows(budgets.meter().gunzip_lines(raw, source), source))
        budgets.meter().add_bytes(len(raw), source)
        data = raw
    else:
        data = read_bytes(path, limit)
    if data[:4] == PARQUET_MAGIC:
        raise ImportFormatError("this is a Parquet file: name it .parquet", source)
    if name.endswith((".csv", ".csv.gz")):
        return list(csv_rows(data, source))
    return list(jsonl_rows(data, source))


def read_steps(paths: Sequence[str | os.PathLike], columns: Mapping[str, str] | None = None,
               anchor: AnchorKeySpec = None, success_threshold: float | None = None,
               limit: int | None = None, action: AnchorKeySpec = None) -> Imported:
    """``{iteration: [RolloutGroup]}`` of one or more step tables (rows of all files together).

    columns: field -> column (:data:`crbc.io.importers.rows.DEFAULT_COLUMNS` when None).
    anchor: the anchor key (None exact text, a regex, or a callable text -> str).
    """
    from crbc.io.importers.rows import DEFAULT_COLUMNS

    cols = dict(DEFAULT_COLUMNS if columns is None else columns)
    rows: list[Row] = []
    with budgets.scope():
        for p in paths:
            rows.extend(table_rows(p, list(cols.values()), limit))
        if not rows:
            raise ImportFormatError("no rows found (the input is empty)", ", ".join(map(str, paths)))
        return build(rows, cols, anchor, success_threshold, action)
