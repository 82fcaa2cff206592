"""Reading untrusted uploads in a worker process with a wall-clock budget and a memory limit.

A shared server (the studio) must not read, key or merge a user's files on its own interpreter:
a slow read holds the GIL every session needs, and a file that decodes to gigabytes grows the
server. :func:`start_read` runs the read in a child process (``forkserver`` context: forked
from a small server process that has already imported the readers, so a child starts in
milliseconds and shares nothing with the studio's threads) that

* runs at a lower scheduling priority than the server (``nice`` + ``NICENESS``), so the other
  sessions' pages are served first while it reads;
* sets ``RLIMIT_AS`` to its own address space at start plus ``Limits.memory_bytes`` (a
  ``MemoryError`` there is reported as the memory budget, and the child is gone) and
  ``RLIMIT_CPU`` to ``Limits.cpu_seconds`` (the kernel stops it there: the CPU budget);
* reads under a decoded-size budget (:mod:`crbc.io.budgets`, the studio's by default),
  validates, applies the anchor key (RE2) and merges (:func:`crbc.process.merge_stats`);
* reports progress (rows and bytes decoded so far) as small JSON messages on a pipe;
* writes its result as ``crbc.rollout/1`` Parquet files, one per iteration, plus a JSON
  manifest in a private temporary folder. Only JSON text and those files cross between the
  processes; nothing is pickled or unpickled from user data. The parent reads them back with the
  validating Parquet reader.

The parent (:class:`ReadJob`) kills the child once ``Limits.seconds`` of wall clock have
passed (a looser bound than the CPU budget: a low-priority read on a busy server waits), when :meth:`ReadJob.cancel` is called, or when the child dies; every outcome is a
result or one line naming the file and the budget, never a traceback.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crbc.io import budgets
from crbc.io.importers.registry import Importer

#: how much lower the worker's scheduling priority is than the server's (``man 2 nice``)
NICENESS = 10
PRELOAD = ["crbc.sandbox.upload", "crbc.io.importers", "crbc.io.parquet_rollouts", "crbc.process", "pyarrow.parquet"]


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
    iteration the merge statistics ``stats`` {iteration: (shared_step_share, n_anchors,
    n_shared_anchors, n_steps)}; or ``error``, one line for people."""

    groups: dict[Any, list] | None = None
    stats: dict[Any, tuple[float, int, int, int]] | None = None
    error: str | None = None


_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(PRELOAD)
    return _CTX


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _arrow_threads_started() -> None:
    """One Arrow CPU thread and one IO thread, started now: under ``RLIMIT_AS`` a thread started
    later may find no address space for its stack, which Arrow reports as an unreadable file."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": [1]}), buf)
    pq.read_table(io.BytesIO(buf.getvalue()), use_threads=True)


def _error_line(e: BaseException, names: list[str], limits: Limits) -> str:
    """One line for people: the error's own message for our errors, else a plain description."""
    from crbc.errors import FormatError
    from crbc.io.anchor_keys import AnchorKeyError, RegexError

    shown = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    if isinstance(e, _Report):
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


class _Report(Exception):
    """Several bad lines of a rollout file, one per line (crbc.io.linecheck)."""


def _read(kind: str | Importer | None, files: dict[str, bytes], anchor: str | None, threshold: float | None):
    """{iteration: groups} of the files, as the studio reads them (kind None: crbc.rollout/1, and a
    run's ``iter-NNNN.parquet`` as the crbc.rollout/1 groups it holds)."""
    from crbc.io.anchor_keys import rekey
    from crbc.io.rollouts import RolloutFormatError, parse_rollouts

    if kind is not None:
        from crbc.io.importers import read_uploads

        return read_uploads(kind, files, anchor=anchor, success_threshold=threshold)
    from crbc.io.linecheck import bad_lines

    groups: list = []
    for name, data in files.items():
        if name.endswith(".parquet"):  # a run's iteration file (RunRecorder, crbc import): what it is
            from crbc.io.parquet_rollouts import read_parquet_rollouts

            groups.extend(rekey(read_parquet_rollouts(name, data), anchor or None))
            continue
        try:
            read = parse_rollouts(data, source=name)
        except RolloutFormatError as first:
            if isinstance(first, budgets.BudgetError):
                raise
            errs, more = bad_lines(data, name)
            if not errs or (len(errs) == 1 and not more):
                raise
            msg = "\n".join(str(e) for e in errs)
            raise _Report(msg + (f"\n... and more: only the first {len(errs)} problems are listed"
                                 if more else "")) from None
        groups.extend(rekey(read, anchor or None))
    return {None: groups}


