"""A computed result (credits, credit intervals, a depth sweep, or the result of a computation a
layer above registers) as plain arrays and JSON, so a worker process can hand it back without
pickling anything. The allow-list is the built-in :data:`CLASSES` and the classes registered with
:func:`register` (the backups side by side, the advantage doctor's findings).

:func:`save` writes a dataclass of the allow-list :data:`CLASSES` as ``<name>.npz`` (every numpy
array field, numeric or fixed-width text; object arrays are refused) and returns its JSON meta
(the other fields: JSON values, None, a nested dataclass of the allow-list or a tuple of them, or the merged
:class:`crbc.process.Process`, which is never written: the reader attaches its own).
:func:`load` rebuilds it from the meta and the file (``np.load(allow_pickle=False)``), with the
reader's process in place of the writer's; a JSON list comes back as a tuple where the field
is declared a tuple.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from crbc.process import Process
from crbc.registry import Registry

__all__ = ["CLASSES", "load", "register", "REGISTERED", "save"]


#: the result classes a layer above registers (:func:`register`): its computations' results
REGISTERED: Registry[type] = Registry("result class", name_of=lambda c: c.__name__)


def register(*classes: type) -> None:
    """Allow the dataclasses ``classes`` as results (a layer above this one, e.g.
    :mod:`crbc.explain.backups_side`, registers its own when imported; again: nothing happens)."""
    for c in classes:
        if not dataclasses.is_dataclass(c):
            raise TypeError(f"{c.__name__} is not a dataclass")
        if c.__name__ not in REGISTERED:
            REGISTERED.add(c)


def _classes() -> dict[str, type]:
    from crbc.estimators.bootstrap import CreditIntervals
    from crbc.estimators.closure import DepthSweep
    from crbc.estimators.credits import Credits

    return {**{c.__name__: c for c in (Credits, CreditIntervals, DepthSweep)},
            **{c.__name__: c for c in REGISTERED.entries()}}


CLASSES = ("Credits", "CreditIntervals", "DepthSweep")  #: the built-in result classes


def _fields(obj: Any, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    name = type(obj).__name__
    known = _classes()
    if known.get(name) is not type(obj) or not dataclasses.is_dataclass(obj):
        raise TypeError(f"{name} is not a result class ({', '.join(known)})")
    meta: dict[str, Any] = {"class": name, "fields": {}}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                raise TypeError(f"{name}.{f.name}: an object array cannot be written without pickling")
            arrays[prefix + f.name] = v
            meta["fields"][f.name] = {"array": prefix + f.name}
        elif isinstance(v, Process):
            meta["fields"][f.name] = {"process": True}
        elif dataclasses.is_dataclass(v):
            meta["fields"][f.name] = {"result": _fields(v, f"{prefix}{f.name}.", arrays)}
        elif isinstance(v, tuple) and v and all(dataclasses.is_dataclass(x) for x in v):
            meta["fields"][f.name] = {"results": [_fields(x, f"{prefix}{f.name}.{i}.", arrays)
                                                  for i, x in enumerate(v)]}
        else:
            meta["fields"][f.name] = {"json": v}
    return meta


def save(obj: Any, folder: str | Path, name: str = "result") -> dict[str, Any]:
    """Write ``obj``'s arrays to ``folder/name.npz``; its JSON meta (the rest) is returned."""
    arrays: dict[str, np.ndarray] = {}
    meta = _fields(obj, "", arrays)
    np.savez(Path(folder) / f"{name}.npz", **arrays)
    return meta


def _build(meta: dict[str, Any], arrays, process: Process) -> Any:
    classes = _classes()
    cls = classes.get(meta.get("class"))
    if cls is None:
        raise ValueError(f"not a result class: {meta.get('class')!r}")
    tuples = {f.name for f in dataclasses.fields(cls) if str(f.type).startswith("tuple")}
    kwargs: dict[str, Any] = {}
    for field, how in meta["fields"].items():
        if "array" in how:
            kwargs[field] = arrays[how["array"]]
        elif "process" in how:
            kwargs[field] = process
        elif "result" in how:
            kwargs[field] = _build(how["result"], arrays, process)
        elif "results" in how:
            kwargs[field] = tuple(_build(x, arrays, process) for x in how["results"])
        else:
            v = how["json"]
            kwargs[field] = tuple(v) if field in tuples and isinstance(v, list) else v
    return cls(**kwargs)


def load(meta: dict[str, Any], folder: str | Path, process: Process, name: str = "result") -> Any:
    """The result :func:`save` wrote, its process field set to ``process`` (the same groups
    merged by the reader: the worker's step order is the reader's, :func:`crbc.process.merge`)."""
    with np.load(Path(folder) / f"{name}.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return _build(meta, arrays, process)
