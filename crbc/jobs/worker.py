"""A job in a worker process with CPU, wall-clock and memory budgets, progress and Cancel.

The machinery every bounded job shares (an upload's read, :mod:`.upload`; a run's audit,
:func:`crbc.audit.audit_job`). :class:`WorkerJob` starts ``target(payload, send)`` in a child
process of the ``forkserver`` context: forked from a small server process that imported
the modules its first caller names (:func:`warm`) once, so a child starts in milliseconds and shares nothing with the parent's
threads. The child

* lowers its scheduling priority by :data:`NICENESS` (``nice``), in a session and, where Linux
  groups processes by session for scheduling (autogroup), an autogroup of its own at the same
  niceness (:func:`lowest_priority`), so the server's sessions and every other program are served
  first while it works; it is killed with the process that started it;
* starts Arrow's one CPU and one IO thread (under ``RLIMIT_AS`` a thread started later may find
  no room for its stack, which Arrow reports as an unreadable file);
* sets ``RLIMIT_AS`` to its own address space at start plus ``memory_bytes`` and, when given,
  ``RLIMIT_CPU`` to ``cpu_seconds`` (the kernel ends it there with ``SIGXCPU``);
* calls ``target`` (a module-level function) with ``payload``, plain JSON data, and ``send``,
  which posts a progress message (a JSON object) to the parent;
* posts ``{"done": <target's JSON result>}``, or ``{"error": <one line>}``: the text of a
  :class:`WorkerFailure` the target raised, else a plain description of what went wrong.

Only JSON text crosses between the processes: nothing of the user's is pickled. The parent kills
the child once ``seconds`` of wall clock have passed, when :meth:`WorkerJob.cancel` is called, or
when the child dies (most often at its memory limit); every outcome is a result or one line.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = [
    "children_without_main", "context", "lowest_priority", "MESSAGE_MAX", "NICENESS", "Send", "vm_bytes",
    "warm", "WorkerFailure", "WorkerJob"
]

MESSAGE_MAX = 1 << 24  #: bytes of one message from the child
NICENESS = 19  #: how much lower the child's scheduling priority is than the parent's (``man 2 nice``; 19: the lowest)

Send = Callable[[dict], None]
_CTX = None


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def children_without_main() -> Iterator[None]:
    """Start child processes that do not run the parent's ``__main__`` file. A forkserver or
    spawn child re-runs the main module's file (as ``__mp_main__``) before its target: under
    Streamlit that is the page script (each script run becomes ``__main__``), under pytest it may
    be a script file deleted since (AppTest.from_function), which kills the child. While this
    context is open, ``__main__`` is a bare module; it is put back afterwards."""
    with _MAIN_LOCK:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


class WorkerFailure(Exception):
    """Raised by a job's target with the one line its user should read."""


def context(preload: Sequence[str] = ()):
    """The forkserver context. The first call decides what its server imports when it starts
    (``preload``, module names: the jobs' own modules, given by whoever runs them); later calls
    get the same context."""
    global _CTX
    if _CTX is None:
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(list(preload))
    return _CTX


def warm(preload: Sequence[str]) -> None:
    """Start the fork server now, importing ``preload`` once (a few seconds), so that the first
    job does not wait for it (the studio calls it at start with the modules of its jobs)."""
    from multiprocessing import forkserver

    context(preload)
    forkserver.ensure_running()


def vm_bytes() -> int:
    """This process's address space (``VmSize``), 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _arrow_threads_started() -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": [1]}), buf)
    pq.read_table(io.BytesIO(buf.getvalue()), use_threads=True)


def lowest_priority() -> None:
    """This process at the lowest priority: ``nice`` :data:`NICENESS`, and in a new session whose
    autogroup is at the same niceness.

    Under autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on in most desktop
    kernels) the CPU is shared fairly between sessions first, and a nice value only ranks the
    processes of one session: a worker at nice 19 left in the server's session still takes as
    much as any other session (a browser's) while the server waits, and what it takes counts
    against the server's share. On Linux the process is also killed when the process that
    started it (the forkserver, which ends with the server) ends, since signals sent to the
    server's process group no longer reach a worker in its own session."""
    os.nice(NICENESS)
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):
        os.setsid()
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as f:
        f.write(str(NICENESS))
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _entry(conn, target: Callable[[dict, Send], Any], payload_json: str, memory_bytes: int,
           cpu_seconds: float | None) -> None:
    """The child: priority, Arrow's threads, the limits, then ``target``; every message is one
    JSON object."""
    import resource

    lowest_priority()
    _arrow_threads_started()
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + memory_bytes,) * 2)
    if cpu_seconds is not None:  # soft: SIGXCPU ends the child; hard one second later: SIGKILL
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime + cpu_seconds + 0.999)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    def send(msg: dict) -> None:
        conn.send_bytes(json.dumps(msg).encode())

    try:
        send({"done": target(json.loads(payload_json), send)})
    except WorkerFailure as e:
        send({"error": str(e)})
    except MemoryError:
        send({"error": "the job needed more than its memory budget"})
    except BaseException as e:  # noqa: BLE001 (every failure becomes one line)
        send({"error": f"the job failed ({type(e).__name__})"})
    finally:
        conn.close()


