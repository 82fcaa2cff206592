"""A heatmap of a big group draws a stated selection of its rollouts (crbc.viz.heatmap.heat_rows):
the cell budget bins steps but never rollouts, so without it 4,000 rollouts under 8 estimators
were 832,000 cells."""

from __future__ import annotations

import re

import numpy as np
import pytest

import crbc
from crbc import Rollout, RolloutGroup, Step
from crbc.viz import heatmap as H


def _group(n: int, p_success: float, seed: int) -> RolloutGroup:
    rng = np.random.default_rng(seed)
    rollouts = []
    for i in range(n):
        steps = tuple(Step(f"a{int(x)}", ("l", "r")[int(rng.integers(2))]) for x in rng.integers(30, size=int(rng.integers(2, 8))))
        rollouts.append(Rollout("g", i, steps, bool(rng.random() < p_success)))
    return RolloutGroup("g", tuple(rollouts))


def _slowly(success: list[bool], limit: int, keep) -> list[int] | None:
    """The obvious twin: the first successes up to half (more when failures are few), the first
    failures to fill, the kept ones, as a sorted list; None when everything fits."""
    n = len(success)
    if n <= limit:
        return None
    ok = [i for i in range(n) if success[i]]
    bad = [i for i in range(n) if not success[i]]
    take_ok = min(len(ok), max(limit // 2, limit - len(bad)))
    chosen = ok[:take_ok] + bad[:limit - take_ok] + [k for k in keep if 0 <= k < n]
    return sorted(set(chosen))


@pytest.mark.parametrize("p_success", [0.0, 0.1, 0.5, 0.95, 1.0])
def test_heat_rows_are_the_first_of_each_outcome_and_the_kept_ones(p_success):
    p = crbc.merge([_group(60, p_success, seed=int(p_success * 100))])
    success = np.asarray(p.rollout_success, dtype=bool).tolist()
    for limit in (1, 7, 20, 59, 60, 200):
        for keep in ((), (45,), (3, 58, -1, 999)):
            assert H.heat_rows(p, limit, keep) == _slowly(success, limit, keep)


def test_a_heatmap_with_rows_draws_those_rollouts_only():
    p = crbc.merge([_group(300, 0.4, seed=3)])
    c = {n: crbc.compute(n, p) for n in ("crbc", "gigpo")}
    rows = H.heat_rows(p, 20, keep=(250,))
    assert rows is not None and 250 in rows and len(rows) == 21
    svg = H.credit_heatmaps_svg(c, rows=rows)
    drawn = {int(i) for i in re.findall(r'data-pick="(\d+):\d+"', svg)}
    assert drawn == set(rows)  # a cell still picks its rollout's position in the whole group
    whole = H.credit_heatmaps_svg(c)
    assert len(svg) < len(whole) / 5
    assert len(H.heat_rows(p)) == H.HEAT_ROWS < len(p.rollout_len)  # the default limit
