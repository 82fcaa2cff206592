"""Budgets of untrusted input: how much a reader may decode before it refuses the file.

Sizes on disk say little: a 0.6 MB Parquet file whose observation column is dictionary
encoded decodes to 4 GB, a 300 KB gzip to 300 MB. Every reader of users' files (the importers,
the rollout readers, run folders and archives) charges what it decodes to the current
:class:`Meter`, which refuses the input with :class:`crbc.errors.BudgetError` as soon as a
budget is passed, naming the file, what ran over and the budget. Nothing is written then.

A budget (:class:`Budget`) bounds, over one read (all files of an import together):

* ``file_bytes``: one input file as stored;
* ``decoded_bytes``: what the input decodes to: text bytes after gunzip, Parquet column
  bytes after decoding (a dictionary-encoded string counted once per row that uses it);
* ``rows``: step rows, rollout lines, Parquet rows and episode steps;
* ``text_chars``: one text cell (an anchor, observation, action, response);
* ``line_bytes``: one line of a gzip text read as a stream (:meth:`Meter.gunzip_lines`).

Two sets (docs/FORMATS.md, "Budgets"): :data:`CLI` for the command line and the library, and the
lower :data:`STUDIO` for uploads to a shared studio. MB here means 10**6 bytes, everywhere.
``with scope(STUDIO): ...`` makes a budget current for the reads inside (a context variable, so
threads and processes each keep their own); outside any scope a read gets a fresh CLI meter.
"""

from __future__ import annotations

import contextlib
import contextvars
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from crbc.errors import BudgetError

__all__ = ["Budget", "CLI", "MB", "mb", "Meter", "meter", "scope", "STUDIO"]

MB = 10**6


@dataclass(frozen=True)
class Budget:
    """Limits of one read (see the module docstring); ``name`` says whose budget it is."""

    name: str
    file_bytes: int
    decoded_bytes: int
    rows: int
    text_chars: int = 2_000_000
    line_bytes: int = 64 * MB  #: one line of a streamed gzip text (a bomb of one line stops here)


CLI = Budget("command line", file_bytes=1000 * MB, decoded_bytes=1000 * MB, rows=10_000_000)
STUDIO = Budget("studio", file_bytes=20 * MB, decoded_bytes=100 * MB, rows=500_000)


def mb(n: int) -> str:
    """``n`` bytes in MB (10**6 bytes), e.g. ``20 MB`` or ``20.97 MB``."""
    x = n / MB
    return f"{x:.0f} MB" if x == int(x) else f"{x:.2f} MB"


class Meter:
    """What one read has decoded so far, against ``budget``."""

    def __init__(self, budget: Budget = CLI):
        self.budget, self.decoded, self.rows = budget, 0, 0

    def _refuse(self, source: str, what: str) -> None:
        raise BudgetError(f"{what}, the {self.budget.name}'s budget (docs/FORMATS.md, Budgets); "
                          "nothing was read", source)

    def file(self, size: int, source: str) -> None:
        """Charge nothing; refuse a stored file larger than ``file_bytes``."""
        if size > self.budget.file_bytes:
            self._refuse(source, f"the file is {mb(size)}, more than {mb(self.budget.file_bytes)} per file")

    def add_bytes(self, n: int, source: str) -> None:
        """Charge ``n`` decoded bytes."""
        self.decoded += n
        if self.decoded > self.budget.decoded_bytes:
            self._refuse(source, f"decodes to more than {mb(self.budget.decoded_bytes)} of data")

    def add_rows(self, n: int, source: str) -> None:
        """Charge ``n`` rows."""
        self.rows += n
        if self.rows > self.budget.rows:
            self._refuse(source, f"more than {self.budget.rows:,} rows")

    @property
    def bytes_left(self) -> int:
        return max(self.budget.decoded_bytes - self.decoded, 0)

    def text(self, n_chars: int, source: str, row: int | None, column: str | None) -> None:
        """Refuse one text of ``n_chars`` characters beyond ``text_chars``."""
        if n_chars > self.budget.text_chars:
            err = BudgetError(f"a text of {n_chars:,} characters: over the {self.budget.name}'s budget of "
                              f"{self.budget.text_chars:,} characters per text", source, row, column)
            raise err

    def gunzip(self, data: bytes, source: str) -> bytes:
        """Decompress one gzip member, charging its output; refuses corrupt data and output
        beyond the decoded bytes left, without ever holding more than that."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        left = self.bytes_left
        try:
            out = d.decompress(data, left + 1)
        except zlib.error as e:
            raise BudgetError(f"not a valid gzip file ({e})", source) from None
        if len(out) > left or d.unconsumed_tail:
            self.add_bytes(left + 1, source)
        if not d.eof:
            raise BudgetError("truncated gzip file", source)
        self.add_bytes(len(out), source)
        return out


    def gunzip_lines(self, data: bytes | BinaryIO, source: str, charge: bool = True) -> Iterator[bytes]:
        """The lines (each with its ``\\n``) of one gzip member, decompressed a chunk at a time:
        never more than one line plus a chunk is held, a line beyond ``line_bytes`` is refused as
        soon as it passes it (a bomb of one huge line never decodes whole), and with ``charge``
        every decoded byte is charged as it comes (a reader that charges its lines itself passes
        False). Corrupt or truncated data is refused naming ``source``."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if isinstance(data, (bytes, bytearray, memoryview)):
            view = memoryview(data)
            chunks = (bytes(view[i:i + _CHUNK]) for i in range(0, len(view), _CHUNK))
            read = lambda: next(chunks, b"")  # noqa: E731
        else:
            read = lambda: data.read(_CHUNK)  # noqa: E731
        buf = bytearray()
        lineno = 0
        while not d.eof:
            feed = d.unconsumed_tail or read()
            try:
                out = d.decompress(feed, _CHUNK)
            except zlib.error as e:
                raise BudgetError(f"not a valid gzip file ({e})", source) from None
            if not feed and not out:
                break
            if charge:
                self.add_bytes(len(out), source)
            buf += out
            start = 0
            while (end := buf.find(b"\n", start)) >= 0:
                lineno += 1
                yield bytes(buf[start:end + 1])
                start = end + 1
            del buf[:start]
            if len(buf) > self.budget.line_bytes:
                raise BudgetError(f"line {lineno + 1} is longer than {mb(self.budget.line_bytes)}, the "
                                  f"{self.budget.name}'s budget per line (docs/FORMATS.md, Budgets); "
                                  "nothing was read", source)
        if not d.eof:
            raise BudgetError("truncated gzip file", source)
        if buf:
            yield bytes(buf)


_CHUNK = 1 << 20  #: bytes decompressed at a time by Meter.gunzip_lines
_CURRENT: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("crbc_budget_meter", default=None)


def meter() -> Meter:
    """The current read's meter (a fresh :data:`CLI` one outside any :func:`scope`)."""
    return _CURRENT.get() or Meter(CLI)


@contextlib.contextmanager
def scope(budget: Budget | None = None) -> Iterator[Meter]:
    """Make a new meter of ``budget`` current inside the block. ``budget=None`` keeps an
    enclosing scope's meter (so nested readers share one count), else starts a CLI one."""
    outer = _CURRENT.get()
    if budget is None and outer is not None:
        yield outer
        return
    token = _CURRENT.set(Meter(budget or CLI))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)
