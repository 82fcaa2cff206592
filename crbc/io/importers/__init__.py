"""Importers of users' own rollouts: step tables and other trainers' dumps -> rollout groups.

One module per source, each with a ``read_*`` function returning ``{iteration: [RolloutGroup]}``
(iteration ``None`` when the input carries none): :mod:`.steps` (``--from steps``, a table with
one row per step), :mod:`.verl_dump` (verl's ``rollout_data_dir``), :mod:`.rllm` (rLLM's episode
logs), :mod:`.art` (ART's trajectory Parquet). The validating core is :mod:`.rows`.
:func:`read_source` dispatches by name (``SOURCES``); :func:`read_uploads` reads files given
as bytes (an upload in the studio) the same way.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crbc.errors import FormatError
from crbc.io import budgets
from crbc.io.anchor_keys import AnchorKeySpec
from crbc.io.importers.rows import DEFAULT_COLUMNS, Imported, ImportFormatError, parse_columns_map

#: --from NAME -> (module, reader function, one-line description)
SOURCES: dict[str, tuple[str, str, str]] = {
    "steps": ("crbc.io.importers.steps", "read_steps", "a table, one row per step (JSON Lines, CSV, Parquet)"),
    "verl": ("crbc.io.importers.verl_dump", "read_verl", "verl's rollout_data_dir {step}.jsonl (V1 uids)"),
    "rllm": ("crbc.io.importers.rllm", "read_rllm", "rLLM's episode logs (trainer.log_episodes)"),
    "art": ("crbc.io.importers.art", "read_art", "ART's trajectories/{split}/{step:04d}.parquet"),
}

__all__ = ["DEFAULT_COLUMNS", "SOURCES", "ImportFormatError", "Imported", "parse_columns_map", "read_source",
           "read_uploads"]


def read_source(name: str, paths: Sequence[str | os.PathLike], *, columns: Mapping[str, str] | None = None,
                anchor: AnchorKeySpec = None, action: AnchorKeySpec = None,
                success_threshold: float | None = None, limit: int | None = None,
                budget: budgets.Budget | None = None, **options: Any) -> Imported:
    """``{iteration: [RolloutGroup]}`` of ``paths`` read as source ``name`` (a key of SOURCES).

    columns (field -> column) applies to ``steps`` only. anchor / action: the anchor key and the
    action key (None exact text, a regex, or a callable text -> str). budget: the decoded-size
    budget of the whole read (crbc.io.budgets; None: an enclosing scope's, else the CLI's).
    """
    if name not in SOURCES:
        raise ValueError(f"unknown source {name!r} (sources: {', '.join(SOURCES)})")
    module, func, _ = SOURCES[name]
    reader = getattr(importlib.import_module(module), func)
    if name == "steps":
        options["columns"] = columns
    elif columns is not None and dict(columns) != DEFAULT_COLUMNS:
        raise ValueError(f"--map applies to --from steps only, not to {name!r}")
    with budgets.scope(budget):
        return reader(paths, anchor=anchor, success_threshold=success_threshold, action=action,
                      limit=limit, **options)


def read_uploads(name: str, files: Mapping[str, bytes], **options: Any) -> Imported:
    """:func:`read_source` of in-memory files ``{file name: bytes}`` (an upload): they are
    written to a private temporary folder and read from there; errors and ``meta.source`` name
    the uploaded file, never the temporary path. ``options`` as for :func:`read_source`."""
    with tempfile.TemporaryDirectory(prefix="crbc-upload-") as tmp:
        paths, names = [], {}
        for i, (fname, data) in enumerate(files.items()):
            folder = Path(tmp) / str(i)  # one folder each: two uploads may share a name
            folder.mkdir()
            p = folder / (Path(fname).name or "upload")
            p.write_bytes(data)
            paths.append(p)
            names[str(p)] = fname
        try:
            imported = read_source(name, paths, **options)
        except FormatError as e:
            source = names.get(e.source, e.source.replace(tmp + os.sep, ""))
            raise type(e)(e.reason, source, e.line, e.field) from None
    for groups in imported.values():
        for g in groups:
            for r in g.rollouts:
                if r.meta.get("source") in names:
                    r.meta["source"] = names[r.meta["source"]]
    return imported
