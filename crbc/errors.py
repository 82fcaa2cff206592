"""The error types of crbc: bad files (one base for every format), bad arguments, unknown names.

Every error here is a :class:`ValueError` (except :class:`UsageError`), so callers that only
care about "bad input" catch ``ValueError``; the command line (:mod:`crbc.cli.main`) turns each into
one line on standard error and exit status 2.
"""

from __future__ import annotations

import reprlib

__all__ = [
    "bounded_message", "BudgetError", "FormatError", "MAX_MESSAGE_CHARS", "NAME_MAX_BYTES", "PATH_MAX_BYTES",
    "os_reason", "path_limit_message", "path_limit_reason", "RolloutFormatError", "RunFormatError", "shown_value",
    "SHOWN_VALUE_CHARS", "UnknownEstimatorError", "UnknownNameError", "UsageError"
]

SHOWN_VALUE_CHARS = 80    #: a bad value is quoted in a message up to this many characters
MAX_MESSAGE_CHARS = 2000  #: the command line prints at most this much of one error message
_SHOWN = reprlib.Repr()  # (Python 3.11's Repr takes no keyword arguments)
_SHOWN.maxlevel, _SHOWN.maxlong = 2, 40
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = _SHOWN.maxfrozenset = _SHOWN.maxdeque = 8
_SHOWN.maxarray, _SHOWN.maxdict = 8, 4
_SHOWN.maxstring = _SHOWN.maxother = SHOWN_VALUE_CHARS


def shown_value(value: object) -> str:
    """``repr(value)`` as an error message quotes it: whole when short, else at most
    :data:`SHOWN_VALUE_CHARS` characters of it (made by :mod:`reprlib`, so a 1,000,000-entry list
    is never rendered whole) followed by how long it was, e.g.
    ``[0, 0, 0, 0, 0, 0, 0, 0, ...] (a list of 1,000,000 entries)``."""
    try:
        text = _SHOWN.repr(value)
    except ValueError:  # an int beyond Python's digit limit for str()
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"  # type: ignore[attr-defined]
    cut = len(text) > SHOWN_VALUE_CHARS
    if cut:
        text = text[:SHOWN_VALUE_CHARS - 3] + "..."
    if isinstance(value, (str, bytes)) and (cut or len(value) > SHOWN_VALUE_CHARS):
        return f"{text} (a text of {len(value):,} characters)"
    if isinstance(value, (list, tuple, dict, set, frozenset)) and (cut or len(value) > 8):
        kind = type(value).__name__
        unit = "keys" if isinstance(value, dict) else "entries"
        return f"{text} (a {kind} of {len(value):,} {unit})"
    return text


def bounded_message(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters, saying how long it was (a backstop for values a
    message quotes without :func:`shown_value`)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... (message cut: {len(message):,} characters in all)"


NAME_MAX_BYTES = 255    #: the longest file or folder name (one part of a path) Linux file systems take
PATH_MAX_BYTES = 4096   #: the longest whole path Linux takes (PATH_MAX, the final NUL included)


def path_limit_reason(path: str) -> str | None:
    """Which file-system limit ``path`` breaks, said with the limit: a part longer than
    :data:`NAME_MAX_BYTES` bytes (UTF-8; the part quoted by :func:`shown_value`), else a whole
    path of :data:`PATH_MAX_BYTES` bytes or more; None when it breaks neither (the operating
    system's bare "File name too long" names neither the limit nor which part)."""
    for part in str(path).split("/"):
        n = len(part.encode("utf-8", errors="surrogateescape"))
        if n > NAME_MAX_BYTES:
            return (f"the file or folder name {shown_value(part)} is {n:,} bytes; "
                    f"a name (one part of a path) may be at most {NAME_MAX_BYTES} bytes")
    n = len(str(path).encode("utf-8", errors="surrogateescape"))
    if n >= PATH_MAX_BYTES:
        return f"the path is {n:,} bytes; a whole path must be under {PATH_MAX_BYTES:,} bytes"
    return None


def path_limit_message(path: str) -> str | None:
    """:func:`path_limit_reason` after the path (cut by :func:`shown_value`), or None."""
    why = path_limit_reason(path)
    return None if why is None else f"{shown_value(str(path))}: {why}"


def os_reason(e: OSError) -> str:
    """An OSError's reason for a message about its file: the limit broken for a name or path too
    long (:func:`path_limit_reason` of ``e.filename``), else the system's ``strerror``."""
    import errno

    if e.errno == errno.ENAMETOOLONG and e.filename is not None:
        import os

        why = path_limit_reason(os.fsdecode(e.filename))
        if why:
            return why
    return str(e.strerror)


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
