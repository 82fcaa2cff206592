"""The CRBC family on a merged process: visit-local averaging, finite depth, the exact closure.

This module holds the family's maths, its configs and its registrations (``crbc``: the closure or
depth K; ``visit_local``: depth 0), both combined with a trajectory advantage A_G chosen by
``group_norm`` (Eq. 13-14, :func:`trajectory_advantage`).

Equation numbers are those of Ren et al., arXiv 2609.35082. Shapes follow :mod:`crbc.process`:
``_N`` per step, ``_R`` per rollout, ``_S`` per anchor, ``_SA`` per observed (anchor, action).
Boundaries are fixed: V(z+) = 1, V(z-) = 0.

Every backup is a sum over steps, since each step is one observed transition:

    (B V)(s,a) = beta * sum_x P(x|s,a) V(x)   = beta * sum_{steps at (s,a)} V(x_step) / N(s,a)
    (T V)(s)   = sum_a mu(a|s) (B V)(s,a)     = beta * sum_{steps at s} V(x_step) / N(s)
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.estimators.baselines import EPS, grouped_stats, normalised
from crbc.estimators.credits import Credits, combine
from crbc.estimators.grpo import verl_grpo
from crbc.estimators.params import Checked, param, w_group_param
from crbc.estimators.registry import register
from crbc.process import Process

__all__ = [
    "backup_q", "backup_v", "CRBCConfig", "crbc_credits", "cross_steps", "depth_sweep", "DepthSweep", "estimate",
    "group_advantage", "GROUP_EPS", "GROUP_NORMS", "MAX_DENSE_BLOCK", "normalise", "reaches_by_search",
    "reaches_success", "realized_returns", "rloo", "snap_zero", "solve_values", "SOLVERS", "state_mean", "system",
    "trajectory_advantage", "visit_local", "visit_local_credits", "VisitLocalConfig", "zero_credit"
]

GROUP_EPS = 1e-6  # added to the group's score standard deviation (GRPO, Eq. 3)


# --------------------------------------------------------------------------------------------
# backups


def backup_q(p: Process, v_S: np.ndarray, beta: float) -> np.ndarray:
    """Action backup (Eq. 7): ``Q_SA = beta * sum_x P(x|s,a) V(x)``."""
    v_next_N = p.extend(v_S)[p.step_next]
    return beta * np.bincount(p.step_sa, weights=v_next_N, minlength=len(p.n_sa)) / p.n_sa


def backup_v(p: Process, v_S: np.ndarray, beta: float) -> np.ndarray:
    """State backup (Eq. 8): ``(T V)(s) = sum_a mu(a|s) (B V)(s,a)``."""
    v_next_N = p.extend(v_S)[p.step_next]
    return beta * np.bincount(p.step_state, weights=v_next_N, minlength=p.n_states) / p.n_s


def state_mean(p: Process, q_SA: np.ndarray) -> np.ndarray:
    """``V_S = sum_a mu(a|s) Q(s,a)``."""
    return np.bincount(p.sa_state, weights=p.mu * q_SA, minlength=p.n_states)


# --------------------------------------------------------------------------------------------
# depth 0: visit-local averaging (Eq. 4, 6)


def realized_returns(p: Process, beta: float) -> np.ndarray:
    """``G_N = beta^(T_i - t + 1) * R_i`` (Eq. 4): the last step of a success gets ``beta``."""
    T_N = p.rollout_len[p.step_rollout]
    return np.power(beta, T_N - p.step_t + 1.0) * p.rollout_success[p.step_rollout]


def visit_local(p: Process, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Depth 0 (Eq. 6): ``Q0_SA`` = mean realised return of the pair, ``V0_S = sum_a mu Q0``."""
    g_N = realized_returns(p, beta)
    q0_SA = np.bincount(p.step_sa, weights=g_N, minlength=len(p.n_sa)) / p.n_sa
    return state_mean(p, q0_SA), q0_SA


# --------------------------------------------------------------------------------------------
# the closure (Eq. 7-9)


