"""crbc.estimators.coverage: evidence coverage C^(K)(s) (the paper's Fig. 5), golden, reference twin, meaning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crbc.estimators.closure as C
from crbc.estimators.coverage import coverage, hop_distances
from crbc.explain.what_if import flip_outcome
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.process import merge
from tests.support import reference as ref


def chain_group() -> RolloutGroup:
    """A: s0 -> s1 -> s2 -> z+ ; B: s3 -> s1 -> z- ; C: s4 -> z- (never meets the others)."""
    a = Rollout("c", 0, (Step("s0", "r"), Step("s1", "r"), Step("s2", "r")), True)
    b = Rollout("c", 1, (Step("s3", "l"), Step("s1", "d")), False)
    c = Rollout("c", 2, (Step("s4", "u"),), False)
    return RolloutGroup("c", (a, b, c))


def by_label(p, arr):
    return dict(zip(p.state_anchor, arr.tolist(), strict=True))


def test_golden_chain_by_hand():
    p = merge([chain_group()])
    cov = coverage(p, 3)
    # K = 0: the rollouts that visit the anchor
    assert by_label(p, cov.count_KS[0]) == {"s0": 1, "s1": 2, "s2": 1, "s3": 1, "s4": 1}
    # K = 1: s0 hears B through s1; s3 hears A through s1; s1 hears nothing new from s2 (A)
    assert by_label(p, cov.count_KS[1]) == {"s0": 2, "s1": 2, "s2": 1, "s3": 2, "s4": 1}
    assert by_label(p, cov.saturated_S) == {"s0": 2, "s1": 2, "s2": 1, "s3": 2, "s4": 1}
    assert cov.complete_at() == 1
    assert np.allclose(cov.fraction_KS, cov.count_KS / 3)


def test_worked_example_start_hears_everyone_at_once():
    from crbc.io.rollouts import read_rollouts

    p = merge(read_rollouts("sample_rollouts/worked-example.jsonl"))
    cov = coverage(p, 2)
    lab = by_label(p, cov.count_KS[0])
    assert lab == {"s0": 5, "s1": 2, "s2": 3}
    assert cov.complete_at() == 0


def reference_coverage(group: RolloutGroup, k_max: int) -> list[dict[str, int]]:
    """Set propagation, one round per K: C_0(s) = rollouts visiting s;
    C_K(s) = C_0(s) | union of C_(K-1)(x) over observed successors x of s (anchors only)."""
    c0: dict[str, set[int]] = {}
    succ: dict[str, set[str]] = {}
    for i, _t, s, _a, x in ref.transitions(group):
        c0.setdefault(s, set()).add(i)
        succ.setdefault(s, set())
        if x not in (ref.ZP, ref.ZM):
            succ[s].add(x)
    out, cur = [], c0
    for _ in range(k_max + 1):
        out.append({s: len(v) for s, v in cur.items()})
        cur = {s: c0[s].union(*(cur[x] for x in succ[s])) for s in c0}
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(0, 8))
def test_fast_matches_set_propagation(seed, k_max):
    g = ref.random_group(np.random.default_rng(seed))
    p = merge([g])
    cov = coverage(p, k_max)
    want = reference_coverage(g, k_max)
    for k in range(k_max + 1):
        assert by_label(p, cov.count_KS[k]) == want[k]
    assert (np.diff(cov.count_KS, axis=0) >= 0).all()  # non-decreasing in K
    assert (cov.count_KS <= cov.saturated_S).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(0, 6))
def test_outcomes_outside_the_coverage_do_not_move_the_value(seed, k):
    """The meaning of (cov.1): flipping the outcome of a rollout that V^(K)(s) has not heard of
    leaves V^(K)(s) exactly as it was."""
    rng = np.random.default_rng(seed)
    g = ref.random_group(rng, max_rollouts=6)
    i = int(rng.integers(len(g.rollouts)))
    p, p2 = merge([g]), merge([flip_outcome(g, i)])
    assert p.state_anchor == p2.state_anchor
    v, _ = C.estimate(p, 0.9, k)
    v2, _ = C.estimate(p2, 0.9, k)
    unheard = coverage(p, k).reach_SR[:, i] > k
    assert np.array_equal(v[unheard], v2[unheard])


def test_hop_distances_and_errors():
    p = merge([chain_group()])
    d = hop_distances(p)
    lab = {t: j for j, t in enumerate(p.state_anchor)}
    assert d[lab["s0"], lab["s2"]] == 2 and d[lab["s2"], lab["s0"]] == np.inf
    assert d[lab["s1"], lab["s1"]] == 0
    with pytest.raises(ValueError):
        coverage(p, -1)
    two = merge([chain_group(), RolloutGroup("d", chain_group().rollouts)])
    with pytest.raises(ValueError):
        coverage(two, 1)


def test_counts_from_the_histogram_equal_every_k_compared_with_every_reach():
    """The slow twin: (reach_SR <= K).sum over rollouts, for every K, on random reaches with
    unreachable rollouts (inf) and reaches beyond k_max."""
    import numpy as np

    from crbc.estimators.coverage import counts_within

    rng = np.random.default_rng(7)
    for _ in range(30):
        n_s, n_r, k_max = int(rng.integers(1, 12)), int(rng.integers(1, 15)), int(rng.integers(0, 9))
        reach = rng.integers(0, 12, size=(n_s, n_r)).astype(float)
        reach[rng.random((n_s, n_r)) < 0.2] = np.inf
        slow = np.stack([(reach <= k).sum(axis=1) for k in range(k_max + 1)])
        np.testing.assert_array_equal(counts_within(reach, k_max), slow)
