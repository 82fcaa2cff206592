"""Saved training runs: reading and writing the ``crbc.run/1`` folder format (docs/FORMATS.md).

A run folder::

    <run>/
      run.json            {"schema": "crbc.run/1", "name", "config": {...}, "model", "created_at", ...}
      metrics.jsonl       one JSON object per completed iteration (``iteration`` 0, 1, 2, ...)
      rollouts/iter-0000.jsonl, ...   crbc.rollout/1 files of every iteration (meta.iteration set);
                          iter-0000.jsonl.gz, ... gzip-compressed (:func:`compress_rollouts`)
                          iter-0000.parquet, ... or Parquet (:mod:`crbc.io.parquet_rollouts`)
      checkpoint/, policy/            only while training / after it (never shipped in the repo)

Write discipline (so that Ctrl-C or a crash never leaves anything half-written):

* ``run.json`` and every rollout file are written through a temporary file and a rename
  (:func:`crbc.io.rollouts.atomic_write_lines`);
* ``metrics.jsonl`` is appended one whole line per iteration with a single ``write`` followed by
  ``flush`` and ``fsync``; an iteration counts as completed once its metrics line is there;
* the reader (:func:`read_run`) refuses a malformed line in the middle of ``metrics.jsonl`` with
  an error naming the file, the line and the field, and reports a trailing line without its
  newline (a half-written line) in :attr:`Run.partial_tail` instead of using it. It is never
  merged into the metrics.

Statistics over runs (curves, the experiment table, paired tests) are in :mod:`crbc.run_analysis.training_stats`.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from crbc.errors import RolloutFormatError, RunFormatError, os_reason, shown_value
from crbc.io.rollouts import (
    RolloutGroup,
    group_rollouts,
    iter_rollouts,
)

__all__ = [
    "DOCTOR_PREFIX", "find_runs", "GENERIC_NAMES", "run_label", "gunzip", "ITER_RE", "iteration_files",
    "MAX_GZ_BYTES", "metric_choice", "METRICS_FILE", "parse_meta",
    "parse_metrics", "read_meta", "read_run", "renamed", "ROLLOUT_FORMATS",
    "ROLLOUTS_DIR", "rollouts_name", "Run", "RUN_FILE", "RUN_SCHEMA", "trainer_metric_choice", "transcripts",
    "trainer_metric_names", "TRAINER_METRICS", "TRAINER_METRICS_MAX", "VERL_PREFIXES", "zip_member"
]

RUN_SCHEMA = "crbc.run/1"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
ROLLOUTS_DIR = "rollouts"
ITER_RE = re.compile(r"^iter-(\d{4,})\.(jsonl|jsonl\.gz|parquet)$")
MAX_GZ_BYTES = 1 << 30  #: refuse a compressed rollout file that expands beyond this


GENERIC_NAMES = frozenset({"crbc-run", "crbc", "run", "runs"})  #: folder names that name no run
_ROOT_FOLDERS = frozenset({"runs", "run", "rollouts", "checkpoints", "tmp", ""})  #: parents that name no experiment
_SEED_TAIL = re.compile(r"[-_.]?(s|seed)[-_]?\d+$")
ROLLOUT_FORMATS = ("jsonl", "parquet")  #: the formats a writer may choose (readers take all, and .jsonl.gz)


def run_label(meta: dict[str, Any], source: str) -> str:
    """A run's name for people, from its run.json ``meta`` and its folder ``source``: run.json's
    name (verl's ``project/experiment``; else the folder's), the experiment folder in front of a
    bare name (``sokoban-6x6-n64-80/crbc-s0``: every experiment of ``crbc experiment`` has a
    ``crbc-s0``), and ``· seed N`` unless the name already ends in ``sN``."""
    name = str(meta.get("name") or Path(source).name)
    zipped = source.endswith(".zip")
    folder = "" if zipped else Path(source).resolve().parent.name
    if name in GENERIC_NAMES and folder:
        name, folder = f"{folder}/{name}", ""
    cfg = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    if "/" not in name and not (cfg.get("project") or cfg.get("experiment")) and folder \
            and folder not in _ROOT_FOLDERS:
        name = f"{folder}/{name}"
    seed = cfg.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) \
            and not re.search(rf"(^|[-_./ ])(s|seed)[-_]?{seed}$", name):
        name += f" · seed {seed}"
    return name


def rollouts_name(iteration: int, format: str = "jsonl") -> str:
    """File name of an iteration's rollouts: ``iter-0007.jsonl`` (or ``.parquet``)."""
    if format not in ROLLOUT_FORMATS:
        raise ValueError(f"unknown rollout file format {format!r} (formats: {', '.join(ROLLOUT_FORMATS)})")
    return f"iter-{int(iteration):04d}.{format}"


