"""A computation that only sleeps, registered with the bounded worker for tests of time budgets
(the page's shared time, ui/core/bounded.py): ``EstimateJob(groups, "sleep", "crbc", {"seconds": S})``
sleeps S seconds in the worker, then returns :class:`Slept`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from crbc.estimators import result_files, worker_job


@dataclass(frozen=True)
class Slept:
    seconds: float


def _compute(groups, params) -> Slept:
    time.sleep(float(params["seconds"]))
    return Slept(float(params["seconds"]))


result_files.register(Slept)
worker_job.register_computation(worker_job.Computation("sleep", _compute, lambda params: ["credit", "FILE"]))
