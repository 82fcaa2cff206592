"""The state-graph estimators of 2026 (GraphGPO, HGPO, G2PO), registered with their recipes' defaults.

The array maths live in :mod:`crbc.estimators.graph_methods` and :mod:`crbc.estimators.baselines`;
this module turns configs into their arguments and results into :class:`Credits`. Formulas,
defaults and every departure from upstream: docs/MATH.md section 12 (CRBC.md section 12 is the
contract). Shapes: ``_N`` per step, ``_R`` per rollout, ``_S`` per anchor (:mod:`crbc.process`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import crbc.estimators.baselines as B
import crbc.estimators.graph_methods as GM
from crbc.estimators.builtin import _gigpo_w_step, _w_group
from crbc.estimators.credits import Credits
from crbc.estimators.params import Checked, param
from crbc.estimators.registry import register
from crbc.process import Process

_MODES = ("mean_std_norm", "mean_norm")
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
    return Credits("graphgpo", dataclasses.asdict(cfg), p,
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
    return Credits("hgpo", dataclasses.asdict(cfg), p,
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
    return Credits("g2po", dataclasses.asdict(cfg), p,
                   step_advantage_N=td.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * td.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=td.v_S[p.step_state], q_N=td.q_N, credit_N=td.delta_N,
                   value_S=td.v_S)
