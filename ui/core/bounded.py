"""What a page computes on a user's large upload runs as a bounded job, as the upload's read does.

:func:`compute` runs :class:`crbc.estimators.worker_job.EstimateJob` (credits, credit intervals or the
depth sweep in a worker process: a time, CPU and memory budget, a lower priority) and waits for
it, saying on the page what it waits for. At most :data:`AT_ONCE` such jobs run on the server
at once and one per person (a browser, :func:`ui.core.jobs.owner`); the others wait in turn, up to
:data:`WAIT_S` seconds. The jobs of one run of a page share :data:`PAGE_S` seconds from the run's
start (:func:`start_run`, called by ``app.py``), so a page that asks for several ends with its
answer or its notice within that time however many it asks for: a job gets what is left (at
most the worker's own budget), and one cut by the page's time is not kept (the next visit tries
again). A fragment's rerun has only the worker's budget. A job ends with its result or a :class:`Refused` line naming the budget
and the command that computes it whole; when the page's script stops (its tab closed, or a
rerun) the job is killed with it. :mod:`ui.core.context` decides what goes here: a private context's
process of more than :data:`crbc.estimators.worker_job.INLINE_STEPS` steps.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from crbc.estimators.worker_job import LIMITS, EstimateJob, EstimateRefused, command
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process

__all__ = ["AT_ONCE", "compute", "findings", "PAGE_S", "Refused", "show", "start_run", "WAIT_S"]

AT_ONCE = 2  #: bounded computations running at once on the server
WAIT_S = 60.0  #: how long a computation waits for its turn before it is told to try again
PAGE_S = 50.0  #: the seconds the bounded computations of one run of a page share (with its drawing: under 60)
MIN_JOB_S = 2.0  #: a job is not started with less of the page's time left than this
_RUN_START = "_crbc_run_started"


def start_run() -> None:
    """Mark the start of a run of the page (``app.py``): its computations share :data:`PAGE_S`."""
    st.session_state[_RUN_START] = time.monotonic()


def _page_left() -> float:
    """Seconds left of this run's :data:`PAGE_S` (inf in a fragment's rerun or without a start)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    started = st.session_state.get(_RUN_START)
    if started is None or ctx is None or ctx.fragment_ids_this_run:
        return float("inf")
    return PAGE_S - (time.monotonic() - started)


@dataclass(frozen=True)
class Refused:
    """A computation that ended without its result: the line to show."""

    message: str


def show(refused: Refused, then: str = "") -> None:
    """The notice on the page, with ``then`` (what the reader can do instead) after it, and the
    page stops (what follows needs the result)."""
    st.warning(refused.message + (f"\n\n{then}" if then else ""), icon=":material/hourglass_disabled:")
    st.stop()


def _gates(server, owner: str) -> tuple[threading.BoundedSemaphore, threading.Lock]:
    slots = server.kept("service", ("estimate_slots",), lambda: threading.BoundedSemaphore(AT_ONCE))
    mine = server.kept("owner", ("estimate", owner), threading.Lock)
    return slots, mine


def _wait(gate, slot, text: str, started: float) -> bool:
    while not gate.acquire(timeout=0.5):
        if time.monotonic() - started > WAIT_S or _page_left() < MIN_JOB_S:
            return False
        slot.caption(text)
    return True


def _limits(page_line: str):
    """The worker's budgets with the page's time left as its wall clock, or NotKept(Refused)."""
    from ui.core.context import NotKept

    left = _page_left()
    if left < MIN_JOB_S:
        raise NotKept(Refused(page_line))
    return LIMITS if left >= LIMITS.seconds else dataclasses.replace(LIMITS, seconds=left)


def compute(groups: Sequence[RolloutGroup], process: Process | None, what: str, estimator: str,
            params: Mapping[str, Any], *, label: str, n_resamples: int = 200, table: Any = None,
            steps: int | None = None):
    """``what`` of ``estimator`` on ``groups`` (merged by the caller into ``process``, or None for a
    result that holds none, e.g. the doctor's findings: then ``steps`` says their size; ``table``:
    the groups as a rollout table, when the caller keeps one) in a bounded worker: the result, or
    :class:`Refused`. A wait for a turn that runs out raises :class:`ui.core.context.NotKept` (the
    next rerun asks again)."""
    from ui.core import jobs
    from ui.core.context import NotKept, server

    slots, mine = _gates(server(), jobs.owner())
    slot, started = st.empty(), time.monotonic()
    size = process.n_steps if process is not None else int(steps or 0)
    whole = command(what, estimator, params, n_resamples)
    busy = (f"Server busy: {label} waits for a worker ({AT_ONCE} run at once on this server, one per person). "
            f"Or run it whole on your machine: `{whole}`")
    page_line = (f"{label}: stopped when this page's computations reached the studio's {PAGE_S:g} s. Open the "
                 f"page again to go on. Run it whole on your machine: `{whole}`")
    if not _wait(mine, slot, f"{label} waits for your other computation to finish...", started):
        slot.empty()
        raise NotKept(Refused(busy))
    job = None
    try:
        if not _wait(slots, slot, f"{label} waits for a worker ({AT_ONCE} at once on this server)...", started):
            raise NotKept(Refused(busy))
        try:
            limits = _limits(page_line)
            job = EstimateJob(groups, what, estimator, params, n_resamples=n_resamples, label=label, table=table,
                              limits=limits, timed_out_line=None if limits is LIMITS else page_line)
            while not job.poll(0.25):
                slot.caption(f"Computing {label} in a worker ({job.elapsed:.0f} s of at most "
                             f"{limits.seconds:.0f} s; {size:,} steps)...")
            return job.result(process)
        except EstimateRefused as e:
            if str(e) == page_line:  # cut by the page's time, not by its own budget: asked again next time
                raise NotKept(Refused(page_line)) from None
            return Refused(str(e))
        finally:
            if job is not None:
                job.cancel()
            slots.release()
    finally:
        mine.release()
        slot.empty()


def findings(ctx, parts: tuple, groups: Sequence[RolloutGroup], iteration: int | None = None,
             metrics: Sequence[Mapping[str, Any]] = (), anchor: str = "", *, label: str):
    """The advantage doctor's findings on ``groups`` (one iteration; ``metrics``: the run's lines
    of it), kept by ``ctx`` (a :class:`ui.core.context.Keyed`) under ``parts``: computed in the
    server for a shared source or at most :data:`crbc.estimators.worker_job.INLINE_STEPS` steps,
    else in a bounded worker (:mod:`crbc.doctor.worker_job`); a list, or :class:`Refused`."""
    from crbc.doctor.examine import diagnose_iteration
    from crbc.doctor.worker_job import WHAT
    from crbc.estimators.worker_job import INLINE_STEPS

    def build():  # the steps are counted once, when nothing is kept yet (not on every rerun)
        steps = sum(g.n_steps for g in groups) if ctx.private else 0
        if steps <= INLINE_STEPS:
            return diagnose_iteration(list(groups), iteration, list(metrics))[1]
        return compute(groups, None, WHAT, "crbc", {"iteration": iteration, "metrics": list(metrics),
                                                    "anchor": anchor}, label=label, steps=steps)

    out = ctx.kept("findings", parts, build)
    return out if isinstance(out, (Refused, list)) else list(out.findings)
