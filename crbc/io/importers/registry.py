"""The one list of importers: name, help, the upload's label and file types, and the reader.

The ``import`` command's ``--from`` choices and the studio's upload formats are both read from
here, so an importer registered once (:func:`register_importer`) is offered by both. A reader
is ``reader(paths, *, anchor, action, success_threshold, limit, **options) -> Imported``
(``{iteration or None: [RolloutGroup]}``), given as the function or as ``"module:function"``
(imported when first used, so listing the importers loads none of them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Reader = Callable[..., Any]


@dataclass(frozen=True)
class Importer:
    """One source of users' rollouts.

    name: the ``--from`` value and the upload's format key. help: one line for the command's
    ``--help``. label: the upload's format choice. file_types: the endings the upload accepts
    (no dot). reader: the function or ``"module:function"``. takes_columns: ``--map`` (a column
    map, ``columns=``) applies to it.
    """

    name: str
    help: str
    label: str
    file_types: tuple[str, ...]
    reader: Reader | str
    takes_columns: bool = False

    def load(self) -> Reader:
        """The reader function (imported from ``"module:function"`` on first use)."""
        if callable(self.reader):
            return self.reader
        module, _, func = self.reader.partition(":")
        return getattr(importlib.import_module(module), func)


_IMPORTERS: dict[str, Importer] = {}


def register_importer(importer: Importer) -> Importer:
    """Add ``importer`` (a name already taken is replaced, keeping its place); returns it."""
    if not importer.name or not importer.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"an importer's name is letters, digits, '-' and '_': {importer.name!r}")
    _IMPORTERS[importer.name] = importer
    return importer


def unregister_importer(name: str) -> None:
    """Remove importer ``name`` (absent: nothing happens)."""
    _IMPORTERS.pop(name, None)


def importers() -> list[Importer]:
    """Every registered importer, in registration order."""
    return list(_IMPORTERS.values())


def get_importer(name: str) -> Importer:
    """The importer called ``name``; ValueError naming the known ones otherwise."""
    try:
        return _IMPORTERS[name]
    except KeyError:
        raise ValueError(f"unknown source {name!r} (sources: {', '.join(_IMPORTERS)})") from None
