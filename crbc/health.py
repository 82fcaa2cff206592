"""Credit health of one iteration: how well anchors merge, how much evidence, how the trainer agrees.

:func:`iteration_health` is the one place these numbers are computed. The run recorder
(``RunRecorder.record``) returns them with a ``crbc/`` prefix for the trainer's logger, and
``crbc audit`` writes them (without the prefix) as the columns of ``crbc.audit/1``. On a process
of N steps, R rollouts, G groups and S anchors (docs/MATH.md section 2):

    shared_step_share    (1/N) sum_n [rollouts visiting s_n >= 2]   (:func:`crbc.process.merge_stats`)
    anchors_per_group    S / G
    none_share           (1/N) sum_n none(s_n, a_n): the step's credit is 0 by construction (its
                         anchor has one observed action, or reaches only one of z+ / z-;
                         MATH.md section 10, :func:`crbc.estimators.bootstrap.structural_none`)
    sure_share           (1/N) sum_n [interval of (s_n, a_n) excludes 0], CRBC's credit intervals
                         from ``bootstrap`` resamples (only when bootstrap > 0)
    trainer_spearman/E   Spearman's rho of the trainer's advantage and estimator E's A_final over
                         the steps with a trainer advantage: the Pearson correlation of their
                         average ranks (ties share their mean rank)
    trainer_sign_agreement/E   share of those steps with a trainer advantage |x| > 1e-6 (the
                         trainer's zeros are left out) where E's A_final has the same sign (an
                         estimator's 0 counts as a disagreement)

A value that is undefined is left out of the dict instead of being NaN (so a logger never
receives NaN): the trainer keys without a trainer advantage (``None``, or no finite entry), a
Spearman rho when either side is constant or fewer than 2 steps have one, a sign agreement when
the trainer's advantage is 0 on every step. :func:`later_shared_share` and
:func:`merge_warning` tell when an anchor key merges almost nothing beyond the first step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.estimators import registry
from crbc.estimators.bootstrap import credit_intervals, structural_none
from crbc.explain.run_review import ranks, sign_agreement
from crbc.process import Process, merge_stats

#: below this share of later steps at shared anchors, the key is said to merge almost nothing.
#: 10%, not less: textarena Sokoban transcripts (history in every observation), groups of 4,
#: share 8% of their later steps as exact text, where two rollouts happened to write the same
#: first reply, against 54% under the board key (tests/test_trainer_anchor_key.py)
MERGE_WARNING_SHARE = 0.10
#: the estimator whose credit intervals give ``sure_share`` (MATH.md section 10)
INTERVAL_ESTIMATOR = "crbc"


def shared_steps(p: Process) -> np.ndarray:
    """(N,) bool: the step's anchor is visited by >= 2 distinct rollouts of its group (the rule
    of :func:`crbc.process.merge_stats`)."""
    width = max(len(p.rollout_group), 1)
    pair = np.unique(p.step_state.astype(np.int64) * width + p.step_rollout)
    rollouts_S = np.bincount(pair // width, minlength=p.n_states)
    return rollouts_S[p.step_state] >= 2


def later_shared_share(p: Process) -> float:
    """Share of the steps after each rollout's first one (``step_t >= 2``) whose anchor >= 2
    rollouts of the group visit; NaN when no rollout has a second step. Every rollout of a group
    usually starts from the same observation, so the first step says nothing about the key."""
    later = p.step_t >= 2
    return float(shared_steps(p)[later].mean()) if later.any() else math.nan


def merge_warning(p: Process, threshold: float = MERGE_WARNING_SHARE) -> bool:
    """True when some group has >= 2 rollouts, some rollout has a second step, and
    :func:`later_shared_share` is below ``threshold``: the anchor key (e.g. observations that
    carry their whole history) merges almost nothing, and CRBC's step credit is then close to 0."""
    if np.bincount(p.rollout_group).max(initial=0) < 2:
        return False
    share = later_shared_share(p)
    return not math.isnan(share) and share < threshold


