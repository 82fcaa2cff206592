"""Golden values (docs/MATH.md section 8), fast-vs-reference on random groups, and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crbc
import crbc.estimators.closure as C
from crbc.estimators.registry import compute
from crbc.io.rollouts import Rollout, RolloutGroup, Step, read_rollouts
from crbc.process import merge
from tests.support import reference as ref
from tests.support.paths import ROOT

BETA = 0.98


def worked_example() -> RolloutGroup:
    spec = [("a", "s1", "c", True), ("b", "s1", "d", False), ("b", "s2", "e", False),
            ("b", "s2", "e", False), ("b", "s2", "g", True)]
    rs = tuple(Rollout("w", i, (Step("s0", a0), Step(s1, a1)), ok) for i, (a0, s1, a1, ok) in enumerate(spec))
    return RolloutGroup("w", rs)


def table(group, depth):
    p = merge([group])
    v_S, q_SA = C.estimate(p, BETA, depth)
    v = dict(zip(p.state_anchor, v_S, strict=True))
    q = {(p.state_anchor[s], p.action_names[a]): q_SA[k]
         for k, (s, a) in enumerate(zip(p.sa_state, p.sa_action, strict=True))}
    return v, q


# ---------------------------------------------------------------------------- golden (by hand)

@pytest.mark.parametrize("depth", [0, 1, None])
def test_worked_example_values(depth):
    v, q = table(worked_example(), depth)
    # V(s1) = 0.98 * 1/2 ; V(s2) = 0.98 * 1/3 ; V(s0) = 0.98 * (2/5 * 0.49 + 3/5 * 0.3267)
    assert v["s1"] == pytest.approx(0.49, abs=1e-12)
    assert v["s2"] == pytest.approx(0.98 / 3, abs=1e-12)
    assert v["s0"] == pytest.approx(0.38416, abs=1e-12)
    assert round(v["s2"], 4) == 0.3267 and round(v["s0"], 4) == 0.3842


def test_worked_example_k0():
    v, q = table(worked_example(), 0)
    assert q[("s0", "a")] == pytest.approx(0.98**2, abs=1e-12)          # 0.9604
    assert q[("s0", "b")] == pytest.approx(0.98**2 / 4, abs=1e-12)      # 0.2401
    assert q[("s0", "a")] - v["s0"] == pytest.approx(0.57624, abs=1e-12)  # +0.5762


@pytest.mark.parametrize("depth", [1, None])
def test_worked_example_closure(depth):
    # at K = 1 Q = B V0 and V0 already equals the closure's V on this group
    v, q = table(worked_example(), depth)
    assert q[("s0", "a")] == pytest.approx(0.98 * 0.49, abs=1e-12)                   # 0.4802
    assert q[("s0", "b")] == pytest.approx(0.98 * (0.49 / 4 + 0.75 * 0.98 / 3), abs=1e-12)  # 0.3601
    assert round(q[("s0", "b")], 4) == 0.3601
    assert q[("s0", "a")] - v["s0"] == pytest.approx(0.09604, abs=1e-12)            # +0.0960
    assert q[("s1", "c")] == pytest.approx(0.98) and q[("s1", "d")] == 0.0


def test_worked_example_credit_record_matches_formats_md():
    rec = next(compute("crbc", [worked_example()]).records())
    assert rec["value"] == pytest.approx([0.3842, 0.49], abs=1e-4)
    assert rec["q"] == pytest.approx([0.4802, 0.98], abs=1e-4)
    assert rec["credit"] == pytest.approx([0.096, 0.49], abs=1e-4)
    # sigma(s0) = 0.048 < sigma_min -> 0.096 / 0.1 ; sigma(s1) = 0.49 -> 1.0
    assert rec["step_advantage"] == pytest.approx([0.9604, 1.0], abs=1e-9)
    assert rec["group_advantage"] == pytest.approx(0.6 / (math.sqrt(0.3) + 1e-6), abs=1e-12)
    assert rec["group_advantage"] == pytest.approx(1.0954, abs=1e-4)
    assert rec["advantage"] == pytest.approx([1.0954 + 5 * 0.9604, 1.0954 + 5.0], abs=1e-4)
    assert rec["params"] == {"beta": 0.98, "depth": None, "sigma_min": 0.1, "w_group": 1.0, "w_step": 5.0,
                             "group_norm": "grpo"}


def test_worked_example_shortest_path_is_blind_to_frequency():
    c = compute("shortest_path", [worked_example()])
    # s1 and s2 are one hop from success each: identical display value, zero credit at s0
    v = dict(zip(c.process.state_anchor, c.value_S, strict=True))
    assert v["s1"] == v["s2"] == pytest.approx(0.8)
    assert c.credit_N[0] == 0.0


def test_shipped_worked_example_file_matches():
    groups = read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")
    a = compute("crbc", groups).advantage_N
    b = compute("crbc", [worked_example()]).advantage_N
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_group_advantage_flat_group_is_zero():
    g = RolloutGroup("f", tuple(Rollout("f", i, (Step("s", "a"),), False, score=0.1) for i in range(3)))
    assert np.all(C.group_advantage(merge([g])) == 0.0)
    one = RolloutGroup("o", (Rollout("o", 0, (Step("s", "a"),), True),))
    assert C.group_advantage(merge([one]))[0] == 0.0


# ------------------------------------------------------------------ fast vs slow reference

def _flatten(rows):
    return np.array([x for r in rows for x in r], dtype=float).reshape(-1, 5)


def _assert_matches_reference(fast, per_group, check_group_advantage=True):
    """``fast`` (a Credits) against the slow twin's ``(rows, A_G or A_E)`` of each group, in order:
    V, Q, Q - V, A_S, A_final per step and the group term per rollout, to 1e-9."""
    rows = [row for r, _ in per_group for row in r]
    got = np.stack([fast.value_N, fast.q_N, fast.credit_N, fast.step_advantage_N, fast.advantage_N], 1)
    np.testing.assert_allclose(got, _flatten(rows), rtol=0, atol=1e-9)
    if check_group_advantage:
        np.testing.assert_allclose(fast.group_advantage_R, [a for _, ag in per_group for a in ag],
                                   rtol=0, atol=1e-9)


def _random_batch(seed, n=1000, **kw):
    rng = np.random.default_rng(seed)
    return [ref.random_group(rng, name=f"g{i}", **kw) for i in range(n)]


@pytest.mark.parametrize("beta,depth", [(0.98, None), (1.0, None), (0.9, 0), (0.98, 3), (1.0, 7), (0.5, None)])
def test_crbc_matches_reference_on_1000_random_groups(beta, depth):
    groups = _random_batch(seed=int(beta * 1000) + (depth or 99))
    fast = compute("crbc", groups, beta=beta, depth=depth)
    _assert_matches_reference(fast, [ref.crbc_credits(g, beta=beta, depth=depth) for g in groups])


def test_visit_local_matches_reference():
    groups = _random_batch(seed=5, n=300)
    fast = compute("visit_local", groups, beta=0.95, sigma_min=0.05, w_group=0.5, w_step=2.0)
    want = _flatten([row for g in groups for row in
                     ref.crbc_credits(g, beta=0.95, depth=0, sigma_min=0.05, w_group=0.5, w_step=2.0)[0]])
    np.testing.assert_allclose(fast.advantage_N, want[:, 4], atol=1e-9)
    np.testing.assert_allclose(fast.q_N, want[:, 1], atol=1e-9)


@pytest.mark.parametrize("mode", ["mean_std_norm", "mean_norm"])
@pytest.mark.parametrize("penalty", [0.1, 0.0])
def test_gigpo_matches_reference(mode, penalty):
    groups = _random_batch(seed=11, n=1000, p_invalid=0.15)
    fast = compute("gigpo", groups, mode=mode, invalid_penalty=penalty)
    _assert_matches_reference(fast, [ref.step_return_credits(g, ref.gigpo_returns(g), mode=mode,
                                                             invalid_penalty=penalty) for g in groups])


@pytest.mark.parametrize("penalty", [0.1, 0.0])
def test_shortest_path_matches_reference(penalty):
    groups = _random_batch(seed=13, n=1000, p_invalid=0.15)
    fast = compute("shortest_path", groups, invalid_penalty=penalty)
    _assert_matches_reference(fast, [ref.step_return_credits(g, ref.shortest_path_returns(g),
                                                             invalid_penalty=penalty) for g in groups],
                              check_group_advantage=False)


@pytest.mark.parametrize("norm_by_std", [True, False])
def test_grpo_is_verls_group_advantage_everywhere(norm_by_std):
    groups = _random_batch(seed=17, n=200)
    assert any(len(g.rollouts) == 1 for g in groups)
    fast = compute("grpo", groups, norm_by_std=norm_by_std)
    want = [a for g in groups for r, a in zip(g.rollouts, ref.verl_grpo(g, norm_by_std), strict=True)
            for _ in r.steps]
    np.testing.assert_allclose(fast.advantage_N, want, atol=1e-9)
    assert fast.value_N is None and not fast.step_advantage_N.any()


@pytest.mark.parametrize("norm", ["grpo", "drgrpo", "rloo", "steps"])
@pytest.mark.parametrize("name", ["crbc", "visit_local"])
def test_group_norm_options_match_reference(name, norm):
    groups = _random_batch(seed=21, n=300)
    depth = None if name == "crbc" else 0
    fast = compute(name, groups, group_norm=norm)
    rows, a_g = [], []
    for g in groups:
        r, ag = ref.crbc_credits(g, depth=depth, norm=norm)
        rows += r
        a_g += ag
    np.testing.assert_allclose(fast.group_advantage_R, a_g, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.advantage_N, _flatten(rows)[:, 4], rtol=0, atol=1e-9)


def test_batch_equals_group_by_group():
    groups = _random_batch(seed=19, n=50)
    batch = compute("crbc", groups).advantage_N
    alone = np.concatenate([compute("crbc", [g]).advantage_N for g in groups])
    np.testing.assert_allclose(batch, alone, atol=1e-12)


def test_same_anchor_text_in_two_groups_does_not_merge():
    w = worked_example()
    other = RolloutGroup("x", tuple(Rollout("x", i, (Step("s0", "a"), Step("s1", "c")), False)
                                    for i in range(2)))
    both = compute("crbc", [w, other])
    alone = compute("crbc", [w])
    np.testing.assert_allclose(both.value_N[:10], alone.value_N, atol=1e-12)


# ------------------------------------------------------------------------------ properties

@st.composite
def groups_st(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    return ref.random_group(rng, max_rollouts=draw(st.integers(1, 8)), max_len=draw(st.integers(1, 15)))


betas = st.sampled_from([0.5, 0.9, 0.98, 0.999, 1.0])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(groups_st(), betas, st.one_of(st.none(), st.integers(0, 12)))
def test_values_finite_and_bounded(group, beta, depth):
    c = compute("crbc", [group], beta=beta, depth=depth)
    for arr in (c.value_N, c.q_N, c.credit_N, c.step_advantage_N, c.advantage_N):
        assert np.all(np.isfinite(arr))
    assert np.all(c.value_S >= -1e-12) and np.all(c.value_S <= beta + 1e-12)
    assert np.all(c.q_SA >= -1e-12) and np.all(c.q_SA <= beta + 1e-12)


@SETTINGS
@given(groups_st(), betas, st.one_of(st.none(), st.integers(0, 12)))
def test_credits_centred_under_mu(group, beta, depth):
    c = compute("crbc", [group], beta=beta, depth=depth)
    p = c.process
    centre = np.bincount(p.sa_state, weights=p.mu * c.credit_SA, minlength=p.n_states)
    np.testing.assert_allclose(centre, 0.0, atol=1e-12)


@SETTINGS
@given(groups_st(), st.sampled_from([0.5, 0.9, 0.98]), st.integers(1, 40))
def test_finite_depth_within_cor3_bound(group, beta, k):
    p = merge([group])
    sweep = C.depth_sweep(p, beta, k)
    assert np.all(sweep.err_a_K[1:] <= sweep.bound_K[1:] + 1e-12)
    assert sweep.err_a_K[k] <= ref.cor3_bound(group, beta, k) + 1e-12
    assert sweep.bound_K[k] == pytest.approx(ref.cor3_bound(group, beta, k), rel=1e-9, abs=1e-12)
    # the sweep's members are the estimate() members
    v_k, q_k = C.estimate(p, beta, k)
    np.testing.assert_allclose(sweep.v_KS[k], v_k, atol=1e-13)
    np.testing.assert_allclose(sweep.q_KSA[k], q_k, atol=1e-13)


def test_depth_sweep_converges_to_closure():
    groups = _random_batch(seed=23, n=20)
    sweep = C.depth_sweep(merge(groups), 0.9, 400)
    assert sweep.err_a_K[-1] < 1e-12 and sweep.converged_at(1e-9) is not None
    assert np.isnan(sweep.bound_K[0])


@SETTINGS
@given(groups_st(), betas)
def test_depth_zero_is_mean_realised_return(group, beta):
    c = compute("crbc", [group], beta=beta, depth=0)
    p = c.process
    g_N = np.array([beta ** (len(r.steps) - t) * (r.success and not r.truncated)
                    for r in group.rollouts for t in range(len(r.steps))])
    mean_S = np.array([g_N[p.step_state == s].mean() for s in range(p.n_states)])
    np.testing.assert_allclose(c.value_S, mean_S, atol=1e-12)


@SETTINGS
@given(st.integers(0, 2**32 - 1), betas)
def test_tree_group_closure_equals_visit_local(seed, beta):
    """With no shared anchors except along one rollout's own path, merging changes nothing."""
    rng = np.random.default_rng(seed)
    rollouts = []
    for i in range(int(rng.integers(1, 6))):
        n = int(rng.integers(1, 8))
        steps = tuple(Step(f"r{i}-t{t}", f"a{int(rng.integers(3))}") for t in range(n))
        trunc = bool(rng.random() < 0.2)
        rollouts.append(Rollout("t", i, steps, (not trunc) and bool(rng.random() < 0.5), trunc))
    g = RolloutGroup("t", tuple(rollouts))
    a = compute("crbc", [g], beta=beta)
    b = compute("visit_local", [g], beta=beta)
    np.testing.assert_allclose(a.q_N, b.q_N, atol=1e-12)
    np.testing.assert_allclose(a.advantage_N, b.advantage_N, atol=1e-12)


