"""Paired comparisons of two estimators on the same levels, from an accuracy result's per-level scores.

In ``crbc accuracy`` every estimator is scored on the same groups of the same levels, so two
estimators' scores pair up level by level. For estimators a and b at group size G (one metric,
one target), with x_l and y_l their scores on level l and L the levels where both are finite:

    d_l   = x_l - y_l                       (l in L)
    mean  = sum_l d_l / |L|
    [lo, hi] = the central 95% percentile interval of the mean of d over 2,000 resamples of L
               with replacement (seed 0: :func:`crbc.truth.accuracy.bootstrap_mean`)
    wins  = #{ l in L : d_l > 0 }           (levels where a scores higher)

An interval that excludes 0 says the difference holds beyond the choice of levels. Levels where
either side has no value (a constant signal or truth) are left out of the pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.truth.accuracy import bootstrap_mean

__all__ = ["Paired", "paired_difference", "paired_rows"]


@dataclass(frozen=True)
class Paired:
    """``a - b`` over the levels both have: mean, 95% interval, levels where a is ahead, levels."""

    mean: float
    lo: float
    hi: float
    wins: int
    n: int


def paired_difference(result: Mapping[str, Any], a: str, b: str, group_size: int | str,
                      metric: str = "spearman", target: str = "step", n_boot: int = 2000,
                      seed: int = 0) -> Paired | None:
    """The paired difference a - b of ``metric`` at ``group_size`` (module docstring), or None
    when the result has no per-level scores of either, or no level where both are finite."""
    per = result.get("per_level", {})
    try:
        x = np.asarray(per[a][str(group_size)][target][metric], dtype=float)
        y = np.asarray(per[b][str(group_size)][target][metric], dtype=float)
    except KeyError:
        return None
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return None
    d = x[ok] - y[ok]
    mean, lo, hi, n = bootstrap_mean(d.tolist(), n_boot, seed)
    return Paired(mean, lo, hi, int((d > 0).sum()), n)


def paired_rows(result: Mapping[str, Any], reference: str = "crbc", metric: str = "spearman",
                target: str = "step") -> list[dict[str, Any]]:
    """``reference - other`` for every other default estimator of the result at every G: dicts
    with ``estimator, G, mean, lo, hi, wins, n`` (variants such as ``crbc K=3`` are left out)."""
    per = result.get("per_level", {})
    names = [n for n in per if n != reference and " " not in n]
    sizes = sorted({int(g) for n in per for g in per[n]})
    rows = []
    for name in names:
        for g in sizes:
            p = paired_difference(result, reference, name, g, metric, target)
            if p is not None:
                rows.append({"estimator": name, "G": g, "mean": p.mean, "lo": p.lo, "hi": p.hi,
                             "wins": p.wins, "n": p.n})
    return rows
