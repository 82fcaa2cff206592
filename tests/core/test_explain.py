"""crbc.explain.arithmetic: the per-anchor arithmetic, tables, dense system, disagreement ranking, edits.

Golden values are the worked example of docs/MATH.md section 8 (checkable by hand), and the shipped
rare-route sample (shortest path ties the two routes, the closure does not).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crbc.estimators.closure as C
import crbc.explain.arithmetic as E
import crbc.explain.lesson_tables as T
from crbc.estimators.registry import compute
from crbc.explain import anchor_names as labels
from crbc.explain import disagreements as compare
from crbc.explain import what_if as edits
from crbc.explain.table_rows import cells, depth_name, fmt
from crbc.io.rollouts import Rollout, RolloutGroup, Step, read_rollouts
from crbc.process import merge
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
RARE = ROOT / "sample_rollouts" / "rare-route.jsonl"


def find_state(p, anchor: str, group: str | int | None = None) -> int:
    """The anchor id of ``anchor`` (its text or its label) in ``group`` (id or index; default: any).

    Raises ``KeyError`` when the anchor is not in the group."""
    if isinstance(group, str):
        if group not in p.group_ids:
            raise KeyError(f"no group {group!r}")
        group = p.group_ids.index(group)
    names = labels.anchor_labels(p)
    for key in (p.state_anchor, names):
        for s in range(p.n_states):
            if key[s] == anchor and (group is None or int(p.state_group[s]) == group):
                return s
    raise KeyError(f"anchor {anchor!r} not found" + ("" if group is None else f" in group {group}"))


@pytest.fixture(scope="module")
def worked():
    return read_rollouts(WORKED)[0]


@pytest.fixture(scope="module")
def wp(worked):
    return merge([worked])


def test_labels_of_the_worked_example_are_the_anchor_names(wp):
    assert labels.anchor_labels(wp) == ("s0", "s1", "s2")
    assert labels.node_labels(wp)[-2:] == ("z+", "z-")
    assert find_state(wp, "s2") == 2


def test_board_anchors_get_short_labels():
    p = merge(read_rollouts(RARE))
    assert labels.anchor_labels(p) == ("s0", "s1", "s2", "s3")
    assert find_state(p, "s1") == 1
    assert find_state(p, p.state_anchor[1], "rare-route") == 1
    with pytest.raises(KeyError):
        find_state(p, "s9")


def test_worked_example_at_the_closure(wp):
    ar = E.anchor_arithmetic(wp, 0, beta=0.98, depth=None)
    a, b = ar.action("a"), ar.action("b")
    assert ar.v == pytest.approx(0.3842, abs=5e-5)
    assert a.q == pytest.approx(0.4802, abs=5e-5)
    assert b.q == pytest.approx(0.3601, abs=5e-5)
    assert a.a == pytest.approx(0.0960, abs=5e-5)
    assert (a.n, a.mu, b.n, b.mu) == (1, 0.2, 4, 0.8)
    # successors of (s0, b): s1 once, s2 three times, with the closure values
    succ = {x.label: (x.n, x.p, x.v) for x in b.successors}
    assert succ["s1"] == (1, 0.25, pytest.approx(0.49))
    assert succ["s2"][:2] == (3, 0.75) and succ["s2"][2] == pytest.approx(0.98 / 3)
    assert b.q_expression == ("Q(s0,b) = 0.98 × (0.25 × V(s1) + 0.75 × V(s2)) = "
                              "0.98 × (0.25 × 0.4900 + 0.75 × 0.3267) = 0.3601")
    assert a.q_expression.endswith("= 0.4802")
    assert ar.v_expression.endswith("0.2 × 0.4802 + 0.8 × 0.3601 = 0.3842")
    # sigma = sqrt(0.2 * 0.09604^2 + 0.8 * 0.02401^2) = 0.04802 < sigma_min -> A_S = A / 0.1
    assert ar.sigma == pytest.approx(0.04802, abs=1e-5)
    assert ar.gate
    assert a.a_s == pytest.approx(0.9604, abs=5e-5)
    assert b.a_s == pytest.approx(-0.2401, abs=5e-5)
    other = {lab: E.anchor_arithmetic(wp, s).v for s, lab in enumerate(("s0", "s1", "s2"))}
    assert other["s1"] == pytest.approx(0.49, abs=5e-5)
    assert other["s2"] == pytest.approx(0.3267, abs=5e-5)


def test_worked_example_at_depth_zero(wp):
    ar = E.anchor_arithmetic(wp, 0, beta=0.98, depth=0)
    a, b = ar.action("a"), ar.action("b")
    assert ar.v == pytest.approx(0.3842, abs=5e-5)
    assert a.q == pytest.approx(0.9604, abs=5e-5)
    assert b.q == pytest.approx(0.2401, abs=5e-5)
    assert a.a == pytest.approx(0.5762, abs=5e-5)
    assert b.returns == pytest.approx((0.0, 0.0, 0.0, 0.9604))
    assert "mean of realised returns" in b.q_expression and b.q_expression.endswith("/ 4 = 0.2401")
    # sigma = 0.2881 > sigma_min: A_S(s0,a) = 0.5762 / 0.2881 = 2
    assert a.a_s == pytest.approx(2.0)


def test_depth_one_backs_up_depth_zero_values(wp):
    ar = E.anchor_arithmetic(wp, 0, depth=1)
    assert "V^(0)(s1)" in ar.action("a").q_expression
    assert ar.action("a").q == pytest.approx(0.4802, abs=5e-5)


def test_arithmetic_agrees_with_the_crbc_estimator_on_the_rare_route():
    p = merge(read_rollouts(RARE))
    cr = compute("crbc", p, beta=0.98)
    for s in range(p.n_states):
        ar = E.anchor_arithmetic(p, s)
        assert ar.v == pytest.approx(cr.value_S[s])
        for line in ar.actions:
            assert line.q == pytest.approx(cr.q_SA[line.pair])
            assert line.a_s == pytest.approx(cr.step_advantage_SA[line.pair])
            # Q = beta * sum P V from the displayed successors
            assert line.q == pytest.approx(0.98 * sum(x.p * x.v for x in line.successors))
            assert sum(x.p for x in line.successors) == pytest.approx(1.0)
        assert sum(line.mu for line in ar.actions) == pytest.approx(1.0)
    single = E.anchor_arithmetic(p, 3)
    assert not single.gate and single.actions[0].a_s == 0.0 and "gate closed" in single.gate_expression


def test_process_tables(wp):
    t = T.process_tables(wp)
    assert [r.n for r in t.states] == [5, 2, 3]
    mu = {(r.anchor, r.action): r.mu for r in t.pairs}
    assert mu[("s0", "a")] == 0.2 and mu[("s2", "e")] == pytest.approx(2 / 3)
    P = {(r.anchor, r.action, r.successor): (r.n_sax, r.p) for r in t.transitions}
    assert P[("s0", "b", "s2")] == (3, 0.75)
    assert P[("s1", "d", "z-")] == (1, 1.0)
    assert len(t.transitions) == 7


def test_dense_system_of_the_worked_example(wp):
    ds = E.dense_system(wp, beta=0.98)
    assert ds.labels == ("s0", "s1", "s2")
    np.testing.assert_allclose(ds.a[0], [1.0, -0.98 * 0.4, -0.98 * 0.6])  # M(s0,s1) = 0.2 + 0.8 * 0.25
    np.testing.assert_allclose(ds.b, [0.0, 0.49, 0.98 / 3])
    np.testing.assert_allclose(ds.v, [0.38416, 0.49, 0.98 / 3], atol=1e-12)
    np.testing.assert_allclose(ds.m.sum(axis=1), [1.0, 0.0, 0.0], atol=1e-12)  # s1, s2 lead only to boundaries
    assert ds.residual < 1e-12
    rows = ds.rows()
    assert rows[0] == {"": "s0", "s0": "1.0000", "s1": "-0.3920", "s2": "-0.5880", "b": "0.0000", "V": "0.3842"}


def test_dense_system_refuses_big_groups(wp):
    with pytest.raises(ValueError, match="anchors"):
        E.dense_system(wp, max_states=2)


def test_trajectory_table_and_grpo_spread(wp):
    rows = T.trajectory_table(wp)
    assert rows[0].path == "s0 -a-> s1 -c-> z+"
    assert rows[0].a_g == pytest.approx(1.0954, abs=1e-4)
    assert rows[1].a_g == pytest.approx(-0.7303, abs=1e-4)
    spread = {(r.anchor, r.action): r for r in T.grpo_pair_spread(wp)}
    # (s0, b) is in three failures and one success: GRPO credits it both ways
    assert spread[("s0", "b")].min < 0 < spread[("s0", "b")].max
    assert spread[("s0", "b")].occurrences == 4


def test_step_and_pair_tables_match_the_credit_file(wp):
    rows = T.step_table(wp, estimator="crbc", beta=0.98)
    first = rows[:2]
    # docs/FORMATS.md: rollout 1 of the worked example
    assert [round(r.v, 4) for r in first] == [0.3842, 0.49]
    assert [round(r.q, 4) for r in first] == [0.4802, 0.98]
    assert [round(r.a_s, 2) for r in first] == [0.96, 1.0]
    assert [round(r.a_final, 3) for r in first] == [5.897, 6.095]
    pairs = T.pair_table(wp, depth=0)
    assert pairs[0].q == pytest.approx(0.9604)
    grpo_row = T.step_table(wp, estimator="grpo")[0]
    assert grpo_row.v is None and "V" not in cells(grpo_row) and "A_final" in cells(grpo_row)


def test_depth_table_runs_from_k0_to_the_closure(wp):
    rows = T.depth_table(wp, beta=0.98, k_max=3, what="A")
    assert rows.ks == ("0", "1", "2", "3", "∞")
    assert rows.column("A(s0,a)")[0] == pytest.approx(0.57624)
    assert rows.column("A(s0,a)")[-1] == pytest.approx(0.09604)
    v = T.depth_table(wp, k_max=1, what="V")
    assert v.columns == ("V(s0)", "V(s1)", "V(s2)") and set(v.records()[0]) == {"K", "V(s0)", "V(s1)", "V(s2)"}
    with pytest.raises(ValueError):
        T.depth_table(wp, what="B")


def test_rare_route_sample_fools_shortest_path_but_not_the_closure():
    groups = read_rollouts(RARE)
    assert len(groups) == 1 and len(groups[0]) == 8
    p = merge(groups)
    foil = {r.anchor: r for r in T.foil_table(p)}
    # the reliable (s1) and the rare (s2) approach are both one hop from success
    assert foil["s1"].hops == foil["s2"].hops == 1
    assert (foil["s1"].through, foil["s1"].succeeded) == (4, 3)
    assert (foil["s2"].through, foil["s2"].succeeded) == (4, 1)
    assert foil["s1"].v_closure > 2.5 * foil["s2"].v_closure
    # at the fork s0: shortest path gives both actions the same credit; crbc does not
    sp = compute("shortest_path", p)
    cr = compute("crbc", p)
    at_s0 = p.step_state == 0
    assert np.allclose(sp.step_advantage_N[at_s0], 0.0)
    up = p.action_names.index("up")
    sa_up = int(np.flatnonzero((p.sa_state == 0) & (p.sa_action == up))[0])
    assert cr.step_advantage_SA[sa_up] == pytest.approx(1.0)
    d = compare.disagreements(p, "crbc vs shortest_path")
    top = d.anchors[0]
    assert (top.anchor, top.best_x, top.best_y, top.ranks_differ) == \
        ("s0", "up", "(tie)", True)


def test_disagreements_are_ranked_and_complete(wp, worked):
    for name in compare.COMPARISONS.names():
        d = compare.disagreements([worked], name, beta=0.98, sigma_min=0.1, depth=None)
        scores = [r.disagreement for r in d.anchors]
        assert scores == sorted(scores, reverse=True)
        assert len(d.anchors) == wp.n_states and len(d.steps) == wp.n_steps
        assert [abs(r.delta) for r in d.steps] == sorted((abs(r.delta) for r in d.steps), reverse=True)
    d = compare.disagreements(wp, "K = 0 vs closure")
    assert d.anchors[0].anchor == "s0"  # only s0 changes between K = 0 and the closure
    assert d.anchors[1].disagreement == pytest.approx(0.0)
    # the per-anchor score is the mean |delta| over the anchor's visits
    s0 = [r for r in d.steps if r.anchor == "s0"]
    assert d.anchors[0].disagreement == pytest.approx(np.mean([abs(r.delta) for r in s0]))


def test_disagreements_across_groups_keep_groups_apart(worked):
    rare = read_rollouts(RARE)[0]
    d = compare.disagreements([worked, rare], "crbc vs shortest_path")
    assert {r.group for r in d.anchors} == {"worked-example", "rare-route"}
    assert len(d.anchors) == 3 + 4
    assert d.anchors[0].group == "rare-route"  # the rare-route fork disagrees the most
    ranked = compare.anchors_by_visits(merge([worked, rare]))
    assert ranked[0].visits == 8


def test_flip_outcome(worked):
    g = edits.flip_outcome(worked, 1)
    assert g.rollouts[1].success and not worked.rollouts[1].success  # input untouched
    p = merge([g])
    # rollout 2 now succeeds: s1 always succeeds, so V(s1) = beta
    assert E.anchor_arithmetic(p, 1).v == pytest.approx(0.98)
    back = edits.flip_outcome(g, 1)
    assert back == worked
    truncated = RolloutGroup("t", (Rollout("t", 0, (Step("x", "a"),), False, truncated=True, score=-1.0),))
    flipped = edits.flip_outcome(truncated, 0).rollouts[0]
    assert flipped.success and not flipped.truncated and flipped.score is None
    with pytest.raises(IndexError):
        edits.flip_outcome(worked, 9)


def test_edit_remove_duplicate(worked):
    g = edits.edit_step(worked, 0, 0, action="b")  # rollout 1 now takes b at s0 (its step 0)
    p = merge([g])
    assert E.anchor_arithmetic(p, 0).actions[0].action == "b" and p.n_actions[0] == 1
    g2 = edits.edit_step(worked, 2, 1, anchor="s1")  # rollout 3 goes through s1 instead of s2
    assert merge([g2]).n_s.tolist() == [5, 3, 2]
    with pytest.raises(IndexError):
        edits.edit_step(worked, 0, 2, action="x")  # steps 0 and 1 only
    with pytest.raises(ValueError):
        edits.edit_step(worked, 0, 0, action=" ")
    assert len(edits.remove_rollout(worked, 0)) == 4
    dup = edits.duplicate_rollout(worked, 0)
    assert len(dup) == 6 and dup.rollouts[-1].rollout == 5
    with pytest.raises(ValueError):
        edits.remove_rollout(RolloutGroup("g", worked.rollouts[:1]), 0)


def test_typed_rows_show_under_their_titles(worked):
    d = compare.disagreements([worked], "crbc vs shortest_path")
    shown = cells(d.anchors[0])
    assert list(shown) == ["group", "anchor", "visits", "actions", "mean |Δ|", "max |Δ|",
                           "best by crbc", "best by shortest_path", "ranks differ"]
    assert shown["mean |Δ|"] == d.anchors[0].disagreement
    assert "A_S crbc K=2" in cells(compare.disagreements(
        [worked], compare.Comparison("k2", "crbc", "gigpo", x_params={"depth": 2})).steps[0])
    foil = cells(T.foil_table(merge([worked]), gamma_g=0.5)[0])
    assert "V_sp = 0.5^hops" in foil and "gamma_g" not in foil


def test_one_label_rule_everywhere(worked):
    """Tables (crbc.explain.anchor_names) and figures (crbc.viz) name anchors the same way."""
    from crbc.viz.rollout import steps_table

    p = merge([worked])
    c = compute("crbc", p)
    assert list(steps_table(worked, 0, c)["anchor"]) == [labels.anchor_labels(p)[s] for s in p.step_state[:2]]
    long = RolloutGroup("g", (Rollout("g", 0, (Step("a" * 16, "x"), Step("b" * 17, "y")), True),))
    assert labels.anchor_labels(merge([long])) == ("s0", "s1")  # one long anchor: the whole group uses s<i>


def test_fmt():
    assert fmt(0.48019999) == "0.4802"
    assert fmt(0.09604, signed=True) == "+0.0960"
    assert fmt(-3e-17, signed=True) == "+0.0000"
    assert fmt(float("inf")) == "∞"
    assert depth_name(None) == "K = ∞ (closure)" and depth_name(3) == "K = 3"


# random groups: the displayed arithmetic always reproduces the estimator, at any depth

_anchor = st.sampled_from(["a", "b", "c", "d"])
_action = st.sampled_from(["x", "y", "z"])
_rollout = st.tuples(st.lists(st.tuples(_anchor, _action), min_size=1, max_size=5), st.booleans())


@settings(max_examples=40, deadline=None)
@given(st.lists(_rollout, min_size=1, max_size=6), st.sampled_from([None, 0, 1, 3]),
       st.sampled_from([0.9, 0.98, 1.0]))
def test_arithmetic_matches_the_estimator_on_random_groups(rollouts, depth, beta):
    g = RolloutGroup("h", tuple(Rollout("h", i, tuple(Step(s, a) for s, a in steps), ok)
                                for i, (steps, ok) in enumerate(rollouts)))
    p = merge([g])
    v_S, q_SA = C.estimate(p, beta, depth)
    a_s_SA, _ = C.normalise(p, q_SA - v_S[p.sa_state], 0.1)
    for s in range(p.n_states):
        ar = E.anchor_arithmetic(p, s, beta=beta, depth=depth)
        assert ar.v == pytest.approx(v_S[s], abs=1e-9)
        for line in ar.actions:
            assert line.q == pytest.approx(q_SA[line.pair], abs=1e-9)
            assert line.a_s == pytest.approx(a_s_SA[line.pair], abs=1e-9)
            if depth != 0:
                assert line.q == pytest.approx(beta * sum(x.p * x.v for x in line.successors), abs=1e-9)
    ds = E.dense_system(p, beta=beta)
    assert ds.residual < 1e-9


def test_anchor_arithmetic_reads_each_pair_as_the_obvious_masks_do():
    """Its successors and realised returns (one sort per anchor) against src == sa and
    step_sa == sa, at every anchor of four groups, at the closure and K = 0 and 2."""
    p = merge(read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")[:4])
    src, nxt, cnt = p.transitions()
    g_N = C.realized_returns(p, 0.98)
    checked = 0
    for s in range(p.n_states):
        for depth in (None, 0, 2):
            for a in E.anchor_arithmetic(p, s, beta=0.98, depth=depth).actions:
                sel = src == a.pair
                assert [(x.node, x.n) for x in a.successors] == list(zip(nxt[sel].tolist(), cnt[sel].tolist(), strict=True))
                assert a.returns == tuple(float(g) for g in g_N[p.step_sa == a.pair])
                checked += 1
    assert checked > 100


def test_anchor_labels_and_group_states_agree_with_each_groups_own_mask():
    """The labels (slices computed once) and group_states (one binary search) against the obvious
    flatnonzero(state_group == g) per group, on 40 groups of a sample and 300 tiny ones."""
    tiny = [RolloutGroup(f"g{i}", (Rollout(f"g{i}", 0, (Step("x" * (i % 20), "a"),), True),
                                   Rollout(f"g{i}", 1, (Step("x" * (i % 20), "b"), Step(f"y{i}", "a")), False)))
            for i in range(300)]
    for p in (merge(read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")[:40]), merge(tiny)):
        got = labels.anchor_labels(p)
        for g in range(len(p.group_ids)):
            states = np.flatnonzero(p.state_group == g)
            assert list(labels.group_states(p, g)) == states.tolist()
            texts = [p.state_anchor[s] for s in states]
            short = all(labels.is_short(t) for t in texts)
            assert [got[s] for s in states] == [t if short else f"s{i}" for i, t in enumerate(texts)]
        assert list(labels.group_states(p, -1)) == np.flatnonzero(p.state_group == len(p.group_ids) - 1).tolist()
        with pytest.raises(IndexError):
            labels.group_states(p, len(p.group_ids))
