"""Reading untrusted uploads in a worker process with CPU, wall-clock and memory budgets.

A shared server (the studio) must not read, key or merge a user's files on its own interpreter:
a slow read holds the GIL every session needs, and a file that decodes to gigabytes grows the
server. :func:`start_read` runs the read as a :class:`crbc.jobs.worker.WorkerJob` (a child of
the fork server at a lower scheduling priority than the server, ``RLIMIT_AS`` at its size plus
``Limits.memory_bytes``, ``RLIMIT_CPU`` at ``Limits.cpu_seconds``, killed after
``Limits.seconds`` of wall clock, a looser bound: a low-priority read on a busy server waits;
on Cancel; or reported when it dies) that

* reads under a decoded-size budget (:mod:`crbc.io.budgets`, the studio's by default),
  validates, applies the anchor key (RE2) and measures how well it merges (:func:`crbc.process.merge_profile`);
* reports progress (rows and bytes decoded so far) as small JSON messages;
* gets its importer as JSON (name, ``"module:function"`` of the reader, whether it takes a
  column map), so one registered after the fork server started is read too;
* writes its result as ``crbc.rollout/1`` Parquet files, one per iteration, plus a JSON
  manifest in a private temporary folder. Only JSON text and those files cross between the
  processes; nothing is pickled or unpickled from user data. The parent reads them back with the
  validating Parquet reader.

Every outcome is a result or one line naming the file and the budget, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crbc.io import budgets
from crbc.io.gc_pause import gc_paused
from crbc.io.importers.registry import Importer
from crbc.jobs.worker import NICENESS, Send, WorkerFailure, WorkerJob
from crbc.jobs.worker import warm as _warm_server

__all__ = ["NICENESS", "PRELOAD", "Limits", "ReadJob", "ReadResult", "read_limited", "start_read", "warm"]


@dataclass(frozen=True)
class Limits:
    """A read's budgets: wall-clock ``seconds``, ``memory_bytes`` of address space beyond the
    child's size at start, the decoded-size ``budget`` of the readers, and ``cpu_seconds`` of
    CPU time (None: no CPU limit)."""

    seconds: float = 180.0
    memory_bytes: int = 1500 * budgets.MB
    budget: budgets.Budget = budgets.STUDIO
    cpu_seconds: float | None = 60.0


@dataclass(frozen=True)
class ReadResult:
    """What a finished read gives: ``groups`` {iteration or None: [RolloutGroup]}, and per
    iteration how well its anchors merge, ``profiles`` {iteration: :class:`crbc.process.MergeProfile`}
    (None for an iteration without groups), computed in the worker; or ``error``, one line for
    people."""

    groups: dict[Any, list] | None = None
    profiles: dict[Any, Any] | None = None
    error: str | None = None


def _error_line(e: BaseException, names: list[str], limits: Limits) -> str:
    """One line for people: the error's own message for our errors, else a plain description."""
    from crbc.errors import FormatError
    from crbc.io.anchor_keys import AnchorKeyError, RegexError
    from crbc.io.importers.native import BadLinesError

    shown = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    if isinstance(e, BadLinesError):
        return str(e)
    if isinstance(e, (FormatError, AnchorKeyError, RegexError)):
        return " ".join(str(e).split())
    if isinstance(e, MemoryError):
        return (f"{shown}: reading needed more than the memory budget of "
                f"{budgets.mb(limits.memory_bytes)}; nothing was loaded")
    if isinstance(e, RecursionError):
        return f"{shown}: nested too deeply to read; nothing was loaded"
    if isinstance(e, ValueError):
        return f"{shown}: {' '.join(str(e).split())[:300]}"
    return f"{shown}: could not be read ({type(e).__name__}); nothing was loaded"


def _kind_json(kind: str | Importer | None) -> str | dict | None:
    """An importer as JSON for the worker: its name, or its registry entry with the reader as
    ``"module:function"`` (a reader that is no module-level function cannot be sent: ValueError)."""
    if not isinstance(kind, Importer):
        return kind
    reader = kind.reader
    if callable(reader):
        name = f"{reader.__module__}:{reader.__qualname__}"
        if "<" in name or "." in reader.__qualname__:
            raise ValueError(f"importer {kind.name!r}: its reader must be a module-level function")
        reader = name
    return {"name": kind.name, "help": kind.help, "label": kind.label, "file_types": list(kind.file_types),
            "reader": reader, "takes_columns": kind.takes_columns, "takes_threshold": kind.takes_threshold}


