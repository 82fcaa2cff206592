"""The exact truth (docs/MATH.md section 9) against slow, obvious twins: brute force over every action
sequence with the real env, hand-computed values, Monte Carlo with the shipped model."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from crbc.envs import make
from crbc.truth import (
    TRUTH_ACTIONS,
    StateLimitError,
    TruthError,
    enumerate_states,
    level_truth,
    scorable_policy,
    solve_level,
)
from tests.support.paths import ROOT

WEAK = ROOT / "models" / "sokoban-tiny-weak"
BETA = 0.98


def hashed_policy(boards):
    """A fixed tabular policy: probabilities drawn from a hash of the board (invalid included)."""
    out = []
    for b in boards:
        rng = np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(b)) % 2**32)
        out.append(rng.dirichlet(np.ones(5)))
    return np.asarray(out)


def brute_force(env, probs, beta, horizon):
    """V_t(s), d_t(s) by enumerating every action sequence with the real env (deep copies).

    Returns (V_0(start), {(t, board): V_t}, {(t, board): d_t}); slow and obvious."""
    values, occ = {}, {}

    def value(e, t, prob):
        board = e.render()
        occ[(t, board)] = occ.get((t, board), 0.0) + prob
        pi = probs([board])[0]
        total = 0.0
        for a, p in zip(TRUTH_ACTIONS, pi, strict=True):
            nxt = copy.deepcopy(e)
            _, _, terminated, truncated, _ = nxt.step(a)
            if terminated:
                q = beta
            elif truncated or t + 1 >= horizon:
                q = 0.0
            else:
                q = beta * value(nxt, t + 1, prob * p)
            total += p * q
        values[(t, board)] = total
        return total

    return value(env, 0, 1.0), values, occ


def _short_level(env_id, horizon, want):
    for seed in range(200):
        env = make(env_id, max_steps=horizon)
        env.reset(seed=seed)
        if env.optimal_distance() == want:
            return seed, env
    raise AssertionError("no short level found")


@pytest.mark.parametrize("env_id,horizon,dist", [("sokoban-6x6-v0", 4, 2), ("gridworld-6x6-v0", 4, 2),
                                                 ("sokoban-6x6-v0", 5, 3)])
@pytest.mark.parametrize("policy", ["uniform", "hashed"])
def test_equals_brute_force_over_all_action_sequences(env_id, horizon, dist, policy):
    seed, env = _short_level(env_id, horizon, dist)
    pol = scorable_policy("uniform") if policy == "uniform" else scorable_policy(hashed_policy)
    lt = level_truth(env_id, seed, pol, max_steps=horizon, beta=BETA)
    v0, values, occ = brute_force(env, pol.probs, BETA, horizon)
    assert lt.start_value == pytest.approx(v0, abs=1e-12)
    assert v0 > 0
    index = lt.space.index()
    for (t, board), v in values.items():
        assert lt.value_TS[t, index[board]] == pytest.approx(v, abs=1e-12)
    for (t, board), d in occ.items():
        assert lt.occupancy_TS[t, index[board]] == pytest.approx(d, abs=1e-12)
    # every board the brute force met is in the space, at the right first layer
    assert {b for _, b in values} <= set(lt.space.boards)


def test_golden_xsb_corridor_by_hand():
    """#@$.# : only `right` moves (and solves); uniform policy, H = 2.
    V_1 = beta/4, V_0 = beta/4 + 3/4 * beta * V_1; A(s, right) weighted by d_0 = 1, d_1 = 3/4."""
    lt = level_truth("sokoban-xsb", None, "uniform", max_steps=2, level="#####\n#@$.#\n#####")
    v1 = BETA / 4
    v0 = BETA / 4 + 0.75 * BETA * v1
    assert v0 == pytest.approx(0.425075)
    assert lt.value_TS[:, 0] == pytest.approx([v0, v1])
    right = TRUTH_ACTIONS.index("right")
    assert lt.q_TSA[0, 0, right] == pytest.approx(BETA)
    assert lt.q_TSA[0, 0, 0] == pytest.approx(BETA * v1)
    assert lt.occupancy_TS[:, 0] == pytest.approx([1.0, 0.75])
    anchor = (1.0 * (BETA - v0) + 0.75 * (BETA - v1)) / 1.75
    assert lt.anchor_advantage_SA[0, right] == pytest.approx(anchor)
    assert lt.success_probability == pytest.approx(0.25 + 0.75 * 0.25)
    assert lt.anchor_value_S[0] == pytest.approx((v0 + 0.75 * v1) / 1.75)
    got = lt.anchor_values([lt.space.boards[0], "not a board"])
    assert got[0] == lt.anchor_value_S[0] and np.isnan(got[1])


def _optimal_or_stay(p_move, env_id, seed, horizon):
    """Tabular policy on a gridworld: the first optimal move with probability p, else invalid."""
    env = make(env_id, max_steps=horizon)
    env.reset(seed=seed)

    def probs(boards):
        out = np.zeros((len(boards), 5))
        for i, b in enumerate(boards):
            player = next((r, c) for r, row in enumerate(b.split("\n")) for c, ch in enumerate(row)
                          if ch == "P")
            e = copy.deepcopy(env)
            e.level = type(env.level)(env.level.height, env.level.width, env.level.walls,
                                      env.level.goal, player)
            out[i, TRUTH_ACTIONS.index(e.optimal_actions()[0])] = p_move
            out[i, 4] = 1 - p_move
        return out

    return env, probs


@pytest.mark.parametrize("p_move", [1.0, 0.5])
def test_tabular_gridworld_against_the_negative_binomial(p_move):
    """Moving along a shortest path with probability p (else a no-op) reaches the goal at step k
    with probability C(k-1, d-1) p^d (1-p)^(k-d): V_0 = sum_{k=d}^{H} that * beta^k."""
    horizon, seed = 15, 0
    env, probs = _optimal_or_stay(p_move, "gridworld-6x6-v0", seed, horizon)
    d = env.optimal_distance()
    lt = level_truth("gridworld-6x6-v0", seed, probs, max_steps=horizon)
    hand = sum(math.comb(k - 1, d - 1) * p_move**d * (1 - p_move) ** (k - d) * BETA**k
               for k in range(d, horizon + 1))
    assert lt.start_value == pytest.approx(hand, abs=1e-12)
    if p_move == 1.0:
        assert lt.start_value == pytest.approx(BETA**d)


def test_transitions_match_the_env_on_random_walks():
    rng = np.random.default_rng(0)
    for env_id in ("sokoban-6x6-v0", "gridworld-6x6-v0", "sokoban-8x8-2box-v0"):
        space = enumerate_states(env_id, 3, 12)
        index = space.index()
        for _ in range(20):
            env = make(env_id, max_steps=12)
            env.reset(seed=3)
            for t in range(12):
                s = index[env.render()]
                assert space.dist_S[s] <= t
                k = int(rng.integers(5))
                _, _, term, trunc, _ = env.step(TRUTH_ACTIONS[k])
                assert space.boards[space.next_SA[s, k]] == env.render()
                assert space.solved_S[space.next_SA[s, k]] == term
                if term or trunc:
                    break


def test_reading_pi_on_dead_states_changes_no_value():
    """Skipping the model on dead states (the default) is exact: the twin that reads pi there too
    gives the same values, advantages and anchor truth."""
    fast = level_truth("sokoban-6x6-v0", 1000000, hashed_policy, max_steps=15)
    full = level_truth("sokoban-6x6-v0", 1000000, hashed_policy, max_steps=15, full_policy=True)
    assert fast.space.dead_S.any() and full.pi_full and not fast.pi_full
    for f in ("value_TS", "q_TSA", "advantage_TSA", "anchor_advantage_SA", "anchor_value_S"):
        assert np.array_equal(getattr(fast, f), getattr(full, f)), f
    live = ~fast.space.dead_S
    assert np.array_equal(fast.occupancy_TS[:, live], full.occupancy_TS[:, live])
    assert fast.occupancy_TS[:, ~live].sum(1) == pytest.approx(full.occupancy_TS[:, ~live].sum(1))


def test_dead_states_have_zero_value_and_occupancy_is_a_distribution():
    lt = level_truth("sokoban-6x6-v0", 1000000, hashed_policy, max_steps=15, full_policy=True)
    assert lt.space.dead_S.any()
    assert np.all(lt.value_TS[:, lt.space.dead_S] == 0)
    # mass at each layer + mass already absorbed in success = 1
    solved_SA = lt.space.solved_S[lt.space.next_SA]
    p_solve_S = (lt.pi_SA * solved_SA).sum(1)
    absorbed = np.concatenate([[0.0], np.cumsum(lt.occupancy_TS @ p_solve_S)[:-1]])
    assert lt.occupancy_TS.sum(1) + absorbed == pytest.approx(np.ones(lt.horizon))
    # centred: sum_a pi A_t = 0 everywhere; 0 <= V <= beta
    assert np.abs((lt.pi_SA[None] * lt.advantage_TSA).sum(2)).max() < 1e-12
    assert lt.value_TS.min() >= 0 and lt.value_TS.max() <= BETA + 1e-12


def test_state_cap_raises_a_clear_error():
    with pytest.raises(StateLimitError, match="more than 10 states reachable within 15 steps"):
        enumerate_states("sokoban-6x6-v0", 1000000, 15, max_states=10)


def test_bad_env_and_bad_policy_are_refused(tmp_path):
    with pytest.raises(TruthError, match="unknown env id"):
        enumerate_states("chess-v0", 1)
    with pytest.raises(TruthError, match="shape"):
        level_truth("gridworld-6x6-v0", 1, lambda boards: np.ones((len(boards), 3)) / 3)
    with pytest.raises(TruthError, match="sum to 1"):
        level_truth("gridworld-6x6-v0", 1, lambda boards: np.ones((len(boards), 5)))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(TruthError, match="chat-format model"):
        level_truth("gridworld-6x6-v0", 1, str(tmp_path))
    with pytest.raises(FileNotFoundError):
        level_truth("gridworld-6x6-v0", 1, str(tmp_path / "missing"))


# ---------------------------------------------------------------------------- the shipped model
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def weak():
    from crbc.policy import load_policy

    torch.set_num_threads(1)
    return load_policy(WEAK)


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_model_probs_equal_the_canonical_response_logprobs(weak, temperature):
    """The cached batched pass equals exp(log p(word) + log p(<eos>|word)) from a full forward."""
    space = enumerate_states("sokoban-6x6-v0", 1000000, 15)
    boards = list(space.boards[:40])
    pi = scorable_policy(weak, temperature).probs(boards)
    with torch.no_grad():
        slow = np.stack([weak.action_logprobs(boards, [a] * len(boards), temperature).exp().double()
                         .numpy() for a in TRUTH_ACTIONS[:4]], 1)
    assert pi[:, :4] == pytest.approx(slow, abs=2e-6)
    assert pi.sum(1) == pytest.approx(np.ones(len(boards)))


def test_model_probs_match_sampling_and_greedy(weak):
    board = enumerate_states("sokoban-6x6-v0", 1000001, 15).boards[0]
    pi = scorable_policy(weak, 1.0).probs([board])[0]
    n = 4000
    replies = weak.act([board] * n, 1.0, torch.Generator().manual_seed(0))
    freq = np.array([sum(a == b for a, _ in replies) for b in TRUTH_ACTIONS]) / n
    assert np.abs(freq - pi).max() < 4 * np.sqrt(0.25 / n)
    greedy = scorable_policy(weak, 0.0).probs([board])[0]
    (action, _), = weak.act([board], 0.0)
    assert greedy[TRUTH_ACTIONS.index(action)] == 1.0


def test_monte_carlo_with_the_shipped_model_lies_in_its_interval(weak):
    """Mean realised return beta^T R of many sampled episodes vs the exact V_0(start), and the
    return after each first action vs Q_0(start, a)."""
    from crbc.policy.generate import generate_group

    seed = 1000001
    group = generate_group("sokoban-6x6-v0", seed, 600, weak, 1.0, 15, rng=7)
    lt = level_truth("sokoban-6x6-v0", seed, weak, max_steps=15)
    ret = np.array([BETA ** len(r) * r.success for r in group])
    se = ret.std(ddof=1) / np.sqrt(len(ret))
    assert abs(ret.mean() - lt.start_value) < 4 * se
    assert abs(np.mean([r.success for r in group]) - lt.success_probability) < 4 * np.sqrt(0.25 / 600)
    first = np.array([TRUTH_ACTIONS.index(r.steps[0].action) for r in group])
    for a in range(4):
        m = first == a
        if m.sum() >= 60:
            se_a = ret[m].std(ddof=1) / np.sqrt(m.sum()) + 1e-9
            assert abs(ret[m].mean() - lt.q_TSA[0, 0, a]) < 4 * se_a + 1e-9


def test_solve_level_reuses_a_space_and_rejects_bad_beta():
    space = enumerate_states("gridworld-6x6-v0", 2, 6)
    a = solve_level(space, "uniform", 0.9)
    b = solve_level(space, "uniform", 0.9)
    assert np.array_equal(a.value_TS, b.value_TS)
    with pytest.raises(ValueError, match="beta"):
        solve_level(space, "uniform", 1.5)


def test_table_sampling_replays_in_the_env_and_follows_generates_law(weak):
    """Rollouts drawn from the exact pi on the state space: replaying their actions in the real
    env gives the same anchors, rewards and flags; success rate and first actions agree with
    ``generate`` on the same level within sampling error."""
    from crbc.policy.generate import generate_group
    from crbc.truth import rollout_step_truth
    from crbc.truth.sample import sample_group

    seed, n = 1000002, 500
    lt = level_truth("sokoban-6x6-v0", seed, weak, max_steps=15, full_policy=True)
    with pytest.raises(ValueError, match="full_policy"):
        sample_group(level_truth("sokoban-6x6-v0", seed, weak, max_steps=15), 2)
    table = sample_group(lt, n, rng_seed=3)
    assert table.rollouts[0].meta == {"env": "sokoban-6x6-v0", "seed": seed, "policy": weak.name,
                                      "temperature": 1.0, "max_steps": 15}
    for r in table.rollouts[:60]:
        env = make("sokoban-6x6-v0", max_steps=15)
        env.reset(seed=seed)
        for step in r.steps:
            assert env.render() == step.anchor
            _, reward, term, trunc, _ = env.step(step.action)
            assert reward == step.reward
        assert (term, trunc) == (r.success, r.truncated)
        assert r.score == sum(s.reward for s in r.steps)
        rollout_step_truth(lt, r)  # every step is a state of the level at its time
    assert sample_group(lt, 5, rng_seed=3).rollouts == table.rollouts[:5]  # nested prefixes
    real = generate_group("sokoban-6x6-v0", seed, n, weak, 1.0, 15, rng=3)
    p_table = np.mean([r.success for r in table])
    p_real = np.mean([r.success for r in real])
    assert abs(p_table - p_real) < 4 * np.sqrt(0.5 / n)
    assert abs(p_table - lt.success_probability) < 4 * np.sqrt(0.25 / n)
    for a in TRUTH_ACTIONS[:4]:
        f_table = np.mean([r.steps[0].action == a for r in table])
        f_real = np.mean([r.steps[0].action == a for r in real])
        assert abs(f_table - f_real) < 4 * np.sqrt(0.5 / n)