ORDER_FREE = [n for n in crbc.names() if n != "rewardflow"]  # rewardflow: first rewards in file order


@SETTINGS
@given(groups_st(), st.randoms(use_true_random=False), st.sampled_from(ORDER_FREE))
def test_permuting_rollouts_permutes_output(group, rnd, name):
    order = list(range(len(group.rollouts)))
    rnd.shuffle(order)
    shuffled = RolloutGroup(group.group, tuple(group.rollouts[i] for i in order))
    a = compute(name, [group])
    b = compute(name, [shuffled])
    per_a = [a.advantage_N[a.rollout_slice(r)] for r in range(len(order))]
    per_b = [b.advantage_N[b.rollout_slice(r)] for r in range(len(order))]
    for j, i in enumerate(order):
        np.testing.assert_allclose(per_b[j], per_a[i], atol=1e-9)


def test_rewardflow_depends_on_the_order_of_rollouts_through_first_rewards():
    """docs/MATH.md section 11: a node keeps the reward of its first entry in file order, so the
    same rollouts in another order can give another V (and the other estimators do not)."""
    a = Rollout("g", 0, (Step("s0", "x", reward=0.0), Step("s1", "x", reward=-1.0)), False)
    b = Rollout("g", 1, (Step("s2", "y", reward=5.0), Step("s1", "y", reward=0.0)), False)
    first = compute("rewardflow", [RolloutGroup("g", (a, b))]).value_S
    second = compute("rewardflow", [RolloutGroup("g", (b, a))]).value_S
    assert first.tolist() != second.tolist()


