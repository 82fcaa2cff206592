"""Choose and fit the calibrated interval's widening by cross-validation on the fit levels (issue 36).

A candidate is a bias scale (tau, proxy b) and a Mondrian stratum rule
(:mod:`crbc.estimators.calibration_strata`). On per-step quantities
(:mod:`benchmarks.calibration_scores`; arrays (N,)) it is::

    s_n  = sqrt( sd_n^2 + (tau b(V_n))^2 )          z_n = |A_n - c_n| / s_n
    lambda(L, G, k) = the L-quantile of z over the fit steps of group size G in stratum k, pooled
                      over the three settings, each level weighing 1 (its steps share it)
    covered_n = z_n <= lambda(L, G, k_n);  sure_n = not none_n and |c_n| > lambda(0.9, G, k_n) s_n

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
    """z, s, stratum and level weights of one cell's per-step arrays ``f``."""
    s = np.sqrt(f["sd"] ** 2 + (tau * bias_proxy(f["v"], proxy)) ** 2)
    z = np.abs(f["a"] - f["c"]) / np.maximum(s, 1e-12)
    return {"z": z, "s": s, "k": stratum(f, rule), "w": level_weights(f["level"]), "level": f["level"],
            "c": f["c"], "a": f["a"], "none": f["none"].astype(bool)}


def fit_lambda(parts: list[dict], masks: list[np.ndarray] | None, K: int, qs) -> np.ndarray:
    """lambda (K, len(qs)) from the steps of ``parts`` (selected by ``masks``), each level
    weighing 1 within its part; a stratum without steps gets the pooled quantile."""
    z = np.concatenate([d["z"] if m is None else d["z"][m] for d, m in zip(parts, masks or [None] * len(parts),
                                                                           strict=True)])
    k = np.concatenate([d["k"] if m is None else d["k"][m] for d, m in zip(parts, masks or [None] * len(parts),
                                                                           strict=True)])
    w = np.concatenate([level_weights(d["level"] if m is None else d["level"][m])
                        for d, m in zip(parts, masks or [None] * len(parts), strict=True)])
    pooled = weighted_quantiles(z, w, qs)
    return np.array([weighted_quantiles(z[k == j], w[k == j], qs) if (k == j).any() else pooled
                     for j in range(K)])


def per_level(d: dict, lam: np.ndarray) -> dict[str, np.ndarray]:
    """Per-level scores of one cell under lambda (K, 3) at LEVELS: arrays over the cell's levels."""
    lv, inv = np.unique(d["level"], return_inverse=True)
    n = np.bincount(inv).astype(float)
    out = {}
    for j, L in enumerate(LEVELS):
        out[f"coverage_{L:g}"] = np.bincount(inv, weights=(d["z"] <= lam[d["k"], j] + 1e-9).astype(float)) / n
    sure = ~d["none"] & (np.abs(d["c"]) > lam[d["k"], 1] * d["s"])
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


def cross_validate(cells: dict, settings, rule) -> dict[str, dict[str, float]]:
    """Cross-validated scores per cell ``"<setting> G=<G>"``: each level scored with the lambda
    fitted on the other folds; ``cells`` maps (setting, G) to :func:`prepare`'s dict."""
    K = n_strata(rule)
    out = {}
    for G in SIZES:
        parts = [cells[(s, G)] for s in settings]
        acc = [{} for _ in parts]
        for fold in range(FOLDS):
            train = [(d["level"] % FOLDS) != fold for d in parts]
            lam = fit_lambda(parts, train, K, LEVELS)
            for i, d in enumerate(parts):
                held = ~train[i]
                sub = {k: v[held] for k, v in d.items()}
                for k, v in per_level(sub, lam).items():
                    acc[i].setdefault(k, []).append(v)
        for s, a in zip(settings, acc, strict=True):
            out[f"{s} G={G}"] = summary({k: np.concatenate(v) for k, v in a.items()})
    return out


def holdout(fit_cells: dict, eval_cells: dict, settings, rule) -> tuple[dict, dict]:
    """(lambda per G on the LEVELS, scores per cell of ``eval_cells``) with lambda fitted on all
    of ``fit_cells``."""
    K = n_strata(rule)
    lams, out = {}, {}
    for G in SIZES:
        lams[G] = fit_lambda([fit_cells[(s, G)] for s in settings], None, K, LEVELS)
        for s in settings:
            out[f"{s} G={G}"] = summary(per_level(eval_cells[(s, G)], lams[G]))
    return lams, out


def grid(fit_cells: dict, settings, rule) -> list[list[list[float]]]:
    """lambda on GRID_LEVELS: [stratum][G index][level index], fitted on all fit levels."""
    K = n_strata(rule)
    per_g = [fit_lambda([fit_cells[(s, G)] for s in settings], None, K, GRID_LEVELS) for G in SIZES]
    return [[[round(float(x), 4) for x in per_g[gi][j]] for gi in range(len(SIZES))] for j in range(K)]


def worst(scores: dict[str, dict[str, float]]) -> float:
    """The largest |coverage - L| over cells and LEVELS."""
    return max(abs(v[f"coverage_{L:g}"] - L) for v in scores.values() for L in LEVELS)


def min_at(scores: dict, key: str, G: int | None = None) -> float:
    """The smallest ``key`` over the cells (of group size G when given)."""
    return min(v[key] for c, v in scores.items() if G is None or c.endswith(f"G={G}"))