def _spearman(rank_t: np.ndarray, x: np.ndarray) -> float:
    """Spearman's rho from the trainer's average ranks and the estimator's values (the same
    number as :func:`crbc.explain.run_review.spearman`; the trainer is ranked once for all
    estimators, and the sums avoid BLAS, whose threads crawl on a loaded trainer host)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(rank_t) == 0:
        return math.nan
    rx, rt = ranks(x), rank_t
    rx, rt = rx - rx.mean(), rt - rt.mean()
    return float(np.clip(np.sum(rx * rt) / math.sqrt(np.sum(rx * rx) * np.sum(rt * rt)), -1.0, 1.0))


def _params_for(name: str, params: dict[str, Any]) -> dict[str, Any]:
    fields = {f.name for f in dataclasses.fields(registry.get(name).config_cls)}
    return {k: v for k, v in params.items() if k in fields}


def iteration_health(process: Process, trainer_advantage_N: np.ndarray | None,
                     estimators: Sequence[str] = ("crbc", "gigpo"), bootstrap: int = 0, seed: int = 0,
                     **params: Any) -> dict[str, float]:
    """The credit health of one iteration (module docstring), keys without the ``crbc/`` prefix.

    ``process``: the iteration's merged process (N steps). ``trainer_advantage_N``: (N,) the
    advantage the trainer used per step, in the process's step order (NaN where a step has none),
    or None. ``estimators``: registered names compared with the trainer. ``bootstrap``: B
    resamples for ``sure_share`` (0: no intervals, no ``sure_share``), ``seed`` theirs.
    ``params``: estimator parameters (``beta=0.98``, ``w_step=5.0``, ...); each estimator takes
    the ones its config has, and a name no estimator here has is an error.
    """
    if not isinstance(process, Process):
        raise TypeError(f"iteration_health needs a crbc.process.Process, not {type(process).__name__}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValueError(f"bootstrap must be an integer >= 0, got {bootstrap!r}")
    names = [estimators] if isinstance(estimators, str) else list(estimators)
    for name in names:
        registry.get(name)  # an unknown name raises, listing the known ones
    users = names + ([INTERVAL_ESTIMATOR] if bootstrap else [])
    unused = sorted(set(params) - {k for n in users for k in _params_for(n, params)})
    if unused:
        raise ValueError(f"no estimator among {', '.join(users)} has a parameter {', '.join(unused)}")
    adv = None
    if trainer_advantage_N is not None:
        adv = np.asarray(trainer_advantage_N, dtype=float)
        if adv.shape != (process.n_steps,):
            raise ValueError(f"trainer_advantage_N has shape {adv.shape}, but the process has "
                             f"{process.n_steps} steps: give one value per step, (N,)")
    out: dict[str, float] = {
        "shared_step_share": merge_stats(process).shared_step_share,
        "anchors_per_group": process.n_states / max(len(process.group_ids), 1),
        "none_share": float(structural_none(process)[process.step_sa].mean()) if process.n_steps else 0.0,
    }
    advantages: dict[str, np.ndarray] = {}
    if bootstrap:
        ci = credit_intervals(process, INTERVAL_ESTIMATOR, n_resamples=int(bootstrap), seed=seed,
                              **_params_for(INTERVAL_ESTIMATOR, params))
        out["sure_share"] = ci.sure_share()
        advantages[INTERVAL_ESTIMATOR] = ci.credits.advantage_N
    have = np.isfinite(adv) if adv is not None else None
    if have is None or not have.any():
        return out
    rank_t = ranks(adv[have])
    for name in names:
        x = advantages.get(name)
        if x is None:
            x = registry.compute(name, process, **_params_for(name, params)).advantage_N
        rho = _spearman(rank_t, x[have])
        sign = sign_agreement(x[have], adv[have])
        if not math.isnan(rho):
            out[f"trainer_spearman/{name}"] = rho
        if not math.isnan(sign):
            out[f"trainer_sign_agreement/{name}"] = sign
    return out