# --------------------------------------------------------------------------------------------
# reading


@dataclass(frozen=True, eq=False, repr=False)
class Run:
    """A parsed run: ``meta`` (run.json), ``metrics`` (one dict per completed iteration, in order),
    ``iterations_with_rollouts``, and ``partial_tail``: the text of a trailing half-written
    metrics line that was *not* used (None when the file ends cleanly)."""

    source: str
    meta: dict[str, Any]
    metrics: list[dict[str, Any]]
    iterations_with_rollouts: tuple[int, ...]
    partial_tail: str | None = None
    _files: dict[int, Any] = field(default_factory=dict, repr=False)
    _zip: bytes | None = field(default=None, repr=False)
    #: iteration -> validated crbc.rollout/1 Parquet bytes (a run archive read in a worker,
    #: crbc.jobs.run_archive); when set, iterations are read from these
    _parquet: dict[int, bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """run.json's name, else the folder's; a generic one (the documented recipe's folder
        ``crbc-run``, :data:`GENERIC_NAMES`) becomes ``<parent folder>/<name>``: verl's
        ``default_local_dir`` is ``checkpoints/<project>/<experiment>``, so the experiment."""
        name = str(self.meta.get("name") or Path(self.source).name)
        parent = Path(self.source).resolve().parent.name if not self.source.endswith(".zip") else ""
        return f"{parent}/{name}" if name in GENERIC_NAMES and parent else name

    @property
    def label(self) -> str:
        """The run as people tell it apart (:func:`run_label`); never a path cut short."""
        return run_label(self.meta, self.source)

    @property
    def experiment(self) -> str:
        """What the seeds of one experiment share: :attr:`label` without its seed (``· seed N``,
        or a trailing ``-sN`` / ``_seedN`` of the name), so runs averaged over seeds are runs of
        one experiment and one estimator."""
        return _SEED_TAIL.sub("", self.label.split(" · seed ")[0]) or self.label

    def __repr__(self) -> str:
        """Short: the name, the source and the sizes (never every metric, as the dataclass's would)."""
        return (f"Run({self.label!r}, source={self.source!r}, iterations={len(self.metrics)}, "
                f"with_rollouts={len(self.iterations_with_rollouts)}, metrics={len(self.metric_names())})")

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.meta.get("config") or {})

    @property
    def estimator(self) -> str:
        return str(self.config.get("estimator", "?"))

    @property
    def seed(self) -> int | None:
        s = self.config.get("seed")
        return int(s) if isinstance(s, int) else None

    @property
    def last_iteration(self) -> int:
        """Last completed iteration (-1 when none)."""
        return self.metrics[-1]["iteration"] if self.metrics else -1

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(iterations, values)`` of a metric; iterations without it (or with null) are skipped."""
        its, vals = [], []
        for m in self.metrics:
            v = m.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                its.append(m["iteration"])
                vals.append(float(v))
        return np.asarray(its, dtype=int), np.asarray(vals, dtype=float)

    def metric_names(self) -> list[str]:
        names: dict[str, None] = {}
        for m in self.metrics:
            for k, v in m.items():
                if k != "iteration" and isinstance(v, (int, float)) and not isinstance(v, bool):
                    names[k] = None
        return list(names)

    def trainer_metric_names(self, limit: int | None = None) -> list[str]:
        """The trainer's own metrics worth a curve (:func:`trainer_metric_names`)."""
        return trainer_metric_names(self.metric_names(), limit or TRAINER_METRICS_MAX)

    def trainer_metric_choice(self, limit: int | None = None) -> tuple[list[str], list[str], list[str]]:
        """``(drawn, capped, zero)`` of :func:`trainer_metric_choice`, the doctor's all-zero counts
        read from this run's metrics."""
        return metric_choice(self.metrics, limit)

    def rollouts(self, iteration: int) -> list[RolloutGroup]:
        """The validated groups of one iteration (all or nothing, like every rollout reader)."""
        if iteration not in self._files:
            raise KeyError(f"{self.source}: no rollouts saved for iteration {iteration}")
        ref = self._files[iteration]
        if self._parquet is not None:
            from crbc.io.parquet_rollouts import read_parquet_rollouts

            return read_parquet_rollouts(f"{self.source}/{ref}", self._parquet[iteration])
        if self._zip is None:  # a folder: the one rollout reader (JSONL, gzip, Parquet by magic bytes)
            from crbc.io.rollout_files import read_rollouts

            return read_rollouts(ref)
        if str(ref).endswith(".parquet"):
            from crbc.io.parquet_rollouts import read_parquet_rollouts

            with zipfile.ZipFile(io.BytesIO(self._zip)) as z:
                return read_parquet_rollouts(f"{self.source}/{ref}", zip_member(z, ref, self.source))
        with zipfile.ZipFile(io.BytesIO(self._zip)) as z:
            data = zip_member(z, ref, self.source)
        if ref.endswith(".gz"):
            data = gunzip(data, f"{self.source}/{ref}")
        groups = group_rollouts(iter_rollouts(data.splitlines(), f"{self.source}/{ref}"))
        if not groups:
            raise RolloutFormatError("no rollouts found (the file is empty)", f"{self.source}/{ref}")
        return groups