def system(p: Process, beta: float):
    """``(I - beta M, b)`` with ``M(s,s') = sum_a mu(a|s) P(s'|s,a)`` and
    ``b(s) = beta * sum_a mu(a|s) P(z+|s,a)``, as a ``scipy.sparse`` CSC matrix (block diagonal
    for a batch) and a vector. scipy is imported here, not with the module."""
    import scipy.sparse as sp

    n = p.n_states
    w_N = 1.0 / p.n_s[p.step_state]  # mu(a|s) P(x|s,a) contributed by one observed step
    inner = p.step_next < n
    rows = np.concatenate([np.arange(n), p.step_state[inner]])
    cols = np.concatenate([np.arange(n), p.step_next[inner]])
    data = np.concatenate([np.ones(n), -beta * w_N[inner]])
    a = sp.csc_matrix((data, (rows, cols)), shape=(n, n))  # duplicates are summed
    return a, _rhs(p, beta)


def _rhs(p: Process, beta: float) -> np.ndarray:
    """``b_S = beta * N(s -> z+) / N(s)``: only last steps of successes reach z+ (R entries at most)."""
    last_R = p.rollout_offsets[1:] - 1
    ends_S = p.step_state[last_R[p.rollout_success]]
    return beta * np.bincount(ends_S, minlength=p.n_states) / p.n_s


SOLVERS = ("auto", "blocks", "sparse", "iterative")
MAX_DENSE_BLOCK = 128  # "auto" solves groups up to this many anchors by batched dense LU, larger ones iteratively


def solve_values(p: Process, beta: float, method: str = "auto") -> np.ndarray:
    """Exact behaviour-policy values (Eq. 9): solve ``(I - beta M) V = b``, shape (S,).

    ``sparse``: the whole batch as one block-diagonal ``scipy.sparse`` matrix, one direct sparse
    LU (exact to rounding; fills in on large random graphs: the slow twin).
    ``iterative``: the same matrix solved by Jacobi-preconditioned BiCGSTAB to a guaranteed
    sup-norm error of ``linsolve.ITER_TOL`` (1e-11), falling back to the LU when it cannot
    (:mod:`crbc.estimators.linsolve`); O(iterations x steps) time, O(steps) memory.
    ``blocks``: the diagonal blocks (one per group) solved together by batched dense LU
    (``numpy.linalg.solve`` on a stack), one call per block size: O(S_g^3) per group.
    ``auto`` (default): ``blocks`` for the groups of at most ``MAX_DENSE_BLOCK`` anchors and
    ``iterative`` for the larger ones (scipy is imported only then). All agree with a dense
    reference to 1e-9 (tests/core/test_solver.py).

    Inside :func:`solves_remembered` (a report), ``auto`` solves are remembered per process
    object and beta (a Process is immutable): one report of a 20,000-anchor group asks for the
    same closure from its credits, its anchors' arithmetic and its depth sweep, half a second
    each. Each call returns its own copy. Outside it every call solves.
    """
    _check_beta(beta)
    if method not in SOLVERS:
        raise ValueError(f"method must be one of {', '.join(SOLVERS)}, got {method!r}")
    solved = _SOLVED.get()
    if method == "auto" and solved is not None:
        memo = solved.setdefault(p, {})
        if beta not in memo:
            memo[beta] = _solve_values(p, beta, method)
            memo[beta].flags.writeable = False
        return memo[beta].copy()
    return _solve_values(p, beta, method)


#: inside :func:`solves_remembered`: the ``auto`` closure values already solved, per process object, by beta
_SOLVED: ContextVar[weakref.WeakKeyDictionary | None] = ContextVar("crbc_solved", default=None)


@contextlib.contextmanager
def solves_remembered() -> Iterator[None]:
    """Within the block, :func:`solve_values` (``auto``) solves each process and beta once; the
    memo goes with the block (a report opens one; benchmarks and the studio never do)."""
    token = _SOLVED.set(weakref.WeakKeyDictionary())
    try:
        yield
    finally:
        _SOLVED.reset(token)


