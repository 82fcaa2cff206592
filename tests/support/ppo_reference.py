"""The slow, obvious twin of crbc.train.ppo: every (observation, response) pair scored as its own padded
sequence, and the update of the first trainer (random step minibatches).

Used by tests/train/test_ppo.py (the fast path must give the same log-probabilities, loss and
gradients) and by benchmarks/bench_train.py (how much faster the fast path is).
"""

from __future__ import annotations

import torch


def slow_pair_logprobs(policy, obs, responses, temperature: float) -> torch.Tensor:
    """log pi(response | obs) per pair, each pair one right-padded sequence (differentiable)."""
    return policy.response_logprobs(list(obs), list(responses), temperature)


def slow_loss(policy, batch, steps, old_logp_N, ref_logp_N, clip: float, kl_coef: float,
              temperature: float, per_episode: bool = False) -> torch.Tensor:
    """The PPO-clip + k3 loss of the given steps, written out step by step: the mean over steps,
    or (``per_episode``) the mean over episodes of each episode's mean over its steps."""
    obs = [batch.pair_obs[batch.pair_N[n]] for n in steps]
    resp = [batch.pair_resp[batch.pair_N[n]] for n in steps]
    logp = slow_pair_logprobs(policy, obs, resp, temperature)
    terms = []
    for k, n in enumerate(steps):
        ratio = torch.exp(logp[k] - old_logp_N[n])
        a = float(batch.advantages[n])
        surr = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
        d = ref_logp_N[n] - logp[k]
        terms.append(-surr + kl_coef * (torch.exp(d) - d - 1))
    if not per_episode:
        return torch.stack(terms).mean()
    episodes: dict[int, list[torch.Tensor]] = {}
    for k, n in enumerate(steps):
        episodes.setdefault(int(batch.episode_N[n]), []).append(terms[k])
    return torch.stack([torch.stack(v).mean() for v in episodes.values()]).mean()


def slow_ppo_update(policy, ref_policy, optimizer, batch, cfg, generator, minibatch: int = 256) -> int:
    """The first trainer's update: per-pair scoring, random minibatches of ``minibatch`` steps.

    Returns the number of optimiser steps (for the benchmark; no statistics).
    """
    params = [p for p in policy.model.parameters() if p.requires_grad]
    with torch.no_grad():
        old_P = slow_pair_logprobs(policy, batch.pair_obs, batch.pair_resp, cfg.temperature)
        ref_P = slow_pair_logprobs(ref_policy, batch.pair_obs, batch.pair_resp, cfg.temperature)
    adv = torch.as_tensor(batch.advantages, dtype=torch.float32)
    pair_N = torch.as_tensor(batch.pair_N)
    n, count = batch.n_steps, 0
    for _ in range(cfg.ppo_epochs):
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, minibatch):
            idx = order[start:start + minibatch]
            uniq, inv = torch.unique(pair_N[idx], return_inverse=True)
            u = uniq.tolist()
            logp = slow_pair_logprobs(policy, [batch.pair_obs[i] for i in u],
                                      [batch.pair_resp[i] for i in u], cfg.temperature)[inv]
            ratio = torch.exp(logp - old_P[pair_N[idx]])
            a = adv[idx]
            surr = torch.minimum(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
            d = ref_P[pair_N[idx]] - logp
            loss = -surr.mean() + cfg.kl_coef * (torch.exp(d) - d - 1).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            count += 1
    return count
