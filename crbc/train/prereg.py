"""The pre-registered test of an experiment: paired per-seed differences, exact sign flips, Holm.

For a comparison A - B over the seeds s = 1..S that both arms finished, with ``y_s`` the
primary metric of a run (held-out success after the last iteration by default)::

    d_s    = y_s(A) - y_s(B)                        (S,) paired by seed
    diff   = mean_s d_s,  95% t interval  diff +- t_{0.975, S-1} * sd(d) / sqrt(S)
    p      = exact two-sided sign-flip p-value of mean(d) = 0 (all 2^S sign patterns)
    k_s    = successful held-out episodes of a run (an integer out of N = levels x episodes)

When every paired run carries its per-level success (``eval_level_success``), the test runs on
the integer differences ``k_s(A) - k_s(B)`` (:func:`crbc.run_analysis.training_stats.sign_flip_p_counts`)
and ``d_s = (k_s(A) - k_s(B)) / N`` exactly: run.json's ``eval_success_rate`` is rounded to
four decimals, which moves sums that tie exactly to either side of the tie.
    p_holm = Holm's step-down adjustment over the family of primary comparisons:
             sort p ascending, p_(j) * (m - j + 1) for j = 1..m, running maximum, capped at 1

A comparison confirms ``A > B`` when ``diff > 0`` and ``p_holm < alpha``. Secondary comparisons
are reported with their unadjusted p and no claim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from crbc.io.runs import Run
from crbc.run_analysis.training_stats import (
    EVAL,
    by_estimator,
    level_counts,
    sign_flip_p,
    sign_flip_p_counts,
    t_interval,
)

__all__ = ["compare", "Count", "final_count", "final_metric", "holm", "markdown", "preregistered"]


def final_metric(run: Run, key: str = EVAL) -> float | None:
    """The run's metric after its last iteration (``final_eval[key]`` in run.json), or None."""
    v = (run.meta.get("final_eval") or {}).get(key)
    return float(v) if isinstance(v, int | float) else None


def final_count(run: Run, record: dict[str, Any] | None = None) -> tuple[int, int] | None:
    """(successful episodes, episodes) of the run's held-out evaluation after its last iteration
    (``record``, default run.json ``final_eval``): ``(sum_l k_l, L * G)`` from
    :func:`crbc.run_analysis.training_stats.level_counts`; None when the per-level success is not recorded."""
    k = level_counts(run, record)
    if k is None:
        return None
    rec = (run.meta.get("final_eval") or {}) if record is None else record
    g = rec.get("group_size") or (run.meta.get("config") or {}).get("eval_group_size")
    return int(k.sum()), int(len(k) * g)


def holm(p: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (shape (m,))."""
    p_arr = np.asarray(p, dtype=float)
    m = len(p_arr)
    order = np.argsort(p_arr, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_arr[i]))
        adjusted[i] = running
    return adjusted.tolist()


Count = Callable[[Run], "tuple[int, int] | None"]


def compare(runs: Sequence[Run], a: str, b: str,
            metric: Callable[[Run], float | None] = final_metric,
            count: Count | None = final_count) -> dict[str, Any]:
    """One paired comparison ``a - b`` (estimator names) over the seeds both finished.

    With ``count`` given and every paired run counted out of the same N episodes, ``d`` and
    ``p`` come from the integer counts (``exact`` True, ``count_diff_by_seed`` the integers);
    otherwise from ``metric`` with the float test (``exact`` False)."""
    arms = by_estimator(runs)
    ya = {r.seed: metric(r) for r in arms.get(a, [])}
    yb = {r.seed: metric(r) for r in arms.get(b, [])}
    seeds = sorted(s for s in ya if s in yb and ya[s] is not None and yb[s] is not None)
    ka = {r.seed: count(r) for r in arms.get(a, [])} if count else {}
    kb = {r.seed: count(r) for r in arms.get(b, [])} if count else {}
    pairs = [(ka.get(s), kb.get(s)) for s in seeds]
    ns = {x[1] for pair in pairs for x in pair if x is not None}
    exact = bool(seeds) and all(x is not None and y is not None for x, y in pairs) and len(ns) == 1
    k: list[int] = []
    if exact:
        n_ep = ns.pop()
        k = [x[0] - y[0] for x, y in pairs]
        d = np.array(k, dtype=float) / n_ep
        p = sign_flip_p_counts(k)
    else:
        d = np.array([ya[s] - yb[s] for s in seeds], dtype=float)
        p = sign_flip_p(d) if len(d) else float("nan")
    mean, lo, hi = t_interval(d) if len(d) else (float("nan"),) * 3
    return {"a": a, "b": b, "seeds": seeds, "n": len(seeds), "diff_by_seed": d.round(6).tolist(),
            "count_diff_by_seed": k if exact else None, "exact": exact,
            "diff": mean, "ci": [lo, hi], "p": p,
            "wins": int((d > 0).sum()), "losses": int((d < 0).sum())}


def preregistered(runs: Sequence[Run], primary: Sequence[tuple[str, str]],
                  secondary: Sequence[tuple[str, str]] = (), alpha: float = 0.05,
                  metric: Callable[[Run], float | None] = final_metric,
                  count: Count | None = final_count) -> dict[str, Any]:
    """The plan's test: ``primary`` comparisons with Holm's correction at ``alpha``, and the
    ``secondary`` ones unadjusted. Each row is :func:`compare`'s dict plus ``p_holm`` and
    ``confirmed`` (primary) or ``p_holm`` None (secondary)."""
    rows = [compare(runs, a, b, metric, count) for a, b in primary]
    ps = [r["p"] for r in rows]
    for r, ph in zip(rows, holm(ps) if rows else [], strict=True):
        r["p_holm"] = ph
        r["confirmed"] = bool(r["diff"] > 0 and ph < alpha)
    sec = [dict(compare(runs, a, b, metric, count), p_holm=None, confirmed=None) for a, b in secondary]
    return {"alpha": alpha, "primary": rows, "secondary": sec}


def markdown(result: dict[str, Any]) -> str:
    """The test as a markdown table (points of success, 95% t interval, p, Holm's p)."""
    lines = ["| comparison | role | seeds | difference (points) [95% CI] | seeds A > B "
             "| p (exact sign flips on success counts) "
             "| p (Holm) | outcome |", "|---|---|---|---|---|---|---|---|"]
    # p is a multiple of 1 / 2^S: four decimals print 0.1016 for 26/256 and 0.1172 for 30/256
    for role in ("primary", "secondary"):
        for r in result[role]:
            if r["n"] == 0:
                lines.append(f"| {r['a']} - {r['b']} | {role} | 0 | no seed finished by both arms | | | | |")
                continue
            lo, hi = r["ci"]
            ci = "" if not np.isfinite(lo) else f" [{100 * lo:+.1f}, {100 * hi:+.1f}]"
            ph = "" if r["p_holm"] is None else f"{r['p_holm']:.4f}"
            outcome = ("" if r["confirmed"] is None else
                       "confirmed" if r["confirmed"] else "not confirmed")
            lines.append(f"| {r['a']} - {r['b']} | {role} | {r['n']} | {100 * r['diff']:+.1f}{ci} "
                         f"| {r['wins']}/{r['n']} | {r['p']:.4f}{'' if r.get('exact') else ' (from rates)'} "
                         f"| {ph} | {outcome} |")
    return "\n".join(lines)