#: the CPU trainer's metric names (crbc train), drawn first when a run has them
TRAINER_METRICS = ("eval_success_rate", "success_rate", "mean_return", "mean_length", "loss", "kl")
#: verl's and the recorder's metric families (verl-agent's ``episode/...``, verl's
#: ``compute_data_metrics``, the recorder's ``crbc/...``), drawn in this order after the CPU
#: trainer's: the trainer's own curves first, ours after them, the doctor's counts last
VERL_PREFIXES = ("episode/", "critic/", "actor/", "response_length/", "env/", "val/", "crbc/")
DOCTOR_PREFIX = "crbc/doctor/"  #: the recorder's doctor counts: after every other curve
TRAINER_METRICS_MAX = 24  #: curves drawn at most
_SKIP = ("/max", "/min", "/clip_ratio", "record_seconds", "timing", "perf/")


def trainer_metric_names(names: list[str], limit: int = TRAINER_METRICS_MAX) -> list[str]:
    """Of a run's numeric metric ``names``, those worth a curve, in order: :data:`TRAINER_METRICS`,
    then verl's names by family (:data:`VERL_PREFIXES`, each in the run's order; the recorder's
    ``crbc/doctor/...`` counts after all of them; extremes ``.../max``, ``.../min``, timings and the
    recorder's own seconds left out); at most ``limit``."""
    return trainer_metric_choice(names, limit)[0]


