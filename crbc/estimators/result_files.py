"""A computed result (credits, credit intervals, a depth sweep) as plain arrays and JSON, so a
worker process can hand it back without pickling anything.

:func:`save` writes a dataclass of the allow-list :data:`CLASSES` as ``<name>.npz`` (every numpy
array field, numeric or fixed-width text; object arrays are refused) and returns its JSON meta
(the other fields: JSON values, None, a nested dataclass of the allow-list, or the merged
:class:`crbc.process.Process`, which is never written: the reader attaches its own).
:func:`load` rebuilds it from the meta and the file (``np.load(allow_pickle=False)``), with the
reader's process in place of the writer's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from crbc.process import Process

__all__ = ["CLASSES", "load", "save"]


def _classes() -> dict[str, type]:
    from crbc.estimators.bootstrap import CreditIntervals
    from crbc.estimators.closure import DepthSweep
    from crbc.estimators.credits import Credits

    return {c.__name__: c for c in (Credits, CreditIntervals, DepthSweep)}


CLASSES = ("Credits", "CreditIntervals", "DepthSweep")


def _fields(obj: Any, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    name = type(obj).__name__
    if name not in CLASSES or not dataclasses.is_dataclass(obj):
        raise TypeError(f"{name} is not a result class ({', '.join(CLASSES)})")
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
    kwargs: dict[str, Any] = {}
    for field, how in meta["fields"].items():
        if "array" in how:
            kwargs[field] = arrays[how["array"]]
        elif "process" in how:
            kwargs[field] = process
        elif "result" in how:
            kwargs[field] = _build(how["result"], arrays, process)
        else:
            kwargs[field] = how["json"]
    return cls(**kwargs)


def load(meta: dict[str, Any], folder: str | Path, process: Process, name: str = "result") -> Any:
    """The result :func:`save` wrote, its process field set to ``process`` (the same groups
    merged by the reader: the worker's step order is the reader's, :func:`crbc.process.merge`)."""
    with np.load(Path(folder) / f"{name}.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return _build(meta, arrays, process)
