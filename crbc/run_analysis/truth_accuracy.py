"""Credit accuracy during training: each estimator's agreement with the exact advantage.

On an iteration's batch, for up to ``groups`` of its groups (the first ones, in batch order,
that mix successes and failures and contain no unparsable action), the exact per-step advantage
``A_t(s_t, a_t)`` of the *current* policy is solved (:mod:`crbc.truth`, docs/MATH.md section 9) and
every listed estimator's step signal on that group is scored against it with the section-9
scores of :mod:`crbc.truth.accuracy` (sign agreement and Spearman rank correlation, per group, then
the mean over the groups). The training loop stores the result as ``diag.truth_groups``,
``diag.truth_sign.<estimator>`` and ``diag.truth_spearman.<estimator>``, every ``every``-th
iteration; a group whose level exceeds the truth's state cap is skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["ESTIMATORS", "truth_diagnostics"]

ESTIMATORS = ("grpo", "gigpo", "crbc", "visit_local")  #: scored on every chosen group


def _scorable(group) -> bool:
    return 0 < group.success_rate < 1 and all(s.action != "invalid" for r in group.rollouts for s in r.steps)


def truth_diagnostics(groups: int = 4, every: int = 2, estimators: Sequence[str] = ESTIMATORS
                      ) -> Callable[[Any, Sequence[Any], Any, int], dict[str, float]]:
    """A ``diagnostics`` hook for :func:`crbc.train.loop.train` (see the module docstring)."""

    def hook(policy, batch_groups, credits, iteration: int) -> dict[str, float]:
        if iteration % every:
            return {}
        from crbc.estimators.registry import compute
        from crbc.truth import TruthCache, TruthError, TruthInputError, group_truth, scorable_policy
        from crbc.truth.accuracy import group_agreement

        cache = TruthCache(resolver=lambda name, t: scorable_policy(policy, t))
        scores: dict[str, dict[str, list[float]]] = {e: {"sign": [], "spearman": []} for e in estimators}
        used = 0
        for g in [g for g in batch_groups if _scorable(g)][:groups]:
            try:
                truth_N = np.concatenate([st.advantage for st in group_truth(g, cache=cache)])
            except (TruthError, TruthInputError):
                continue
            agreement = group_agreement({e: compute(e, [g]) for e in estimators}, truth_N)
            for e, d in agreement.items():
                for m in ("sign", "spearman"):
                    scores[e][m].append(d[m])
            used += 1
        out: dict[str, float] = {"truth_groups": used}
        for e, per in scores.items():
            for m, vals in per.items():
                finite = [v for v in vals if v is not None and math.isfinite(v)]
                if finite:
                    out[f"truth_{m}.{e}"] = float(np.mean(finite))
        return out

    return hook