def _child(conn, folder: str, kind: str | Importer | None, anchor: str | None, threshold: float | None,
           limits_json: str) -> None:
    """The worker: limits, read, key, merge statistics, Parquet files + manifest; messages are JSON."""
    import resource

    lim = json.loads(limits_json)
    budget = budgets.Budget(**lim["budget"])
    limits = Limits(lim["seconds"], lim["memory_bytes"], budget, lim["cpu_seconds"])
    os.nice(NICENESS)
    _arrow_threads_started()
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + limits.memory_bytes,) * 2)
    if limits.cpu_seconds is not None:  # soft: SIGXCPU ends the child; hard one second later: SIGKILL
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime + limits.cpu_seconds + 0.999)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    files = {}
    names = json.loads((Path(folder) / "names.json").read_text())
    for i, name in enumerate(names):
        files[name] = (Path(folder) / f"in-{i}").read_bytes()
    with budgets.scope(budget) as meter:
        done = threading.Event()

        def report() -> None:
            while not done.wait(0.25):
                conn.send_bytes(json.dumps({"rows": meter.rows, "bytes": meter.decoded}).encode())

        threading.Thread(target=report, daemon=True).start()
        try:
            imported = _read(kind, files, anchor, threshold)
            del files
            from crbc.io.parquet_rollouts import write_parquet_rollouts
            from crbc.process import merge_stats

            manifest = []
            for i, (it, groups) in enumerate(imported.items()):
                ms = merge_stats(groups) if groups else None
                write_parquet_rollouts(Path(folder) / f"out-{i}.parquet", groups)
                manifest.append({"iteration": it, "file": f"out-{i}.parquet", "stats": None if ms is None else [
                    ms.shared_step_share, ms.n_anchors, ms.n_shared_anchors, ms.n_steps]})
            done.set()
            conn.send_bytes(json.dumps({"done": manifest}).encode())
        except BaseException as e:  # noqa: BLE001 (every failure becomes one line)
            done.set()
            conn.send_bytes(json.dumps({"error": _error_line(e, names, limits)}).encode())
        finally:
            conn.close()


