"""Choose and fit the calibrated interval's widening by cross-validation on the fit levels (issue 36).

A candidate is a bias scale (tau, proxy b), a Mondrian stratum rule
(:mod:`crbc.estimators.calibration_strata`) and a shape (``symmetric`` or ``oriented``). On
per-step quantities (:mod:`experiments.calibration_scores`; arrays (N,)) it is::

    s_n  = sqrt( sd_n^2 + (tau b(V_n))^2 )      o_n = +1 if c_n >= 0 else -1
    e_n  = o_n (A_n - c_n) / s_n  (the error oriented away from 0)      z_n = |e_n|
    symmetric: lo(L, G, k) = hi(L, G, k) = the L-quantile of z
    oriented:  lo(L, G, k) = max(0, -(the (1 - L)/2-quantile of e)),  hi(L, G, k) = the (1 + L)/2-quantile of e
               (quantiles over the fit steps of group size G in stratum k, pooled over the three
               settings, each level weighing 1: its steps share it)
    interval_n = c_n + o_n [-lo s_n, hi s_n];  covered_n = -lo <= e_n <= hi
    sure_n = not none_n and |c_n| > lo(0.9, G, k_n) s_n     (the interval excludes 0)

Scores per (setting, G) cell, means over levels of per-level means (the report's convention):
coverage at L = 0.8 / 0.9 / 0.95, the sure share and the sure-sign agreement (sign(c) = sign(A)
over sure steps with |A| > 1e-3). ``cross_validate`` scores every level with a lambda fitted on
the other folds (levels split by index mod FOLDS, the same in every setting); ``holdout`` fits on
one set of cells and scores another (the validation split).
"""

from __future__ import annotations

import numpy as np

from crbc.estimators.calibration import bias_proxy
from crbc.estimators.calibration_strata import n_strata, stratum

SIZES = (8, 16, 32)
LEVELS = (0.8, 0.9, 0.95)
GRID_LEVELS = tuple(round(x, 2) for x in np.arange(0.5, 0.995, 0.01))
FOLDS = 5
SIGN_EPS = 1e-3


def level_weights(level_N: np.ndarray) -> np.ndarray:
    """1 / (steps of the step's level) / (levels): every level weighs the same, (N,)."""
    _, inv, cnt = np.unique(level_N, return_inverse=True, return_counts=True)
    return 1.0 / cnt[inv] / len(cnt)


def weighted_quantiles(z: np.ndarray, w: np.ndarray, qs) -> np.ndarray:
    """The smallest z whose weighted cumulative share reaches q, for every q of ``qs``."""
    if len(z) == 0:
        return np.full(len(qs), np.nan)
    o = np.argsort(z, kind="stable")
    cw = np.cumsum(w[o]) / w.sum()
    idx = np.minimum(np.searchsorted(cw, np.asarray(qs) - 1e-12), len(z) - 1)
    return z[o][idx]


def prepare(f: dict, tau: float, proxy: str, rule) -> dict:
    """e, s, stratum and level weights of one cell's per-step arrays ``f``."""
    s = np.sqrt(f["sd"] ** 2 + (tau * bias_proxy(f["v"], proxy)) ** 2)
    e = np.where(f["c"] >= 0, 1.0, -1.0) * (f["a"] - f["c"]) / np.maximum(s, 1e-12)
    return {"e": e, "s": s, "k": stratum(f, rule), "w": level_weights(f["level"]), "level": f["level"],
            "c": f["c"], "a": f["a"], "none": f["none"].astype(bool)}


def fit_lambda(parts: list[dict], masks: list[np.ndarray] | None, K: int, qs, shape: str) -> np.ndarray:
    """(lo, hi) of the module docstring, shape (K, len(qs), 2), from the steps of ``parts``
    (selected by ``masks``), each level weighing 1 within its part; a stratum without steps
    gets the pooled values."""
    masks = masks or [None] * len(parts)
    e = np.concatenate([d["e"] if m is None else d["e"][m] for d, m in zip(parts, masks, strict=True)])
    k = np.concatenate([d["k"] if m is None else d["k"][m] for d, m in zip(parts, masks, strict=True)])
    w = np.concatenate([level_weights(d["level"] if m is None else d["level"][m])
                        for d, m in zip(parts, masks, strict=True)])
    qs = np.asarray(qs, dtype=float)

    def one(sel):
        if shape == "symmetric":
            z = weighted_quantiles(np.abs(e[sel]), w[sel], qs)
            return np.stack([z, z], axis=1)
        lo = np.maximum(-weighted_quantiles(e[sel], w[sel], (1 - qs) / 2), 0.0)
        return np.stack([lo, weighted_quantiles(e[sel], w[sel], (1 + qs) / 2)], axis=1)

    pooled = one(np.ones(len(e), dtype=bool))
    return np.array([one(k == j) if (k == j).any() else pooled for j in range(K)])


