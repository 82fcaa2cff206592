"""``estimator_mismatch``: is the trainer's advantage the estimator it says it runs?

With ``expect=NAME`` the registered estimator NAME (:mod:`crbc.estimators.registry`) is recomputed
on the same rows (the batch's merged process, the estimator's default parameters unless given)
and compared with the trainer's advantage step by step: step n differs when

    |A_trainer[n] - A_NAME[n]| > ATOL + RTOL * |A_NAME[n]|

(float32 advantages, as trainers store them, stay far inside). Fires when more than
MISMATCH_SHARE of the steps with a trainer advantage differ; rows = those steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crbc.doctor.batch import Batch
from crbc.doctor.findings import Finding, finding
from crbc.doctor.registry import register_check
from crbc.estimators import registry
from crbc.run_analysis.health import params_for, spearman

__all__ = ["ATOL", "estimator_mismatch", "MISMATCH_SHARE", "RTOL"]

ATOL, RTOL = 1e-3, 1e-3
MISMATCH_SHARE = 0.01


@register_check("estimator_mismatch", severity="warning", order=90, reads="estimator",
                what="a trainer advantage that is not the estimator it was expected to be")
def estimator_mismatch(b: Batch, expect: str | None, params: dict[str, Any] | None = None) -> Finding | None:
    """The finding, or None (no ``expect``, no trainer advantage, or they agree). An unknown name
    raises ``UnknownEstimatorError`` (a ValueError) before any work."""
    if expect is None:
        return None
    est = registry.get(expect)
    if b.advantage_N is None:
        return None
    have = np.isfinite(b.advantage_N)
    if not have.any():
        return None
    want = est(b.process, config=est.config(**params_for(expect, dict(params or {})))).advantage_N
    x, y = b.advantage_N[have], want[have]
    diff = np.abs(x - y) > ATOL + RTOL * np.abs(y)
    if diff.sum() <= MISMATCH_SHARE * len(x) or not diff.any():
        return None
    rho = spearman(x, y)
    steps = np.zeros(b.n_steps, dtype=bool)
    steps[np.flatnonzero(have)[diff]] = True
    worst = float(np.max(np.abs(x - y)))
    corr = "" if rho is None else f", rank correlation {rho:.2f}"
    return finding("estimator_mismatch", b.iteration, b.rows_of(steps), b.n_rows,
                   f"the trainer's advantage differs from {expect} recomputed on the same rows on "
                   f"{int(diff.sum())} of {len(x)} steps (largest gap {worst:.3g}{corr}), so the "
                   f"trainer is not optimising the {expect} credit it claims: check its grouping, "
                   "anchor key, parameters and row copies against the estimator's definition.")
