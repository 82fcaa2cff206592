"""crbc.run_analysis.review (trainer vs estimators per iteration), crbc.explain.observation and
crbc.viz.intervals on ALFWorld-like groups (devtools/textworld.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

import crbc
import crbc.run_analysis.review as RR
from crbc.explain import observation as O
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from devtools.textworld import alfworld_like_group


def _groups():
    return [alfworld_like_group(f"g{k}", seed=k) for k in range(3)]


def _with_advantage(groups, values_N):
    it = iter(values_N.tolist())
    return [RolloutGroup(g.group, tuple(dataclasses.replace(r, steps=tuple(
        dataclasses.replace(s, trainer_advantage=next(it)) for s in r.steps)) for r in g.rollouts))
        for g in groups]


def test_ranks_and_spearman_match_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 40).astype(float), rng.normal(size=40)
    assert RR.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert math.isnan(RR.spearman(np.ones(5), y[:5]))
    assert RR.sign_agreement(np.array([1.0, -1.0, 0.0, 2.0]), np.array([1.0, 1.0, 1.0, 0.0])) == pytest.approx(1 / 3)


def test_review_numbers_are_the_librarys():
    groups = _groups()
    rv = RR.review_iteration(groups, n_resamples=30)
    ms = crbc.merge_stats(groups)
    ci = crbc.credit_intervals(groups, "crbc", n_resamples=30, seed=0)
    assert rv.shared_share == ms.shared_step_share and rv.n_anchors == ms.n_anchors
    assert rv.sure_share == pytest.approx(ci.sure_share())
    assert rv.coverage == pytest.approx(np.mean(ci.evidence_N != "none"))
    assert rv.success == pytest.approx(np.mean([r.success for g in groups for r in g.rollouts]))
    assert rv.n_steps == sum(g.n_steps for g in groups) and rv.trainer_steps == rv.n_steps
    assert set(rv.agreement) == set(crbc.names())
    # per group: the group's own shares, steps and success
    for row, g in zip(rv.rows, groups, strict=True):
        assert row.steps == g.n_steps and row.success == pytest.approx(g.success_rate)
        assert row.shared_share == pytest.approx(crbc.merge_stats([g]).shared_step_share)


def test_a_trainer_that_uses_crbc_agrees_with_crbc():
    groups = _groups()
    adv = crbc.compute("crbc", groups).advantage_N
    rv = RR.review_iteration(_with_advantage(groups, adv), estimators=["crbc", "grpo"], n_resamples=10)
    assert rv.agreement["crbc"]["spearman"] == pytest.approx(1.0)
    assert rv.agreement["crbc"]["sign"] == pytest.approx(1.0)
    assert all(r.disagreement == pytest.approx(0.0) for r in rv.rows if not math.isnan(r.disagreement))
    s = rv.summary()
    assert s["rho.crbc"] == pytest.approx(1.0) and "sign.grpo" in s


def test_no_trainer_advantage_gives_no_agreement():
    groups = [alfworld_like_group(f"g{k}", seed=k, with_advantage=False) for k in range(2)]
    rv = RR.review_iteration(groups, n_resamples=10)
    assert rv.trainer_steps == 0 and rv.agreement == {}
    assert all(math.isnan(r.disagreement) for r in rv.rows)


def test_sort_rows_puts_what_is_worth_a_look_first():
    mk = lambda i, succ, share, dis: RR.GroupRow(i, f"g{i}", 8, 10, succ, share, 0, 0, 1 - dis, dis)  # noqa: E731
    rows = [mk(0, 1.0, 0.2, 0.1), mk(1, 0.5, 0.9, math.nan), mk(2, 0.25, 0.5, 1.5)]
    assert [r.index for r in RR.sort_rows(rows, "disagreement")] == [2, 0, 1]
    assert [r.index for r in RR.sort_rows(rows, "sharing")] == [1, 2, 0]
    assert [r.index for r in RR.sort_rows(rows, "mixed")] == [1, 2, 0]
    with pytest.raises(ValueError):
        RR.sort_rows(rows, "nope")


def test_an_exact_key_on_history_observations_merges_nothing():
    steps = lambda i: tuple(Step(f"history {i} step {t}", "a") for t in range(3))  # noqa: E731
    g = RolloutGroup("h", tuple(Rollout("h", i, steps(i), i % 2 == 0) for i in range(4)))
    rv = RR.review_iteration([g], estimators=["crbc"], n_resamples=10)
    assert rv.shared_share == 0.0 and rv.coverage == 0.0 and rv.sure_share == 0.0


def test_step_observation_and_changes():
    g = alfworld_like_group(seed=3)
    s = g.rollouts[0].steps
    seen = O.step_observation(g, s[4].anchor, rollout=0, t=4)  # 0-based, as the files number steps
    assert (seen.rollout, seen.t, seen.text, seen.previous) == (0, 4, s[4].anchor, s[3].anchor)
    first = O.step_observation(g, s[0].anchor)
    assert first.t == 0 and first.previous is None and O.changes(None, first.text) == []
    diff = O.changes("a\nb\nc", "a\nB\nc")
    assert diff == ["- b", "+ B"]
    assert O.step_observation(g, "no such anchor") is None


def test_evidence_marks_and_sure_only():
    from crbc.viz.heatmap import credit_heatmaps_svg
    from tests.support.heatmap_cells import panels

    g = alfworld_like_group(seed=2)
    c = crbc.compute("crbc", [g])
    ci = crbc.credit_intervals(c.process, "crbc", n_resamples=30)
    cells = panels(credit_heatmaps_svg({"crbc": c}, "credit", evidence={"crbc": ci.evidence_N}, sure_only=True))["crbc"]
    kept = np.array([x.fill != "#ffffff" for x in cells])
    assert np.array_equal(kept, ci.evidence_N == "sure")
    assert all(x.pick is not None for x in cells)  # a blank cell still opens its step


def test_intervals_by_size_follow_one_pair():
    from crbc.explain import growing_group as GG

    g = alfworld_like_group(seed=4, n_rollouts=16)
    p = crbc.merge([g])
    i = GG.busiest_pair(p)
    anchor, action = p.state_anchor[int(p.sa_state[i])], p.action_names[int(p.sa_action[i])]
    assert GG.sizes_for(16) == [2, 4, 8, 16] and GG.sizes_for(5) == [2, 4, 5]
    rows = GG.intervals_by_size(g, anchor, action, [2, 16], n_resamples=50, truth=0.0)
    full = crbc.credit_intervals([g], "crbc", n_resamples=50)
    assert rows[-1]["Q − V"] == pytest.approx(full.credit_SA[i])
    assert rows[-1]["lo"] == pytest.approx(full.lo_SA[i]) and rows[-1]["hi"] == pytest.approx(full.hi_SA[i])
    assert rows[-1]["N(s,a)"] == int(p.n_sa[i]) and rows[0]["N(s,a)"] <= rows[-1]["N(s,a)"]
    assert rows[-1]["covers the truth"] == (full.lo_SA[i] <= 0.0 <= full.hi_SA[i])
