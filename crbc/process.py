"""Merge rollout groups into the empirical process (CRBC Eq. 5), as flat arrays.

A batch of groups becomes one set of integer arrays. Anchors are keyed by (group, anchor text),
so anchors never match across groups and the batch's transition matrix is block diagonal.

Shapes (names carry them): ``N`` steps, ``R`` rollouts, ``G`` groups, ``S`` anchors (states),
``SA`` observed (anchor, action) pairs. The process owns the merged graph and its one
numbering of nodes: the S anchors, then z+ (``S``, where a success ends) and z- (``S + 1``,
where any other rollout ends), so successor ids index the extended value vector
``[V(0..S-1), V(z+)=1, V(z-)=0]``. A step is the edge ``s_t -> step_next[t]``; ``step_cut``
marks the last step of a truncated rollout, and :meth:`Process.hops` is the graph's one hop
distance. Every estimator that reads the graph (the closure, the shortest path, RewardFlow,
GraphGPO, G2PO, the coverage of the finite-depth family) reads it from here.

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

from crbc.io.columns import Columns
from crbc.io.rollouts import RolloutGroup

__all__ = ["ALMOST_NOTHING", "build_process", "from_columns", "merge", "merge_profile", "merge_stats",
           "MergeProfile", "MergeStats", "Process"]


@dataclass(frozen=True, eq=False)
class Process:
    """The merged empirical process of a batch of groups (every array is read-only: a view with
    ``flags.writeable = False``, so the caches of the app and the estimators can share it safely).

    Per step (N): ``step_rollout``, ``step_state``, ``step_sa``, ``step_next``, ``step_t`` (1-based),
    ``step_reward`` (0 where absent).
    Per rollout (R): ``rollout_group``, ``rollout_offsets`` (R + 1), ``rollout_len``,
    ``rollout_success`` (R_i: success and not truncated), ``rollout_score`` (the effective score),
    ``rollout_has_score`` (a score was given, not defaulted from success), ``rollout_index``,
    ``rollout_truncated`` (cut by the step limit; None when the builder did not say: read as
    none truncated).
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
    rollout_truncated: np.ndarray | None = None

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

    @property
    def step_cut(self) -> np.ndarray:
        """``cut_N``: the step is the last of a rollout cut by the step limit. ``step_next`` sends
        it to z- (the closure counts a truncation as a failure); the graph methods ported from
        upstream give it no successor at all (RewardFlow, GraphGPO: docs/MATH.md sections 11-12)."""
        cut_N = np.zeros(self.n_steps, dtype=bool)
        if self.rollout_truncated is not None:
            cut_N[self.rollout_offsets[1:] - 1] = self.rollout_truncated
        return cut_N

    def step_group(self) -> np.ndarray:
        """``g_N``: the group of each step."""
        return self.rollout_group[self.step_rollout]

    def hops(self, targets: Sequence[int] | np.ndarray) -> np.ndarray:
        """The one hop distance of the merged graph: ``d_TX[i, x]`` = fewest observed edges from
        node x to node ``targets[i]``, how often an edge was seen ignored, shape (T, S + 2) over
        the nodes ``step_next`` numbers (anchors, z+, z-); ``inf`` where there is no path.

        Edges are the steps ``s_t -> step_next[t]``; groups share no edge, so a distance to z+ is
        the distance to the z+ of the node's own group. One Dijkstra with unit weights on the
        reversed graph (scipy, imported here: the closure's commands need none)."""
        import scipy.sparse as sp
        from scipy.sparse.csgraph import dijkstra

        n = self.n_states + 2
        # reversed edges (successor -> anchor): a search from a target reaches every node that leads to it
        g = sp.csr_matrix((np.ones(self.n_steps), (self.step_next, self.step_state)), shape=(n, n))
        return np.atleast_2d(dijkstra(g, directed=True, indices=np.asarray(targets, dtype=np.int64),
                                      unweighted=True))

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
    truncated_R: np.ndarray | None = None,
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
    state_keys, step_state = _unique_inverse(key_N, len(group_ids) * n_anchor_codes)
    n_states = len(state_keys)
    state_group = state_keys // n_anchor_codes
    state_anchor = tuple(map(anchor_texts.__getitem__, (state_keys % n_anchor_codes).tolist()))
    # successors: the next step's anchor, or a boundary at the last step of a rollout
    last_R = offsets_R1[1:] - 1
    step_next = np.empty(n_steps, dtype=np.int64)
    step_next[:-1] = step_state[1:]
    step_next[last_R] = np.where(success_R, n_states, n_states + 1)
    # (anchor, action) pairs
    n_act = max(len(action_names), 1)
    sa_keys, step_sa = _unique_inverse(step_state.astype(np.int64) * n_act + action_code_N, n_states * n_act)
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
        rollout_truncated=(np.zeros(len(lengths), dtype=bool) if truncated_R is None
                           else np.asarray(truncated_R, dtype=bool)),
    )


