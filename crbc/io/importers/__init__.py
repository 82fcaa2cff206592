"""Importers of users' own rollouts: step tables and other trainers' dumps -> rollout groups.

One module per source, each with a ``read_*`` function returning ``{iteration: [RolloutGroup]}``
(iteration ``None`` when the input carries none): :mod:`.native` (``--from rollout``, the
``crbc.rollout/1`` format itself and a run's iteration file), :mod:`.steps` (``--from steps``, a table with
one row per step), :mod:`.verl_dump` (verl's ``rollout_data_dir``), :mod:`.rllm` (rLLM's episode
logs), :mod:`.art` (ART's trajectory Parquet). The validating core is :mod:`.rows`.
The built-ins are registered here, in :mod:`.registry` (the list the ``import`` command and the
studio's upload both read); :func:`read_source` reads by name (or a registry entry);
:func:`read_uploads` reads files given as bytes (an upload in the studio) the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crbc.errors import FormatError
from crbc.io import budgets
from crbc.io.anchor_keys import AnchorKeySpec
from crbc.io.gc_pause import gc_paused
from crbc.io.importers.registry import Importer, get_importer, importers, register_importer
from crbc.io.importers.rows import DEFAULT_COLUMNS, Imported, ImportFormatError, parse_columns_map

for _builtin in (
    Importer("rollout", "crbc.rollout/1 JSON Lines, or a run's iter-NNNN.parquet (the native format)",
             "crbc.rollout/1 (.jsonl), or a run's iteration file (iter-NNNN.parquet)", ("jsonl", "parquet"),
             "crbc.io.importers.native:read_native", takes_threshold=False),
    Importer("steps", "a table, one row per step (JSON Lines, CSV, Parquet)", "step table (JSONL, CSV, Parquet)",
             ("jsonl", "csv", "parquet"), "crbc.io.importers.steps:read_steps", takes_columns=True),
    Importer("verl", "verl's rollout_data_dir {step}.jsonl (V1 uids)", "verl rollout_data_dir dump ({step}.jsonl)",
             ("jsonl",), "crbc.io.importers.verl_dump:read_verl"),
    Importer("rllm", "rLLM's episode logs (trainer.log_episodes)", "rLLM episode logs (.json)",
             ("json", "jsonl"), "crbc.io.importers.rllm:read_rllm"),
    Importer("art", "ART's trajectories/{split}/{step:04d}.parquet", "ART trajectories (.parquet)",
             ("parquet",), "crbc.io.importers.art:read_art"),
):
    register_importer(_builtin)
del _builtin

__all__ = ["DEFAULT_COLUMNS", "ImportFormatError", "Imported", "Importer", "get_importer", "importers",
           "parse_columns_map", "read_source", "read_uploads", "register_importer"]


def read_source(name: str | Importer, paths: Sequence[str | os.PathLike], *, columns: Mapping[str, str] | None = None,
                anchor: AnchorKeySpec = None, action: AnchorKeySpec = None,
                success_threshold: float | None = None, limit: int | None = None,
                budget: budgets.Budget | None = None, **options: Any) -> Imported:
    """``{iteration: [RolloutGroup]}`` of ``paths`` read as source ``name`` (a registered
    importer's name, or the :class:`Importer` itself).

    columns (field -> column) applies to importers that take a column map (``steps``) only. anchor / action: the anchor key and the
    action key (None exact text, a regex, or a callable text -> str). budget: the decoded-size
    budget of the whole read (crbc.io.budgets; None: an enclosing scope's, else the CLI's).
    """
    importer = name if isinstance(name, Importer) else get_importer(name)
    reader = importer.load()
    if importer.takes_columns:
        options["columns"] = columns
    elif columns is not None and dict(columns) != DEFAULT_COLUMNS:
        raise ValueError(f"--map applies to --from steps only, not to {importer.name!r}")
    with budgets.scope(budget), gc_paused():  # a Step per row, all kept: no cycle to look for
        return reader(paths, anchor=anchor, success_threshold=success_threshold, action=action,
                      limit=limit, **options)


def read_uploads(name: str | Importer, files: Mapping[str, bytes], **options: Any) -> Imported:
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
