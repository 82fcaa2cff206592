"""crbc.truth.paired: the paired difference of two estimators level by level, against a loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crbc.truth.paired import paired_difference, paired_rows


def _result(x, y):
    return {"per_level": {"crbc": {"8": {"step": {"spearman": x}}}, "rival": {"8": {"step": {"spearman": y}}}}}


def test_the_difference_by_a_loop():
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.5, 0.2, 40).tolist(), rng.normal(0.4, 0.2, 40).tolist()
    x[3], y[7] = math.nan, None  # a level either side lacks is left out of the pair
    got = paired_difference(_result(x, y), "crbc", "rival", 8)
    d = [a - b for a, b in zip(x, y, strict=True) if a is not None and b is not None and math.isfinite(a)
         and math.isfinite(b)]
    assert got.n == len(d) == 38 and got.mean == pytest.approx(sum(d) / len(d))
    assert got.wins == sum(1 for v in d if v > 0)
    means = []  # the bootstrap, resample by resample, with the same generator
    r = np.random.default_rng(0)
    for row in r.integers(0, len(d), size=(2000, len(d))):
        means.append(sum(d[i] for i in row) / len(d))
    lo, hi = np.quantile(means, [0.025, 0.975])
    assert (got.lo, got.hi) == pytest.approx((lo, hi))
    assert got.lo < got.mean < got.hi


def test_rows_leave_out_variants_and_missing_estimators():
    res = _result([0.5, 0.6], [0.1, 0.2])
    res["per_level"]["crbc K=3"] = res["per_level"]["rival"]
    rows = paired_rows(res)
    assert [(r["estimator"], r["G"], r["wins"], r["n"]) for r in rows] == [("rival", 8, 2, 2)]
    assert paired_difference(res, "crbc", "nobody", 8) is None
    assert paired_difference(_result([math.nan], [0.1]), "crbc", "rival", 8) is None