def trainer_metric_choice(names: list[str], limit: int = TRAINER_METRICS_MAX,
                          all_zero: frozenset[str] | set[str] = frozenset()
                          ) -> tuple[list[str], list[str], list[str]]:
    """``(drawn, capped, zero)``: :func:`trainer_metric_names`' order cut at ``limit``, the
    curve-worthy names past the cap, and the ``all_zero`` doctor counts (``crbc/doctor/<check>``
    that are 0 on every iteration: the doctor section says they are silent), never drawn."""
    have = set(names)
    out = [m for m in TRAINER_METRICS if m in have]
    for prefix in VERL_PREFIXES:
        out += [m for m in names if m.startswith(prefix) and not m.startswith(DOCTOR_PREFIX)
                and not any(k in m for k in _SKIP)]
    doctor = [m for m in names if m.startswith(DOCTOR_PREFIX)]
    out += [m for m in doctor if m not in all_zero]
    return out[:limit], out[limit:], [m for m in doctor if m in all_zero]


def metric_choice(metrics: list[dict[str, Any]], limit: int | None = None
                  ) -> tuple[list[str], list[str], list[str]]:
    """:func:`trainer_metric_choice` of metrics.jsonl's lines (numeric names in order of first
    appearance; a ``crbc/doctor/<check>`` that is 0 wherever logged counts as all zero)."""
    names: dict[str, None] = {}
    nonzero: set[str] = set()
    for m in metrics:
        for k, v in m.items():
            if k != "iteration" and isinstance(v, (int, float)) and not isinstance(v, bool):
                names[k] = None
                if v != 0:
                    nonzero.add(k)
    zero = {k for k in names if k.startswith(DOCTOR_PREFIX) and k not in nonzero}
    return trainer_metric_choice(list(names), limit or TRAINER_METRICS_MAX, zero)


def iteration_files(folder: Path) -> dict[int, Path]:
    """Iteration -> its rollout file; where both ``.jsonl`` and ``.jsonl.gz`` exist (a compression
    that was interrupted), the plain file; ``.parquet`` only where neither exists."""
    if not folder.is_dir():
        return {}
    out = {}
    for p in sorted(folder.iterdir(), key=lambda q: q.name, reverse=True):  # plain after .gz
        m = ITER_RE.match(p.name)
        if m and p.is_file():
            out[int(m.group(1))] = p
    return dict(sorted(out.items()))


def gunzip(data: bytes, source: str, limit: int | None = None) -> bytes:
    """Decompress a gzip member, refusing corrupt data and anything that expands beyond ``limit``
    (a decompression bomb in an upload) with an error that names ``source``. ``limit=None``:
    the current decoded-size budget (crbc.io.budgets), which the output is charged to."""
    import zlib

    if limit is None:
        from crbc.io import budgets

        return budgets.meter().gunzip(data, source)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as e:
        raise RolloutFormatError(f"not a valid gzip file ({e})", source) from None
    if len(out) > limit or d.unconsumed_tail:
        raise RolloutFormatError(f"expands beyond {limit // 2**20} MB", source)
    if not d.eof:
        raise RolloutFormatError("truncated gzip file", source)
    return out