def _kind_from_json(kind: str | dict | None) -> str | Importer | None:
    if isinstance(kind, dict):
        return Importer(kind["name"], kind["help"], kind["label"], tuple(kind["file_types"]), kind["reader"],
                        kind["takes_columns"], kind["takes_threshold"])
    return kind


def _read(kind: str | Importer | None, files: dict[str, bytes], anchor: str | None, threshold: float | None):
    """{iteration: groups} of the files, read by the importer ``kind`` (None: the native
    ``rollout`` importer, crbc.rollout/1 and a run's ``iter-NNNN.parquet``)."""
    from crbc.io.importers import read_uploads

    return read_uploads(kind or "rollout", files, anchor=anchor or None, success_threshold=threshold)


def _read_job(payload: dict, send: Send) -> list[dict]:
    """The worker's target: read, key, merge profile, Parquet files; returns the manifest
    (per iteration its file and merge profile). Raises :class:`WorkerFailure` with one line."""
    folder, anchor, threshold = payload["folder"], payload["anchor"], payload["threshold"]
    kind = _kind_from_json(payload["kind"])
    budget = budgets.Budget(**payload["budget"])
    limits = Limits(payload["seconds"], payload["memory_bytes"], budget, payload["cpu_seconds"])
    names = json.loads((Path(folder) / "names.json").read_text())
    files = {name: (Path(folder) / f"in-{i}").read_bytes() for i, name in enumerate(names)}
    with budgets.scope(budget) as meter:
        done = threading.Event()

        def report() -> None:
            while not done.wait(0.25):
                send({"rows": meter.rows, "bytes": meter.decoded})

        threading.Thread(target=report, daemon=True).start()
        try:
            with gc_paused():  # the read, merge and write only add live acyclic objects (crbc.io.gc_pause)
                imported = _read(kind, files, anchor, threshold)
                del files  # the input's bytes, not needed while writing
                return _write_results(folder, imported)
        except BaseException as e:  # noqa: BLE001 (every failure becomes one line)
            raise WorkerFailure(_error_line(e, names, limits)) from None
        finally:
            done.set()


def _write_results(folder: str, imported: dict) -> list[dict]:
    """Each iteration's groups as ``out-{i}.parquet`` in ``folder``; the manifest (per iteration
    its file and merge profile; the profile's NaN share as null)."""
    from crbc.io.parquet_rollouts import write_parquet_rollouts
    from crbc.process import merge_profile

    manifest = []
    for i, (it, groups) in enumerate(imported.items()):
        mp = merge_profile(groups) if groups else None
        write_parquet_rollouts(Path(folder) / f"out-{i}.parquet", groups)
        manifest.append({"iteration": it, "file": f"out-{i}.parquet", "profile": None if mp is None else [
            mp.n_anchors, mp.n_steps, mp.shared_share, mp.later_steps,
            None if mp.later_share != mp.later_share else mp.later_share]})
    return manifest


def _profile(entry) -> Any:
    """The manifest's profile as a :class:`crbc.process.MergeProfile` (None: no groups)."""
    from crbc.process import MergeProfile

    if not entry:
        return None
    n_anchors, n_steps, shared, later_steps, later = entry
    return MergeProfile(int(n_anchors), int(n_steps), float(shared), int(later_steps),
                        float("nan") if later is None else float(later))


