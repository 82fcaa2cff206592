"""The built-in estimators, each registered once here with :func:`crbc.estimators.registry.register`.

GRPO (verl), CRBC (exact closure or depth K) and visit-local averaging (:mod:`crbc.estimators.closure`),
GiGPO (verl-agent) and the shortest-path baseline (:mod:`crbc.estimators.baselines`), RewardFlow
(:mod:`crbc.estimators.rewardflow`), GraphGPO, HGPO and G2PO (:mod:`crbc.estimators.graph_methods`):
a frozen config per estimator (defaults: the papers' and their recipes'; CRBC Sec. 5.1), and
``fn(process, config) -> Credits``. The array maths live in those modules; this one only turns
configs into their arguments and their results into :class:`Credits`. Formulas: docs/MATH.md
sections 7, 11 and 12. Shapes: ``_N`` per step, ``_R`` per rollout, ``_S`` per anchor, ``_SA``
per observed (anchor, action) pair (:mod:`crbc.process`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

import crbc.estimators.baselines as B
import crbc.estimators.closure as C
import crbc.estimators.graph_methods as GM
import crbc.estimators.rewardflow as RF
from crbc.estimators.credits import Credits
from crbc.estimators.params import Checked, param
from crbc.estimators.registry import register
from crbc.process import Process

__all__ = [
    "crbc", "CRBCConfig", "g2po", "G2POConfig", "gigpo", "GiGPOConfig", "graphgpo", "GraphGPOConfig",
    "grpo", "GRPOConfig", "hgpo", "HGPOConfig", "hop_distance", "rewardflow", "RewardFlowConfig",
    "shortest_path", "ShortestPathConfig", "visit_local", "VisitLocalConfig"
]

# --------------------------------------------------------------------------------------------
# configs (defaults: CRBC Sec. 5.1; GiGPO and GraphGPO papers). One line per parameter.

_MODES = ("mean_std_norm", "mean_norm")
_BETA = dict(lo=0.0, lo_open=True, hi=1.0, shared=True, label="beta (discount)", ui_min=0.80,
             step=0.005, fmt="%.3f", slider=True)
_SIGMA_MIN = dict(lo=0.0, lo_open=True, shared=True, label="sigma_min", ui_min=0.001, ui_max=10.0,
                  step=0.01, fmt="%.3f")
_W_GROUP = dict(shared=True, label="w_G (weight of A_G)", ui_min=-10.0, ui_max=10.0, step=0.5)
_W_STEP = dict(shared=True, label="w_S (weight of A_S, CRBC family)", ui_min=-20.0, ui_max=20.0, step=0.5)
_GROUP_NORM = dict(choices=B.GROUP_NORMS)
_GROUP_NORM_HELP = "trajectory advantage A_G: grpo (paper), drgrpo (no std), rloo, steps (verl-agent's rows)"
_PENALTY = dict(lo=0.0)
_PENALTY_HELP = "subtracted from an invalid step's episode score and step return (verl-agent; 0 = off)"


@dataclass(frozen=True)
class GRPOConfig(Checked):
    """GRPO as verl computes it (docs/MATH.md section 7); A_G broadcast to every step."""

    norm_by_std: bool = param(True, "divide by the group's standard deviation (false: Dr. GRPO)")


def _crbc_beta() -> Any:
    return param(0.98, "discount per step; V is the beta-discounted chance of success", **_BETA)


def _crbc_sigma_min() -> Any:
    return param(0.1, "floor of the per-anchor scale that divides the step credit", **_SIGMA_MIN)


def _crbc_w_step() -> Any:
    return param(5.0, "weight of the step credit A_S", **_W_STEP)


def _w_group() -> Any:
    return param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)


def _group_norm() -> Any:
    return param("grpo", _GROUP_NORM_HELP, **_GROUP_NORM)


@dataclass(frozen=True)
class CRBCConfig(Checked):
    """CRBC (Eq. 9, 10, 13, 14): closure credit, its normalisation and the combination with A_G."""

    beta: float = _crbc_beta()
    depth: int | None = param(None, "finite depth K of the backup, or 'inf' for the exact closure",
                              kind=int, lo=0, none="inf", shared=True,
                              label="depth K of crbc (inf = exact closure)", ui_max=64)
    sigma_min: float = _crbc_sigma_min()
    w_group: float = _w_group()
    w_step: float = _crbc_w_step()
    group_norm: str = _group_norm()


@dataclass(frozen=True)
class VisitLocalConfig(Checked):
    """Visit-local averaging = CRBC at K = 0 (Eq. 6, 13); fields as :class:`CRBCConfig`."""

    beta: float = _crbc_beta()
    sigma_min: float = _crbc_sigma_min()
    w_group: float = _w_group()
    w_step: float = _crbc_w_step()
    group_norm: str = _group_norm()


def _gigpo_w_step() -> Any:
    return param(1.0, "omega, weight of the step advantage A_S")


def _epsilon() -> Any:
    return param(1e-6, "guard added to the anchor's standard deviation", lo=0.0, lo_open=True)


def _invalid_penalty() -> Any:
    return param(0.1, _PENALTY_HELP, **_PENALTY)


@dataclass(frozen=True)
class GiGPOConfig(Checked):
    """GiGPO step advantage (arXiv 2505.10978, as verl-agent computes it)."""

    gamma: float = param(0.95, "step-return discount", lo=0.0, lo_open=True, hi=1.0)
    mode: str = param("mean_std_norm", "per-anchor normalisation", choices=_MODES)
    w_group: float = _w_group()
    w_step: float = _gigpo_w_step()
    epsilon: float = _epsilon()
    invalid_penalty: float = _invalid_penalty()


@dataclass(frozen=True)
class ShortestPathConfig(Checked):
    """Shortest-path step returns (GraphGPO): ``reward_scale * gamma_g ** d(x)`` for successor x;
    normalisation and combination as GiGPO."""

    gamma_g: float = param(0.8, "per-hop decay of the return", lo=0.0, lo_open=True, hi=1.0)
    reward_scale: float = param(10.0, "step return at distance 0 from success")
    mode: str = param("mean_std_norm", "per-anchor normalisation", choices=_MODES)
    w_group: float = _w_group()
    w_step: float = _gigpo_w_step()
    epsilon: float = _epsilon()
    invalid_penalty: float = _invalid_penalty()


@dataclass(frozen=True)
class RewardFlowConfig(Checked):
    """RewardFlow's decay propagation (arXiv 2603.18859; its Sokoban recipe's settings):
    ``V = max(r, gamma * max over successors V)``, step signal ``V(next) - V(s)``, then GiGPO's
    penalty, per-anchor normalisation and episode term."""

    gamma: float = param(0.9, "decay per hop of the propagated reward (RewardFlow's Sokoban recipe)",
                         lo=0.0, lo_open=True, hi=1.0)
    mode: str = param("mean_norm", "per-anchor normalisation (upstream's default: mean_norm)", choices=_MODES)
    w_group: float = _w_group()
    w_step: float = param(1.0, "omega, weight of the step advantage A_S")
    invalid_penalty: float = _invalid_penalty()


_GAMMA = dict(lo=0.0, lo_open=True, hi=1.0)


@dataclass(frozen=True)
class GraphGPOConfig(Checked):
    """GraphGPO (arXiv 2605.26684; verl-agent recipe/GraphGPO, its Sokoban recipe's settings):
    ``R = 10 gamma^d(next)`` with d the hop distance to success, then GiGPO's normalisation."""

    gamma: float = param(0.8, "decay per hop of the step return 10 gamma^d (GraphGPO's Sokoban recipe; "
                         "its ALFWorld recipe uses 0.10)", **_GAMMA)
    mode: str = param("mean_std_norm", "per-anchor normalisation of R and of the episode term", choices=_MODES)
    w_group: float = _w_group()
    w_step: float = _gigpo_w_step()
    normalize_distance: bool = param(False, "use d(next) - d(s) + 1 instead of d(next) as the exponent")


@dataclass(frozen=True)
class HGPOConfig(Checked):
    """HGPO (arXiv 2602.22817; verl-agent recipe/hgpo, its ALFWorld recipe's settings): returns
    normalised in nested history contexts of 1..H+1 anchors, a length-weighted mean of them."""

    gamma: float = param(0.95, "step-return discount", **_GAMMA)
    history_length: int = param(2, "H: contexts of the last 1 .. H+1 anchors form the clusters",
                                kind=int, lo=0, hi=64)
    mode: str = param("mean_std_norm", "normalisation inside a cluster (std with divisor n)", choices=_MODES)
    alpha: float = param(1.0, "length weight exponent: a k-context weighs (k+1)^alpha (0: uniform)",
                         lo=-10.0, hi=10.0)
    base_group: bool = param(False, "add the episode term as a cluster of length 0")


@dataclass(frozen=True)
class G2POConfig(Checked):
    """G2PO (arXiv 2606.22995; no public code: reconstructed from the paper's description):
    group-mean state values, one-step TD errors standardised over the group's steps."""

    gamma: float = param(0.95, "discount of the returns and of the TD error (GiGPO's)", **_GAMMA)
    w_group: float = _w_group()
    w_step: float = _gigpo_w_step()


def _params(cfg) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


# --------------------------------------------------------------------------------------------
# the estimators


@register("grpo", GRPOConfig, "GRPO: the trajectory advantage A_G on every step, no step credit",
          has_value=False, needs=(), signal="advantage", label="GRPO", color="#7f7f7f")
def grpo(p: Process, cfg: GRPOConfig) -> Credits:
    """``A_final(i,t) = A_G(i)``, verl's ``compute_grpo_outcome_advantage`` over the group's
    rollouts (:func:`crbc.estimators.baselines.verl_grpo`; a group of one: mean 0, std 1); ``A_S = 0``."""
    a_g_R = B.verl_grpo(p, cfg.norm_by_std)
    return Credits("grpo", _params(cfg), p, np.zeros(p.n_steps), a_g_R[p.step_rollout].copy(), a_g_R)


def _crbc_credits(name: str, p: Process, beta: float, depth: int | None, sigma_min: float,
                  w_group: float, w_step: float, group_norm: str, params: dict[str, Any]) -> Credits:
    v_S, q_SA, a_SA = C.snap_zero(p, *C.estimate(p, beta, depth))  # structural zeros exact
    a_s_SA, sigma_S = C.normalise(p, a_SA, sigma_min)
    a_g_R = B.trajectory_advantage(p, group_norm)
    a_s_N = a_s_SA[p.step_sa]
    return Credits(
        name, params, p,
        step_advantage_N=a_s_N,
        advantage_N=w_group * a_g_R[p.step_rollout] + w_step * a_s_N,
        group_advantage_R=a_g_R,
        value_N=v_S[p.step_state], q_N=q_SA[p.step_sa], credit_N=a_SA[p.step_sa],
        value_S=v_S, q_SA=q_SA, credit_SA=a_SA, step_advantage_SA=a_s_SA, sigma_S=sigma_S)


def _closure_depth(params: dict[str, Any]) -> bool:
    """The calibrated interval was fitted on the exact closure (depth K = inf) only."""
    return params.get("depth") is None


@register("crbc", CRBCConfig, "CRBC: Q - V of the cross-rollout Bellman closure (exact, or depth K)",
          needs=("actions", "success"), signal="credit", truth_scale=True, calibrated=_closure_depth,
          label="CRBC", color="#2a6fdb")
def crbc(p: Process, cfg: CRBCConfig) -> Credits:
    """Closure credit (Eq. 9): solve ``(I - beta M) V = b``, ``Q = B V``, ``A = Q - V``;
    finite depth K (Eq. 10) when ``cfg.depth`` is set; then Eq. 13-14:
    ``A_final = w_G A_G + w_S [|acts(s)| >= 2] A / max(sigma(s), sigma_min)``, A_G by ``group_norm``."""
    return _crbc_credits("crbc", p, cfg.beta, cfg.depth, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         cfg.group_norm, _params(cfg))


@register("visit_local", VisitLocalConfig, "Visit-local averaging: CRBC at depth K = 0",
          needs=("actions", "success"), signal="credit", truth_scale=True, label="visit-local",
          color="#17becf")
def visit_local(p: Process, cfg: VisitLocalConfig) -> Credits:
    """``Q0(s,a)`` = mean realised return ``beta^(T-t+1) R`` of the pair, ``V0 = sum_a mu Q0``
    (Eq. 4, 6), then the same gate, normalisation and combination as :func:`crbc`."""
    return _crbc_credits("visit_local", p, cfg.beta, 0, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         cfg.group_norm, _params(cfg))


def _step_return_credits(name: str, p: Process, t: B.StepReturnTerms, cfg, value_S=None) -> Credits:
    """GiGPO's combination ``A = w_G A_E + omega A_S`` (docs/MATH.md section 7). Credit file: value =
    mean step return at the anchor, q = this step's return, credit = q - value, group_advantage =
    A_E of the rollout's valid rows."""
    value_N = t.mean_S[p.step_state]
    return Credits(name, _params(cfg), p,
                   step_advantage_N=t.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * t.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=value_N, q_N=t.ret_N, credit_N=t.ret_N - value_N,
                   value_S=t.mean_S if value_S is None else value_S)


@register("gigpo", GiGPOConfig, "GiGPO: per-occurrence discounted step return, normalised at each anchor",
          needs=("rewards",), signal="step_advantage", label="GiGPO", color="#ff7f0e")
def gigpo(p: Process, cfg: GiGPOConfig) -> Credits:
    """verl-agent's GiGPO (:func:`crbc.estimators.baselines.gigpo_terms`): step rewards r (``10 R_i`` on the
    last step of a group without rewards), ``G_t = sum_{k>=t} gamma^(k-t) r_k``, the invalid-action
    penalty, the episode term A_E over the group's step rows, A_S over each anchor's occurrences,
    ``A = w_G A_E + omega A_S`` (GiGPO Eq. 3-8)."""
    t = B.gigpo_terms(p, cfg.gamma, cfg.mode, cfg.invalid_penalty, cfg.epsilon)
    return _step_return_credits("gigpo", p, t, cfg)


def hop_distance(p: Process) -> np.ndarray:
    """Fewest observed edges from each node to z+ on the merged graph, counts ignored.

    Returns ``d`` of length S + 2 (anchors, z+, z-); ``inf`` where z+ cannot be reached."""
    import scipy.sparse as sp  # here, not at import: the credit command of crbc needs no scipy
    from scipy.sparse.csgraph import dijkstra

    n = p.n_states + 2
    # edges reversed (successor -> anchor) so one search from z+ gives every distance to z+
    g = sp.csr_matrix((np.ones(p.n_steps), (p.step_next, p.step_state)), shape=(n, n))
    return dijkstra(g, directed=True, indices=p.z_plus, unweighted=True)


@register("shortest_path", ShortestPathConfig,
          "Shortest path (GraphGPO): 10 * 0.8^hops from the successor to success, normalised like GiGPO",
          needs=("actions", "success"), signal="step_advantage", label="shortest path", color="#9467bd")
def shortest_path(p: Process, cfg: ShortestPathConfig) -> Credits:
    """``q = reward_scale * gamma_g ** d(x_t)`` (0 when x_t cannot reach z+), ``d`` the hop distance
    to z+ on the merged graph; penalty, episode term, normalisation and combination as GiGPO.
    ``value_S`` is the display value ``gamma_g ** d(s)``."""
    d = hop_distance(p)
    with np.errstate(over="ignore"):
        reach = np.isfinite(d)
        v_ext = np.where(reach, cfg.gamma_g ** np.where(reach, d, 0.0), 0.0)
    score_R = B.episode_scores(p, B.step_rewards(p))
    t = B.step_return_terms(p, cfg.reward_scale * v_ext[p.step_next], score_R, cfg.mode,
                            cfg.invalid_penalty, cfg.epsilon)
    return _step_return_credits("shortest_path", p, t, cfg, value_S=v_ext[:p.n_states])


@register("rewardflow", RewardFlowConfig,
          "RewardFlow: reward propagated by a maximum over the group's state graph, as a potential difference",
          needs=("rewards",), signal="step_advantage", label="RewardFlow", color="#8c564b")
def rewardflow(p: Process, cfg: RewardFlowConfig) -> Credits:
    """RewardFlow (:mod:`crbc.estimators.rewardflow`): ``V = max(r, gamma max_succ V)`` on the
    group's graph, ``d = V(next) - V(s)`` (own reward on a truncated rollout's last step), then
    GiGPO's machinery on d: penalty, ``A_S`` over the anchor's occurrences, ``A_E`` over the
    group's rows, ``A = w_G A_E + omega A_S``. Credit file: value = V(s), q = V(next) (NaN, written
    null, where there is no next node), credit = d after the penalty."""
    r_N = B.step_rewards(p)
    prop = RF.propagate(p, r_N, cfg.gamma)
    t = B.step_return_terms(p, prop.d_N, B.episode_scores(p, r_N), cfg.mode, cfg.invalid_penalty)
    return Credits("rewardflow", _params(cfg), p,
                   step_advantage_N=t.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * t.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=prop.v_X[p.step_state], q_N=prop.v_next_N, credit_N=t.ret_N,
                   value_S=prop.v_X[:p.n_states])


# --------------------------------------------------------------------------------------------
# the state-graph methods of 2026 (docs/MATH.md section 12; maths in crbc.estimators.graph_methods)


def _episode_terms(p: Process, x_N: np.ndarray, mode: str) -> B.StepReturnTerms:
    """GiGPO's terms with ``x_N`` as the step return and no invalid-action penalty."""
    r_N = B.step_rewards(p)
    return B.step_return_terms(p, x_N, B.episode_scores(p, r_N), mode, invalid_penalty=0.0)


@register("graphgpo", GraphGPOConfig,
          "GraphGPO: 10 gamma^hops from the successor to success (unreachable: farthest + 1), normalised like GiGPO",
          needs=("success", "rewards"), signal="step_advantage", label="GraphGPO", color="#bcbd22")
def graphgpo(p: Process, cfg: GraphGPOConfig) -> Credits:
    """``R = 10 gamma^d(next)`` (or ``10 gamma^(d(next) - d(s) + 1)``), ``A_S`` = R normalised over
    the anchor's occurrences, ``A_E`` GiGPO's episode term, ``A = w_G A_E + w_S A_S``. Credit file:
    value = ``10 gamma^d(s)``, q = credit = R."""
    gr = GM.graphgpo_returns(p, cfg.gamma, cfg.normalize_distance)
    t = _episode_terms(p, gr.r_N, cfg.mode)
    return Credits("graphgpo", _params(cfg), p,
                   step_advantage_N=t.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * t.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=gr.value_S[p.step_state], q_N=gr.r_N, credit_N=gr.r_N.copy(),
                   value_S=gr.value_S)


@register("hgpo", HGPOConfig,
          "HGPO: returns normalised among steps with the same last 1..H+1 anchors, length-weighted",
          has_value=False, needs=("rewards",), signal="step_advantage", label="HGPO", color="#e377c2")
def hgpo(p: Process, cfg: HGPOConfig) -> Credits:
    """``g`` = discounted step return; ``A = A_S`` = the length-weighted mean of g's nonzero
    normalised deviations in the step's k-context clusters (plus the episode term as k = 0 with
    ``base_group``). Credit file: credit = g, value and q null, group_advantage = the base term
    of the rollout (0 without ``base_group``)."""
    r_N = B.step_rewards(p)
    g_N = B.discounted_returns(p, r_N, cfg.gamma)
    base_N = base_R = None
    if cfg.base_group:
        base_N = GM.base_term(p, B.episode_scores(p, r_N), cfg.mode == "mean_norm")
        base_R = base_N[p.rollout_offsets[:-1]]
    a_s_N = GM.hgpo_step_advantage(p, g_N, cfg.history_length, cfg.mode, cfg.alpha, base_N)
    return Credits("hgpo", _params(cfg), p,
                   step_advantage_N=a_s_N, advantage_N=a_s_N.copy(),
                   group_advantage_R=np.zeros(len(p.rollout_len)) if base_R is None else base_R,
                   credit_N=g_N)


@register("g2po", G2POConfig,
          "G2PO (reconstructed): one-step TD error on group-mean state values, standardised over the group",
          needs=("rewards",), signal="credit", label="G2PO", color="#2ca02c")
def g2po(p: Process, cfg: G2POConfig) -> Credits:
    """``V(x)`` = mean discounted return at x, ``delta = r + gamma V(next) - V(s)``, ``A_S`` = delta
    standardised over the group's steps, ``A = w_G A_E + w_S A_S`` (A_E GiGPO's, mean_std_norm).
    Credit file: value = V(s), q = r + gamma V(next), credit = delta."""
    r_N = B.step_rewards(p)
    td = GM.g2po_td(p, r_N, B.discounted_returns(p, r_N, cfg.gamma), cfg.gamma)
    t = _episode_terms(p, td.delta_N, "mean_std_norm")
    return Credits("g2po", _params(cfg), p,
                   step_advantage_N=td.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * td.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=td.v_S[p.step_state], q_N=td.q_N, credit_N=td.delta_N,
                   value_S=td.v_S)
