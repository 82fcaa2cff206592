"""The one reader of a rollout file, whatever its kind: JSON Lines, gzip-compressed JSON Lines or
Parquet (the recorder's ``iter-NNNN.parquet``), told apart by the file's first bytes, never by
its name alone (:func:`sniff`). ``crbc.read_rollouts``, ``crbc credit``, ``crbc report``,
``crbc.step_frame`` and a run folder's iterations all read through here.
"""

from __future__ import annotations

import os
from pathlib import Path

from crbc.errors import RolloutFormatError, os_reason
from crbc.io.columns import Columns
from crbc.io.columns import read_columns as read_jsonl_columns
from crbc.io.records import RolloutGroup

__all__ = ["GZIP_MAGIC", "PARQUET_MAGIC", "read_columns", "read_rollouts", "sniff"]

PARQUET_MAGIC = b"PAR1"  #: the first (and last) bytes of a Parquet file
GZIP_MAGIC = b"\x1f\x8b"  #: the first bytes of a gzip member


def sniff(path: str | os.PathLike) -> str:
    """``"parquet"`` (first bytes ``PAR1``), ``"gzip"`` or ``"jsonl"``: what kind of rollout file
    ``path`` is. A file that cannot be opened raises :class:`RolloutFormatError` naming it."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise RolloutFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    if head == PARQUET_MAGIC:
        return "parquet"
    return "gzip" if head[:2] == GZIP_MAGIC else "jsonl"


def _parquet(path: Path) -> list[RolloutGroup]:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ImportError(f'{path} is a Parquet rollout file: reading it needs pyarrow, '
                          'pip install "crbc[parquet]"') from None
    from crbc.io.parquet_rollouts import read_parquet_rollouts

    return read_parquet_rollouts(path)


def read_rollouts(path: str | os.PathLike) -> list[RolloutGroup]:
    """Read and validate a rollout file into groups (in order of first appearance, rollouts in
    file order): JSON Lines, gzip or Parquet by :func:`sniff`. All or nothing: a bad line or row
    raises :class:`RolloutFormatError` naming the file, the line (row) and the field; a Parquet
    file without pyarrow an ImportError naming ``crbc[parquet]``."""
    path = Path(path)
    kind = sniff(path)
    if kind == "parquet":
        return _parquet(path)
    return read_jsonl_columns(path).to_groups()  # JSON Lines, gzip streamed a line at a time


def read_columns(path: str | os.PathLike, keep_text: bool = True) -> Columns:
    """:class:`Columns` of a rollout file of any kind (:func:`read_rollouts`); JSON Lines, gzip or
    not, is streamed (:func:`crbc.io.columns.read_columns`)."""
    path = Path(path)
    kind = sniff(path)
    if kind == "parquet":
        return Columns.from_groups(_parquet(path), keep_text)
    return read_jsonl_columns(path, keep_text)