@SETTINGS
@given(groups_st(), st.sampled_from(["crbc", "visit_local"]), st.one_of(st.none(), st.integers(0, 5)))
def test_one_credit_per_anchor_action(group, name, depth):
    params = {"depth": depth} if name == "crbc" else {}
    c = compute(name, [group], **params)
    p = c.process
    for sa in range(len(p.n_sa)):
        vals = c.advantage_N[p.step_sa == sa] - c.group_advantage_R[p.step_rollout[p.step_sa == sa]]
        assert np.ptp(vals) < 1e-12


def test_group_of_one_and_single_step():
    g = RolloutGroup("one", (Rollout("one", 0, (Step("s", "a"),), True),))
    c = compute("crbc", [g], beta=1.0)
    assert c.value_N[0] == 1.0 and c.step_advantage_N[0] == 0.0 and c.advantage_N[0] == 0.0


def test_self_loop_beta_one():
    # s -(invalid)-> s, then s -> z+ ; V(s) = 1 at beta = 1, the system stays non-singular
    g = RolloutGroup("l", (Rollout("l", 0, (Step("s", "invalid"), Step("s", "up")), True),
                           Rollout("l", 1, (Step("s", "invalid"), Step("s", "invalid")), False, True)))
    c = compute("crbc", [g], beta=1.0)
    assert np.all(np.isfinite(c.value_S))
    # V = 1/2 Q(invalid) + 1/4 ... solved exactly by the reference
    want = ref.closure_values(g, 1.0)
    assert c.value_S[0] == pytest.approx(want["s"], abs=1e-12)


