"""crbc.policy.lean (the lean Llama forward) against transformers' own forward of each full
sequence: log-probabilities, gradients and next-token logits, on mixed prompt lengths and
responses that share prefixes; and the PPO update's paths against each other."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # as the trainer runs; two AdamW paths compared to 1e-6 need one reduction order

from crbc.envs import make  # noqa: E402
from crbc.policy import lean  # noqa: E402

RESPONSES = ("left<eos>", "up<eos>", "upup<eos>", "up", "", "<eos>", "Sright<eos>", "upupdown<eos>",
             "down<eos>")


@pytest.fixture(scope="module")
def policy(make_tiny_model):
    from crbc.policy import load_policy

    return load_policy(str(make_tiny_model(seed=5, layers=3, heads=4)))


def _boards():
    out = []
    for env_id, seed in (("sokoban-8x8-2box-v0", 0), ("sokoban-6x6-v0", 1), ("sokoban-6x6-v0", 2)):
        env = make(env_id)
        env.reset(seed=seed)
        out.append(env.render())
    return out + ["#####\n#P_X#\n#####"]  # four prompt lengths


def _ids(policy, texts, prompt=True):
    tok = policy.tokenizer
    texts = [policy.prompt(t) for t in texts] if prompt else list(texts)
    return [list(x) for x in tok(texts, add_special_tokens=False)["input_ids"]]


def _hf_next_logits(model, seq):
    with torch.no_grad():
        return model(input_ids=torch.tensor([seq])).logits[0, -1].float()


def test_supports_the_tiny_llama_only(policy):
    assert lean.supports(policy.model)
    other = copy.deepcopy(policy.model)
    other.config.hidden_act = "gelu"
    assert not lean.supports(other)
    assert not lean.supports(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_scores_and_gradients_equal_the_transformers_forward(policy, temperature):
    boards = _boards()
    rng = np.random.default_rng(0)
    pairs = [(b, r) for b in range(len(boards)) for r in RESPONSES if rng.random() < 0.7]
    obs = [boards[b] for b, _ in pairs]
    resp = [r for _, r in pairs]
    weights = torch.as_tensor(rng.normal(size=len(pairs)), dtype=torch.float32)

    policy.model.zero_grad()
    slow = policy.response_logprobs(obs, resp, temperature)  # one full sequence per pair
    (weights * slow).mean().backward()
    g_slow = {n: p.grad.clone() for n, p in policy.model.named_parameters()}

    policy.model.zero_grad()
    fast = lean.score_responses(policy.model, _ids(policy, boards), [b for b, _ in pairs],
                                _ids(policy, resp, prompt=False), policy.tokenizer.pad_token_id, temperature)
    (weights * fast).mean().backward()
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    assert float(fast.detach()[[i for i, r in enumerate(resp) if r == ""]].abs().sum()) == 0.0
    for n, p in policy.model.named_parameters():
        torch.testing.assert_close(p.grad, g_slow[n], atol=1e-6, rtol=1e-5, msg=n)
    policy.model.zero_grad()


def test_prefill_and_branches_equal_the_transformers_forward(policy):
    seqs = _ids(policy, _boards())
    seqs.append(seqs[1] + _ids(policy, ["up"], prompt=False)[0])  # a prompt with a response prefix
    logits, prefix = lean.prefill(policy.model, seqs, policy.tokenizer.pad_token_id)
    for q, got in zip(seqs, logits, strict=True):
        torch.testing.assert_close(got, _hf_next_logits(policy.model, q), atol=1e-5, rtol=1e-5)
    # rows with 0, 1 and 3 branches; a row left out
    rows, toks = [0, 1, 1, 1, 4], [5, 14, 15, 2, 16]
    after = lean.branch_logits(policy.model, prefix, rows, toks)
    for r, t, got in zip(rows, toks, after, strict=True):
        torch.testing.assert_close(got, _hf_next_logits(policy.model, seqs[r] + [t]), atol=1e-5, rtol=1e-5)
    logits2, _ = lean.prefill(policy.model, seqs[:2], policy.tokenizer.pad_token_id, keep=False)
    torch.testing.assert_close(logits2, logits[:2], atol=1e-6, rtol=1e-6)


def _train_batch(policy):
    from crbc.estimators.registry import compute
    from crbc.policy.generate import generate_groups
    from crbc.train.ppo import flatten

    groups = generate_groups("sokoban-6x6-v0", [3, 4, 5, 6], 4, policy, 1.0, 6, rng=2)
    batch = flatten(groups, compute("grpo", groups).advantage_N)
    # a random policy never solves a level (all advantages 0), and a gradient of pure rounding
    # noise is what AdamW would then amplify: give the steps advantages
    batch.advantages = np.random.default_rng(0).normal(size=batch.n_steps)
    return batch


@pytest.mark.parametrize("kl_coef", [0.0, 0.1])
def test_update_with_the_lean_scoring_equals_the_transformers_path(policy, monkeypatch, kl_coef):
    """Two epochs of three minibatches: the same statistics and weights (to 1e-6) whether the
    pairs are scored by the lean forward or by transformers' forward with its cache."""
    from crbc.train import ppo
    from crbc.train.loop import TrainConfig

    batch = _train_batch(policy)
    cfg = dataclasses.replace(TrainConfig(), minibatches=3, ppo_epochs=2, kl_coef=kl_coef, lr=1e-3)

    def run():
        p = copy.deepcopy(policy)
        ref = copy.deepcopy(policy)
        opt = torch.optim.AdamW(p.model.parameters(), lr=cfg.lr)
        stats = ppo.ppo_update(p, ref, opt, batch, cfg, torch.Generator().manual_seed(0))
        return stats, {n: t.detach().clone() for n, t in p.model.named_parameters()}

    s_lean, w_lean = run()
    assert s_lean["ratio_dev"] > 0 and s_lean["optimizer_steps"] == 6
    monkeypatch.setattr(lean, "supports", lambda model: False)
    s_hf, w_hf = run()
    for k in ("loss", "policy_loss", "clip_frac", "ratio_dev"):
        assert s_hf[k] == pytest.approx(s_lean[k], abs=1e-5), k
    for n in w_lean:
        torch.testing.assert_close(w_hf[n], w_lean[n], atol=1e-6, rtol=1e-5, msg=n)
