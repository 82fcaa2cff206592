"""Writing a ``crbc.run/1`` folder: run.json, metrics.jsonl and one rollout file per iteration,
each swapped in atomically; gzipping a finished run's rollout files."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crbc.io.rollouts import RolloutGroup, atomic_write_lines, dumps_rollout
from crbc.io.runs import (
    ITER_RE,
    METRICS_FILE,
    ROLLOUTS_DIR,
    RUN_FILE,
    RUN_SCHEMA,
    read_meta,
    read_run,
    rollouts_name,
)

__all__ = ["compact_groups", "compress_rollouts", "json_clean", "RunWriter"]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, sort_keys=False)


def json_clean(x: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to None."""
    if isinstance(x, dict):
        return {str(k): json_clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def compact_groups(groups: Sequence[RolloutGroup]) -> list[RolloutGroup]:
    """Drop ``obs`` where it equals the anchor (lossless for the tiny policy; halves the files)."""
    import dataclasses

    out = []
    for g in groups:
        rs = []
        for r in g.rollouts:
            steps = tuple(dataclasses.replace(s, obs=None) if s.obs == s.anchor else s for s in r.steps)
            rs.append(dataclasses.replace(r, steps=steps))
        out.append(RolloutGroup(g.group, tuple(rs)))
    return out


class RunWriter:
    """Writes one run folder. ``RunWriter.create`` starts a run; ``RunWriter.open`` continues one.

    Methods: :meth:`write_rollouts` (atomic, per iteration), :meth:`append_metrics` (one flushed
    line), :meth:`truncate` (forget iterations after a resume point).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def create(cls, path: str | os.PathLike, meta: dict[str, Any]) -> RunWriter:
        """Start a run folder; refuses a folder that already holds a run."""
        w = cls(path)
        if (w.path / RUN_FILE).exists():
            raise FileExistsError(f"{w.path} already holds a run (use resume, or another folder)")
        w.path.mkdir(parents=True, exist_ok=True)
        record = {"schema": RUN_SCHEMA, **json_clean(meta)}
        atomic_write_lines(w.path / RUN_FILE, [json.dumps(record, ensure_ascii=False, indent=2,
                                                          allow_nan=False)])
        (w.path / METRICS_FILE).touch()
        (w.path / ROLLOUTS_DIR).mkdir(exist_ok=True)
        return w

    @classmethod
    def open(cls, path: str | os.PathLike) -> RunWriter:
        w = cls(path)
        read_meta(w.path)  # validates run.json
        (w.path / ROLLOUTS_DIR).mkdir(exist_ok=True)
        return w

    def update_meta(self, **fields: Any) -> None:
        meta = read_meta(self.path)
        meta.update(json_clean(fields))
        atomic_write_lines(self.path / RUN_FILE, [json.dumps(meta, ensure_ascii=False, indent=2,
                                                             allow_nan=False)])

    def write_rollouts(self, iteration: int, groups: Sequence[RolloutGroup], format: str = "jsonl") -> Path:
        """Write an iteration's groups atomically (``obs`` dropped where it equals the anchor) as
        ``iter-NNNN.jsonl`` or, with ``format="parquet"``, ``iter-NNNN.parquet``."""
        path = self.path / ROLLOUTS_DIR / rollouts_name(iteration, format)
        if format == "parquet":
            from crbc.io.parquet_rollouts import write_parquet_rollouts

            return write_parquet_rollouts(path, compact_groups(groups))
        atomic_write_lines(path, (dumps_rollout(r) for g in compact_groups(groups) for r in g.rollouts))
        return path

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one completed iteration's metrics as one line: one write, flush, fsync."""
        if not isinstance(record.get("iteration"), int):
            raise ValueError("a metrics record needs an integer 'iteration'")
        line = _dumps(json_clean(record)) + "\n"
        with open(self.path / METRICS_FILE, "a", encoding="utf-8", newline="\n") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def truncate(self, last_iteration: int) -> None:
        """Keep only iterations ``<= last_iteration`` (metrics lines, rollout and token files).

        Used by resume: whatever came after the last checkpoint (including a half-written
        metrics line) is dropped explicitly and redone.
        """
        run = read_run(self.path)
        keep = [m for m in run.metrics if m["iteration"] <= last_iteration]
        atomic_write_lines(self.path / METRICS_FILE, [_dumps(m) for m in keep])
        from crbc.io.tokens import TOKENS_RE

        folder = self.path / ROLLOUTS_DIR
        for p in folder.iterdir() if folder.is_dir() else []:
            m = ITER_RE.match(p.name) or TOKENS_RE.match(p.name)  # rollouts and their token files
            if m and p.is_file() and int(m.group(1)) > last_iteration:
                p.unlink()


# --------------------------------------------------------------------------------------------
# reading



def compress_rollouts(run_dir: str | os.PathLike) -> int:
    """Gzip every plain ``rollouts/iter-NNNN.jsonl`` of a run folder into ``.jsonl.gz`` (written
    through a temporary file and a rename, then the plain file removed; reproducible bytes).
    Returns how many files were compressed. Text rollouts of one run repeat the same boards, so
    they shrink about 40 times."""
    import gzip

    from crbc.io.rollouts import atomic_write_chunks

    n = 0
    folder = Path(run_dir) / ROLLOUTS_DIR
    for p in sorted(folder.glob("iter-*.jsonl")) if folder.is_dir() else []:
        if not ITER_RE.match(p.name):
            continue
        packed = gzip.compress(p.read_bytes(), compresslevel=9, mtime=0)
        atomic_write_chunks(p.with_name(p.name + ".gz"), [packed])
        p.unlink()
        n += 1
    return n
