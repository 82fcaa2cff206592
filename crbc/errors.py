"""The error types of crbc: bad files (one base for every format), bad arguments, unknown names.

Every error here is a :class:`ValueError` (except :class:`UsageError`), so callers that only
care about "bad input" catch ``ValueError``; the command line (:mod:`crbc.cli.main`) turns each into
one line on standard error and exit status 2.
"""

from __future__ import annotations

__all__ = [
    "BudgetError", "FormatError", "RolloutFormatError", "RunFormatError", "UnknownEstimatorError",
    "UnknownNameError", "UsageError"
]


class FormatError(ValueError):
    """A file (or in-memory record) breaks one of the formats of docs/FORMATS.md.

    The message reads ``source[:line]: field: message``: ``source`` is the file name (or a label
    such as ``upload.jsonl``), ``line`` the 1-based line number (``None`` when not from a line of
    a file) and ``field`` the dotted path of the bad field. ``reason`` is the bare message.
    """

    def __init__(self, message: str, source: str = "<input>", line: int | None = None,
                 field: str | None = None):
        self.source, self.line, self.field, self.reason = source, line, field, message
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


class RolloutFormatError(FormatError):
    """A rollout file (or record) breaks the ``crbc.rollout/1`` contract."""


class RunFormatError(FormatError):
    """A run folder (or archive) breaks the ``crbc.run/1`` contract."""


class UsageError(Exception):
    """Bad arguments or input that a command detected itself (exit status 2)."""


class UnknownNameError(KeyError, ValueError):
    """No entry of a :class:`crbc.registry.Registry` has this name (a KeyError for lookups, a
    ValueError for input); the message names the kind and lists the known names."""

    def __str__(self) -> str:  # KeyError would print the repr
        return str(self.args[0])


class UnknownEstimatorError(UnknownNameError):
    """No estimator is registered under this name."""


class BudgetError(RolloutFormatError):
    """An input decodes to more than a reader's budget allows (crbc.io.budgets): the message names
    the file, what ran over (file bytes, decoded bytes, rows, one text) and the budget."""
