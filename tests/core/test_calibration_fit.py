"""The fit of the calibrated interval's widenings (experiments/calibration_fit.py) on synthetic errors.

Oriented and symmetric widenings against quantiles taken by hand; every level weighs the same
whatever its number of steps; a widening fitted on one sample covers a fresh sample from the same
law at about the nominal level, per stratum, and `sure` is |c| > lo s.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments import calibration_fit as F


def _cell(rng, n_levels=400, steps=20, skew=True):
    """Per-step arrays of one synthetic cell: e ~ a lopsided law (or a symmetric one), s = 1,
    c > 0, two strata (none / not) by a coin."""
    level = np.repeat(np.arange(n_levels), steps).astype(float)
    n = len(level)
    e = rng.gamma(2.0, 1.0, n) - 1.0 if skew else rng.normal(size=n)
    c = rng.uniform(0.5, 3.0, n)
    none = rng.random(n) < 0.4
    return {"e": e, "s": np.ones(n), "k": (~none).astype(np.int64), "w": F.level_weights(level),
            "level": level, "c": c, "a": c + e, "none": none}


def test_oriented_widenings_are_the_tail_quantiles():
    rng = np.random.default_rng(0)
    d = _cell(rng)
    lam = F.fit_lambda([d], None, 2, (0.8, 0.9), "oriented")
    for k in (0, 1):
        e = np.sort(d["e"][d["k"] == k])  # equal steps per level: the weighted quantile is the plain one
        for j, L in enumerate((0.8, 0.9)):
            lo_q = e[int(np.ceil((1 - L) / 2 * len(e))) - 1]
            hi_q = e[int(np.ceil((1 + L) / 2 * len(e))) - 1]
            assert lam[k, j, 0] == pytest.approx(max(0.0, -lo_q), abs=0.02)
            assert lam[k, j, 1] == pytest.approx(hi_q, abs=0.02)
    assert (lam[:, :, 1] > lam[:, :, 0]).all()  # the gamma's long right tail: the far side is wider
    sym = F.fit_lambda([d], None, 2, (0.9,), "symmetric")
    assert (sym[:, 0, 0] == sym[:, 0, 1]).all()
    assert sym[1, 0, 0] == pytest.approx(np.quantile(np.abs(d["e"][d["k"] == 1]), 0.9), abs=0.03)


def test_every_level_weighs_the_same():
    # level 0: 1 step with e = 10; levels 1..9: 100 steps each with e = 0. Weighted by level, the
    # 95% quantile of |e| is 10 (level 0 carries 10% of the weight); by step it would be 0
    level = np.concatenate([[0.0], np.repeat(np.arange(1, 10), 100).astype(float)])
    e = np.concatenate([[10.0], np.zeros(900)])
    w = F.level_weights(level)
    assert w.sum() == pytest.approx(1.0) and w[0] == pytest.approx(0.1)
    assert F.weighted_quantiles(np.abs(e), w, (0.95,))[0] == 10.0
    assert F.weighted_quantiles(np.abs(e), w, (0.85,))[0] == 0.0


def test_a_fitted_widening_covers_a_fresh_sample_per_stratum():
    rng = np.random.default_rng(1)
    fit, fresh = _cell(rng), _cell(rng)
    for shape in ("oriented", "symmetric"):
        lam = F.fit_lambda([fit], None, 2, F.LEVELS, shape)
        for k in (0, 1):
            sub = {key: v[fresh["k"] == k] for key, v in fresh.items()}
            got = F.summary(F.per_level(sub, lam))
            for L in F.LEVELS:
                assert got[f"coverage_{L:g}"] == pytest.approx(L, abs=0.02)
    lam = F.fit_lambda([fit], None, 2, F.LEVELS, "oriented")
    scores = F.per_level(fresh, lam)
    sure = ~fresh["none"] & (np.abs(fresh["c"]) > lam[fresh["k"], 1, 0] * fresh["s"])
    assert np.mean(scores["sure_share"]) == pytest.approx(sure.mean(), abs=1e-12)
    assert F.worst({"x": F.summary(scores)}) < 0.02
