"""Evidence coverage of the finite-depth family: whose outcomes has V^(K)(s) heard of?

At depth K = 0 an anchor's value is the average outcome of the rollouts that visited it
(visit-local, CRBC Eq. 6); each round of backup (Eq. 10) lets the outcomes seen one hop further
flow in. The paper's Fig. 5 plots this reach. Here, for a single group:

    d(s, x)        = fewest observed edges from anchor s to anchor x on the merged graph
                     (d(s, s) = 0; boundaries absorb, so paths never pass through z+ or z-)
    reach_SR[s, i] = min_t d(s, s_{i,t})      how far rollout i passes from s (inf: never)
    C^(K)(s)       = #{ i : reach_SR[s, i] <= K }                                    (cov.1)

Why (cov.1) is the set of outcomes V^(K)(s) = T^K V0 (s) depends on: unrolled, it is a sum,
with positive weights mu P, over the observed paths of length K from s, of V0 at the anchor
reached after K steps, or of a boundary value (1 or 0) where a path ended earlier. A rollout
that passes within K hops of s either reaches an anchor exactly K hops away (and V0 there
averages its outcome R_i), or ends first: then its final transition to z+ or z- is inside the
K-step horizon and P counts it. A rollout that never comes within K hops enters neither term.

So C^(0)(s) is the number of distinct rollouts that visit s, C^(K) is non-decreasing in K, and it stops
growing after at most S - 1 rounds, at the number of rollouts that pass anywhere downstream of s.
Shapes: ``_S`` anchors, ``_R`` rollouts, ``_KS`` depth by anchor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.process import Process

__all__ = ["MAX_CELLS", "Coverage", "counts_within", "coverage", "coverage_cells", "hop_distances"]

#: the most cells (anchor pairs of the hop distances plus anchor-rollout reaches) :func:`coverage`
#: builds where a shared studio asks (200 MB of float64): the 20,000-anchor random group of 4,000
#: rollouts needs 475 million (some 6 GB and a minute of CPU)
MAX_CELLS = 25_000_000


@dataclass(frozen=True, eq=False)
class Coverage:
    """Evidence coverage of one group for K = 0..k_max.

    ``reach_SR``: hop distance from anchor s to the nearest anchor rollout i visits (``inf`` if
    unreachable), shape (S, R); ``count_KS``: C^(K)(s) of (cov.1), shape (k_max + 1, S);
    ``n_rollouts``: R, the group size; ``saturated_S``: C^(K)(s) for K large (the rollouts that
    pass anywhere downstream of s), shape (S,).
    """

    reach_SR: np.ndarray
    count_KS: np.ndarray
    n_rollouts: int
    saturated_S: np.ndarray

    @property
    def k_max(self) -> int:
        return len(self.count_KS) - 1

    @property
    def fraction_KS(self) -> np.ndarray:
        """C^(K)(s) / R: the share of the group's outcomes anchor s has heard of at depth K."""
        return self.count_KS / max(self.n_rollouts, 1)

    @property
    def mean_fraction_K(self) -> np.ndarray:
        """Mean over anchors of C^(K)(s) / R, shape (k_max + 1,)."""
        return self.fraction_KS.mean(axis=1) if self.count_KS.shape[1] else np.zeros(self.k_max + 1)

    def complete_at(self) -> int | None:
        """Smallest K at which every anchor has heard every outcome it can ever hear (C^(K) =
        the saturated count everywhere), or None within 0..k_max."""
        hit = np.flatnonzero((self.count_KS == self.saturated_S[None, :]).all(axis=1))
        return int(hit[0]) if len(hit) else None


def hop_distances(p: Process) -> np.ndarray:
    """All-pairs hop distances d(s, x) between anchors along observed transitions, shape (S, S)
    (``inf`` where x cannot be reached from s): the process's one hop distance
    (:meth:`crbc.process.Process.hops`) to every anchor."""
    if len(p.group_ids) != 1:
        raise ValueError("coverage takes the process of a single group")
    n = p.n_states
    return p.hops(np.arange(n))[:, :n].T


def coverage_cells(p: Process) -> int:
    """How many cells :func:`coverage` holds at once on ``p``: S x S hop distances plus the
    S x R reach table (8 bytes each)."""
    n_r = len(p.rollout_offsets) - 1
    return int(p.n_states) * (int(p.n_states) + n_r)


def coverage(p: Process, k_max: int) -> Coverage:
    """C^(K)(s) of (cov.1) for K = 0..k_max on the process of one group; memory and time grow
    with :func:`coverage_cells` (a caller serving many people checks it against :data:`MAX_CELLS`)."""
    if k_max < 0:
        raise ValueError(f"k_max must be >= 0, got {k_max}")
    d_SS = hop_distances(p)
    n_r = len(p.rollout_offsets) - 1
    reach_SR = np.full((p.n_states, n_r), np.inf)
    for i in range(n_r):  # rollouts are few (a group); anchors per rollout are its steps
        visited = np.unique(p.step_state[p.rollout_offsets[i]:p.rollout_offsets[i + 1]])
        reach_SR[:, i] = d_SS[:, visited].min(axis=1)
    return Coverage(reach_SR=reach_SR, count_KS=counts_within(reach_SR, k_max), n_rollouts=n_r,
                    saturated_S=np.isfinite(reach_SR).sum(axis=1))


def counts_within(reach_SR: np.ndarray, k_max: int) -> np.ndarray:
    """``count_KS[K, s] = #{i : reach_SR[s, i] <= K}`` for K = 0..k_max, shape (k_max + 1, S),
    from one histogram of the finite reaches per anchor (hop counts are whole numbers) and a
    cumulative sum over K: O(S R + K S) time and memory, where comparing every K with every
    reach would hold a (K + 1, S, R) array (2.4 GB for a 3,000-anchor ring of 2,000 rollouts at
    K = 400)."""
    n_s = reach_SR.shape[0]
    s_idx, r_idx = np.nonzero(reach_SR <= k_max)
    hist = np.zeros((n_s, k_max + 1), dtype=np.int64)
    np.add.at(hist, (s_idx, reach_SR[s_idx, r_idx].astype(np.int64)), 1)
    return np.cumsum(hist, axis=1).T

