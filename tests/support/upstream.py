"""Independent twins of the upstream advantage functions, written for these tests.

Re-implemented (not copied) from reading, line by line, what verl-agent and verl do, and shaped
like them: one row per step, loops over the batch, dicts keyed by ids, torch reductions
(``torch.mean``, ``torch.std`` with N-1). Nothing here imports ``crbc``'s maths; only the data
classes are used, to lay a rollout group out as verl-agent's trainer sees it.

Sources (file:line):
- verl-agent, fork vanzll/verl-agent @ d0b97244c50f17fb43a6ef0a15bca0e95a044ff7:
  ``gigpo/core_gigpo.py`` (to_hashable 34-47, compute_step_discounted_returns 87-132,
  compute_gigpo_outcome_advantage 138-171, episode_norm_reward 174-240, build_step_group 243-331,
  step_norm_reward 334-384); ``verl/trainer/ppo/ray_trainer.py`` (apply_invalid_action_penalty
  200-224; the order of the calls in fit 1111-1236); ``agent_system/multi_turn_rollout/
  rollout_loop.py`` (row layout of gather_rollout_data 225-275); ``agent_system/reward_manager/
  episode.py`` (episode score on the last response token, 72-79).
- verl 0.9.1 (PyPI): ``verl/trainer/ppo/core_algos.py`` (compute_grpo_outcome_advantage 268-331,
  compute_rloo_outcome_advantage 588-636).

``dtype`` defaults to float64 so that the comparison measures the algorithm, not float32
rounding; upstream runs float32 (pass ``dtype=torch.float32`` to see its rounding).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import torch

from crbc.io.rollouts import RolloutGroup

# ------------------------------------------------------------------ verl-agent's batch layout

@dataclass
class AgentBatch:
    """The fields verl-agent's GiGPO reads, one row per step (rollout after rollout, steps in
    order, as gather_rollout_data lays them out)."""

    uid: np.ndarray               # (B,) object: task group
    traj_uid: np.ndarray          # (B,) object: trajectory
    anchor_obs: np.ndarray        # (B,) object
    rewards: np.ndarray           # (B,) environment reward of the step
    episode_rewards: np.ndarray   # (B,) the trajectory's summed reward, on every row
    is_action_valid: np.ndarray   # (B,) bool
    active_masks: np.ndarray      # (B,) bool, all True after gather_rollout_data
    response_mask: torch.Tensor   # (B, L)
    token_level_scores: torch.Tensor  # (B, L): the episode score on the last response token


def agent_batch(groups: list[RolloutGroup], rng: np.random.Generator, dtype=torch.float64,
                max_response: int = 5) -> AgentBatch:
    """Lay groups out like verl-agent's rollout loop and reward manager. Step rewards: the
    step's reward; in a group without any, 10 * won on the last step (ALFWorld's reward);
    episode reward: the rollout's score when given, else the sum of its step rewards."""
    uid, traj, anchors, rew, ep, valid = [], [], [], [], [], []
    for g in groups:
        group_uid = str(uuid.uuid4())
        any_reward = any(s.reward is not None for r in g.rollouts for s in r.steps)
        for r in g.rollouts:
            won = r.success and not r.truncated
            if any_reward:
                step_r = [s.reward or 0.0 for s in r.steps]
            else:
                step_r = [0.0] * (len(r.steps) - 1) + [10.0 * won]
            episode = r.score if r.score is not None else sum(step_r)
            t_uid = str(uuid.uuid4())
            for s, x in zip(r.steps, step_r, strict=True):
                uid.append(group_uid)
                traj.append(t_uid)
                anchors.append(s.anchor)
                rew.append(x)
                ep.append(episode)
                valid.append(s.action != "invalid")
    b = len(uid)
    lengths = rng.integers(1, max_response + 1, size=b)
    mask = (torch.arange(max_response)[None, :] < torch.as_tensor(lengths)[:, None]).to(dtype)
    scores = torch.zeros((b, max_response), dtype=dtype)
    for i in range(b):
        scores[i, lengths[i] - 1] = ep[i]
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    return AgentBatch(obj(uid), obj(traj), obj(anchors), np.array(rew, dtype=np.float64),
                      np.array(ep, dtype=np.float64), np.array(valid, dtype=bool),
                      np.ones(b, dtype=bool), mask, scores)