def test_bad_params_rejected():
    g = [worked_example()]
    for bad in ({"beta": 0.0}, {"beta": 1.5}, {"beta": float("nan")}, {"depth": -1}, {"sigma_min": 0},
                {"depth": 1.5}):
        with pytest.raises(ValueError):
            compute("crbc", g, **bad)
    with pytest.raises(ValueError, match="no parameter"):
        compute("gigpo", g, depth=3)
    with pytest.raises(KeyError, match="known: grpo"):
        compute("nope", g)


@pytest.mark.parametrize("method", ["blocks", "sparse", "auto"])
@pytest.mark.parametrize("beta", [0.98, 1.0])
def test_every_solver_matches_dense_reference(method, beta):
    rng = np.random.default_rng(29)
    groups = [ref.random_group(rng, name=f"g{i}") for i in range(300)]
    # a few large groups (> 128 anchors) so "auto" also takes the sparse path on a mixed batch
    groups += [ref.random_group(rng, name=f"big{i}", max_rollouts=8, max_len=60, n_anchors=200)
               for i in range(3)]
    p = merge(groups)
    ref.check_solver(C.solve_values(p, beta, method), p, groups, beta)


def test_unknown_solver():
    with pytest.raises(ValueError, match="method"):
        C.solve_values(merge([worked_example()]), 0.98, "magic")


