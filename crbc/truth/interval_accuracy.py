"""How good are the credit intervals: sure share, sure-sign agreement and coverage vs the truth.

Scores the intervals and evidence classes of :mod:`crbc.estimators.bootstrap` (docs/MATH.md section
10) against the anchor-level truth A(s, a) of section 9, per level (one group), with N the
group's steps and ``sure``, ``lo``, ``hi`` the steps' class and interval:

    sure_share = #{ sure } / N
    sure_sign  = #{ sure, |A| > 1e-3, sign(interval) = sign(A) } / #{ sure, |A| > 1e-3 }
    coverage   = #{ has an interval, lo - 1e-9 <= A <= hi + 1e-9 } / #{ has an interval }
    zero_miss  = #{ has an interval, lo = hi = 0, not covered } / #{ has an interval }

``zero_miss`` is the part of the missing coverage due to intervals that are exactly [0, 0]: the
credit is 0 in every resample (e.g. every observed continuation fails) while the truth is not.

``sign(interval)`` is +1 when lo > 0 and -1 when hi < 0 (a sure interval excludes 0). Coverage
(and ``zero_miss``) is reported only for the estimators whose signal is on the truth's scale (``credit`` = Q - V,
the CRBC family); for ``step_advantage`` signals (gigpo, shortest_path) it is left out, as RMSE
is in :mod:`crbc.truth.accuracy`. A level without a step to count gives NaN and is left out of
that metric's mean (95% bootstrap interval over levels, as the other scores).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.estimators import registry as estimators
from crbc.estimators.bootstrap import credit_intervals, signal_of
from crbc.io.rollouts import RolloutGroup

__all__ = [
    "COVER_TOL", "interval_estimators", "INTERVAL_METRICS", "interval_rows", "level_interval_scores",
    "score_intervals", "SIGN_EPS"
]

INTERVAL_METRICS = ("sure_share", "sure_sign", "coverage", "zero_miss")
SIGN_EPS = 1e-3
COVER_TOL = 1e-9


def interval_estimators(names: Sequence[str] | None = None) -> list[str]:
    """The named (default: registered) estimators that have a step credit."""
    names = estimators.names() if names is None else list(names)
    return [n for n in names if signal_of(n) is not None]


def level_interval_scores(lo_N: np.ndarray, hi_N: np.ndarray, evidence_N: np.ndarray,
                          a_N: np.ndarray, with_coverage: bool) -> dict[str, float]:
    """The three scores of one level (module docstring)."""
    sure = evidence_N == "sure"
    out = {"sure_share": float(sure.mean()) if len(sure) else math.nan}
    m = sure & (np.abs(a_N) > SIGN_EPS)
    sign_N = np.where(lo_N > 0, 1.0, -1.0)
    out["sure_sign"] = float(np.mean(sign_N[m] == np.sign(a_N[m]))) if m.any() else math.nan
    if with_coverage:
        has = np.isfinite(lo_N)
        inside = (lo_N - COVER_TOL <= a_N) & (a_N <= hi_N + COVER_TOL)
        out["coverage"] = float(np.mean(inside[has])) if has.any() else math.nan
        zero = (lo_N == 0) & (hi_N == 0) & ~inside
        out["zero_miss"] = float(np.mean(zero[has])) if has.any() else math.nan
    return out


def score_intervals(groups: Sequence[RolloutGroup], a_N: np.ndarray, name: str, n_resamples: int,
                    level: float, method: str, seed: int = 0) -> dict[str, list[float]]:
    """Per-level interval scores of estimator ``name`` (default parameters) on a batch of
    groups (one :func:`credit_intervals` call; it cuts large batches into chunks of groups);
    ``a_N`` the anchor-level truth per step in the groups' order. Returns metric -> list over
    groups."""
    cover = estimators.get(name).truth_scale  # coverage of the truth needs the truth's units
    out: dict[str, list[float]] = {m: [] for m in INTERVAL_METRICS
                                   if m not in ("coverage", "zero_miss") or cover}
    ci = credit_intervals(list(groups), name, n_resamples, level, seed=seed, method=method)
    p = ci.process
    bounds = np.searchsorted(p.rollout_group[p.step_rollout], np.arange(len(p.group_ids) + 1))
    for gi in range(len(p.group_ids)):  # steps of a group are contiguous
        sl = slice(int(bounds[gi]), int(bounds[gi + 1]))
        scores = level_interval_scores(ci.lo_N[sl], ci.hi_N[sl], ci.evidence_N[sl], a_N[sl], cover)
        for k, v in scores.items():
            out[k].append(v)
    return out


def interval_rows(groups: Sequence[RolloutGroup], a_N: np.ndarray, G: int, cfg: Any,
                  bootstrap_mean, rounding, none_nan) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The accuracy experiment's interval rows at one G: per estimator with a step credit and
    per interval method, each metric's mean and 95% interval over levels (``bootstrap_mean``),
    and the per-level values (label -> G -> "anchor" -> metric -> list). Labels are
    ``"name [method]"``; every row has ``target = "anchor"`` and an ``interval`` key."""
    rows, per_level = [], {}
    for name in interval_estimators(cfg.estimators):
        for method in cfg.interval_methods:
            if method == "calibrated" and name != "crbc":  # fitted for crbc's closure only
                continue
            label = f"{name} [{method}]"
            scores = score_intervals(groups, a_N, name, cfg.intervals, cfg.interval_level, method,
                                     cfg.rng_seed)
            for metric, vals in scores.items():
                mean, lo, hi, n = bootstrap_mean(vals, cfg.n_boot, cfg.rng_seed)
                rows.append({"estimator": label, "name": name, "params": {}, "signal": signal_of(name),
                             "G": G, "target": "anchor", "metric": metric, "interval": method,
                             "resamples": cfg.intervals, "level": cfg.interval_level,
                             "mean": rounding(mean), "lo": rounding(lo), "hi": rounding(hi),
                             "n_levels": n})
                per_level.setdefault(label, {}).setdefault(str(G), {}).setdefault(
                    "anchor", {})[metric] = none_nan(vals)
    return rows, per_level
