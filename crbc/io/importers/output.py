"""Writing what an importer read: one ``crbc.rollout/1`` file, or a ``crbc.run/1`` folder
built in a temporary sibling folder and renamed into place (never half-written)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from crbc.io.importers.rows import Imported
from crbc.io.rollouts import write_rollouts

__all__ = ["iteration_numbers", "write_imported"]


def iteration_numbers(imported: Imported) -> dict[int, Any]:
    """Iteration number -> key of ``imported`` (the key ``None``, no iteration given, is 0)."""
    out = {}
    for k in imported:
        n = 0 if k is None else int(k)
        if n in out:
            raise ValueError("rows both with and without an iteration")
        out[n] = k
    return dict(sorted(out.items()))


def write_imported(out: str | os.PathLike, imported: Imported, meta: dict[str, Any] | None = None,
                   format: str = "jsonl") -> Path:
    """Write ``imported`` to ``out``: a ``.jsonl`` path is one rollout file (refused for several
    iterations); any other path a new run folder (refused when it exists and is not empty) with
    one rollout file per iteration (``format`` ``jsonl`` or ``parquet``) and a metrics line per
    iteration (success_rate, groups, rollouts, steps). ``meta`` goes into run.json."""
    from crbc.io.run_writer import RunWriter

    out = Path(out)
    its = iteration_numbers(imported)
    if out.name.endswith(".jsonl"):
        if len(its) > 1:
            raise ValueError(f"the rows carry {len(its)} iterations ({', '.join(map(str, its))}): "
                             "write a run folder (an OUT not ending in .jsonl)")
        write_rollouts(out, imported[next(iter(its.values()))])
        return out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        writer = RunWriter.create(tmp / "run", {
            "name": out.name, "config": {"estimator": "imported", **(meta or {}).get("config", {})},
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **{k: v for k, v in (meta or {}).items() if k != "config"}})
        for n, key in its.items():
            groups = imported[key]
            writer.write_rollouts(n, groups, format=format)
            rollouts = [r for g in groups for r in g.rollouts]
            writer.append_metrics({
                "iteration": n, "success_rate": sum(r.success for r in rollouts) / len(rollouts),
                "groups": len(groups), "rollouts": len(rollouts), "steps": sum(len(r) for r in rollouts)})
        if out.exists():
            out.rmdir()
        os.replace(tmp / "run", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
