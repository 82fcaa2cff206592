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

from crbc.registry import Registry

__all__ = [
    "get_importer", "Importer", "importers", "Reader", "register_importer", "REGISTRY",
    "unregister_importer"
]

Reader = Callable[..., Any]


@dataclass(frozen=True)
class Importer:
    """One source of users' rollouts.

    name: the ``--from`` value and the upload's format key. help: one line for the command's
    ``--help``. label: the upload's format choice. file_types: the endings the upload accepts
    (no dot). reader: the function or ``"module:function"``. takes_columns: ``--map`` (a column
    map, ``columns=``) applies to it. takes_threshold: success can be read from the score
    (``success_threshold=``); the native format carries the outcome itself.
    """

    name: str
    help: str
    label: str
    file_types: tuple[str, ...]
    reader: Reader | str
    takes_columns: bool = False
    takes_threshold: bool = True

    def load(self) -> Reader:
        """The reader function (imported from ``"module:function"`` on first use)."""
        if callable(self.reader):
            return self.reader
        module, _, func = self.reader.partition(":")
        return getattr(importlib.import_module(module), func)


REGISTRY: Registry[Importer] = Registry("source")


def register_importer(importer: Importer) -> Importer:
    """Add ``importer`` (a name already taken is refused: :meth:`crbc.registry.Registry.add`)."""
    return REGISTRY.add(importer)


def unregister_importer(name: str) -> None:
    """Remove importer ``name`` (absent: nothing happens)."""
    REGISTRY.remove(name)


def importers() -> list[Importer]:
    """Every registered importer, in registration order."""
    return REGISTRY.entries()


def get_importer(name: str) -> Importer:
    """The importer called ``name``; :class:`crbc.errors.UnknownNameError` listing the known ones."""
    return REGISTRY.get(name)
