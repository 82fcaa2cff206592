"""Merge rollout groups into the empirical process (CRBC Eq. 5), as flat arrays.

A batch of groups becomes one set of integer arrays. Anchors are keyed by (group, anchor text),
so anchors never match across groups and the batch's transition matrix is block diagonal.

Shapes (names carry them): ``N`` steps, ``R`` rollouts, ``G`` groups, ``S`` anchors (states),
``SA`` observed (anchor, action) pairs. Successor ids index the extended value vector
``[V(0..S-1), V(z+)=1, V(z-)=0]``: ``S`` is z+ and ``S + 1`` is z-.

    N(s,a,x) = observed transitions (s,a) -> x ;  N(s,a) = sum_x N(s,a,x) ;  N(s) = sum_a N(s,a)
    P(x|s,a) = N(s,a,x) / N(s,a) ;  mu(a|s) = N(s,a) / N(s)

Because every step is exactly one observed transition, sums over steps weighted by ``1/N(s,a)``
(or ``1/N(s)``) are expectations under P (or under mu then P). The estimators use that identity
instead of materialising P.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .rollouts import RolloutGroup


@dataclass(frozen=True, eq=False)
class Process:
    """The merged empirical process of a batch of groups (every array is read-only: a view with
    ``flags.writeable = False``, so the caches of the app and the estimators can share it safely).

    Per step (N): ``step_rollout``, ``step_state``, ``step_sa``, ``step_next``, ``step_t`` (1-based),
    ``step_reward`` (0 where absent).
    Per rollout (R): ``rollout_group``, ``rollout_offsets`` (R + 1), ``rollout_len``,
    ``rollout_success`` (R_i: success and not truncated), ``rollout_score`` (the effective score),
    ``rollout_has_score`` (a score was given, not defaulted from success), ``rollout_index``.
    Per group (G): ``group_ids``, ``group_has_reward``.
    Per anchor (S): ``state_group``, ``state_anchor`` (text), ``n_s`` = N(s), ``n_actions`` (distinct actions).
    Per pair (SA): ``sa_state``, ``sa_action`` (index into ``action_names``), ``n_sa`` = N(s,a), ``mu`` = mu(a|s).
    """

    group_ids: tuple[str, ...]
    group_has_reward: np.ndarray
    rollout_group: np.ndarray
    rollout_offsets: np.ndarray
    rollout_success: np.ndarray
    rollout_score: np.ndarray
    rollout_has_score: np.ndarray
    rollout_index: np.ndarray
    step_rollout: np.ndarray
    step_t: np.ndarray
    step_state: np.ndarray
    step_sa: np.ndarray
    step_next: np.ndarray
    step_reward: np.ndarray
    state_group: np.ndarray
    state_anchor: tuple[str, ...]
    n_s: np.ndarray
    n_actions: np.ndarray
    sa_state: np.ndarray
    sa_action: np.ndarray
    n_sa: np.ndarray
    mu: np.ndarray
    action_names: tuple[str, ...]

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray):
                view = value.view()  # the caller's own array stays writeable
                view.flags.writeable = False
                object.__setattr__(self, name, view)

    @property
    def n_states(self) -> int:
        return len(self.n_s)

    @property
    def z_plus(self) -> int:
        """Index of the success boundary in the extended value vector."""
        return self.n_states

    @property
    def z_minus(self) -> int:
        return self.n_states + 1

    @property
    def rollout_len(self) -> np.ndarray:
        return np.diff(self.rollout_offsets)

    @property
    def n_steps(self) -> int:
        return len(self.step_state)

    def extend(self, v_S: np.ndarray) -> np.ndarray:
        """``[V, V(z+)=1, V(z-)=0]``, the vector successor ids index into."""
        return np.concatenate([v_S, [1.0, 0.0]])

    def group_slices(self) -> list[slice]:
        """For each group, the slice of its anchors (anchors of a group are contiguous)."""
        bounds = np.searchsorted(self.state_group, np.arange(len(self.group_ids) + 1))
        return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def transitions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct observed transitions as ``(sa[E], next[E], count[E])``: the support of P."""
        key = self.step_sa.astype(np.int64) * (self.n_states + 2) + self.step_next
        uniq, counts = np.unique(key, return_counts=True)
        return uniq // (self.n_states + 2), uniq % (self.n_states + 2), counts


