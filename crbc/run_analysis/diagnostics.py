"""Per-iteration diagnostics of the step-credit estimators on a batch of groups (numpy only).

For one batch (an iteration's groups), with the estimators' default parameters unless given:

* ``step_credit_share``: share of steps whose CRBC step credit A_S is non-zero (the gate
  ``|actions(s)| >= 2`` and a non-constant Q at the anchor);
* ``multi_action_anchors``: anchors (within their group) where at least two distinct actions
  were observed, and ``multi_action_anchor_share`` of all anchors;
* ``mean_abs_step_adv``: mean |A_S| of CRBC over all steps;
* ``rank_crbc_gigpo`` / ``rank_crbc_visit_local``: Spearman rank correlation of the step credits
  A_S of CRBC and the other estimator, over the steps at multi-action anchors (ties get average
  ranks; NaN when fewer than three such steps or one side is constant);
* ``rare_route_disagreements``: multi-action anchors where the closure strictly prefers one
  action (highest Q, by more than 1e-9) but shortest path rates some action the closure values
  less at least as high as it (mean A_S at the anchor, within 1e-9). Hop distance ignores how
  often a route succeeded, so one lucky success makes a rare route tie with (or beat) the
  reliable one: the paper's foil, counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.estimators.registry import compute
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = [
    "DIAGNOSTICS", "EPS", "iteration_diagnostics", "rankdata", "rare_route_disagreements", "spearman"
]

EPS = 1e-12


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (as ``scipy.stats.rankdata``)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.r_[0, np.nonzero(np.diff(xs))[0] + 1]
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of the 1-based ranks starts+1 .. ends
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (Pearson on average ranks); NaN if n < 3 or a side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) < EPS or np.ptp(y) < EPS:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    rx -= rx.mean()
    ry -= ry.mean()
    return float((rx @ ry) / np.sqrt((rx @ rx) * (ry @ ry)))


def _pair_means(p: Process, a_N: np.ndarray) -> np.ndarray:
    return np.bincount(p.step_sa, weights=a_N, minlength=len(p.n_sa)) / p.n_sa


def rare_route_disagreements(p: Process, a_sp_N: np.ndarray, q_SA: np.ndarray) -> int:
    """Multi-action anchors where shortest path rates an action with a lower closure Q at least
    as high as the closure's favourite (see the module docstring)."""
    sp_SA = _pair_means(p, a_sp_N)
    count = 0
    order = np.argsort(p.sa_state, kind="stable")
    bounds = np.searchsorted(p.sa_state[order], np.arange(p.n_states + 1))
    for s in np.nonzero(p.n_actions >= 2)[0]:
        sas = order[bounds[s]:bounds[s + 1]]
        q = q_SA[sas]
        best = int(np.argmax(q))
        worse = q < q[best] - 1e-9
        if worse.any() and np.any(sp_SA[sas][worse] >= sp_SA[sas][best] - 1e-9):
            count += 1
    return count


def iteration_diagnostics(groups: Sequence[RolloutGroup] | Process, beta: float = 0.98,
                          sigma_min: float = 0.1) -> dict[str, Any]:
    """The diagnostics of the module docstring for one batch of groups (or a merged process)."""
    p = groups if isinstance(groups, Process) else merge(groups)
    cr = compute("crbc", p, beta=beta, sigma_min=sigma_min)
    vl = compute("visit_local", p, beta=beta, sigma_min=sigma_min)
    gi = compute("gigpo", p)
    sp = compute("shortest_path", p)
    a_N = cr.step_advantage_N
    multi_N = p.n_actions[p.step_state] >= 2
    return {
        "step_credit_share": float(np.mean(np.abs(a_N) > EPS)),
        "multi_action_anchors": int(np.sum(p.n_actions >= 2)),
        "multi_action_anchor_share": float(np.mean(p.n_actions >= 2)),
        "anchors": int(p.n_states),
        "mean_abs_step_adv": float(np.mean(np.abs(a_N))),
        "rank_crbc_gigpo": spearman(a_N[multi_N], gi.step_advantage_N[multi_N]),
        "rank_crbc_visit_local": spearman(a_N[multi_N], vl.step_advantage_N[multi_N]),
        "rare_route_disagreements": rare_route_disagreements(p, sp.step_advantage_N, cr.q_SA),
    }


#: diagnostic keys in the order the app shows them, with a short description
DIAGNOSTICS: dict[str, str] = {
    "step_credit_share": "share of steps with non-zero CRBC step credit",
    "multi_action_anchors": "anchors with at least two actions",
    "mean_abs_step_adv": "mean |A_S| (CRBC)",
    "rank_crbc_gigpo": "Spearman rank agreement of A_S: crbc vs gigpo",
    "rank_crbc_visit_local": "Spearman rank agreement of A_S: crbc vs visit_local",
    "rare_route_disagreements": "rare-route disagreements with shortest_path (anchors)",
}