# ------------------------------------------------------------------------ verl-agent: GiGPO

def hashable(x):
    """What GiGPO groups anchors by: identical values after flattening arrays to tuples."""
    if isinstance(x, (np.integer, np.floating)):
        return x.item()
    if isinstance(x, np.ndarray):
        return tuple(x.flatten())
    if isinstance(x, (list, tuple)):
        return tuple(hashable(e) for e in x)
    return x


def step_discounted_returns(rewards: np.ndarray, traj_uid: np.ndarray, active: np.ndarray,
                            gamma: float, dtype=torch.float64) -> torch.Tensor:
    """Per trajectory, in row order, G_t = r_t + gamma G_{t+1}; scattered back to the rows."""
    r = rewards.astype(np.float64 if dtype == torch.float64 else np.float32)
    per_traj = {}
    for t_id in np.unique(traj_uid):
        rows = np.where(traj_uid == t_id)[0]
        assert active[rows].all()
        g = np.zeros_like(r[rows])
        acc = 0
        for k in range(len(rows) - 1, -1, -1):
            acc = r[rows][k] + gamma * acc
            g[k] = acc
        per_traj[t_id] = g
    out = np.zeros_like(r)
    for i, t_id in enumerate(traj_uid):
        rows = np.where(traj_uid == t_id)[0]
        out[i] = per_traj[t_id][int(np.where(rows == i)[0][0])]
    return torch.tensor(out, dtype=dtype)


def invalid_action_penalty(token_level_scores: torch.Tensor, step_rewards: torch.Tensor | None,
                           response_mask: torch.Tensor, is_action_valid: np.ndarray, coef: float
                           ) -> None:
    """In place: each row loses ``coef`` at its last response token and, when step returns
    exist, on its step return, if its action was invalid."""
    for i in range(token_level_scores.shape[0]):
        last = int(response_mask[i].sum().item()) - 1
        bad = torch.tensor(1.0 - float(is_action_valid[i]), dtype=token_level_scores.dtype)
        token_level_scores[i, last] -= coef * bad
        if step_rewards is not None:
            step_rewards[i] -= coef * bad


def _mean_std(values: list) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.stack(values)
    return torch.mean(t), torch.std(t)


def zero_one_or_mean_std(by_id: dict, dtype) -> dict:
    """(mean, std) of each id's values (torch.std, N-1); an id with one value: (0, 1)."""
    return {k: ((torch.tensor(0.0, dtype=dtype), torch.tensor(1.0, dtype=dtype))
                if len(v) == 1 else _mean_std(v)) for k, v in by_id.items()}


def normalised_rows(values, ids, stats: dict, eps, remove_std):
    """Each row against its id's (mean m, std s): ``x - m`` (``remove_std``) or ``(x - m) / (s + eps)``."""
    out = values.clone()
    for i in range(values.shape[0]):
        m, s = stats[ids[i]]
        out[i] = values[i] - m if remove_std else (values[i] - m) / (s + eps)
    return out


def episode_norm(token_level_rewards, response_mask, index, traj_index, eps, remove_std,
                 cross_steps: bool = True):
    """GiGPO's episode term: each row's score (sum over tokens) against its group's rows
    (``cross_steps``) or its group's trajectories; a group with one entry: mean 0, std 1."""
    scores = token_level_rewards.sum(dim=-1)
    by_id, seen = defaultdict(list), set()
    for i in range(scores.shape[0]):
        if (index[i], traj_index[i]) in seen:
            continue
        by_id[index[i]].append(scores[i])
        if not cross_steps:
            seen.add((index[i], traj_index[i]))
    stats = zero_one_or_mean_std(by_id, scores.dtype)
    return normalised_rows(scores, index, stats, eps, remove_std).unsqueeze(-1) * response_mask


def step_groups(anchor_obs: np.ndarray, index: np.ndarray) -> np.ndarray:
    """A fresh id for each set of identical anchors inside each group (exact match only)."""
    out = np.empty(len(anchor_obs), dtype=object)
    for g in np.unique(index):
        rows = np.where(index == g)[0]
        clusters = defaultdict(list)
        for i in rows:
            clusters[hashable(anchor_obs[i])].append(i)
        for members in clusters.values():
            sid = str(uuid.uuid4())
            for i in members:
                out[i] = sid
    assert not any(x is None for x in out)
    return out