def _solve_values(p: Process, beta: float, method: str) -> np.ndarray:
    """:func:`solve_values` without the memo."""
    if method in ("sparse", "iterative"):
        v_S = _solve_sparse(p, beta, np.ones(p.n_states, dtype=bool), direct=method == "sparse")
    else:
        size_G = np.bincount(p.state_group, minlength=len(p.group_ids))
        dense_G = size_G <= MAX_DENSE_BLOCK if method == "auto" else np.ones(len(size_G), dtype=bool)
        v_S = _solve_blocks(p, beta, dense_G)
        if not dense_G.all():
            big_S = ~dense_G[p.state_group]
            v_S[big_S] = _solve_sparse(p, beta, big_S, direct=False)
    # V is a discounted probability: 0 <= V <= beta exactly; clip LU round-off (|err| ~ 1e-16),
    # so that an anchor no rollout ever left towards success shows V = 0, not -0.000
    return np.clip(np.asarray(v_S, dtype=float).reshape(p.n_states), 0.0, beta)


def _solve_sparse(p: Process, beta: float, sel_S: np.ndarray, direct: bool) -> np.ndarray:
    """The rows and columns ``sel_S`` (whole groups, so the system is closed): one direct sparse
    LU (``direct``) or :func:`crbc.estimators.linsolve.solve` (iterative, LU as its fallback)."""
    import scipy.sparse.linalg as spla

    from crbc.estimators import linsolve

    a, b_S = system(p, beta)
    if not sel_S.all():
        idx = np.flatnonzero(sel_S)
        a, b_S = a[idx][:, idx], b_S[idx]
    if a.shape[0] == 1:
        return b_S / a.toarray().ravel()
    if direct:
        return np.atleast_1d(spla.spsolve(a.tocsc(), b_S))
    return linsolve.solve(a, b_S, beta)[0]


def _solve_blocks(p: Process, beta: float, dense_G: np.ndarray) -> np.ndarray:
    """Batched dense LU over the diagonal blocks of ``I - beta M`` of the groups ``dense_G``
    (see :func:`solve_values`); other states are left at 0.

    The blocks are laid out in one flat buffer ordered by size, so that the blocks of one size are
    a contiguous ``(k, n_g, n_g)`` view: one ``bincount`` over the steps assembles every block (a
    step adds ``-beta / N(s)`` at (s, next); steps into z+/z- add 0), one LAPACK call per size
    solves. Shapes: ``_G`` per group, ``_S`` per anchor, ``_N`` per step.
    """
    n, n_g = p.n_states, len(p.group_ids)
    start_G = np.zeros(n_g + 1, dtype=np.int64)
    size_G = np.bincount(p.state_group, minlength=n_g) * dense_G
    np.cumsum(np.bincount(p.state_group, minlength=n_g), out=start_G[1:])
    order_G = np.argsort(size_G, kind="stable")
    sq_G, sz_G = size_G[order_G] ** 2, size_G[order_G]
    moff_G = np.empty(n_g, dtype=np.int64)  # offset of each block in the matrix buffer
    moff_G[order_G] = np.cumsum(sq_G) - sq_G
    voff_G = np.empty(n_g, dtype=np.int64)  # offset of each block in the vector buffer
    voff_G[order_G] = np.cumsum(sz_G) - sz_G
    g_S = p.state_group
    local_S = np.arange(n) - start_G[g_S]
    dense_S = dense_G[g_S]
    row_S = np.where(dense_S, moff_G[g_S] + local_S * size_G[g_S], 0)  # buffer offset of each row
    col_X = np.concatenate([np.where(dense_S, local_S, 0), [0, 0]])  # z+, z-, other groups: weight 0
    coef_X = np.concatenate([np.where(dense_S, -beta / p.n_s, 0.0), [0.0, 0.0]])
    w_N = coef_X[p.step_state] * (p.step_next < n)
    mat = np.bincount(row_S[p.step_state] + col_X[p.step_next], weights=w_N,
                      minlength=int(sq_G.sum())).astype(float, copy=False)  # float64 even if empty
    mat[(row_S + local_S)[dense_S]] += 1.0
    pos_S = voff_G[g_S] + local_S
    rhs = np.zeros(int(sz_G.sum()))
    rhs[pos_S[dense_S]] = _rhs(p, beta)[dense_S]
    sol = np.zeros_like(rhs)
    sizes, first = np.unique(sz_G, return_index=True)
    for size, g0, g1 in zip(sizes, first, [*first[1:], n_g], strict=True):
        if size == 0:
            continue
        m0, v0, k = moff_G[order_G[g0]], voff_G[order_G[g0]], g1 - g0
        blocks = mat[m0:m0 + k * size * size].reshape(k, size, size)
        sol[v0:v0 + k * size] = np.linalg.solve(blocks, rhs[v0:v0 + k * size].reshape(k, size, 1)).ravel()
    return np.where(dense_S, sol[np.minimum(pos_S, len(sol) - 1)] if len(sol) else 0.0, 0.0)


