"""crbc.train.ppo: the by-board scoring and the loss equal the slow per-pair twin (tests/support/ppo_reference.py).

Log-probabilities, the loss and every parameter's gradient on a small batch with mixed prompt
lengths, invalid multi-token responses, an empty response and duplicate steps, to ~1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from crbc.train.ppo import Batch, Encoded, minibatches, pair_logprobs, ppo_loss, step_weights  # noqa: E402
from tests.support.ppo_reference import slow_loss, slow_pair_logprobs  # noqa: E402

BOARDS = ("######\n#_O_##\n#___##\n#_X###\n#___P#\n######",
          "#####\n#P_X#\n#####",  # shorter prompt: padding
          "######\n#_O_##\n#___##\n#_X###\n#__P_#\n######")
RESPONSES = ("left<eos>", "up<eos>", "down<eos>", "<eos>", "Sright<eos>", "up", "", "right<eos>")


@pytest.fixture(scope="module")
def policy(make_tiny_model):
    from crbc.policy import load_policy

    return load_policy(str(make_tiny_model(seed=1, layers=2, heads=2)))


def _batch(seed: int) -> Batch:
    rng = np.random.default_rng(seed)
    pairs = [(b, r) for b in BOARDS for r in RESPONSES if rng.random() < 0.6] or [(BOARDS[0], "up<eos>")]
    n = 3 * len(pairs)
    pair_N = np.concatenate([np.arange(len(pairs)), rng.integers(len(pairs), size=n - len(pairs))])
    return Batch(rng.normal(size=n), pair_N, [o for o, _ in pairs], [r for _, r in pairs],
                 rng.integers(4, size=n), np.sort(rng.integers(5, size=n)))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_by_board_scoring_equals_one_sequence_per_pair(policy, seed, temperature):
    b = _batch(seed)
    fast = pair_logprobs(policy, Encoded.of(policy, b), None, temperature)
    slow = slow_pair_logprobs(policy, b.pair_obs, b.pair_resp, temperature)
    torch.testing.assert_close(fast, slow, atol=2e-6, rtol=1e-6)
    sub = np.array([0, len(b.pair_obs) - 1])  # a subset scores the same as in the whole
    torch.testing.assert_close(pair_logprobs(policy, Encoded.of(policy, b), sub, temperature),
                               slow[sub], atol=2e-6, rtol=1e-6)


@pytest.mark.parametrize("seed,per_episode", [(0, False), (1, False), (2, True), (3, True)])
def test_loss_and_gradients_equal_the_step_by_step_twin(policy, seed, per_episode):
    b = _batch(seed)
    T, clip, kl_coef = 0.8, 0.2, 0.1
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # old / reference log-probs a little away from the current policy
        cur = slow_pair_logprobs(policy, b.pair_obs, b.pair_resp, T)
    old_N = (cur + 0.3 * torch.randn(len(cur), generator=g))[b.pair_N]
    ref_N = (cur + 0.3 * torch.randn(len(cur), generator=g))[b.pair_N]
    steps = np.arange(b.n_steps)

    policy.model.zero_grad()
    slow = slow_loss(policy, b, steps, old_N, ref_N, clip, kl_coef, T, per_episode)
    slow.backward()
    g_slow = {n: p.grad.clone() for n, p in policy.model.named_parameters()}

    policy.model.zero_grad()
    uniq, inv = np.unique(b.pair_N, return_inverse=True)
    logp = pair_logprobs(policy, Encoded.of(policy, b), uniq, T)[torch.as_tensor(inv)]
    adv = torch.as_tensor(b.advantages, dtype=torch.float32)
    w = torch.as_tensor(step_weights(b.episode_N, b.n_steps, "episode" if per_episode else "step"),
                        dtype=torch.float32)
    parts = ppo_loss(logp, old_N, ref_N, adv, clip, kl_coef, w)
    parts.loss.backward()
    assert 0 < parts.clip_frac < 1  # the clip is active on some steps and not on others
    torch.testing.assert_close(parts.loss, slow, atol=1e-6, rtol=1e-6)
    for n, p in policy.model.named_parameters():
        torch.testing.assert_close(p.grad, g_slow[n], atol=1e-6, rtol=1e-5, msg=n)


def test_ppo_loss_golden_values():
    """Hand-checked: rho = e^0.1 = 1.105 lies inside [0.8, 1.2]; rho = e^0.5 = 1.649 is clipped to
    1.2 for A > 0, and for A < 0 the unclipped (worse) term -1.649 is kept."""
    logp = torch.tensor([0.1, 0.5, 0.5])
    old = torch.zeros(3)
    ref = torch.zeros(3)
    adv = torch.tensor([1.0, 1.0, -1.0])
    parts = ppo_loss(logp, old, ref, adv, 0.2, 0.0)
    expect = -(np.exp(0.1) * 1 + 1.2 * 1 + np.exp(0.5) * -1) / 3
    assert abs(float(parts.loss) - expect) < 1e-6
    assert parts.clip_frac == pytest.approx(2 / 3)
    # k3 at d = -0.1: e^-0.1 + 0.1 - 1 = 0.0048374
    parts = ppo_loss(torch.tensor([0.1]), torch.tensor([0.1]), torch.tensor([0.0]), torch.tensor([0.0]), 0.2, 1.0)
    assert float(parts.loss) == pytest.approx(np.exp(-0.1) + 0.1 - 1, abs=1e-7)


def test_step_weights_golden():
    ep = np.array([0, 0, 0, 1, 2, 2])
    np.testing.assert_allclose(step_weights(ep, 6, "step"), np.full(6, 1 / 6))
    np.testing.assert_allclose(step_weights(ep, 6, "episode"), [1 / 9, 1 / 9, 1 / 9, 1 / 3, 1 / 6, 1 / 6])
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        step_weights(ep, 6, "token")


def _verl_agg_loss_slow(loss_R: np.ndarray, tokens_R: np.ndarray, mode: str) -> float:
    """Slow twin of verl's ``agg_loss`` over step rows, written from its formulas: a (rows x
    tokens) loss matrix where every response token of a row carries the row's loss, a mask, and
    the three reductions spelled out with loops."""
    width = int(tokens_R.max())
    mat = np.zeros((len(loss_R), width))
    mask = np.zeros((len(loss_R), width))
    for r, (loss, t) in enumerate(zip(loss_R, tokens_R, strict=True)):
        mat[r, :t] = loss
        mask[r, :t] = 1
    if mode == "token-mean":
        return float((mat * mask).sum() / mask.sum())
    per_row = []
    for r in range(len(loss_R)):
        s = sum(mat[r, j] * mask[r, j] for j in range(width))
        per_row.append(s / mask[r].sum() if mode == "seq-mean-token-mean" else s)
    return float(np.mean(per_row))


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_step_weights_match_verl_agg_loss_over_step_rows(mode):
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        loss_R = rng.normal(size=n)
        tokens_R = rng.integers(1, 6, size=n)
        w = step_weights(rng.integers(0, 5, size=n), n, mode, tokens_R)
        assert float(w @ loss_R) == pytest.approx(_verl_agg_loss_slow(loss_R, tokens_R, mode), rel=1e-12)
    # token-mean weighs a 4-token row twice as much as a 2-token row; seq-mean-token-mean does not
    np.testing.assert_allclose(step_weights(None, 2, "token-mean", np.array([2, 4])), [1 / 3, 2 / 3])
    np.testing.assert_allclose(step_weights(None, 2, "seq-mean-token-sum", np.array([2, 4])), [1, 2])


def test_minibatches_keep_groups_whole_and_cover_every_step():
    group_N = np.array([0, 0, 1, 2, 2, 2, 3, 1, 4])
    mbs = minibatches(group_N, 2, torch.Generator().manual_seed(0))
    assert len(mbs) == 2 and sorted(np.concatenate(mbs).tolist()) == list(range(len(group_N)))
    for a in mbs:
        for b in mbs:
            if a is not b:
                assert not set(group_N[a]) & set(group_N[b])
    assert len(minibatches(group_N, 50, torch.Generator().manual_seed(0))) == 5  # at most one per group


def test_old_logprobs_from_the_rollout_memo(policy):
    """The trainer's old log-probabilities come from the logits its rollout sampled from
    (NextTokenMemo, same weights): they equal a fresh forward to float32 rounding, pairs the memo
    lacks are scored as before, and the update is the same as with its own no-grad pass."""
    import copy
    import dataclasses

    from crbc.estimators.registry import compute
    from crbc.policy.base import NextTokenMemo
    from crbc.policy.generate import generate_groups
    from crbc.train.loop import TrainConfig
    from crbc.train.ppo import flatten, ppo_update

    memo = NextTokenMemo()
    groups = generate_groups("sokoban-6x6-v0", [3, 4, 5, 6, 7], 4, policy, 1.0, 6, rng=2, memo=memo)
    batch = flatten(groups, compute("grpo", groups).advantage_N)
    batch.advantages = np.random.default_rng(1).normal(size=batch.n_steps)  # a random policy never wins
    enc = Encoded.of(policy, batch)
    got, known = memo.logprobs([enc.prompt_ids[b] for b in enc.board_P], enc.resp_ids)
    assert bool(known.all())  # every sampled response's prefixes were read by the rollout
    with torch.no_grad():
        fresh = pair_logprobs(policy, enc)
    torch.testing.assert_close(got, fresh, atol=1e-5, rtol=1e-6)
    _, k2 = memo.logprobs([enc.prompt_ids[0], enc.prompt_ids[0]], [enc.resp_ids[0] + [5, 6], []])
    assert k2.tolist() == [False, True]

    cfg = dataclasses.replace(TrainConfig(), minibatches=3, lr=1e-3)

    def run(**kw):
        p, ref = copy.deepcopy(policy), copy.deepcopy(policy)
        opt = torch.optim.AdamW(p.model.parameters(), lr=cfg.lr)
        stats = ppo_update(p, ref, opt, batch, cfg, torch.Generator().manual_seed(0), **kw)
        return stats, dict(p.model.named_parameters())

    s_memo, w_memo = run(rollout_memo=memo)
    s_pass, w_pass = run()
    for k in ("loss", "policy_loss", "clip_frac", "ratio_dev", "grad_norm"):
        assert s_memo[k] == pytest.approx(s_pass[k], abs=1e-6), k
    for n in w_pass:
        torch.testing.assert_close(w_memo[n], w_pass[n], atol=1e-6, rtol=1e-5, msg=n)
    one = dataclasses.replace(cfg, minibatches=1)  # one step: every pair's old log-prob is its own
    p = copy.deepcopy(policy)
    stats = ppo_update(p, p, torch.optim.AdamW(p.model.parameters()), batch, one,
                       torch.Generator().manual_seed(0), rollout_memo=memo)
    assert stats["ratio_dev"] == 0.0 and stats["clip_frac"] == 0.0
