"""The backups side by side (crbc.explain.backups_side): each method's line at one anchor of the
worked example (docs/MATH.md section 8), checked by hand, and the order comparison."""

from __future__ import annotations

import numpy as np
import pytest

from crbc.explain import backups_side as B
from crbc.io.rollouts import read_rollouts
from crbc.process import merge
from tests.support.paths import ROOT


@pytest.fixture()
def worked():
    return merge([read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")[0]])


def test_each_method_at_s0_of_the_worked_example(worked):
    sb = B.side_by_side(worked, 0)
    assert sb.label == "s0" and sb.actions == ("a", "b") and sb.truth is None and sb.reference == "the closure"
    by = {m.method: m for m in sb.lines}
    # the fixed point: docs/MATH.md section 8, K = infinity
    assert by["crbc"].value_line == "V(s0) = Σ_a mu(a|s0) Q(s0,a) = 0.2 × 0.4802 + 0.8 × 0.3601 = 0.3842"
    assert np.allclose(by["crbc"].scores, [0.0960, -0.0240], atol=1e-4)
    # the maximum: both successors are one step from a win worth 10, so V_rf(s1) = V_rf(s2) = 0.9 x 10
    assert "max(0.00, 0.9 × max(9.00, 9.00)) = max(0.00, 8.1000) = 8.1000" in by["rewardflow"].value_line
    assert np.allclose(by["rewardflow"].scores, [0.9, 0.9])
    # the shortest path: s1 and s2 are one hop from z+, so a and b tie
    assert by["shortest_path"].value_line == "d(s0) = 1 + min(d(s1) = 1, d(s2) = 1) = 2;  V_sp(s0) = 0.8^2 = 0.6400"
    assert np.allclose(by["shortest_path"].scores, [0.0, 0.0])
    # GiGPO: rollout 0's a won in 2 steps (0.95 x 10); b: one win of four
    assert np.allclose(by["gigpo"].scores, [9.5 - 3.8, 2.375 - 3.8])
    # orders like the closure (a above b): gigpo, and HGPO's and G2PO's means of returns; the two
    # extrema (and GraphGPO's shortest path) tie; crbc is the reference here, not a candidate
    assert sb.right == ("gigpo", "hgpo", "g2po")
    assert "d(s0) = 1 + min(d(s1) = 1, d(s2) = 1) = 2" in by["graphgpo"].value_line
    assert "V(s1) = 5.0000, V(s2) = 3.3333" in by["g2po"].value_line  # 0.95 x 10 / 2 and 10 / 3
    assert np.allclose(by["g2po"].scores, [0.95, -0.2375])
    assert B.pairs_agreeing(by["rewardflow"].scores, by["crbc"].scores) == (0, 1)
    assert sb.best(by["shortest_path"].scores) == "(tie)" and sb.best(by["crbc"].scores) == "a"


def test_the_truth_is_the_reference_when_given(worked):
    truth_N = np.where(worked.step_state == 0, np.where(worked.sa_action[worked.step_sa] == 0, -0.1, 0.1), 0.0)
    sb = B.side_by_side(worked, 0, anchor_advantage_N=truth_N)
    assert sb.reference == "the truth" and sb.truth == (-0.1, 0.1)
    assert sb.right == ()  # every method puts a at or above b, the truth says b
    assert B.pairs_agreeing([3, 2, 1], [1, 2, 3]) == (0, 3) and B.pairs_agreeing([1, 2, 3], [1, 3, 2]) == (2, 3)


def test_same_order_and_choosable_anchors(worked):
    assert B.same_order([1, 2, 2], [0.1, 0.5, 0.5]) and not B.same_order([1, 2], [1, 1])
    assert B.choosable_anchors(worked) == [0, 2, 1]  # s0 (5 visits), s2 (3: e, g), s1 (2: c, d)
    with pytest.raises(IndexError):
        B.side_by_side(worked, 7)


def _many_actions(n_actions: int, visits: int = 3):
    """One group whose hub anchor sees ``n_actions`` actions (action i taken i % 5 + 1 times per
    round, ``visits`` rounds), each leading to its own successor, then success or failure."""
    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    rollouts, r = [], 0
    for _ in range(visits):
        for i in range(n_actions):
            for _ in range(i % 5 + 1):
                rollouts.append(Rollout("hub", r, (Step("hub", f"act{i}"), Step(f"room{i}", "go")), bool(i % 3 == 0)))
                r += 1
    return merge([RolloutGroup("hub", tuple(rollouts))])


def test_pair_steps_is_every_pairs_own_mask():
    """The fast path (one sort of the anchor's steps) against the obvious one: for every anchor
    of two samples and the hub, each pair's steps are flatnonzero(step_sa == sa), in order."""
    from crbc.explain.anchor_names import pair_steps, state_pairs

    checked = 0
    for p in (merge(read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")[:4]),
              merge([read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")[0]]), _many_actions(40)):
        for s in range(p.n_states):
            pairs = state_pairs(p, s)
            got = pair_steps(p, s, pairs)
            assert len(got) == len(pairs)
            for sa, steps in zip(pairs, got, strict=True):
                assert np.array_equal(steps, np.flatnonzero(p.step_sa == sa))
                checked += 1
    assert checked > 100


def test_an_anchor_with_many_actions_compares_the_most_visited_and_its_lines_stay_short():
    p = _many_actions(400)
    sb = B.side_by_side(p, 0)
    assert sb.n_actions == 400 and len(sb.actions) == B.MAX_COMPARED
    # the 30 most visited: the 80 actions taken 5 times per round come first, first seen first
    assert sb.actions == tuple(f"act{i}" for i in range(4, 400, 5))[: B.MAX_COMPARED]
    assert "the 30 most visited are compared" in sb.compared_note
    for m in sb.lines:
        assert len(m.action_lines) == len(m.scores) == B.MAX_COMPARED
        assert len(m.value_line) < 2000 and all(len(x) < 2000 for x in m.action_lines), m.method
    assert "more)" in sb.lines[0].value_line  # crbc's V sums over all 400, written cut
    small = B.side_by_side(_many_actions(20), 0)
    assert small.n_actions == 20 and len(small.actions) == 20 and small.compared_note == ""


def test_joined_writes_at_most_its_limit_of_terms():
    from crbc.explain.table_rows import joined

    assert joined([1, 2, 3], str) == "1 + 2 + 3"
    assert joined(list(range(10)), str, ", ", 4) == "0, 1, 2, … (6 more), 9"
    seen = []
    joined(range(10_000), lambda x: seen.append(x) or str(x), limit=5)
    assert seen == [0, 1, 2, 3, 9_999]  # only the written terms are formatted


def test_informative_anchor_is_the_first_busiest_whose_closure_tells_actions_apart():
    """The vectorised spread per anchor against the obvious loop (np.ptp of each anchor's pairs),
    on every group of two samples."""
    from crbc.estimators import registry
    from crbc.explain.anchor_names import state_pairs

    checked = 0
    for name in ("sokoban-strong.jsonl", "sokoban-weak.jsonl"):
        for g in read_rollouts(ROOT / "sample_rollouts" / name):
            p = merge([g])
            a = registry.compute("crbc", p).credit_SA
            anchors = B.choosable_anchors(p)
            want = next((s for s in anchors if np.isfinite(a[state_pairs(p, s)]).all()
                         and np.ptp(a[state_pairs(p, s)]) > B.TIE), anchors[0] if anchors else None)
            assert B.informative_anchor(p, a) == want
            checked += 1
    assert checked >= 10