SWEEPS_FIRST = 8  #: sweeps of reaches_success before it switches to a breadth-first search


def reaches_success(p: Process) -> np.ndarray:
    """``ok_S``: anchor s has an observed path to z+ on the merged graph, shape (S,).

    The least fixed point of ``ok(s) = any over the steps from s of [next is z+ or ok(next)]``:
    first up to ``SWEEPS_FIRST`` sweeps of every step (one ``bincount`` each: the fastest when
    every path to z+ is short, as in most groups and in 250,000 tiny ones), then, if the fixed
    point is still moving, :func:`reaches_by_search`, whose work does not grow with the graph's
    diameter (sweeping to the end costs O(N x diameter): 0.4 s per call on a ring of 3,000
    anchors)."""
    r_X = np.zeros(p.n_states + 2, dtype=bool)
    r_X[p.z_plus] = True
    for _ in range(SWEEPS_FIRST):
        new_S = np.bincount(p.step_state, weights=r_X[p.step_next], minlength=p.n_states) > 0
        if (new_S == r_X[:p.n_states]).all():
            return new_S
        r_X[:p.n_states] = new_S
    return reaches_by_search(p)


def reaches_by_search(p: Process) -> np.ndarray:
    """:func:`reaches_success` by a breadth-first search backwards from z+: the steps sorted by
    successor give each node's predecessors, and each round visits only the new frontier's
    in-steps, so the whole search is O(N log N + S) work in (longest shortest path) rounds. The
    sweeping fixed point is its twin in tests/core/test_worst_shapes.py."""
    n_x = p.n_states + 2
    by_next = np.argsort(p.step_next, kind="stable")
    pred_M = p.step_state[by_next]  # predecessors, grouped by successor
    start_X = np.searchsorted(p.step_next[by_next], np.arange(n_x + 1))
    ok_X = np.zeros(n_x, dtype=bool)
    ok_X[p.z_plus] = True
    frontier = np.array([p.z_plus])
    while len(frontier):
        lo, cnt = start_X[frontier], start_X[frontier + 1] - start_X[frontier]
        if not cnt.sum():
            break
        # the concatenated ranges [lo, lo + cnt) of the frontier's in-steps
        idx = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
        new = np.unique(pred_M[idx])
        frontier = new[~ok_X[new]]
        ok_X[frontier] = True
    return ok_X[:p.n_states]


def zero_credit(p: Process) -> np.ndarray:
    """``zero_SA``: the pair's credit Q - V is 0 by construction for every member of the family:
    its anchor has one observed action (V = Q), or no observed path from it reaches z+ (every
    value downstream is 0, so V = Q = 0). An anchor from which every continuation succeeds is
    not here: with beta < 1 its actions differ by how soon they succeed."""
    return ((p.n_actions < 2) | ~reaches_success(p))[p.sa_state]


