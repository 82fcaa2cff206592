"""How sure is a credit as the group grows: one (anchor, action) pair's interval for G = 2, 4, 8, ...

For the Lesson: the first G rollouts of one level's group are a group of size G; each gets the
crbc interval of the pair (:func:`crbc.credit_intervals`, resampling those G rollouts). The pair
is named by its anchor text and action, so it is the same pair at every G (absent from a small
group that never visited it). Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.estimators.bootstrap import credit_intervals
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = ["busiest_pair", "intervals_by_size", "pair_index", "sizes_for", "sure_pair"]


def sizes_for(n: int) -> list[int]:
    """2, 4, 8, ... below n, then n itself."""
    out, g = [], 2
    while g < n:
        out.append(g)
        g *= 2
    return out + [n] if n >= 1 else out


def busiest_pair(p: Process) -> int | None:
    """The most visited (anchor, action) pair at an anchor where >= 2 actions were tried."""
    keep = np.flatnonzero(p.n_actions[p.sa_state] >= 2)
    return None if not len(keep) else int(keep[np.argmax(p.n_sa[keep])])


def pair_index(p: Process, anchor: str, action: str) -> int | None:
    for i in range(len(p.n_sa)):
        if p.state_anchor[int(p.sa_state[i])] == anchor and p.action_names[int(p.sa_action[i])] == action:
            return i
    return None


def intervals_by_size(group: RolloutGroup, anchor: str, action: str, sizes: Sequence[int],
                      n_resamples: int = 200, level: float = 0.9, seed: int = 0,
                      truth: float | None = None, **params: Any) -> list[dict[str, Any]]:
    """One row per G: G, N(s,a) in the first G rollouts, the credit Q - V, its interval (lo, hi,
    width), the evidence class, and with ``truth`` whether the interval covers it (None when the
    pair was not visited or has no interval)."""
    rows = []
    for g in sizes:
        sub = RolloutGroup(group.group, tuple(group.rollouts[:g]))
        p = merge([sub])
        i = pair_index(p, anchor, action)
        row: dict[str, Any] = {"G": g, "N(s,a)": 0 if i is None else int(p.n_sa[i]), "Q − V": None,
                               "lo": None, "hi": None, "width": None, "evidence": "not visited",
                               "covers the truth": None}
        if i is not None:
            ci = credit_intervals(p, "crbc", n_resamples=n_resamples, level=level, seed=seed, **params)
            lo, hi = float(ci.lo_SA[i]), float(ci.hi_SA[i])
            ev = "none" if ci.none_SA[i] else ("sure" if (lo > 0 or hi < 0) else "unsure")
            row.update({"Q − V": float(ci.credit_SA[i]), "evidence": ev})
            if math.isfinite(lo) and math.isfinite(hi):
                row.update({"lo": lo, "hi": hi, "width": hi - lo})
                if truth is not None:
                    row["covers the truth"] = bool(lo - 1e-12 <= truth <= hi + 1e-12)
        rows.append(row)
    return rows


def sure_pair(p: Process, n_resamples: int = 200, level: float = 0.9, seed: int = 0, **params: Any) -> int | None:
    """The most visited (anchor, action) pair whose crbc interval on the whole group excludes 0
    (evidence ``sure``: lo > 0 or hi < 0), at an anchor with >= 2 actions; None if there is none."""
    ci = credit_intervals(p, "crbc", n_resamples=n_resamples, level=level, seed=seed, **params)
    lo, hi = np.asarray(ci.lo_SA, dtype=float), np.asarray(ci.hi_SA, dtype=float)
    ok = (p.n_actions[p.sa_state] >= 2) & ~np.asarray(ci.none_SA, dtype=bool) & ((lo > 0) | (hi < 0))
    keep = np.flatnonzero(ok)
    return None if not len(keep) else int(keep[np.argmax(p.n_sa[keep])])
