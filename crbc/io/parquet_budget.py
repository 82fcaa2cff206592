"""Reading a user's Parquet file in batches under the current decoded-size budget.

A Parquet file's size says little about what it decodes to: one 2,000-character string stored
once in a dictionary page and referenced by 2,000,000 rows is a 0.6 MB file and 4 GB of text.
:func:`budgeted_batches` checks the metadata first (row count, the columns' uncompressed sizes),
then reads ``batch_size`` rows at a time with every top-level string column kept dictionary
encoded, charges each batch's decoded size to the current :class:`crbc.io.budgets.Meter`
(for a dictionary column: sum over rows of the length of the text the row points at; for any
other column: its Arrow buffer bytes) and stops with :class:`crbc.errors.BudgetError` before
decoding past the budget. Only pyarrow's Parquet reader runs; nothing is executed or unpickled.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from crbc.errors import BudgetError, FormatError
from crbc.io import budgets

__all__ = ["budgeted_batches", "decoded_bytes", "MAGIC", "open_parquet", "parquet_bytes"]

MAGIC = b"PAR1"


def _is_text(t) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or (
        pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)))


def decoded_bytes(batch) -> int:
    """Bytes ``batch`` decodes to: for a dictionary column the sum over its rows of the length of
    the text each row points at (shape: one int per row, summed), else the column's buffer bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for col in batch.columns:
        if pa.types.is_dictionary(col.type):
            lengths = np.asarray(pc.binary_length(col.dictionary).fill_null(0), dtype=np.int64)
            idx = col.indices.fill_null(0).to_numpy(zero_copy_only=False)
            total += int(lengths[idx].sum()) if len(lengths) else 0
            total += 4 * len(col)
        else:
            total += col.nbytes
    return total


def _fail(msg: str, source: str) -> FormatError:
    from crbc.errors import RolloutFormatError

    return RolloutFormatError(msg, source)


def parquet_bytes(path: Any, source: str, error: type[FormatError], data: bytes | None = None) -> bytes:
    """The bytes of a Parquet file (``data`` when given, else read from ``path``), checked to
    start and end with :data:`MAGIC` and counted against the read budget; a file that cannot be
    read or is no Parquet raises ``error(message, source)``."""
    from pathlib import Path

    from crbc.errors import os_reason

    if data is None:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise error(f"cannot read file ({os_reason(e)})", source) from None
    if len(data) < 8 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise error("not a Parquet file (no PAR1 magic at its start and end)", source)
    budgets.meter().file(len(data), source)
    return data


def open_parquet(src: Any, source: str, columns: Sequence[str] | None = None):
    """``(ParquetFile, columns to read)`` of a path or ``pyarrow.BufferReader``; top-level text
    columns are read dictionary encoded. Refuses a file that is not Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(src)
        names = pf.schema_arrow.names
        want = [c for c in names if columns is None or c in columns]
        text = [c for c in want if _is_text(pf.schema_arrow.field(c).type)]
        if text:
            pf = pq.ParquetFile(src, read_dictionary=text)
    except (pa.ArrowException, OSError, ValueError, TypeError) as e:
        raise _fail(f"not a readable Parquet file ({e})", source) from None
    return pf, want


def budgeted_batches(src: Any, source: str, columns: Sequence[str] | None = None,
                     batch_size: int = 16384) -> Iterator[Any]:
    """The file's record batches (only ``columns`` that exist; all when None) charged to the
    current budget; see the module docstring."""
    import pyarrow as pa

    m = budgets.meter()
    pf, want = open_parquet(src, source, columns)
    md = pf.metadata
    if m.rows + md.num_rows > m.budget.rows:
        m.add_rows(md.num_rows, source)  # refuses, naming the budget
    idx = [i for i in range(md.num_columns) if md.schema.column(i).path.split(".")[0] in want]
    stored = sum(md.row_group(g).column(i).total_uncompressed_size
                 for g in range(md.num_row_groups) for i in idx)
    if stored > m.bytes_left:
        m.add_bytes(stored, source)
    try:
        for batch in pf.iter_batches(batch_size=batch_size, columns=want):
            m.add_bytes(decoded_bytes(batch), source)
            m.add_rows(batch.num_rows, source)
            yield batch
    except BudgetError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError) as e:
        raise _fail(f"not a readable Parquet file ({e})", source) from None
