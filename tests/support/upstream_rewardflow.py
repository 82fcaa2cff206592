"""An independent, loop-and-dict re-implementation of RewardFlow's upstream pipeline, for parity.

Written from the source of tmlr-group/RewardFlow (read at commit 1cdead8), function by function,
on one group at a time. A "trajectory" here is upstream's list of step dicts: entry j carries
``anchor_obs`` (the observation before step j), ``rewards`` (the reward of step j), ``active``
(upstream's ``active_masks``) and ``valid`` (``is_action_valid``). A rollout that ended before its
step limit has one more, inactive, entry whose ``anchor_obs`` is its final observation; a rollout
cut by the step limit has none (every entry active).

Cited functions:
* ``SokobanEnvironmentManager.state_preprocess`` (agent_system/environments/env_manager.py:566-607):
  the state sequence ``[(obs_0, 0), (obs_1, r_0), ...]`` up to and including the first inactive
  entry's observation;
* ``extract_unique_states`` (agent_system/multi_turn_rollout/utils.py:214-233, no similarity);
* ``build_trajectory`` (utils.py:275-291): tuples (src, action, dst, src_reward, dst_reward);
* ``clean_trajectory`` (env_manager.py:609-616, Sokoban): drop tuples with src == dst;
* ``unique_trajectory`` (utils.py:293-301): drop repeated tuples inside one trajectory, flatten;
* ``propagate_reward_decay`` (rewardflow/propagation.py:4-27): first-seen rewards, then
  ``max_iter`` Jacobi sweeps of V(x) = max(V(x), gamma * V(succ));
* ``apply_rewardflow_propagation`` (rewardflow/core_rewardflow.py:293-411): the difference
  ``V(obs_{j+1}) - V(obs_j)`` for every active entry with a next one, else the step's own reward;
* ``apply_invalid_action_penalty`` (verl/trainer/ppo/ray_trainer.py:202-227): ``c`` off the row's
  episode score and off its step reward;
* ``compute_rewardflow_outcome_advantage`` (core_rewardflow.py:89-117) with
  ``episode_norm_reward`` (:120-186, mean/std over all rows of the group), ``build_step_group``
  (:189-235) and ``step_norm_reward`` (:238-288).

Departure kept on purpose (not reproduced here, named in docs/MATH.md section 11): upstream's
``batch_idx = i * n_groups // n_trajectories`` (core_rewardflow.py:371) assumes groups of equal
size; this twin runs one group at a time.
"""

from __future__ import annotations

import statistics


def state_sequences(trajs: list[list[dict]]) -> list[list[tuple]]:
    """Per trajectory, the list of (state, reward) pairs of ``state_preprocess``."""
    out = []
    for traj in trajs:
        seq = [(traj[0]["anchor_obs"], 0.0)]
        for j in range(1, len(traj)):
            seq.append((traj[j]["anchor_obs"], traj[j - 1]["rewards"]))
            if not traj[j]["active"]:
                break
        out.append(seq)
    return out


def propagate_decay(flat: list[tuple], gamma: float, max_iter: int = 1000) -> dict:
    """``propagate_reward_decay``: values by node id after ``max_iter`` sweeps."""
    succ: dict = {}
    reward: dict = {}
    for src, _a, dst, _r_src, _r_dst in flat:
        succ.setdefault(src, [])
        succ.setdefault(dst, [])
        if dst not in succ[src]:
            succ[src].append(dst)
    for src, _a, dst, r_src, r_dst in flat:
        reward.setdefault(src, r_src)
        reward.setdefault(dst, r_dst)
    value = dict(reward)
    for _ in range(max_iter):
        new = dict(value)
        for node, nexts in succ.items():
            best = value[node]
            for y in nexts:
                best = max(best, gamma * value[y])
            new[node] = best
        value = new
    return value


def first_rewards(trajs: list[list[dict]]) -> dict:
    """The reward each state keeps in ``propagate_reward_decay`` (first seen in the cleaned,
    de-duplicated tuples), by state; states in no kept tuple are absent."""
    state_id, flat = graph(trajs)
    name = {i: s for s, i in state_id.items()}
    out: dict = {}
    for src, _a, dst, r_src, r_dst in flat:
        out.setdefault(name[src], r_src)
        out.setdefault(name[dst], r_dst)
    return out


def graph(trajs: list[list[dict]]) -> tuple[dict, list[tuple]]:
    """``(state_id, flat)``: ``extract_unique_states``, ``build_trajectory``, ``clean_trajectory``
    and ``unique_trajectory`` on one group."""
    seqs = state_sequences(trajs)
    state_id: dict = {}
    for seq in seqs:
        for state, _r in seq:
            state_id.setdefault(state, len(state_id))
    flat: list[tuple] = []
    for seq in seqs:
        kept: list[tuple] = []
        for j in range(len(seq) - 1):
            src, dst = state_id[seq[j][0]], state_id[seq[j + 1][0]]
            item = (src, "a", dst, seq[j][1], seq[j + 1][1])
            if src != dst and item not in kept:  # clean_trajectory, then unique_trajectory
                kept.append(item)
        flat.extend(kept)
    return state_id, flat


def step_signals(trajs: list[list[dict]], gamma: float) -> list[list[float]]:
    """Per trajectory, the step rewards after propagation (``apply_rewardflow_propagation``)."""
    state_id, flat = graph(trajs)
    value = propagate_decay(flat, gamma)
    out = []
    for traj in trajs:
        prev = value.get(state_id[traj[0]["anchor_obs"]], 0.0)
        diffs = []
        for j in range(len(traj) - 1):
            if not traj[j]["active"]:
                break
            cur = value.get(state_id[traj[j + 1]["anchor_obs"]], 0.0)
            diffs.append(cur - prev)
            prev = cur
        n_active = sum(1 for e in traj if e["active"])
        out.append([diffs[j] if j < len(diffs) else traj[j]["rewards"] for j in range(n_active)])
    return out


def _mean_std(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def advantages(trajs: list[list[dict]], scores: list[float], gamma: float, mode: str = "mean_norm",
               penalty: float = 0.1, w_step: float = 1.0, eps: float = 1e-6) -> list[list[float]]:
    """The advantage of every active row, trajectory by trajectory (one group)."""
    signals = step_signals(trajs, gamma)
    rows = []  # (trajectory, anchor, episode score, step reward) after the penalty
    for i, traj in enumerate(trajs):
        for j, d in enumerate(signals[i]):
            c = penalty * (0.0 if traj[j]["valid"] else 1.0)
            rows.append((i, traj[j]["anchor_obs"], scores[i] - c, d - c))
    remove_std = mode == "mean_norm"
    ep = [r[2] for r in rows]
    if len(ep) == 1:
        m, s = 0.0, 1.0
    else:
        m, s = _mean_std(ep)
    a_e = [x - m if remove_std else (x - m) / (s + eps) for x in ep]
    by_anchor: dict = {}
    for k, r in enumerate(rows):
        by_anchor.setdefault(r[1], []).append(k)
    a_s = [0.0] * len(rows)
    for ks in by_anchor.values():
        xs = [rows[k][3] for k in ks]
        m = statistics.fmean(xs)
        s = statistics.stdev(xs) if len(xs) > 1 else 1.0
        for k in ks:
            a_s[k] = rows[k][3] - m if remove_std else (rows[k][3] - m) / (s + eps)
    out: list[list[float]] = [[] for _ in trajs]
    for k, r in enumerate(rows):
        out[r[0]].append(a_e[k] + w_step * a_s[k])
    return out