def build_process(
    group_code_N: np.ndarray,
    anchor_code_N: np.ndarray,
    action_code_N: np.ndarray,
    reward_N: np.ndarray,
    success_R: np.ndarray,
    score_R: np.ndarray,
    offsets_R1: np.ndarray,
    group_ids: Sequence[str],
    anchor_texts: Sequence[str],
    action_names: Sequence[str],
    has_reward_N: np.ndarray | None = None,
    rollout_index_R: np.ndarray | None = None,
    has_score_R: np.ndarray | None = None,
) -> Process:
    """Build the process from integer-coded steps laid out rollout after rollout.

    ``group_code_N`` (N,) group index of each step (groups contiguous and increasing),
    ``anchor_code_N`` index into ``anchor_texts``, ``action_code_N`` index into ``action_names``,
    ``offsets_R1`` (R+1,) step offsets of the rollouts, ``success_R`` R_i (truncation already
    folded in), ``score_R`` the trajectory scores for A_G, ``has_score_R`` whether each score was
    given (default: all given; ``gigpo`` sums the step rewards where it was not).
    """
    n_steps = len(anchor_code_N)
    lengths = np.diff(offsets_R1)
    if n_steps == 0 or np.any(lengths <= 0):
        raise ValueError("every rollout needs at least one step")
    step_rollout = np.repeat(np.arange(len(lengths)), lengths)
    step_t = np.arange(n_steps) - offsets_R1[:-1][step_rollout] + 1
    n_anchor_codes = max(len(anchor_texts), 1)
    # anchors: unique over (group, anchor text); sorted by group, so each group is contiguous
    key_N = group_code_N.astype(np.int64) * n_anchor_codes + anchor_code_N
    state_keys, step_state = np.unique(key_N, return_inverse=True)
    step_state = step_state.ravel()
    n_states = len(state_keys)
    state_group = state_keys // n_anchor_codes
    state_anchor = tuple(anchor_texts[int(c)] for c in state_keys % n_anchor_codes)
    # successors: the next step's anchor, or a boundary at the last step of a rollout
    last_R = offsets_R1[1:] - 1
    step_next = np.empty(n_steps, dtype=np.int64)
    step_next[:-1] = step_state[1:]
    step_next[last_R] = np.where(success_R, n_states, n_states + 1)
    # (anchor, action) pairs
    n_act = max(len(action_names), 1)
    sa_keys, step_sa = np.unique(step_state.astype(np.int64) * n_act + action_code_N, return_inverse=True)
    step_sa = step_sa.ravel()
    sa_state = sa_keys // n_act
    n_s = np.bincount(step_state, minlength=n_states)
    n_sa = np.bincount(step_sa, minlength=len(sa_keys))
    n_groups = len(group_ids)
    if has_reward_N is None:
        has_reward_N = np.zeros(n_steps, dtype=bool)
    group_has_reward = np.bincount(group_code_N, weights=has_reward_N.astype(float), minlength=n_groups) > 0
    return Process(
        group_ids=tuple(group_ids),
        group_has_reward=group_has_reward,
        rollout_group=group_code_N[offsets_R1[:-1]],
        rollout_offsets=offsets_R1,
        rollout_success=np.asarray(success_R, dtype=bool),
        rollout_score=np.asarray(score_R, dtype=float),
        rollout_has_score=(np.ones(len(lengths), dtype=bool) if has_score_R is None
                           else np.asarray(has_score_R, dtype=bool)),
        rollout_index=(np.asarray(rollout_index_R) if rollout_index_R is not None
                       else np.arange(len(lengths))),
        step_rollout=step_rollout,
        step_t=step_t,
        step_state=step_state,
        step_sa=step_sa,
        step_next=step_next,
        step_reward=np.asarray(reward_N, dtype=float),
        state_group=state_group,
        state_anchor=state_anchor,
        n_s=n_s,
        n_actions=np.bincount(sa_state, minlength=n_states),
        sa_state=sa_state,
        sa_action=sa_keys % n_act,
        n_sa=n_sa,
        mu=n_sa / n_s[sa_state],
        action_names=tuple(action_names),
    )


def merge(groups: Sequence[RolloutGroup]) -> Process:
    """Merge a batch of rollout groups into one block-diagonal empirical process.

    Strings (anchors, actions) are interned with dictionaries in one pass; everything after that
    is integer array work.
    """
    if not groups:
        raise ValueError("no groups to merge")
    anchors: dict[str, int] = {}
    actions: dict[str, int] = {}
    a_codes: list[int] = []
    x_codes: list[int] = []
    rewards: list[float] = []
    has_reward: list[bool] = []
    g_codes: list[int] = []
    offsets = [0]
    success, score, has_score, r_index = [], [], [], []
    for g_i, grp in enumerate(groups):
        if not grp.rollouts:
            raise ValueError(f"group {grp.group!r} has no rollouts")
        for r in grp.rollouts:
            for s in r.steps:
                a_codes.append(anchors.setdefault(s.anchor, len(anchors)))
                x_codes.append(actions.setdefault(s.action, len(actions)))
                rw = s.reward
                rewards.append(0.0 if rw is None else rw)
                has_reward.append(rw is not None)
            g_codes.extend([g_i] * len(r.steps))
            offsets.append(len(a_codes))
            success.append(r.success and not r.truncated)
            score.append(r.effective_score)
            has_score.append(r.score is not None)
            r_index.append(r.rollout)
    return build_process(
        group_code_N=np.asarray(g_codes, dtype=np.int64),
        anchor_code_N=np.asarray(a_codes, dtype=np.int64),
        action_code_N=np.asarray(x_codes, dtype=np.int64),
        reward_N=np.asarray(rewards, dtype=float),
        success_R=np.asarray(success, dtype=bool),
        score_R=np.asarray(score, dtype=float),
        offsets_R1=np.asarray(offsets, dtype=np.int64),
        group_ids=[g.group for g in groups],
        anchor_texts=list(anchors),
        action_names=list(actions),
        has_reward_N=np.asarray(has_reward, dtype=bool),
        rollout_index_R=np.asarray(r_index, dtype=np.int64),
        has_score_R=np.asarray(has_score, dtype=bool),
    )