def snap_zero(p: Process, v_S: np.ndarray, q_SA: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V_S, Q_SA, A_SA)`` with the structural zeros made exact: V = Q = 0 where no path reaches
    z+, A = 0 on :func:`zero_credit` pairs (a solve leaves float noise of ~1e-17 there)."""
    dead_S = ~reaches_success(p)
    v_S = np.where(dead_S, 0.0, v_S)
    q_SA = np.where(dead_S[p.sa_state], 0.0, q_SA)
    a_SA = np.where(zero_credit(p), 0.0, q_SA - v_S[p.sa_state])
    return v_S, q_SA, a_SA


def estimate(p: Process, beta: float, depth: int | None = None, method: str = "auto"
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(V_S, Q_SA)`` of the CRBC family member of depth K (Eq. 10); ``None`` = the closure.

    K = 0: visit-local averages. K >= 1: ``V^(K) = T^K V0`` and ``Q^(K) = B V^(K-1)``.
    K = None: ``V`` from the linear solve and ``Q = B V``.
    """
    _check_beta(beta)
    if depth is None:
        v_S = solve_values(p, beta, method)
        return v_S, backup_q(p, v_S, beta)
    if depth < 0:
        raise ValueError(f"depth must be >= 0 or None (closure), got {depth}")
    v_S, q_SA = visit_local(p, beta)
    for _ in range(depth):
        q_SA = backup_q(p, v_S, beta)
        v_S = state_mean(p, q_SA)  # == backup_v(p, v_S, beta) from the same V^(K-1)
    return v_S, q_SA


@dataclass(frozen=True, eq=False)
class DepthSweep:
    """The finite-depth family for K = 0..K_max next to the closure (for plots and animation).

    ``v_KS[K]``, ``q_KSA[K]``, ``a_KSA[K]`` are V^(K), Q^(K), A^(K); ``v_S``, ``q_SA``, ``a_SA`` the
    closure; ``err_v_K`` = ||V^(K) - V||_inf, ``err_a_K`` = ||A^(K) - A_inf||_inf and ``bound_K``
    the Cor. 3 bound 2 beta^K / (1 - beta) ||T V0 - V0||_inf (infinite for beta = 1; at K = 0
    the corollary says nothing and the entry is NaN).
    """

    beta: float
    v_KS: np.ndarray
    q_KSA: np.ndarray
    a_KSA: np.ndarray
    v_S: np.ndarray
    q_SA: np.ndarray
    a_SA: np.ndarray
    err_v_K: np.ndarray
    err_a_K: np.ndarray
    bound_K: np.ndarray

    @property
    def k_max(self) -> int:
        return len(self.v_KS) - 1

    def converged_at(self, tol: float = 1e-6) -> int | None:
        """Smallest K with ||A^(K) - A_inf||_inf <= tol, or None within the sweep."""
        hit = np.flatnonzero(self.err_a_K <= tol)
        return int(hit[0]) if len(hit) else None

    def first(self, k_max: int) -> DepthSweep:
        """The members K = 0..k_max of this sweep (slices of its arrays; no new computation)."""
        n = k_max + 1
        return dataclasses.replace(self, v_KS=self.v_KS[:n], q_KSA=self.q_KSA[:n], a_KSA=self.a_KSA[:n],
                                   err_v_K=self.err_v_K[:n], err_a_K=self.err_a_K[:n],
                                   bound_K=self.bound_K[:n])