class LimitedRead(WorkerJob):
    """A worker job that reads a user's files under :class:`Limits` (``self.limits``, set before
    ``WorkerJob.__init__``): its endings worded for the person who uploaded them, naming
    :attr:`what` (the files) and the budget, and saying that nothing was loaded."""

    limits: Limits
    folder: str = ""

    def make_folder(self, prefix: str) -> str:
        """The job's private folder (mode 0700; its inputs and the worker's results), owned by the
        job: :meth:`close` removes it, whatever the ending."""
        self.folder = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.folder, 0o700)
        return self.folder

    def close(self) -> None:
        super().close()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def start(self, target, payload: dict, what: str) -> None:
        """``WorkerJob.__init__`` with the limits' budgets."""
        WorkerJob.__init__(self, target, payload, seconds=self.limits.seconds, memory_bytes=self.limits.memory_bytes,
                           cpu_seconds=self.limits.cpu_seconds, what=what)

    def died(self) -> str:
        if self.cpu_exhausted():
            return (f"{self.what}: reading needed more than the CPU budget of {self.limits.cpu_seconds:g} s; "
                    "stopped, nothing was loaded")
        return (f"{self.what}: the reader stopped (exit code {self.proc.exitcode}), most likely at its "
                f"memory budget of {budgets.mb(self.limits.memory_bytes)}; nothing was loaded")

    def timed_out(self) -> str:
        return (f"{self.what}: reading took longer than the time budget of "
                f"{self.limits.seconds:g} s; stopped, nothing was loaded")

    def cancelled(self) -> str:
        return f"{self.what}: cancelled; nothing was loaded"


class ReadJob(LimitedRead):
    """A read running in a worker process: :meth:`poll` for progress (rows, bytes), :meth:`result`
    at the end, :meth:`cancel` to stop it (the worker is killed and its folder removed)."""

    def __init__(self, kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
                 threshold: float | None = None, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.names = list(files)
        self.make_folder("crbc-read-")
        for i, data in enumerate(files.values()):
            Path(self.folder, f"in-{i}").write_bytes(data)
        Path(self.folder, "names.json").write_text(json.dumps(self.names))
        payload = {"folder": self.folder, "kind": _kind_json(kind), "anchor": anchor, "threshold": threshold,
                   "seconds": self.limits.seconds, "memory_bytes": self.limits.memory_bytes,
                   "budget": self.limits.budget.__dict__, "cpu_seconds": self.limits.cpu_seconds}
        self.start(_read_job, payload, ", ".join(self.names) if len(self.names) <= 3 else f"{len(self.names)} files")
        self.progress = {"rows": 0, "bytes": 0}

    def result(self) -> ReadResult:
        """The groups (read back from the worker's Parquet files) or the error line; the folder
        is removed. Call once :meth:`poll` returned True."""
        from crbc.errors import FormatError
        from crbc.io.parquet_rollouts import read_parquet_rollouts

        msg = self.outcome or {"error": "the read did not finish"}
        try:
            if "error" in msg:
                return ReadResult(error=msg["error"])
            groups, profiles = {}, {}
            with budgets.scope(self.limits.budget):
                for entry in msg["done"]:
                    it = entry["iteration"]
                    groups[it] = read_parquet_rollouts(Path(self.folder) / entry["file"])
                    profiles[it] = _profile(entry.get("profile"))
            return ReadResult(groups, profiles)
        except FormatError as e:
            return ReadResult(error=f"{self.what}: the worker's result could not be read ({e.reason})")
        finally:
            self.close()


#: what the studio's jobs run (an upload's read, a key, a run archive, an audit): the fork server
#: imports them once when the studio starts it (:func:`warm`)
PRELOAD = ("crbc.jobs.upload", "crbc.jobs.keying", "crbc.jobs.run_archive", "crbc.io.importers",
           "crbc.io.parquet_rollouts", "crbc.process", "pyarrow.parquet", "crbc.audit")


def warm() -> None:
    """Start the fork server now with the studio's job modules (:data:`PRELOAD`, about 3 s), so
    that the first upload does not wait for it."""
    _warm_server(PRELOAD)


def start_read(kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
               threshold: float | None = None, limits: Limits | None = None) -> ReadJob:
    """Start reading ``files`` ({name: bytes}) as ``kind`` (an importer by name or its registry
    entry; None for ``crbc.rollout/1``) with the anchor regex and success threshold, in a worker
    process."""
    return ReadJob(kind, files, anchor, threshold, limits)


def read_limited(kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
                 threshold: float | None = None, limits: Limits | None = None) -> ReadResult:
    """:func:`start_read` and wait for its result."""
    job = start_read(kind, files, anchor, threshold, limits)
    try:
        job.wait()
        return job.result()
    finally:
        job.cancel()