def per_level(d: dict, lam: np.ndarray) -> dict[str, np.ndarray]:
    """Per-level scores of one cell under (lo, hi) (K, 3, 2) at LEVELS: arrays over its levels."""
    lv, inv = np.unique(d["level"], return_inverse=True)
    n = np.bincount(inv).astype(float)
    out = {}
    for j, L in enumerate(LEVELS):
        lo, hi = lam[d["k"], j, 0], lam[d["k"], j, 1]
        inside = (d["e"] * d["s"] >= -lo * d["s"] - 1e-9) & (d["e"] * d["s"] <= hi * d["s"] + 1e-9)
        out[f"coverage_{L:g}"] = np.bincount(inv, weights=inside.astype(float)) / n
    sure = ~d["none"] & (np.abs(d["c"]) > lam[d["k"], 1, 0] * d["s"])
    out["sure_share"] = np.bincount(inv, weights=sure.astype(float), minlength=len(lv)) / n
    m = sure & (np.abs(d["a"]) > SIGN_EPS)
    right = m & (np.sign(d["c"]) == np.sign(d["a"]))
    cnt = np.bincount(inv, weights=m.astype(float), minlength=len(lv))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["sure_sign"] = np.where(cnt > 0, np.bincount(inv, weights=right.astype(float), minlength=len(lv))
                                    / cnt, np.nan)
    out["level"] = lv
    return out


def summary(levels: dict[str, np.ndarray]) -> dict[str, float]:
    """Means over levels (NaN left out) of :func:`per_level`'s arrays."""
    return {k: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
            for k, v in levels.items() if k != "level"}


def cross_validate(cells: dict, settings, rule, shape: str) -> dict[str, dict[str, float]]:
    """Cross-validated scores per cell ``"<setting> G=<G>"``: each level scored with the lambda
    fitted on the other folds; ``cells`` maps (setting, G) to :func:`prepare`'s dict."""
    K = n_strata(rule)
    out = {}
    for G in SIZES:
        parts = [cells[(s, G)] for s in settings]
        acc = [{} for _ in parts]
        for fold in range(FOLDS):
            train = [(d["level"] % FOLDS) != fold for d in parts]
            lam = fit_lambda(parts, train, K, LEVELS, shape)
            for i, d in enumerate(parts):
                held = ~train[i]
                sub = {k: v[held] for k, v in d.items()}
                for k, v in per_level(sub, lam).items():
                    acc[i].setdefault(k, []).append(v)
        for s, a in zip(settings, acc, strict=True):
            out[f"{s} G={G}"] = summary({k: np.concatenate(v) for k, v in a.items()})
    return out


def holdout(fit_cells: dict, eval_cells: dict, settings, rule, shape: str) -> tuple[dict, dict]:
    """(lambda per G on the LEVELS, scores per cell of ``eval_cells``) with lambda fitted on all
    of ``fit_cells``."""
    K = n_strata(rule)
    lams, out = {}, {}
    for G in SIZES:
        lams[G] = fit_lambda([fit_cells[(s, G)] for s in settings], None, K, LEVELS, shape)
        for s in settings:
            out[f"{s} G={G}"] = summary(per_level(eval_cells[(s, G)], lams[G]))
    return lams, out


def grid(fit_cells: dict, settings, rule, shape: str) -> dict[str, list[list[list[float]]]]:
    """lo and hi on GRID_LEVELS: {"lo": [stratum][G index][level index], "hi": ...}, fitted on
    all fit levels."""
    K = n_strata(rule)
    per_g = [fit_lambda([fit_cells[(s, G)] for s in settings], None, K, GRID_LEVELS, shape) for G in SIZES]
    return {side: [[[round(float(x), 4) for x in per_g[gi][j, :, i]] for gi in range(len(SIZES))] for j in range(K)]
            for i, side in enumerate(("lo", "hi"))}


def worst(scores: dict[str, dict[str, float]]) -> float:
    """The largest |coverage - L| over cells and LEVELS."""
    return max(abs(v[f"coverage_{L:g}"] - L) for v in scores.values() for L in LEVELS)


def min_at(scores: dict, key: str, G: int | None = None) -> float:
    """The smallest ``key`` over the cells (of group size G when given)."""
    return min(v[key] for c, v in scores.items() if G is None or c.endswith(f"G={G}"))