def _unique_inverse(key_N: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key_N, return_inverse=True)`` for keys in ``[0, n_keys)``.

    When the key range is small next to the data (always for anchors and pairs of agent
    rollouts) a presence table gives both in O(N + n_keys) instead of an O(N log N) sort.
    """
    if n_keys <= 16 * len(key_N) + (1 << 22):
        present = np.zeros(n_keys, dtype=bool)
        present[key_N] = True
        uniq = np.flatnonzero(present)
        rank = np.empty(n_keys, dtype=np.int64)
        rank[uniq] = np.arange(len(uniq))
        return uniq, rank[key_N]
    uniq, inv = np.unique(key_N, return_inverse=True)
    return uniq, inv.ravel()


def merge(groups: Sequence[RolloutGroup]) -> Process:
    """Merge a batch of rollout groups into one block-diagonal empirical process (Eq. 5).

    Args:
        groups: one or more :class:`RolloutGroup`; anchors are matched only inside a group.

    Returns:
        :class:`Process` over all groups with N steps, R rollouts, S anchors and SA distinct
        (anchor, action) pairs: per step ``step_sa`` (N,), per pair ``sa_state``, ``n_sa`` and
        ``mu`` (SA,), and the observed transitions as flat arrays (see the class docstring).

    Raises:
        ValueError: no groups, or a group without rollouts.

    The groups are flattened into :class:`~crbc.io.columns.Columns` (strings interned once, in C
    loops where possible), then :func:`from_columns` does integer array work only.
    """
    if not groups:
        raise ValueError("no groups to merge")
    for grp in groups:
        if not grp.rollouts:
            raise ValueError(f"group {grp.group!r} has no rollouts")
    return from_columns(Columns.from_groups(groups))


def from_columns(cols: Columns) -> Process:
    """The process of a columnar batch: the same process as :func:`merge` of its groups.

    Rollouts are laid out group after group (groups in order of first appearance, rollouts in
    file order); when the file interleaves groups, the rollouts are permuted and the anchor and
    action codes renumbered in the new order, so that anchors and pairs are numbered exactly as
    :func:`merge` numbers them.
    """
    if cols.n_rollouts == 0:
        raise ValueError("no groups to merge")
    len_R = np.diff(cols.rollout_offsets)
    g_R, off_R1 = cols.rollout_group, cols.rollout_offsets
    a_N, x_N, rw_N = cols.anchor_code, cols.action_code, cols.reward
    idx_R, ok_R, tr_R, score_R = cols.rollout_index, cols.success, cols.truncated, cols.effective_score()
    has_score_R = ~np.isnan(cols.score)
    anchors, actions = cols.anchor_texts, cols.action_names
    if np.any(g_R[1:] < g_R[:-1]):  # interleaved groups: permute rollouts to group-major order
        perm_R = np.argsort(g_R, kind="stable")
        len_R = len_R[perm_R]
        new_off = np.zeros(len(len_R) + 1, dtype=np.int64)
        np.cumsum(len_R, out=new_off[1:])
        perm_N = np.repeat(off_R1[:-1][perm_R] - new_off[:-1], len_R) + np.arange(cols.n_steps)
        g_R, off_R1 = g_R[perm_R], new_off
        idx_R, ok_R, tr_R, score_R = idx_R[perm_R], ok_R[perm_R], tr_R[perm_R], score_R[perm_R]
        has_score_R = has_score_R[perm_R]
        a_N, anchors = _renumber(a_N[perm_N], anchors)
        x_N, actions = _renumber(x_N[perm_N], actions)
        rw_N = rw_N[perm_N]
    has_reward_N = ~np.isnan(rw_N)
    return build_process(
        group_code_N=np.repeat(g_R, len_R),
        anchor_code_N=a_N,
        action_code_N=x_N,
        reward_N=np.where(has_reward_N, rw_N, 0.0),
        success_R=ok_R & ~tr_R,
        score_R=score_R,
        offsets_R1=off_R1,
        group_ids=cols.group_ids,
        anchor_texts=anchors,
        action_names=actions,
        has_reward_N=has_reward_N,
        rollout_index_R=idx_R,
        has_score_R=has_score_R,
        truncated_R=tr_R,
    )


def _renumber(code_N: np.ndarray, texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Codes renumbered by first appearance in ``code_N`` (unused texts dropped)."""
    used, first = np.unique(code_N, return_index=True)
    by_first = used[np.argsort(first)]
    new_of_old = np.empty(len(texts), dtype=np.int64)
    new_of_old[by_first] = np.arange(len(by_first))
    return new_of_old[code_N], [texts[int(c)] for c in by_first]