def parse_meta(text: str | bytes, source: str) -> dict[str, Any]:
    """Validate the text of ``run.json``."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        meta = json.loads(text.removeprefix("\ufeff"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise RunFormatError(f"not valid JSON ({e})", source) from None
    except RecursionError:
        raise RunFormatError("not valid JSON (nested too deeply)", source) from None
    if not isinstance(meta, dict):
        raise RunFormatError("expected a JSON object", source)
    if meta.get("schema") != RUN_SCHEMA:
        raise RunFormatError(f"unsupported schema {meta.get('schema')!r} (expected {RUN_SCHEMA!r})",
                             source, field="schema")
    if not isinstance(meta.get("config", {}), dict):
        raise RunFormatError("must be an object", source, field="config")
    return meta


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    p = Path(path) / RUN_FILE
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise RunFormatError(f"cannot read file ({os_reason(e)})", str(p)) from None
    return parse_meta(text, str(p))


def parse_metrics(data: str | bytes, source: str) -> tuple[list[dict[str, Any]], str | None]:
    """Parse ``metrics.jsonl``: ``(records, partial_tail)``.

    Every complete line must be a JSON object with an integer ``iteration``, strictly increasing;
    anything else raises :class:`RunFormatError` (file, line, field). A last line without its
    trailing newline was being written when the writer stopped: it is returned as
    ``partial_tail`` and not used, even if it happens to parse.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RunFormatError(f"not valid UTF-8 ({e.reason})", source) from None
    lines = data.split("\n")
    tail = lines.pop()  # text after the last newline: "" when the file ends cleanly
    records: list[dict[str, Any]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line.removeprefix("\ufeff") if lineno == 1 else line,
                             parse_constant=_reject_constant)
        except ValueError as e:
            raise RunFormatError(f"not valid JSON ({e})", source, lineno, "(line)") from None
        except RecursionError:
            raise RunFormatError("not valid JSON (nested too deeply)", source, lineno, "(line)") from None
        if not isinstance(obj, dict):
            raise RunFormatError("expected a JSON object", source, lineno, "(line)")
        it = obj.get("iteration")
        if not isinstance(it, int) or isinstance(it, bool) or it < 0:
            raise RunFormatError(f"must be a non-negative integer, got {shown_value(it)}", source, lineno, "iteration")
        if records and it <= records[-1]["iteration"]:
            raise RunFormatError(f"iteration {it} does not follow {records[-1]['iteration']}",
                                 source, lineno, "iteration")
        records.append(obj)
    return records, (tail if tail.strip() else None)


def read_run(path: str | os.PathLike) -> Run:
    """Read and validate a ``crbc.run/1`` folder (docs/FORMATS.md).

    Args:
        path: the run folder (``run.json``, ``metrics.jsonl``, ``rollouts/``).

    Returns:
        :class:`Run`: ``meta`` (run.json), ``metrics`` (one dict per completed iteration; a
        half-written last line is set aside in ``partial_tail``, see :func:`parse_metrics`), and
        ``rollouts(i)``, which reads and validates iteration i's groups when asked.

    Raises:
        RunFormatError: a missing or malformed run.json or metrics line, naming file and line.
    """
    path = Path(path)
    meta = read_meta(path)
    mpath = path / METRICS_FILE
    try:
        data = mpath.read_bytes() if mpath.exists() else b""
    except OSError as e:
        raise RunFormatError(f"cannot read file ({os_reason(e)})", str(mpath)) from None
    metrics, tail = parse_metrics(data, str(mpath))
    files = iteration_files(path / ROLLOUTS_DIR)
    return Run(str(path), meta, metrics, tuple(files), tail, files)


def zip_member(z: zipfile.ZipFile, name: str, source: str) -> bytes:
    """The bytes of one archive member; a forged or corrupt member (a bad CRC, a broken deflate
    stream, an unsupported compression, a header that lies about its size) raises
    :class:`RunFormatError` naming ``source/name``."""
    import zlib

    try:
        return z.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, OSError) as e:
        why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise RunFormatError(f"a broken or forged archive member ({why})", f"{source}/{name}") from None


def transcripts(groups: list[RolloutGroup]) -> list[RolloutGroup]:
    """The groups of a keyed run with every step's anchor back to the text its key was taken from
    (the recorder keeps that text as the step's ``obs``), so another key applies to the whole
    transcript, not to the first key's result; the groups unchanged when a step kept no text."""
    if any(s.obs is None for g in groups for r in g.rollouts for s in r.steps):
        return groups
    return [RolloutGroup(g.group, tuple(replace(r, steps=tuple(replace(s, anchor=s.obs) for s in r.steps))
                                        for r in g.rollouts)) for g in groups]


def renamed(run: Run, name: str) -> Run:
    """The same run shown under another name (e.g. an upload named like a run already shown)."""
    return replace(run, meta={**run.meta, "name": name})


def find_runs(root: str | os.PathLike) -> list[Path]:
    """Run folders (holding ``run.json``) under ``root``, sorted by path."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.parent for p in root.rglob(RUN_FILE) if p.is_file())