def step_norm(step_rewards, response_mask, step_ids, eps, remove_std):
    """GiGPO's step term: each row's step return against the rows of its anchor group; a
    group of one: its own value as the mean, std 1 (so exactly 0)."""
    by_id = defaultdict(list)
    for i in range(step_rewards.shape[0]):
        by_id[step_ids[i]].append(step_rewards[i])
    stats = {}
    for k, vals in by_id.items():
        stats[k] = ((torch.mean(torch.stack(vals)), torch.tensor(1.0, dtype=step_rewards.dtype))
                    if len(vals) == 1 else _mean_std(vals))
    return normalised_rows(step_rewards, step_ids, stats, eps, remove_std).unsqueeze(-1) * response_mask


def gigpo(token_level_rewards, step_rewards, response_mask, anchor_obs, index, traj_index,
          eps=1e-6, step_advantage_w=1.0, mode="mean_norm"):
    """A = episode term + w * step term, token level (B, L); returns (advantages, returns)."""
    if mode not in ("mean_std_norm", "mean_norm"):
        raise ValueError(mode)
    remove_std = mode == "mean_norm"
    a_e = episode_norm(token_level_rewards, response_mask, index, traj_index, eps, remove_std)
    a_s = step_norm(step_rewards, response_mask, step_groups(anchor_obs, index), eps, remove_std)
    adv = a_e + step_advantage_w * a_s
    return adv, adv


def gigpo_pipeline(b: AgentBatch, gamma=0.95, mode="mean_std_norm", penalty_coef=0.1,
                   step_advantage_w=1.0, dtype=torch.float64) -> torch.Tensor:
    """verl-agent's fit loop for GiGPO on one batch: discounted returns, then (if the penalty is
    on) the invalid-action penalty on the token scores and the returns, then the advantage.
    Returns the per-row advantage (B,) (the value on the first response token)."""
    step_r = step_discounted_returns(b.rewards, b.traj_uid, b.active_masks, gamma, dtype)
    scores = b.token_level_scores.clone().to(dtype)
    if penalty_coef:
        invalid_action_penalty(scores, step_r, b.response_mask, b.is_action_valid, penalty_coef)
    adv, _ = gigpo(scores, step_r, b.response_mask.to(dtype), b.anchor_obs, b.uid, b.traj_uid,
                   step_advantage_w=step_advantage_w, mode=mode)
    return adv[:, 0]


# ---------------------------------------------------------------------------- verl: outcome

def grpo(token_level_rewards, response_mask, index, eps=1e-6, norm_adv_by_std_in_grpo=True):
    """verl's GRPO: each row's score against its group (mean 0, std 1 for a group of one)."""
    scores = token_level_rewards.sum(dim=-1)
    by_id = defaultdict(list)
    for i in range(scores.shape[0]):
        by_id[index[i]].append(scores[i])
    out = normalised_rows(scores, index, zero_one_or_mean_std(by_id, scores.dtype), eps,
                          remove_std=not norm_adv_by_std_in_grpo)
    return out.unsqueeze(-1) * response_mask, out.unsqueeze(-1) * response_mask


def rloo(token_level_rewards, response_mask, index):
    """verl's RLOO: n/(n-1) (score - mean) in a group of n > 1; unchanged for a group of one."""
    scores = token_level_rewards.sum(dim=-1)
    by_id = defaultdict(list)
    for i in range(scores.shape[0]):
        by_id[index[i]].append(scores[i])
    means = {k: torch.mean(torch.stack(v)) if len(v) > 1 else torch.tensor(0.0) for k, v in by_id.items()}
    out = scores.clone()
    for i in range(scores.shape[0]):
        n = len(by_id[index[i]])
        if n > 1:
            out[i] = scores[i] * n / (n - 1) - means[index[i]] * n / (n - 1)
    return out.unsqueeze(-1) * response_mask, out.unsqueeze(-1) * response_mask


def trajectory_rows(groups: list[RolloutGroup], dtype=torch.float64):
    """One row per rollout (verl's single-turn layout): score on a one-token response."""
    index, scores = [], []
    for g in groups:
        for r in g.rollouts:
            index.append(g.group)
            scores.append(r.effective_score)
    t = torch.tensor(scores, dtype=dtype)[:, None]
    return t, torch.ones_like(t), np.array(index, dtype=object)