def test_process_arrays_are_read_only():
    """A merged process is shared by caches (app, estimators): no array can be changed in place."""
    import dataclasses

    from crbc.process import build_process

    p = merge(read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl"))
    arrays = [f.name for f in dataclasses.fields(p) if isinstance(getattr(p, f.name), np.ndarray)]
    assert len(arrays) >= 15
    for name in arrays:
        with pytest.raises(ValueError, match="read-only"):
            getattr(p, name)[...] = 0
    # the caller's arrays stay its own (and writeable)
    reward_N = np.zeros(2)
    q = build_process(group_code_N=np.zeros(2, dtype=np.int64), anchor_code_N=np.array([0, 1]),
                      action_code_N=np.array([0, 0]), reward_N=reward_N, success_R=np.array([True]),
                      score_R=np.array([1.0]), offsets_R1=np.array([0, 2]), group_ids=["g"],
                      anchor_texts=["a", "b"], action_names=["x"])
    reward_N[0] = 1.0
    assert not q.step_reward.flags.writeable


def test_the_first_members_of_a_sweep_are_the_sweep_to_that_depth():
    from tests.support.paths import ROOT

    p = crbc.merge(read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl"))
    cut, short = C.depth_sweep(p, 0.9, 12).first(5), C.depth_sweep(p, 0.9, 5)
    assert cut.k_max == 5
    for f in ("v_KS", "q_KSA", "a_KSA", "err_v_K", "err_a_K", "bound_K", "v_S", "a_SA"):
        np.testing.assert_allclose(getattr(cut, f), getattr(short, f), equal_nan=True)
