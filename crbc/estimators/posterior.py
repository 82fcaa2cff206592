"""Posterior draws of the closure's credits: rollout weights plus an unseen successor per pair.

The ``calibrated`` interval (docs/MATH.md section 10.1) starts from B draws of the empirical
process of a group that (i) keep the dependence inside a rollout and (ii) give every observed
(anchor, action) pair some mass on a continuation nobody observed. Draw b of a group of G
rollouts:

    e_bi    ~ Gamma(1, 1)                    one weight per rollout i (the Bayesian bootstrap of
                                             rollouts); every step of rollout i gets w_bn = e_bi
    u_b(s,a) ~ Gamma(alpha, 1)               pseudo weight of an unseen successor of (s, a)
    y_b(s,a) ~ Beta(kappa m, kappa (1 - m))  its success value, m = (k + 1) / (G + 2) with k the
                                             group's successes (empirical Bayes on the group)

    W_b(s,a,x) = sum_{steps (s,a,x)} w_bn       W'_b(s,a) = W_b(s,a) + u_b(s,a)
    W'_b(s)   = sum_a W'_b(s,a)
    Q_b(s,a)  = beta [ sum_x W_b(s,a,x) V_b(x) + u_b(s,a) y_b(s,a) ] / W'_b(s,a)
    V_b(s)    = sum_a (W'_b(s,a) / W'_b(s)) Q_b(s,a),   V(z+) = 1, V(z-) = 0

which is the closure's linear system ``(I - beta M_b) V_b = b_b`` with ``M_b(s,x) = W_b(s->x) /
W'_b(s)`` and ``b_b(s) = beta [W_b(s->z+) + sum_a u_b(s,a) y_b(s,a)] / W'_b(s)``: the same batched
block solve as the resamples (:func:`crbc.estimators.resample.solve_weighted` with the extra
mass). The credit draw is ``c_b(s,a) = Q_b(s,a) - V_b(s)``, shape (B, SA); every pair is present
in every draw. With alpha = 0 the draws are the Bayesian bootstrap of rollouts of the plain
closure. Shapes: ``_B`` draws, ``_N`` steps, ``_R`` rollouts, ``_S`` anchors, ``_SA`` pairs.
"""

from __future__ import annotations

import numpy as np

from crbc.estimators import resample as RS
from crbc.process import Process

__all__ = ["draw_weights", "posterior_draws", "posterior_family"]


def draw_weights(p: Process, n_draws: int, seed: int, alpha: float, kappa: float, alpha_pi: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(w_BN, u_BSA, y_BSA, o_BS, z_BS)`` of the module docstring; each group's draws come from
    its own generator (:func:`crbc.estimators.resample.group_generators`): rollouts, then pairs,
    then anchors."""
    n_sa, n_s = len(p.n_sa), p.n_states
    o_BS = np.zeros((n_draws, n_s))
    z_BS = np.zeros((n_draws, n_s))
    s_bounds = np.searchsorted(p.state_group, np.arange(len(p.group_ids) + 1))
    w_BR = np.empty((n_draws, len(p.rollout_group)))
    u_BSA = np.zeros((n_draws, n_sa))
    y_BSA = np.zeros((n_draws, n_sa))
    sa_group = p.state_group[p.sa_state]
    r_bounds = np.searchsorted(p.rollout_group, np.arange(len(p.group_ids) + 1))
    sa_bounds = np.searchsorted(sa_group, np.arange(len(p.group_ids) + 1))
    for g, rng in enumerate(RS.group_generators(p, seed)):
        r0, r1 = int(r_bounds[g]), int(r_bounds[g + 1])
        a0, a1 = int(sa_bounds[g]), int(sa_bounds[g + 1])
        w_BR[:, r0:r1] = rng.standard_gamma(1.0, size=(n_draws, r1 - r0))
        if alpha > 0 and a1 > a0:
            k = float(p.rollout_success[r0:r1].sum())
            m = (k + 1.0) / (r1 - r0 + 2.0)
            u_BSA[:, a0:a1] = rng.standard_gamma(alpha, size=(n_draws, a1 - a0))
            y_BSA[:, a0:a1] = rng.beta(kappa * m, kappa * (1 - m), size=(n_draws, a1 - a0))
        s0, s1 = int(s_bounds[g]), int(s_bounds[g + 1])
        if alpha_pi > 0 and s1 > s0:
            k = float(p.rollout_success[r0:r1].sum())
            m = (k + 1.0) / (r1 - r0 + 2.0)
            o_BS[:, s0:s1] = rng.standard_gamma(alpha_pi, size=(n_draws, s1 - s0))
            z_BS[:, s0:s1] = rng.beta(kappa * m, kappa * (1 - m), size=(n_draws, s1 - s0))
    return w_BR[:, p.step_rollout], u_BSA, y_BSA, o_BS, z_BS


def posterior_family(p: Process, w_BN: np.ndarray, u_BSA: np.ndarray, y_BSA: np.ndarray,
                     o_BS: np.ndarray, z_BS: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``(c_BSA, q_BSA)``: the closure of every drawn process (module docstring), one batched
    solve; ``c = Q - V``."""
    n_sa, n_s = len(p.n_sa), p.n_states
    w_BS = RS.sums(p.step_state, n_s, w_BN) + RS.sums(p.sa_state, n_s, u_BSA) + o_BS
    extra_BS = RS.sums(p.sa_state, n_s, u_BSA * y_BSA) + o_BS * z_BS
    v_BS = RS.solve_weighted(p, w_BN, w_BS, beta, extra_BS)
    v_BX = np.concatenate([v_BS, np.ones((len(v_BS), 1)), np.zeros((len(v_BS), 1))], axis=1)
    num_BSA = RS.sums(p.step_sa, n_sa, w_BN * v_BX[:, p.step_next]) + u_BSA * y_BSA
    den_BSA = RS.sums(p.step_sa, n_sa, w_BN) + u_BSA
    q_BSA = beta * RS.ratio(num_BSA, den_BSA)
    return q_BSA - v_BS[:, p.sa_state], q_BSA


def posterior_draws(p: Process, n_draws: int, seed: int, beta: float, alpha: float, kappa: float,
                    alpha_pi: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``(c_BSA, q_BSA)`` of ``n_draws`` posterior draws of the closure on process ``p``."""
    return posterior_family(p, *draw_weights(p, n_draws, seed, alpha, kappa, alpha_pi), beta)