class ReadJob:
    """A read running in a worker process: :meth:`poll` for progress, :meth:`result` at the end,
    :meth:`cancel` to stop it (the worker is killed and its folder removed)."""

    def __init__(self, kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
                 threshold: float | None = None, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.names = list(files)
        self.folder = tempfile.mkdtemp(prefix="crbc-read-")
        os.chmod(self.folder, 0o700)
        for i, data in enumerate(files.values()):
            Path(self.folder, f"in-{i}").write_bytes(data)
        Path(self.folder, "names.json").write_text(json.dumps(self.names))
        ctx = _context()
        self._conn, child_conn = ctx.Pipe(duplex=False)
        lim = {"seconds": self.limits.seconds, "memory_bytes": self.limits.memory_bytes,
               "budget": self.limits.budget.__dict__, "cpu_seconds": self.limits.cpu_seconds}
        self.proc = ctx.Process(target=_child, args=(child_conn, self.folder, kind, anchor, threshold,
                                                     json.dumps(lim)), daemon=True)
        self.started = time.monotonic()
        self.proc.start()
        child_conn.close()
        self.progress: dict[str, int] = {"rows": 0, "bytes": 0}
        self._final: dict | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def poll(self, timeout: float = 0.2) -> bool:
        """Wait up to ``timeout`` s for news; True once the job has ended (result ready)."""
        if self._final is not None:
            return True
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                ready = self._conn.poll(max(left, 0))
            except (EOFError, OSError):
                ready = False
            if ready:
                try:
                    msg = json.loads(self._conn.recv_bytes(1 << 24))
                except (EOFError, OSError):
                    msg = None
                if msg is None:
                    self._end({"error": self._died()})
                elif "done" in msg or "error" in msg:
                    self._end(msg)
                else:
                    self.progress = msg
                if self._final is not None:
                    return True
                continue
            if not self.proc.is_alive() and not self._conn.poll(0):
                self._end({"error": self._died()})
                return True
            if self.elapsed > self.limits.seconds:
                self._end({"error": f"{self._shown()}: reading took longer than the time budget of "
                                    f"{self.limits.seconds:g} s; stopped, nothing was loaded"})
                return True
            if left <= 0:
                return False

    def _shown(self) -> str:
        return ", ".join(self.names) if len(self.names) <= 3 else f"{len(self.names)} files"

    def _died(self) -> str:
        self.proc.join(1)
        if self.proc.exitcode == -signal.SIGXCPU:  # RLIMIT_CPU's soft limit
            return (f"{self._shown()}: reading needed more than the CPU budget of {self.limits.cpu_seconds:g} s; "
                    "stopped, nothing was loaded")
        return (f"{self._shown()}: the reader stopped (exit code {self.proc.exitcode}), most likely at its "
                f"memory budget of {budgets.mb(self.limits.memory_bytes)}; nothing was loaded")

    def _end(self, msg: dict) -> None:
        if "done" in msg:
            self._final = msg
            self.proc.join(5)
        else:
            self._final = msg
            self._kill()

    def _kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)

    def result(self) -> ReadResult:
        """The groups (read back from the worker's Parquet files) or the error line; the folder
        is removed. Call once :meth:`poll` returned True."""
        from crbc.errors import FormatError
        from crbc.io.parquet_rollouts import read_parquet_rollouts

        msg = self._final or {"error": "the read did not finish"}
        try:
            if "error" in msg:
                return ReadResult(error=msg["error"])
            groups, stats = {}, {}
            with budgets.scope(self.limits.budget):
                for entry in msg["done"]:
                    it = entry["iteration"]
                    groups[it] = read_parquet_rollouts(Path(self.folder) / entry["file"])
                    stats[it] = tuple(entry["stats"]) if entry["stats"] else (0.0, 0, 0, 0)
            return ReadResult(groups, stats)
        except FormatError as e:
            return ReadResult(error=f"{self._shown()}: the worker's result could not be read ({e.reason})")
        finally:
            self.close()

    def cancel(self) -> None:
        """Stop the worker now and remove its folder."""
        if self._final is None:
            self._final = {"error": f"{self._shown()}: cancelled; nothing was loaded"}
        self._kill()
        self.close()

    def close(self) -> None:
        self._conn.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def warm() -> None:
    """Start the fork server now (it imports the readers once, about 3 s), so that the first
    upload does not wait for it."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def start_read(kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
               threshold: float | None = None, limits: Limits | None = None) -> ReadJob:
    """Start reading ``files`` ({name: bytes}) as ``kind`` (an importer by name, or its registry
    entry, which reaches the worker whole, so one registered after the worker started is read
    too; None for ``crbc.rollout/1``) with the anchor regex and success threshold, in a worker
    process."""
    return ReadJob(kind, files, anchor, threshold, limits)


def read_limited(kind: str | Importer | None, files: Mapping[str, bytes], anchor: str | None = None,
                 threshold: float | None = None, limits: Limits | None = None) -> ReadResult:
    """:func:`start_read` and wait for its result."""
    job = start_read(kind, files, anchor, threshold, limits)
    try:
        while not job.poll(0.5):
            pass
        return job.result()
    finally:
        job.cancel()
