"""The advantage doctor across runs: per iteration, the rows each check flagged, as curves.

The counts are the recorder's (:class:`crbc.integrations.recorder.RunRecorder` logs
``crbc/doctor/<check>`` = rows flagged in that iteration's line of ``metrics.jsonl``, 0 when the
check is silent; :mod:`crbc.doctor.recorded`), so nothing is recomputed: a run that never
recorded them has no doctor curve (:func:`unrecorded` names it). One curve set per check, plus
:data:`ALL`, the rows flagged summed over the warning and error checks of the line
(``sum_c n_c`` over ``c`` with ``CHECKS[c] != "info"``; a row flagged by two checks counts twice).
The Training runs page (:mod:`ui.runs.doctor`) and ``crbc report RUN RUN ...``
(:mod:`crbc.report.runs`) overlay them across the chosen runs the way the learning curves are:
:func:`crbc.run_analysis.training_stats.curves`, grouped by ``by`` and named by ``name``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from crbc.doctor.findings import CHECKS
from crbc.doctor.recorded import METRIC_PREFIX
from crbc.io.runs import Run
from crbc.run_analysis import training_stats as A

__all__ = ["ALL", "check_title", "doctor_curves", "flagged", "recorded_checks", "unrecorded"]

ALL = "all"  #: the rows flagged, summed over the warning and error checks


def _number(x: Any) -> float | None:
    """A metric value as a finite number (bools and non-numbers: None)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x):
        return None
    return float(x)


def flagged(metrics: Iterable[Mapping[str, Any]], check: str) -> tuple[np.ndarray, np.ndarray]:
    """``(iterations, rows)`` of one run's metrics lines, both of shape (n,), iterations
    ascending: for ``check`` the lines that carry ``crbc/doctor/<check>``, its value; for
    :data:`ALL` the lines that carry a warning or error check's count, the sum of those counts. A later line of the same iteration (a resumed trainer) replaces an earlier."""
    checks = [c for c in CHECKS if CHECKS[c] != "info"] if check == ALL else [check]
    got: dict[int, float] = {}
    for m in metrics:
        it = m.get("iteration")
        if not isinstance(it, int) or isinstance(it, bool):
            continue
        vals = [v for c in checks if (v := _number(m.get(METRIC_PREFIX + c))) is not None]
        if vals:
            got[it] = float(sum(vals))
    its = sorted(got)
    return np.array(its, dtype=int), np.array([got[i] for i in its], dtype=float)


def recorded_checks(runs: Sequence[Run]) -> tuple[list[str], list[str]]:
    """``(flagging, silent)``: the checks some run recorded, in :data:`CHECKS` order, split into
    those that flagged rows on some iteration of some run and those at 0 everywhere."""
    seen: dict[str, bool] = {}
    for r in runs:
        for m in r.metrics:
            for c in CHECKS:
                v = _number(m.get(METRIC_PREFIX + c))
                if v is not None:
                    seen[c] = seen.get(c, False) or v > 0
    flagging = [c for c in CHECKS if seen.get(c)]
    return flagging, [c for c in CHECKS if c in seen and not seen[c]]


def unrecorded(runs: Sequence[Run]) -> list[Run]:
    """The runs none of whose metrics lines carries a ``crbc/doctor/...`` count."""
    return [r for r in runs if not any(str(k).startswith(METRIC_PREFIX) for m in r.metrics for k in m)]


def doctor_curves(runs: Sequence[Run], check: str, by: Callable[[Run], str] | None = None,
                  name: Callable[[Run], str] | None = None) -> dict[str, A.Curve]:
    """The curves of ``check`` (a :data:`CHECKS` name or :data:`ALL`) over the runs that
    recorded it, grouped by ``by`` and each run named by ``name`` (as
    :func:`crbc.run_analysis.training_stats.curves`: a mean over the group's runs per iteration,
    with its band); {} when no run recorded it."""
    return A.curves(runs, METRIC_PREFIX + check, by=by, name=name, values=lambda r: flagged(r.metrics, check))


def check_title(check: str) -> str:
    """A chart's title: what the curve counts."""
    if check == ALL:
        return "rows flagged by any warning or error check (summed over the checks)"
    return f"rows flagged: {check} ({CHECKS[check]})"
