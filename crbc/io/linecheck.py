"""Every bad line of a rollout file, up to a limit: the report a refused upload shows.

:func:`crbc.io.rollouts.parse_rollouts` stops at the first bad line (all or nothing, the contract of
every reader). A person fixing a file by hand wants more than the first problem, so
:func:`bad_lines` re-reads the document with each bad line found so far blanked out (blank lines
are skipped by the reader), until ``limit`` problems are known or the rest reads cleanly. The
reader's own checks are reused as they are, including those across lines (duplicate rollouts).
Cost: at most ``limit + 1`` reads of the document, and only for a file that is refused anyway.
"""

from __future__ import annotations

from crbc.errors import RolloutFormatError
from crbc.io.rollouts import iter_rollouts

__all__ = ["bad_lines", "LIMIT"]

LIMIT = 10  # problems listed in one report


def bad_lines(data: bytes, source: str = "<input>", limit: int = LIMIT) -> tuple[list[RolloutFormatError], bool]:
    """``(errors, more)``: up to ``limit`` errors in line order, and whether more bad lines
    (or a problem that has no line, such as an empty file) remain after them."""
    lines: list[bytes | str] = list(data.splitlines())
    found: list[RolloutFormatError] = []
    while True:
        try:
            for _ in iter_rollouts(lines, source):
                pass
            return sorted(found, key=lambda e: e.line or 0), False
        except RolloutFormatError as e:
            if e.line is None or len(found) >= limit or not lines[e.line - 1].strip():
                return sorted(found, key=lambda e: e.line or 0), True
            found.append(e)
            lines[e.line - 1] = b""
