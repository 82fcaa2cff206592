"""RewardFlow's reward propagation on the merged state graph (docs/MATH.md section 11).

RewardFlow (arXiv 2603.18859; code tmlr-group/RewardFlow) merges a group's states into a graph
like CRBC, but propagates reward by a maximum instead of solving the behaviour policy's Bellman
equation. Per group, with the nodes X = the group's anchors, z+_g and z-_g::

    r(x)  = the reward on the first entry into x, in file order: a rollout's first anchor
            enters with 0, s_{t+1} (or the end node) enters with r_{i,t}
    E     = { s_t -> next_t : next_t != s_t }        (self-loops dropped)
    V     = r ;  repeat  V(x) <- max(V(x), gamma * max_{x -> y in E} V(y))   to the fixed point
    d_t   = V(next_t) - V(s_t),  or r_{i,t} on a truncated rollout's last step (no next node)

``next_t`` is ``s_{t+1}``, or z+_g after a success, z-_g after a failure before the step limit,
and nothing after a truncated rollout's last step. The map is a gamma-contraction in the sup
norm, so the fixed point is unique; upstream runs exactly ``MAX_SWEEPS`` = 1000 sweeps, this stops
earlier only when a sweep changes no value at all, after which every further sweep is the
identity: the result equals upstream's bit for bit. (Where a cycle of negative rewards leads
towards 0 the values still move after 1000 sweeps, by gamma^1000 * |r| < 1e-45.)

Shapes: ``_N`` per step, ``_X`` per node (S anchors, then G z+ nodes, then G z- nodes), ``_E``
per kept edge; see :mod:`crbc.process`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.process import Process

__all__ = ["MAX_SWEEPS", "next_nodes", "node_rewards", "propagate", "Propagation"]

MAX_SWEEPS = 1000   #: upstream's ``max_iter`` (core_rewardflow.py:358)


@dataclass(frozen=True, eq=False)
class Propagation:
    """RewardFlow's graph values on a batch.

    ``v_X`` propagated value per node (S anchors, G z+, G z-; 0 for an end node no rollout
    reached); ``r_X`` node reward; ``next_N`` the step's next node (-1: none, a truncated
    rollout's last step); ``v_next_N`` its value (NaN where there is none); ``d_N`` the step
    signal before any penalty; ``sweeps`` sweeps run.
    """

    v_X: np.ndarray
    r_X: np.ndarray
    next_N: np.ndarray
    v_next_N: np.ndarray
    d_N: np.ndarray
    sweeps: int


def next_nodes(p: Process) -> np.ndarray:
    """``next_N``: ``s_{t+1}``, z+_g = S + g after a success, z-_g = S + G + g after a failure
    before the step limit, -1 after a truncated rollout's last step."""
    n_s, n_g = p.n_states, len(p.group_ids)
    next_N = p.step_next.copy()
    last = p.rollout_offsets[1:] - 1
    end = np.where(p.rollout_success, n_s + p.rollout_group, n_s + n_g + p.rollout_group)
    trunc_R = (np.zeros(len(last), dtype=bool) if p.rollout_truncated is None
               else p.rollout_truncated)
    next_N[last] = np.where(trunc_R, -1, end)
    return next_N


def node_rewards(p: Process, r_N: np.ndarray, next_N: np.ndarray) -> np.ndarray:
    """``r_X``: the reward of each node's first entry in file order (0 for nodes never entered).

    Entries, rollout by rollout in file order: ``(s_1, 0)``, then ``(next_t, r_{i,t})`` for each
    step that has a next node. Rollouts are laid out group-major with each group's rollouts in
    file order, and nodes never cross groups, so this is each group's own file order."""
    n_x = p.n_states + 2 * len(p.group_ids)
    first_N = p.step_t == 1
    node_2N = np.stack([np.where(first_N, p.step_state, -1), next_N], axis=1).ravel()
    rew_2N = np.stack([np.zeros(p.n_steps), r_N], axis=1).ravel()
    keep = node_2N >= 0
    node_M, rew_M = node_2N[keep], rew_2N[keep]
    nodes, first = np.unique(node_M, return_index=True)
    r_X = np.zeros(n_x)
    r_X[nodes] = rew_M[first]
    return r_X


def propagate(p: Process, r_N: np.ndarray, gamma: float) -> Propagation:
    """Decay propagation (``propagate_reward_decay``, propagation.py:4-27) on every group at once.

    Each sweep is one gather and one ``maximum.reduceat`` over the kept edges sorted by source:
    ``V'(x) = max(V(x), gamma * max_{x->y} V(y))``."""
    next_N = next_nodes(p)
    r_X = node_rewards(p, r_N, next_N)
    keep = (next_N >= 0) & (next_N != p.step_state)
    src_E, dst_E = p.step_state[keep], next_N[keep]
    order = np.lexsort((dst_E, src_E))
    src_E, dst_E = src_E[order], dst_E[order]
    v_X = r_X.copy()
    sweeps = 0
    if len(src_E):
        starts = np.flatnonzero(np.r_[True, src_E[1:] != src_E[:-1]])
        src_U = src_E[starts]
        while sweeps < MAX_SWEEPS:
            sweeps += 1
            best_U = np.maximum.reduceat(gamma * v_X[dst_E], starts)
            new_U = np.maximum(v_X[src_U], best_U)
            if np.array_equal(new_U, v_X[src_U]):
                break
            v_X[src_U] = new_U
    has_next = next_N >= 0
    v_next_N = np.where(has_next, v_X[np.where(has_next, next_N, 0)], np.nan)
    d_N = np.where(has_next, v_next_N - v_X[p.step_state], r_N)
    return Propagation(v_X, r_X, next_N, v_next_N, d_N, sweeps)
