"""The advantage doctor on one iteration's groups, as a computation the bounded worker runs.

The studio's Training runs page diagnoses the chosen iteration of a run
(:func:`crbc.doctor.examine.diagnose_iteration`). On an uploaded run whose iteration is large it
asks :class:`crbc.estimators.worker_job.EstimateJob` for ``"doctor"`` instead of computing in the
server. Registering here (importing this module) makes that name known, with :class:`Findings`,
:class:`~crbc.doctor.findings.Finding` and :class:`~crbc.doctor.findings.Example` allowed as its
result (plain JSON, nothing pickled). The command a budget's notice names is ``crbc doctor RUN``
(every iteration of the run folder, with the same anchor key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crbc.doctor.examine import diagnose_iteration
from crbc.doctor.findings import Example, Finding
from crbc.estimators import result_files, worker_job

__all__ = ["Findings", "WHAT"]

WHAT = "doctor"


@dataclass(frozen=True)
class Findings:
    """The findings of one iteration, in the order :func:`diagnose_iteration` gives them."""

    findings: tuple[Finding, ...]


def _compute(groups: Sequence, params: Mapping[str, Any]) -> Findings:
    """``params``: ``iteration`` (or None), ``metrics`` (the run's metrics lines of it), ``expect``."""
    _, found = diagnose_iteration(list(groups), params.get("iteration"), list(params.get("metrics") or ()),
                                  params.get("expect"))
    return Findings(tuple(found))


def _command(params: Mapping[str, Any]) -> list[str]:
    regex = params.get("anchor")
    return ["doctor", "RUN", *(["--anchor", str(regex)] if regex else [])]


result_files.register(Findings, Finding, Example)
worker_job.register_computation(worker_job.Computation(WHAT, _compute, _command))