class WorkerJob:
    """``target(payload, send)`` running in a worker process (module docstring): :meth:`poll`
    for progress (:attr:`progress`, the last message), :attr:`outcome` once it ended
    (``{"done": ...}`` or ``{"error": line}``), :meth:`cancel` to stop it. Subclasses word the
    three endings the child cannot report itself (:meth:`died`, :meth:`timed_out`,
    :meth:`cancelled`)."""

    def __init__(self, target: Callable[[dict, Send], Any], payload: dict, *, seconds: float,
                 memory_bytes: int, cpu_seconds: float | None = None, what: str = "the job"):
        self.what = what
        self.seconds = float(seconds)
        self.memory_bytes = int(memory_bytes)
        self.cpu_seconds = cpu_seconds
        ctx = context()
        self._conn, child_conn = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_entry, args=(child_conn, target, json.dumps(payload), self.memory_bytes,
                                                     self.cpu_seconds),
                                daemon=True)
        self.started = time.monotonic()
        with children_without_main():
            self.proc.start()
        child_conn.close()
        self.progress: dict = {}
        self.outcome: dict | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def running(self) -> bool:
        return self.outcome is None

    def cpu_exhausted(self) -> bool:
        """The child was ended by its CPU budget (``RLIMIT_CPU``'s ``SIGXCPU``); waits up to a
        second for a dying child's exit code."""
        self.proc.join(1)
        return self.proc.exitcode == -signal.SIGXCPU

    def died(self) -> str:
        if self.cpu_exhausted():
            return f"{self.what}: needed more than the CPU budget of {self.cpu_seconds:g} s; stopped"
        return (f"{self.what}: the worker stopped (exit code {self.proc.exitcode}), most likely at its "
                f"memory budget of {self.memory_bytes / 2**20:.0f} MB")

    def timed_out(self) -> str:
        return f"{self.what}: took longer than the time budget of {self.seconds:g} s; stopped"

    def cancelled(self) -> str:
        return f"{self.what}: cancelled"

    def poll(self, timeout: float = 0.2) -> bool:  # noqa: C901
        """Wait up to ``timeout`` s for news; True once the job has ended (:attr:`outcome` set)."""
        if self.outcome is not None:
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
                    msg = json.loads(self._conn.recv_bytes(MESSAGE_MAX))
                except (EOFError, OSError, ValueError):
                    msg = None
                if not isinstance(msg, dict):
                    self._end({"error": self.died()})
                elif "done" in msg or "error" in msg:
                    self._end(msg)
                else:
                    self.progress = msg
                if self.outcome is not None:
                    return True
                continue
            if not self.proc.is_alive() and not self._conn.poll(0):
                self.proc.join(1)
                self._end({"error": self.died()})
                return True
            if self.elapsed > self.seconds:
                self._end({"error": self.timed_out()})
                return True
            if left <= 0:
                return False

    def wait(self) -> dict:
        """Block until the job has ended; its :attr:`outcome`."""
        while not self.poll(0.5):
            pass
        return self.outcome

    def _end(self, msg: dict) -> None:
        self.outcome = msg
        if "done" in msg:
            self.proc.join(5)
        else:
            self._kill()

    def _kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)

    def cancel(self) -> None:
        """Stop the worker now (its outcome, if it had none: :meth:`cancelled`) and close."""
        if self.outcome is None:
            self.outcome = {"error": self.cancelled()}
        self._kill()
        self.close()

    def close(self) -> None:
        self._conn.close()
