"""What a page computes on a user's large upload runs as a bounded job, as the upload's read does.

:func:`compute` runs :class:`crbc.estimators.worker_job.EstimateJob` (credits, credit intervals or the
depth sweep in a worker process: a time, CPU and memory budget, a lower priority) and waits for
it, saying on the page what it waits for. At most :data:`AT_ONCE` such jobs run on the server
at once and one per person (a browser, :func:`ui.core.jobs.owner`); the others wait in turn, up to
:data:`WAIT_S` seconds. A job ends with its result or a :class:`Refused` line naming the budget
and the command that computes it whole; when the page's script stops (its tab closed, or a
rerun) the job is killed with it. :mod:`ui.core.context` decides what goes here: a private context's
process of more than :data:`crbc.estimators.worker_job.INLINE_STEPS` steps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from crbc.estimators.worker_job import LIMITS, EstimateJob, EstimateRefused, command
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process

__all__ = ["AT_ONCE", "compute", "Refused", "show", "WAIT_S"]

AT_ONCE = 2  #: bounded computations running at once on the server
WAIT_S = 60.0  #: how long a computation waits for its turn before it is told to try again


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
        if time.monotonic() - started > WAIT_S:
            return False
        slot.caption(text)
    return True


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
    busy = (f"Server busy: {label} waits for a worker ({AT_ONCE} run at once on this server, one per person). "
            f"Or run it whole on your machine: `{command(what, estimator, params, n_resamples)}`")
    if not _wait(mine, slot, f"{label} waits for your other computation to finish...", started):
        slot.empty()
        raise NotKept(Refused(busy))
    job = None
    try:
        if not _wait(slots, slot, f"{label} waits for a worker ({AT_ONCE} at once on this server)...", started):
            raise NotKept(Refused(busy))
        try:
            job = EstimateJob(groups, what, estimator, params, n_resamples=n_resamples, label=label, table=table)
            while not job.poll(0.25):
                slot.caption(f"Computing {label} in a worker ({job.elapsed:.0f} s of at most "
                             f"{LIMITS.seconds:g} s; {size:,} steps)...")
            return job.result(process)
        except EstimateRefused as e:
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
    from crbc.estimators.worker_job import INLINE_STEPS

    steps = sum(len(r.steps) for g in groups for r in g.rollouts) if ctx.private else 0
    if steps <= INLINE_STEPS:
        return ctx.kept("findings", parts, lambda: diagnose_iteration(list(groups), iteration, list(metrics))[1])
    from crbc.doctor.worker_job import WHAT

    out = ctx.kept("findings", parts, lambda: compute(
        groups, None, WHAT, "crbc", {"iteration": iteration, "metrics": list(metrics), "anchor": anchor},
        label=label, steps=steps))
    return out if isinstance(out, Refused) else list(out.findings)