def depth_sweep(p: Process, beta: float, k_max: int, tol: float | None = None) -> DepthSweep:
    """The finite-depth family on one process, K = 0..k_max, beside the exact closure (Eq. 10).

    Args:
        p: the merged process (S anchors, SA pairs).
        beta: discount in (0, 1].
        k_max: the deepest K (>= 0).
        tol: None, or stop early: the sweep ends at the first K >= 1 with
            ``||A^(K) - A_inf||_inf <= tol`` (at k_max when none is), i.e. it equals
            ``depth_sweep(p, beta, k_max).first(max(c, 1))`` with ``c`` that sweep's
            ``converged_at(tol)`` (k_max when None), without computing or holding the depths
            past it (a report embeds the sweep up to convergence; on a 20,000-anchor group
            the full 401 depths hold 3 x 401 x SA floats, 470 MB).

    Returns:
        :class:`DepthSweep`: ``v_KS`` (K + 1, S) = V^(K), ``q_KSA`` and ``a_KSA``
        (K + 1, SA) = Q^(K), A^(K); the closure's ``v_S``, ``q_SA``, ``a_SA``; the sup-norm
        errors to the closure per K and the Cor. 3 bound ``2 beta^K / (1 - beta) ||T V0 - V0||``.
    """
    _check_beta(beta)
    if k_max < 0:
        raise ValueError(f"k_max must be >= 0, got {k_max}")
    if tol is not None and not tol >= 0:
        raise ValueError(f"tol must be >= 0 or None, got {tol}")
    v_S = solve_values(p, beta)
    q_SA = backup_q(p, v_S, beta)
    a_SA = q_SA - v_S[p.sa_state]
    v0_S, q0_SA = visit_local(p, beta)
    vs, qs, err_a = [v0_S], [q0_SA], [_sup(q0_SA - v0_S[p.sa_state] - a_SA)]
    for k in range(1, k_max + 1):
        if tol is not None and k >= 2 and err_a[-1] <= tol:
            break
        qs.append(backup_q(p, vs[-1], beta))
        vs.append(state_mean(p, qs[-1]))
        err_a.append(_sup(qs[-1] - vs[-1][p.sa_state] - a_SA))
    v_KS, q_KSA = np.array(vs), np.array(qs)
    a_KSA = q_KSA - v_KS[:, p.sa_state]
    gap = _sup(backup_v(p, v0_S, beta) - v0_S)
    k = np.arange(len(vs), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = 2.0 * beta ** k / (1.0 - beta) * gap if beta < 1 else np.full(k.shape, np.inf)
    bound = np.where(k == 0, np.nan, bound)
    return DepthSweep(beta, v_KS, q_KSA, a_KSA, v_S, q_SA, a_SA,
                      err_v_K=np.abs(v_KS - v_S).max(axis=1, initial=0.0),
                      err_a_K=np.abs(a_KSA - a_SA).max(axis=1, initial=0.0),
                      bound_K=bound)


# --------------------------------------------------------------------------------------------
# step credit and the final advantage (Eq. 13-14)


def normalise(p: Process, a_SA: np.ndarray, sigma_min: float) -> tuple[np.ndarray, np.ndarray]:
    """``A_S = [#actions(s) >= 2] * A / max(sigma(s), sigma_min)``, ``sigma^2 = sum_a mu A^2`` (Eq. 13).

    Returns ``(A_S_SA, sigma_S)``.
    """
    sigma_S = np.sqrt(np.bincount(p.sa_state, weights=p.mu * a_SA**2, minlength=p.n_states))
    gate_SA = p.n_actions[p.sa_state] >= 2
    return np.where(gate_SA, a_SA / np.maximum(sigma_S, sigma_min)[p.sa_state], 0.0), sigma_S


def group_advantage(p: Process) -> np.ndarray:
    """GRPO's trajectory advantage (Eq. 3): ``(score - mean) / (std_{N-1} + 1e-6)`` in each group.

    A group whose scores are all equal (including a group of one) gives exactly 0. Computed in
    units of the group's largest |score| (``(s' - mean') / (std' + 1e-6 / c)`` with ``s' = s / c``),
    so scores near the float limit give the right, finite value instead of overflowing.
    """
    g_R, s_R = p.rollout_group, p.rollout_score
    n_groups = len(p.group_ids)
    c_G = np.zeros(n_groups)
    np.maximum.at(c_G, g_R, np.abs(s_R))
    c_G = np.where(c_G > 1e100, c_G, 1.0)  # ordinary scores: the plain formula, bit for bit
    x_R = s_R / c_G[g_R]
    n_G = np.bincount(g_R, minlength=n_groups)
    mean_G = np.bincount(g_R, weights=x_R, minlength=n_groups) / n_G
    dev_R = x_R - mean_G[g_R]
    ss_G = np.bincount(g_R, weights=dev_R**2, minlength=n_groups)
    std_G = np.sqrt(ss_G / np.maximum(n_G - 1, 1))
    lo_G = np.full(n_groups, np.inf)
    hi_G = np.full(n_groups, -np.inf)
    np.minimum.at(lo_G, g_R, s_R)
    np.maximum.at(hi_G, g_R, s_R)
    flat_R = (lo_G == hi_G)[g_R]
    return np.where(flat_R, 0.0, dev_R / (std_G[g_R] + GROUP_EPS / c_G[g_R]))


GROUP_NORMS = ("grpo", "drgrpo", "rloo", "steps")


def rloo(p: Process) -> np.ndarray:
    """``A_R`` of verl's ``compute_rloo_outcome_advantage`` (core_algos.py:588-636):
    ``S_i - mean of the group's other rollouts`` (= n/(n-1) (S_i - mean)); a group of one: S_i."""
    g_R, s_R = p.rollout_group, p.rollout_score
    n_G, mean_G, _ = grouped_stats(g_R, s_R, len(p.group_ids))
    n_R = n_G[g_R]
    return np.where(n_R > 1, (s_R - mean_G[g_R]) * n_R / np.maximum(n_R - 1, 1), s_R)


def cross_steps(p: Process, eps: float = EPS) -> np.ndarray:
    """``A_R`` normalised over the group's step rows (verl-agent's ``episode_norm_reward``,
    mean_std_norm, no penalty): each rollout's score counts once per step it took."""
    g_N = p.rollout_group[p.step_rollout]
    a_N = normalised(p.rollout_score[p.step_rollout], g_N, len(p.group_ids), False,
                     singleton_mean_zero=True, eps=eps)
    return a_N[p.rollout_offsets[:-1]]


def trajectory_advantage(p: Process, group_norm: str = "grpo") -> np.ndarray:
    """A_G of ``crbc`` and ``visit_local`` (docs/MATH.md sections 6-7) by ``group_norm``, shape (R,):
    ``grpo`` the paper's (:func:`group_advantage`: equal scores, a group of one included, give 0),
    ``drgrpo`` verl's GRPO without the std, ``rloo`` leave-one-out, ``steps`` verl-agent's
    cross-steps rows. The last three keep their upstream function's rule for a group of one."""
    if group_norm == "grpo":
        return group_advantage(p)
    if group_norm == "drgrpo":
        return verl_grpo(p, norm_by_std=False)
    if group_norm == "rloo":
        return rloo(p)
    if group_norm == "steps":
        return cross_steps(p)
    raise ValueError(f"group_norm must be one of {', '.join(GROUP_NORMS)}, got {group_norm!r}")


def _sup(x: np.ndarray) -> float:
    return float(np.abs(x).max(initial=0.0))


def _check_beta(beta: float) -> None:
    if not (0.0 < beta <= 1.0):
        raise ValueError(f"beta must be in (0, 1], got {beta}")


# --------------------------------------------------------------------------------------------
# configs and registrations (defaults: CRBC Sec. 5.1)


def _beta() -> Any:
    return param(0.98, "discount per step; V is the beta-discounted chance of success", lo=0.0, lo_open=True,
                 hi=1.0, shared=True, label="beta (discount)", ui_min=0.80, step=0.005, fmt="%.3f", slider=True)


def _sigma_min() -> Any:
    return param(0.1, "floor of the per-anchor scale that divides the step credit", lo=0.0, lo_open=True,
                 shared=True, label="sigma_min", ui_min=0.001, ui_max=10.0, step=0.01, fmt="%.3f")


def _w_step() -> Any:
    return param(5.0, "weight of the step credit A_S", shared=True, label="w_S (weight of A_S, CRBC family)",
                 ui_min=-20.0, ui_max=20.0, step=0.5)


def _group_norm() -> Any:
    return param("grpo", "trajectory advantage A_G: grpo (paper), drgrpo (no std), rloo, steps (verl-agent's rows)",
                 choices=GROUP_NORMS)


@dataclass(frozen=True)
class CRBCConfig(Checked):
    """CRBC (Eq. 9, 10, 13, 14): closure credit, its normalisation and the combination with A_G."""

    beta: float = _beta()
    depth: int | None = param(None, "finite depth K of the backup, or 'inf' for the exact closure",
                              kind=int, lo=0, none="inf", shared=True,
                              label="depth K of crbc (inf = exact closure)", ui_max=64)
    sigma_min: float = _sigma_min()
    w_group: float = w_group_param()
    w_step: float = _w_step()
    group_norm: str = _group_norm()


@dataclass(frozen=True)
class VisitLocalConfig(Checked):
    """Visit-local averaging = CRBC at K = 0 (Eq. 6, 13); fields as :class:`CRBCConfig`."""

    beta: float = _beta()
    sigma_min: float = _sigma_min()
    w_group: float = w_group_param()
    w_step: float = _w_step()
    group_norm: str = _group_norm()


def _family_credits(name: str, p: Process, cfg: CRBCConfig | VisitLocalConfig, depth: int | None) -> Credits:
    """Eq. 13-14 on the depth-K (or closure) estimate: ``A_S = [|acts(s)| >= 2] A / max(sigma, sigma_min)``,
    ``A_final = w_G A_G + w_S A_S``; value V(s_t), q Q(s_t, a_t), credit A = Q - V."""
    v_S, q_SA, a_SA = snap_zero(p, *estimate(p, cfg.beta, depth))  # structural zeros exact
    a_s_SA, sigma_S = normalise(p, a_SA, cfg.sigma_min)
    return combine(name, dataclasses.asdict(cfg), p, step_advantage_N=a_s_SA[p.step_sa],
                   group_advantage_R=trajectory_advantage(p, cfg.group_norm), w_group=cfg.w_group,
                   w_step=cfg.w_step, value_N=v_S[p.step_state], q_N=q_SA[p.step_sa], credit_N=a_SA[p.step_sa],
                   value_S=v_S, q_SA=q_SA, credit_SA=a_SA, step_advantage_SA=a_s_SA, sigma_S=sigma_S)


def _closure_depth(params: dict[str, Any]) -> bool:
    """The calibrated interval was fitted on the exact closure (depth K = inf) only."""
    return params.get("depth") is None


@register("crbc", CRBCConfig, "CRBC: Q - V of the cross-rollout Bellman closure (exact, or depth K)",
          value="success_value", q="action_value", credit="q_minus_v", needs=("actions", "success"),
          signal="credit", truth_scale=True, calibrated=_closure_depth, label="CRBC", color="#2a6fdb")
def crbc_credits(p: Process, cfg: CRBCConfig) -> Credits:
    """Closure credit (Eq. 9): solve ``(I - beta M) V = b``, ``Q = B V``, ``A = Q - V``;
    finite depth K (Eq. 10) when ``cfg.depth`` is set; then Eq. 13-14:
    ``A_final = w_G A_G + w_S [|acts(s)| >= 2] A / max(sigma(s), sigma_min)``, A_G by ``group_norm``."""
    return _family_credits("crbc", p, cfg, cfg.depth)


@register("visit_local", VisitLocalConfig, "Visit-local averaging: CRBC at depth K = 0",
          value="success_value", q="action_value", credit="q_minus_v", needs=("actions", "success"),
          signal="credit", truth_scale=True, label="visit-local", color="#17becf")
def visit_local_credits(p: Process, cfg: VisitLocalConfig) -> Credits:
    """``Q0(s,a)`` = mean realised return ``beta^(T-t+1) R`` of the pair, ``V0 = sum_a mu Q0``
    (Eq. 4, 6), then the same gate, normalisation and combination as :func:`crbc_credits`."""
    return _family_credits("visit_local", p, cfg, 0)
