"""One queue for the long jobs of a whole server (a run's audit): a bound, fair turns, no orphans.

A shared studio's sessions may each ask for work that takes minutes and gigabytes (an audit may
take 2 GB for 30 min); tabs are free to open, so a bound per session is no bound. The
:class:`JobQueue` holds every :class:`Ticket` of the server and

* runs at most ``max_running`` jobs at once (:data:`MAX_RUNNING`, ``$CRBC_MAX_JOBS``); the others
  wait, and :meth:`JobQueue.position` says how many are ahead of a ticket. Network addresses
  take turns: the next job is the oldest waiting one of the address whose last job started
  longest ago (an address with none started yet first), so a person who queues eight audits from
  eight fresh browsers delays anyone else's by at most one of them. Tickets of one address (a
  class behind one NAT; loopback, where Streamlit gives no address) wait in order of arrival;
* gives each owner (a browser: every tab of it; see ``ui.core.jobs``) one live ticket: a second ask
  from another tab of the same owner is refused with a line saying so, and a new ask from the
  same tab replaces its old ticket (the old job is cancelled). With one ticket per owner, first
  come first served is a fair share;
* optionally bounds the live tickets of one network address (``max_per_address``,
  ``$CRBC_JOBS_PER_ADDRESS``; off by default): a person who opens fresh browsers gets a fresh
  owner each time, so where every person has an address of their own (not a class behind one
  NAT, and not loopback, where Streamlit gives no address) this is the bound per person;
* ends a job nobody waits for: the page that asked calls :meth:`JobQueue.beat` whenever it polls
  (once a second); a ticket whose last beat is older than ``stale_s`` (:data:`STALE_S`,
  ``$CRBC_JOB_HEARTBEAT_S``) is cancelled, waiting or running, unless its ``connected()`` says
  the asking session is still there (a student who went on to another page, whose tab still
  holds its connection), so a closed tab frees its place;
* never runs two jobs of one ``key`` at once (two sessions auditing one run under one key wait
  for each other, never share a sidecar), and skips a waiting job whose result appeared
  meanwhile (``done_already``, e.g. the other session's audit wrote the file).

A background thread (started with the first ticket) is the only one that starts, polls and ends
the jobs (:class:`crbc.jobs.worker.WorkerJob`); pages only read a ticket's ``state``,
``progress`` and ``outcome``, so no two threads ever read one worker's pipe.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JobQueue", "MAX_RUNNING", "server_queue", "STALE_S", "TICK_S", "Ticket"]

MAX_RUNNING = int(os.environ.get("CRBC_MAX_JOBS") or 1)  #: jobs the server runs at once
STALE_S = float(os.environ.get("CRBC_JOB_HEARTBEAT_S") or 90)  #: seconds without a beat that end a job
#: live tickets one network address may hold (None: no bound; ``$CRBC_JOBS_PER_ADDRESS``)
PER_ADDRESS = int(os.environ["CRBC_JOBS_PER_ADDRESS"]) if os.environ.get("CRBC_JOBS_PER_ADDRESS") else None
TICK_S = 0.5  #: how often the queue's thread looks at its jobs

_ids = itertools.count(1)


@dataclass(eq=False)
class Ticket:
    """One asked-for job: who asked (``owner``: a browser; ``session``: its tab), what for
    (``key``), how to start it (``start() -> WorkerJob``), and its life: ``state`` ("waiting",
    "running", "done"), the job's last ``progress`` message, its ``outcome`` (``{"done": ...}``
    or ``{"error": line}``) once done."""

    owner: str
    session: str
    key: Hashable
    what: str
    start: Callable[[], Any]
    done_already: Callable[[], bool] | None = None
    connected: Callable[[], bool] | None = None
    address: str | None = None
    id: int = field(default_factory=lambda: next(_ids))
    state: str = "waiting"
    progress: dict = field(default_factory=dict)
    outcome: dict | None = None
    job: Any = None
    beat: float = field(default_factory=time.monotonic)
    asked: float = field(default_factory=time.monotonic)

    @property
    def live(self) -> bool:
        return self.state != "done"


class JobQueue:
    """The server's queue (module docstring)."""

    def __init__(self, max_running: int = MAX_RUNNING, stale_s: float = STALE_S, tick_s: float = TICK_S,
                 thread: bool = True, max_per_address: int | None = PER_ADDRESS):
        self.threaded = thread  # False: nothing moves until step() is called (tests)
        self.max_running = max(int(max_running), 1)
        self.max_per_address = None if max_per_address is None else max(int(max_per_address), 1)
        self.stale_s = float(stale_s)
        self.tick_s = float(tick_s)
        self._lock = threading.RLock()
        self._tickets: list[Ticket] = []  # live tickets, in order of arrival
        self._started: dict[str | None, float] = {}  # address -> when its last job started (live addresses)
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    # ---------------------------------------------------------------- what pages call
    def submit(self, owner: str, session: str, key: Hashable, what: str, start: Callable[[], Any],
               done_already: Callable[[], bool] | None = None,
               connected: Callable[[], bool] | None = None, address: str | None = None) -> tuple[Ticket | None, str | None]:
        """Queue a job: ``(ticket, None)``, or ``(None, line)`` when another tab of ``owner``
        already has one (waiting or running), or ``address`` holds ``max_per_address`` live
        tickets of other owners. The same tab's earlier ticket is cancelled.
        ``done_already()``: its result exists (skip it); ``connected()``: its session is still
        open (a stale heartbeat alone does not end it then)."""
        with self._lock:
            full = self._address_full(owner, address)
            if full:
                return None, full
            for t in list(self._tickets):
                if t.owner == owner and t.session != session:
                    return None, (f"{t.what} is already {'running' if t.state == 'running' else 'waiting'} "
                                  "in another tab of yours: one job per person at a time on this shared "
                                  "server. Cancel it there, or wait for it to finish.")
                if t.owner == owner:
                    self._end(t, {"error": f"{t.what}: replaced by your new request"})
            ticket = Ticket(owner, session, key, what, start, done_already, connected, address)
            self._tickets.append(ticket)
            self._ensure_thread()
        self._wake.set()
        return ticket, None

    def _address_full(self, owner: str, address: str | None) -> str | None:
        """The line refusing a ticket from ``address`` at its bound (other owners' live tickets)."""
        if self.max_per_address is None or address is None:
            return None
        held = sum(1 for t in self._tickets if t.address == address and t.owner != owner)
        if held < self.max_per_address:
            return None
        return (f"{held} jobs from your network address are already waiting or running (at most "
                f"{self.max_per_address} on this shared server). Wait for one to finish.")

    def beat(self, ticket: Ticket) -> None:
        """The asking page still waits for ``ticket`` (call it whenever the page polls)."""
        ticket.beat = time.monotonic()

    def cancel(self, ticket: Ticket, why: str | None = None) -> None:
        """End ``ticket`` now (its worker is killed); its outcome says it was cancelled."""
        with self._lock:
            self._end(ticket, {"error": why or f"{ticket.what}: cancelled"})
        self._wake.set()

    def position(self, ticket: Ticket) -> int:
        """0 while ``ticket`` runs (or is done), else how many tickets are running or waiting ahead of it."""
        with self._lock:
            if ticket.state != "waiting" or ticket not in self._tickets:
                return 0
            running = sum(t.state == "running" for t in self._tickets)
            return running + self._turns().index(ticket)

    def counts(self) -> tuple[int, int]:
        """(running, waiting) on the whole server."""
        with self._lock:
            running = sum(t.state == "running" for t in self._tickets)
            return running, len(self._tickets) - running

    # ---------------------------------------------------------------- the queue's own thread
    def _ensure_thread(self) -> None:
        if not self.threaded:
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="crbc-job-queue", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.tick_s)
            self._wake.clear()
            try:
                self.step()
            except Exception:  # noqa: BLE001 (the queue outlives any one job's failure)
                pass

    def step(self) -> None:
        """One look at every ticket: end stale ones, collect finished jobs, start waiting ones."""
        now = time.monotonic()
        with self._lock:
            for t in list(self._tickets):
                if now - t.beat > self.stale_s and not (t.connected is not None and _safe(t.connected)):
                    self._end(t, {"error": f"{t.what}: stopped, nobody waited for it for {self.stale_s:g} s "
                                           "(its page was closed)"})
                elif t.state == "running":
                    if t.job.poll(0):
                        self._end(t, t.job.outcome)
                    else:
                        t.progress = dict(t.job.progress)
            self._start_waiting(now)

    def _turns(self) -> list[Ticket]:
        """The waiting tickets in the order they start: by when their address last started a job
        (never first), then by arrival (module docstring)."""
        waiting = [t for t in self._tickets if t.state == "waiting"]  # in order of arrival
        return sorted(waiting, key=lambda t: self._started.get(t.address, float("-inf")))  # stable

    def _start_waiting(self, now: float) -> None:
        """Start waiting tickets in their turn while places are free; end those whose result
        appeared. The turns are taken again after each start (its address goes to the back)."""
        running = sum(t.state == "running" for t in self._tickets)
        looked: set[int] = set()
        while True:
            t = next((t for t in self._turns() if t.id not in looked), None)
            if t is None:
                return
            looked.add(t.id)
            if t.done_already is not None and _safe(t.done_already):
                self._end(t, {"done": {"already": True}})
                continue
            if running >= self.max_running or any(r.state == "running" and r.key == t.key for r in self._tickets):
                continue  # no place, or the same job runs for someone else: its result may serve this one
            try:
                t.job = t.start()
            except Exception as e:  # noqa: BLE001 (one line for the page, never a traceback)
                self._end(t, {"error": f"{t.what}: could not start ({type(e).__name__}: {str(e)[:200]})"})
                continue
            t.state = "running"
            self._started[t.address] = now
            running += 1

    def _end(self, t: Ticket, outcome: dict | None) -> None:
        if t.state == "done":
            return
        if t.job is not None and t.job.outcome is None:
            t.job.cancel()
        elif t.job is not None:
            t.job.close()
        t.outcome = outcome or {"error": f"{t.what}: ended without a result"}
        t.state = "done"
        if t in self._tickets:
            self._tickets.remove(t)
        if all(o.address != t.address for o in self._tickets):  # only live addresses are remembered
            self._started.pop(t.address, None)


def _safe(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:  # noqa: BLE001
        return False


_SERVER: JobQueue | None = None
_SERVER_LOCK = threading.Lock()


def server_queue() -> JobQueue:
    """The one queue of this server process."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None:
            _SERVER = JobQueue()
        return _SERVER
