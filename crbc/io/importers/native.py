"""The native format as an importer: ``crbc.rollout/1`` JSON Lines, and a run's ``iter-NNNN.parquet``.

Registered as the source ``rollout`` beside the other importers, so the ``import`` command, the
studio's upload and the upload worker read it through the one registry. A refused JSON Lines
file is reported with every bad line (up to :data:`crbc.io.linecheck.LIMIT`), not only the first:
a person fixing a file by hand wants the whole list.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from crbc.errors import BudgetError, RolloutFormatError
from crbc.io.anchor_keys import AnchorKeySpec, rekey
from crbc.io.importers.rows import Imported
from crbc.io.rollouts import RolloutGroup, parse_rollouts

__all__ = ["BadLinesError", "parse_with_report", "read_native"]

PARQUET_MAGIC = b"PAR1"


class BadLinesError(RolloutFormatError):
    """Several bad lines of one rollout file; ``str()`` is one line per problem (file:line: ...),
    then a note when more problems remain than are listed."""

    def __init__(self, errors: Sequence[RolloutFormatError], more: bool, source: str):
        self.errors = list(errors)
        text = "\n".join(str(e) for e in self.errors)
        if more:
            text += f"\n... and more: only the first {len(self.errors)} problems are listed"
        super().__init__(text, source, self.errors[0].line if self.errors else None)
        self.text = text

    def __str__(self) -> str:
        return self.text


def parse_with_report(data: bytes, source: str) -> list[RolloutGroup]:
    """The groups of a ``crbc.rollout/1`` document (all or nothing). A refused document raises the
    reader's own error when it has a single problem, else :class:`BadLinesError` listing them."""
    from crbc.io.linecheck import bad_lines

    try:
        return parse_rollouts(data, source=source)
    except RolloutFormatError as first:
        if isinstance(first, BudgetError):
            raise
        errs, more = bad_lines(data, source)
        if not errs or (len(errs) == 1 and not more):
            raise
        raise BadLinesError(errs, more, source) from None


def read_native(paths: Sequence[str | os.PathLike], *, anchor: AnchorKeySpec = None, action: AnchorKeySpec = None,
                success_threshold: float | None = None, limit: int | None = None) -> Imported:
    """``{None: groups}`` of ``crbc.rollout/1`` files (JSON Lines, gzip or not) and run iteration
    files (Parquet, recognised by their magic bytes), keyed by ``anchor`` (None: the exact text).

    ``action`` and ``success_threshold`` do not apply (the format carries the executed action and
    the outcome); ``limit`` keeps the first ``limit`` groups."""
    if action is not None:
        raise ValueError("--action applies to importers of other formats, not to crbc.rollout/1 "
                         "(its steps carry the executed action)")
    groups: list[RolloutGroup] = []
    for path in paths:
        name = str(path)
        data = Path(path).read_bytes()
        if data[:4] == PARQUET_MAGIC:
            from crbc.io.parquet_rollouts import read_parquet_rollouts

            read = read_parquet_rollouts(name, data)
        else:
            read = parse_with_report(data, name)
        groups.extend(rekey(read, anchor))
        if limit is not None and len(groups) >= limit:
            return {None: groups[:limit]}
    return {None: groups}
