"""The estimator registry: one signature for every step-credit estimator.

Every estimator is a pure function ``fn(process, config) -> Credits`` registered by name with a
frozen config dataclass whose defaults are the papers'. :func:`compute` is the front door::

    credits = compute("crbc", groups, beta=0.98, depth=None)

Shapes: ``_N`` per step (rollout after rollout, as in the input), ``_R`` per rollout, ``_S`` per
anchor, ``_SA`` per observed (anchor, action) pair; see :mod:`crbc.process`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import closure as C
from .process import Process, merge
from .rollouts import RolloutGroup

CREDIT_SCHEMA = "crbc.credit/1"


class UnknownEstimatorError(KeyError, ValueError):
    def __str__(self) -> str:  # KeyError would print the repr
        return str(self.args[0])


@dataclass(frozen=True, eq=False)
class Credits:
    """Step credit of a batch under one estimator.

    Per step: ``value_N`` V(s_t), ``q_N`` Q(s_t, a_t), ``credit_N`` Q - V (None for estimators
    without a value function), ``step_advantage_N`` A_S, ``advantage_N`` A_final.
    Per rollout: ``group_advantage_R`` A_G. Optional per-anchor views for the app and tests:
    ``value_S``, ``q_SA``, ``credit_SA``, ``step_advantage_SA``, ``sigma_S``.
    """

    estimator: str
    params: dict[str, Any]
    process: Process
    step_advantage_N: np.ndarray
    advantage_N: np.ndarray
    group_advantage_R: np.ndarray
    value_N: np.ndarray | None = None
    q_N: np.ndarray | None = None
    credit_N: np.ndarray | None = None
    value_S: np.ndarray | None = None
    q_SA: np.ndarray | None = None
    credit_SA: np.ndarray | None = None
    step_advantage_SA: np.ndarray | None = None
    sigma_S: np.ndarray | None = None

    def rollout_slice(self, r: int) -> slice:
        o = self.process.rollout_offsets
        return slice(int(o[r]), int(o[r + 1]))

    def records(self) -> Iterator[dict[str, Any]]:
        """``crbc.credit/1`` records, one per rollout in input order (FORMATS.md)."""
        p = self.process
        for r in range(len(p.rollout_offsets) - 1):
            sl = self.rollout_slice(r)
            yield {
                "schema": CREDIT_SCHEMA,
                "group": p.group_ids[int(p.rollout_group[r])],
                "rollout": int(p.rollout_index[r]),
                "estimator": self.estimator,
                "params": self.params,
                "value": _listify(self.value_N, sl),
                "q": _listify(self.q_N, sl),
                "credit": _listify(self.credit_N, sl),
                "step_advantage": self.step_advantage_N[sl].tolist(),
                "group_advantage": float(self.group_advantage_R[r]),
                "advantage": self.advantage_N[sl].tolist(),
            }


def _listify(x: np.ndarray | None, sl: slice) -> list[float] | None:
    return None if x is None else x[sl].tolist()


@dataclass(frozen=True)
class Estimator:
    name: str
    fn: Callable[[Process, Any], Credits]
    config_cls: type
    summary: str
    has_value: bool

    def config(self, **params: Any):
        """A validated config; unknown parameter names raise ValueError listing the known ones."""
        known = [f.name for f in dataclasses.fields(self.config_cls)]
        bad = sorted(set(params) - set(known))
        if bad:
            raise ValueError(f"estimator {self.name!r} has no parameter {', '.join(bad)} "
                             f"(its parameters: {', '.join(known) or 'none'})")
        return self.config_cls(**params)

    def __call__(self, groups: Sequence[RolloutGroup] | Process, config=None, **params: Any) -> Credits:
        cfg = config if config is not None else self.config(**params)
        p = groups if isinstance(groups, Process) else merge(groups)
        return self.fn(p, cfg)


_REGISTRY: dict[str, Estimator] = {}


def register(name: str, config_cls: type, summary: str, has_value: bool = True):
    """Decorator: register ``fn(process, config) -> Credits`` under ``name``."""

    def deco(fn):
        if name in _REGISTRY:
            raise ValueError(f"estimator {name!r} is already registered")
        _REGISTRY[name] = Estimator(name, fn, config_cls, summary, has_value)
        return fn

    return deco


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Estimator:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownEstimatorError(
            f"unknown estimator {name!r} (known: {', '.join(_REGISTRY)})") from None


def compute(name: str, groups: Sequence[RolloutGroup] | Process, **params: Any) -> Credits:
    """Credits of ``groups`` (or an already merged process) under the estimator ``name``."""
    return get(name)(groups, **params)


# --------------------------------------------------------------------------------------------
# configs (defaults: CRBC Sec. 5.1; GiGPO and GraphGPO papers)


def _positive(name: str, x: float, upper: float | None = None, closed: bool = True) -> None:
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    if upper is not None and (x > upper if closed else x >= upper):
        raise ValueError(f"{name} must be <= {upper}, got {x!r}")


def _finite(name: str, x: float) -> None:
    if not (isinstance(x, (int, float)) and math.isfinite(x)):
        raise ValueError(f"{name} must be a finite number, got {x!r}")


@dataclass(frozen=True)
class GRPOConfig:
    """GRPO (DeepSeekMath Eq. 3): no parameters; A_G broadcast to every step."""


@dataclass(frozen=True)
class CRBCConfig:
    """CRBC (Eq. 9, 10, 13, 14).

    beta: discount in (0, 1] (0.98). depth: K >= 0, or None for the exact closure (None).
    sigma_min: floor of the per-anchor scale (0.1). w_group: weight of A_G (1). w_step: weight of A_S (5).
    """

    beta: float = 0.98
    depth: int | None = None
    sigma_min: float = 0.1
    w_group: float = 1.0
    w_step: float = 5.0

    def __post_init__(self):
        _positive("beta", self.beta, 1.0)
        if self.depth is not None and (not isinstance(self.depth, int) or isinstance(self.depth, bool)
                                       or self.depth < 0):
            raise ValueError(f"depth must be a non-negative integer or None (infinity), got {self.depth!r}")
        _positive("sigma_min", self.sigma_min)
        _finite("w_group", self.w_group)
        _finite("w_step", self.w_step)


@dataclass(frozen=True)
class VisitLocalConfig:
    """Visit-local averaging = CRBC at K = 0 (Eq. 6, 13). Fields as :class:`CRBCConfig`."""

    beta: float = 0.98
    sigma_min: float = 0.1
    w_group: float = 1.0
    w_step: float = 5.0

    def __post_init__(self):
        CRBCConfig(self.beta, 0, self.sigma_min, self.w_group, self.w_step)


_MODES = ("mean_std_norm", "mean_norm")


@dataclass(frozen=True)
class GiGPOConfig:
    """GiGPO step advantage (arXiv 2505.10978, as verl-agent computes it).

    gamma: step-return discount (0.95). mode: "mean_std_norm" (default) or "mean_norm".
    w_group: weight of A_G (1). w_step: omega, weight of A_S (1). epsilon: std guard (1e-6).
    """

    gamma: float = 0.95
    mode: str = "mean_std_norm"
    w_group: float = 1.0
    w_step: float = 1.0
    epsilon: float = 1e-6

    def __post_init__(self):
        _positive("gamma", self.gamma, 1.0)
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {self.mode!r}")
        _finite("w_group", self.w_group)
        _finite("w_step", self.w_step)
        _positive("epsilon", self.epsilon)


@dataclass(frozen=True)
class ShortestPathConfig:
    """Shortest-path step returns (GraphGPO): ``reward_scale * gamma_g ** d(x)`` for successor x.

    gamma_g: per-hop decay (0.8). reward_scale: return at distance 0 (10). Normalisation and
    combination as GiGPO: mode, w_group (1), w_step (1), epsilon (1e-6).
    """

    gamma_g: float = 0.8
    reward_scale: float = 10.0
    mode: str = "mean_std_norm"
    w_group: float = 1.0
    w_step: float = 1.0
    epsilon: float = 1e-6

    def __post_init__(self):
        _positive("gamma_g", self.gamma_g, 1.0)
        _finite("reward_scale", self.reward_scale)
        GiGPOConfig(0.95, self.mode, self.w_group, self.w_step, self.epsilon)


def _params(cfg) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


# --------------------------------------------------------------------------------------------
# the estimators


@register("grpo", GRPOConfig, "GRPO: the trajectory advantage A_G on every step, no step credit",
          has_value=False)
def grpo(p: Process, cfg: GRPOConfig) -> Credits:
    """``A_final(i,t) = A_G(i)`` (DeepSeekMath Eq. 3); ``A_S = 0``."""
    a_g_R = C.group_advantage(p)
    return Credits("grpo", _params(cfg), p, np.zeros(p.n_steps), a_g_R[p.step_rollout].copy(), a_g_R)


def _crbc_credits(name: str, p: Process, beta: float, depth: int | None, sigma_min: float,
                  w_group: float, w_step: float, params: dict[str, Any]) -> Credits:
    v_S, q_SA = C.estimate(p, beta, depth)
    a_SA = q_SA - v_S[p.sa_state]
    a_s_SA, sigma_S = C.normalise(p, a_SA, sigma_min)
    a_g_R = C.group_advantage(p)
    a_s_N = a_s_SA[p.step_sa]
    return Credits(
        name, params, p,
        step_advantage_N=a_s_N,
        advantage_N=w_group * a_g_R[p.step_rollout] + w_step * a_s_N,
        group_advantage_R=a_g_R,
        value_N=v_S[p.step_state], q_N=q_SA[p.step_sa], credit_N=a_SA[p.step_sa],
        value_S=v_S, q_SA=q_SA, credit_SA=a_SA, step_advantage_SA=a_s_SA, sigma_S=sigma_S)


@register("crbc", CRBCConfig, "CRBC: Q - V of the cross-rollout Bellman closure (exact, or depth K)")
def crbc(p: Process, cfg: CRBCConfig) -> Credits:
    """Closure credit (Eq. 9): solve ``(I - beta M) V = b``, ``Q = B V``, ``A = Q - V``;
    finite depth K (Eq. 10) when ``cfg.depth`` is set; then Eq. 13-14:
    ``A_final = w_G A_G + w_S [|acts(s)| >= 2] A / max(sigma(s), sigma_min)``."""
    return _crbc_credits("crbc", p, cfg.beta, cfg.depth, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         _params(cfg))


@register("visit_local", VisitLocalConfig, "Visit-local averaging: CRBC at depth K = 0")
def visit_local(p: Process, cfg: VisitLocalConfig) -> Credits:
    """``Q0(s,a)`` = mean realised return ``beta^(T-t+1) R`` of the pair, ``V0 = sum_a mu Q0``
    (Eq. 4, 6), then the same gate, normalisation and combination as :func:`crbc`."""
    return _crbc_credits("visit_local", p, cfg.beta, 0, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         _params(cfg))


def discounted_returns(p: Process, rewards_N: np.ndarray, gamma: float) -> np.ndarray:
    """``G_N = sum_{k >= t} gamma^(k-t) r_k`` inside each rollout (a backward pass over a padded
    rollouts x steps array; exact, no cancellation)."""
    len_R = p.rollout_len
    pad = np.zeros((len(len_R), int(len_R.max()) + 1))
    pad[p.step_rollout, p.step_t - 1] = rewards_N
    for t in range(pad.shape[1] - 2, -1, -1):
        pad[:, t] += gamma * pad[:, t + 1]
    return pad[p.step_rollout, p.step_t - 1]


def anchor_normalised(p: Process, ret_N: np.ndarray, mode: str, epsilon: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """GiGPO's per-anchor step advantage: over all occurrences of the same anchor in the group,
    ``(G - mean) / (std_{N-1} + eps)`` (mean_std_norm) or ``G - mean`` (mean_norm); an anchor seen
    once gives 0. Returns ``(A_S_N, mean_S)``."""
    n_S = p.n_s
    mean_S = np.bincount(p.step_state, weights=ret_N, minlength=p.n_states) / n_S
    dev_N = ret_N - mean_S[p.step_state]
    if mode == "mean_std_norm":
        ss_S = np.bincount(p.step_state, weights=dev_N**2, minlength=p.n_states)
        std_S = np.sqrt(ss_S / np.maximum(n_S - 1, 1))
        adv_N = dev_N / (std_S[p.step_state] + epsilon)
    else:
        adv_N = dev_N
    return np.where(n_S[p.step_state] >= 2, adv_N, 0.0), mean_S


def _step_return_credits(name: str, p: Process, ret_N: np.ndarray, cfg, params, value_S=None
                         ) -> Credits:
    a_s_N, mean_S = anchor_normalised(p, ret_N, cfg.mode, cfg.epsilon)
    a_g_R = C.group_advantage(p)
    value_N = mean_S[p.step_state]
    return Credits(name, params, p,
                   step_advantage_N=a_s_N,
                   advantage_N=cfg.w_group * a_g_R[p.step_rollout] + cfg.w_step * a_s_N,
                   group_advantage_R=a_g_R,
                   value_N=value_N, q_N=ret_N, credit_N=ret_N - value_N,
                   value_S=mean_S if value_S is None else value_S)


@register("gigpo", GiGPOConfig, "GiGPO: per-occurrence discounted step return, normalised at each anchor")
def gigpo(p: Process, cfg: GiGPOConfig) -> Credits:
    """Step rewards r (or, in a group without any reward field, ``r_T = R_i`` and 0 elsewhere),
    ``G_t = sum_{k>=t} gamma^(k-t) r_k``, ``A_S`` normalised over the anchor's occurrences,
    ``A = w_G A_G + omega A_S`` (GiGPO Eq. 6-8)."""
    no_reward_N = ~p.group_has_reward[p.rollout_group[p.step_rollout]]
    last_N = p.step_t == p.rollout_len[p.step_rollout]
    outcome_N = p.rollout_success[p.step_rollout].astype(float)
    r_N = np.where(no_reward_N, np.where(last_N, outcome_N, 0.0), p.step_reward)
    return _step_return_credits("gigpo", p, discounted_returns(p, r_N, cfg.gamma), cfg, _params(cfg))


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
          "Shortest path (GraphGPO): 10 * 0.8^hops from the successor to success, normalised like GiGPO")
def shortest_path(p: Process, cfg: ShortestPathConfig) -> Credits:
    """``q = reward_scale * gamma_g ** d(x_t)`` (0 when x_t cannot reach z+), ``d`` the hop distance
    to z+ on the merged graph; normalisation and combination as GiGPO. ``value_S`` is the display
    value ``gamma_g ** d(s)``."""
    d = hop_distance(p)
    with np.errstate(over="ignore"):
        reach = np.isfinite(d)
        v_ext = np.where(reach, cfg.gamma_g ** np.where(reach, d, 0.0), 0.0)
    ret_N = cfg.reward_scale * v_ext[p.step_next]
    return _step_return_credits("shortest_path", p, ret_N, cfg, _params(cfg), value_S=v_ext[:p.n_states])