@dataclass(frozen=True)
class MergeStats:
    """How well an anchor key merges a batch (shown in the sidebar).

    shared_step_share: share of steps whose anchor is visited by >= 2 rollouts of its group
    (0 when the key merges nothing). n_anchors: distinct anchors (S). n_shared_anchors: anchors
    visited by >= 2 rollouts. n_steps: N.
    """

    shared_step_share: float
    n_anchors: int
    n_shared_anchors: int
    n_steps: int


def merge_stats(batch: Process | Sequence[RolloutGroup]) -> MergeStats:
    """:class:`MergeStats` of a process (or of groups, merged first); ``shared_S`` as in
    :func:`_shared_anchors`, share = mean over steps of shared_S[step_state]."""
    p = batch if isinstance(batch, Process) else merge(batch)
    shared_S = _shared_anchors(p)
    share = float(shared_S[p.step_state].mean()) if p.n_steps else 0.0
    return MergeStats(share, int(p.n_states), int(shared_S.sum()), int(p.n_steps))


def _shared_anchors(p: Process) -> np.ndarray:
    """(S,) bool: the anchor is visited by >= 2 distinct rollouts (of its group, since anchors
    never match across groups), from the unique (state, rollout) pairs of the N steps."""
    width = max(len(p.rollout_group), 1)
    pair = np.unique(p.step_state.astype(np.int64) * width + p.step_rollout)
    return np.bincount(pair // width, minlength=p.n_states) >= 2


ALMOST_NOTHING = 0.05  #: below this share of later steps at shared anchors, a key merges (almost) nothing


@dataclass(frozen=True)
class MergeProfile:
    """How well an anchor key merges a batch beyond the first step: the line under the studio's
    data source.

    Observations that carry their history (a chat transcript, textarena's
    ``LLMObservationWrapper``) never repeat as text except the first one: every rollout of a
    group starts from the same prompt, so step 0 is always "shared" and :class:`MergeStats`
    alone reports a healthy share (31 % on 4 x 8 rollouts of 3-4 steps) while nothing after it
    merges. So the profile also counts the steps beyond the first of each rollout:

        shared_share = mean over the N steps of shared_S[step_state]
        later_share  = mean over the steps with t >= 1 (0-based) of shared_S[step_state]

    n_anchors: S. n_steps: N. later_steps: the steps with t >= 1; later_share is NaN when there
    are none (every rollout has one step).
    """

    n_anchors: int
    n_steps: int
    shared_share: float
    later_steps: int
    later_share: float

    @property
    def merges_nothing(self) -> bool:
        """True when (almost) no step beyond the first sits at a shared anchor: every credit
        after step 0 is then about 0, and the studio asks for an anchor key."""
        return self.later_steps > 0 and not self.later_share >= ALMOST_NOTHING

    def line(self) -> str:
        """``anchors 42 · steps at shared anchors 31% · steps beyond the first at shared anchors 0%``."""
        later = "—" if self.later_steps == 0 else f"{self.later_share:.0%}"
        return (f"anchors {self.n_anchors} · steps at shared anchors {self.shared_share:.0%} · "
                f"steps beyond the first at shared anchors {later}")


def merge_profile(batch: Process | Sequence[RolloutGroup]) -> MergeProfile:
    """:class:`MergeProfile` of a process (or of groups, merged first)."""
    p = batch if isinstance(batch, Process) else merge(list(batch))
    if not p.n_steps:
        return MergeProfile(int(p.n_states), 0, 0.0, 0, float("nan"))
    shared_N = _shared_anchors(p)[p.step_state]
    later_N = p.step_t >= 2  # Process.step_t is 1-based
    n_later = int(later_N.sum())
    return MergeProfile(int(p.n_states), int(p.n_steps), float(shared_N.mean()), n_later,
                        float(shared_N[later_N].mean()) if n_later else float("nan"))
