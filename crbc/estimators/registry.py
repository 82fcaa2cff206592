"""The estimator registry: one signature for every step-credit estimator, and all it knows of each.

Every estimator is a pure function ``fn(process, config) -> Credits`` registered by name with a
frozen config dataclass whose defaults are the papers'. The registry entry (:class:`Estimator`)
is the only place that knows an estimator: its config (each field's help, range and whether the
app's sidebar shares it, see :mod:`crbc.estimators.params`), whether it needs the executed actions, its
display label and colour. The ``credit`` command's flags, the app's sidebar and the adapters
are built from it. :func:`compute` is the front door::

    credits = compute("crbc", groups, beta=0.98, depth=None)

Adding an estimator: a config class (fields declared with :func:`crbc.estimators.params.param`) and a
function decorated with :func:`register`; nothing else.

Shapes: ``_N`` per step (rollout after rollout, as in the input), ``_R`` per rollout, ``_S`` per
anchor, ``_SA`` per observed (anchor, action) pair; see :mod:`crbc.process`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import crbc.estimators.baselines as B
import crbc.estimators.closure as C
import crbc.estimators.rewardflow as RF
from crbc.errors import UnknownEstimatorError
from crbc.estimators.credits import CREDIT_SCHEMA, Credits
from crbc.estimators.params import Checked, Param, param, params_of
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = ["CREDIT_SCHEMA", "Credits", "Estimator", "UnknownEstimatorError", "compute", "get", "names",
           "register", "shared_param_specs"]

_FALLBACK_COLORS = ("#2ca02c", "#d62728", "#8c564b", "#e377c2", "#bcbd22")


@dataclass(frozen=True)
class Estimator:
    """One registry entry.

    name: registry key (``--estimator``). fn: ``fn(process, config) -> Credits``. config_cls: its
    frozen config dataclass. summary: one line for listings. has_value: it computes V and Q (so
    ``Q - V`` exists). needs_actions: it works on (anchor, action) pairs, so a batch must carry
    the executed actions. label: display name. color: chart colour (hex).
    """

    name: str
    fn: Callable[[Process, Any], Credits]
    config_cls: type
    summary: str
    has_value: bool = True
    needs_actions: bool = True
    label: str = ""
    color: str = ""

    def params(self) -> list[tuple[str, Param, Any]]:
        """``(name, Param, default)`` of each config field (see :func:`crbc.estimators.params.params_of`)."""
        return list(params_of(self.config_cls))

    def shared(self, values: dict[str, Any]) -> dict[str, Any]:
        """The entries of ``values`` (e.g. the app's sidebar) that this estimator shares."""
        return {name: values[name] for name, meta, _ in self.params() if meta.shared and name in values}

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
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            try:
                out = self.fn(p, cfg)
            except FloatingPointError as e:
                raise ValueError(f"{self.name}: the scores or rewards are too large to compute with "
                                 f"in float64 ({e})") from None
        for field_name in ("advantage_N", "step_advantage_N", "group_advantage_R"):
            arr = getattr(out, field_name, None)
            if arr is not None and not np.all(np.isfinite(arr)):
                raise ValueError(f"{self.name}: non-finite {field_name} (scores or rewards too large)")
        return out


_REGISTRY: dict[str, Estimator] = {}


def register(name: str, config_cls: type, summary: str, has_value: bool = True,
             needs_actions: bool = True, label: str | None = None, color: str | None = None):
    """Decorator: register ``fn(process, config) -> Credits`` under ``name`` (see :class:`Estimator`;
    ``label`` defaults to ``name``, ``color`` to one of a few spare colours)."""

    def deco(fn):
        if name in _REGISTRY:
            raise ValueError(f"estimator {name!r} is already registered")
        _REGISTRY[name] = Estimator(name, fn, config_cls, summary, has_value, needs_actions,
                                    label or name,
                                    color or _FALLBACK_COLORS[len(_REGISTRY) % len(_FALLBACK_COLORS)])
        return fn

    return deco


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (for tests that register a toy estimator)."""
    _REGISTRY.pop(name, None)


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Estimator:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownEstimatorError(
            f"unknown estimator {name!r} (known: {', '.join(_REGISTRY)})") from None


def compute(name: str, groups: Sequence[RolloutGroup] | Process, **params: Any) -> Credits:
    """Step credits of a batch of groups under one registered estimator.

    Args:
        name: a registered estimator (:func:`names`): ``crbc``, ``visit_local``, ``gigpo``,
            ``shortest_path``, ``grpo`` or one registered later.
        groups: the rollout groups (each merged on its own anchors), or a :class:`Process`
            already merged from them (:func:`crbc.process.merge`).
        **params: fields of the estimator's config (e.g. ``beta=0.98, depth=None, w_step=5``);
            an unknown name or a value out of range raises ``ValueError``.

    Returns:
        :class:`Credits`: per step n of the N steps in (group, rollout, step) order,
        ``advantage_N`` (A_final), ``step_advantage_N`` (A_S), per rollout ``group_advantage_R``
        (A_G), and for estimators with a value function ``value_N``, ``q_N``, ``credit_N`` (Q - V).
    """
    return get(name)(groups, **params)


def shared_param_specs() -> dict[str, tuple[Param, Any]]:
    """The parameters the app's sidebar sets once for every estimator that shares them:
    name -> (Param, default), in registry then field order. Estimators that share a name must
    agree on its description and default (ValueError otherwise)."""
    out: dict[str, tuple[Param, Any]] = {}
    for est in _REGISTRY.values():
        for name, meta, default in est.params():
            if not meta.shared:
                continue
            if name in out and out[name] != (meta, default):
                raise ValueError(f"estimator {est.name!r} shares parameter {name!r} with another "
                                 "estimator but describes it differently")
            out.setdefault(name, (meta, default))
    return out


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


@dataclass(frozen=True)
class CRBCConfig(Checked):
    """CRBC (Eq. 9, 10, 13, 14): closure credit, its normalisation and the combination with A_G."""

    beta: float = param(0.98, "discount per step; V is the beta-discounted chance of success", **_BETA)
    depth: int | None = param(None, "finite depth K of the backup, or 'inf' for the exact closure",
                              kind=int, lo=0, none="inf", shared=True,
                              label="depth K of crbc (inf = exact closure)", ui_max=64)
    sigma_min: float = param(0.1, "floor of the per-anchor scale that divides the step credit",
                             **_SIGMA_MIN)
    w_group: float = param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)
    w_step: float = param(5.0, "weight of the step credit A_S", **_W_STEP)
    group_norm: str = param("grpo", _GROUP_NORM_HELP, **_GROUP_NORM)


@dataclass(frozen=True)
class VisitLocalConfig(Checked):
    """Visit-local averaging = CRBC at K = 0 (Eq. 6, 13); fields as :class:`CRBCConfig`."""

    beta: float = param(0.98, "discount per step; V is the beta-discounted chance of success", **_BETA)
    sigma_min: float = param(0.1, "floor of the per-anchor scale that divides the step credit",
                             **_SIGMA_MIN)
    w_group: float = param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)
    w_step: float = param(5.0, "weight of the step credit A_S", **_W_STEP)
    group_norm: str = param("grpo", _GROUP_NORM_HELP, **_GROUP_NORM)


@dataclass(frozen=True)
class GiGPOConfig(Checked):
    """GiGPO step advantage (arXiv 2505.10978, as verl-agent computes it)."""

    gamma: float = param(0.95, "step-return discount", lo=0.0, lo_open=True, hi=1.0)
    mode: str = param("mean_std_norm", "per-anchor normalisation", choices=_MODES)
    w_group: float = param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)
    w_step: float = param(1.0, "omega, weight of the step advantage A_S")
    epsilon: float = param(1e-6, "guard added to the anchor's standard deviation", lo=0.0, lo_open=True)
    invalid_penalty: float = param(0.1, _PENALTY_HELP, **_PENALTY)


@dataclass(frozen=True)
class ShortestPathConfig(Checked):
    """Shortest-path step returns (GraphGPO): ``reward_scale * gamma_g ** d(x)`` for successor x;
    normalisation and combination as GiGPO."""

    gamma_g: float = param(0.8, "per-hop decay of the return", lo=0.0, lo_open=True, hi=1.0)
    reward_scale: float = param(10.0, "step return at distance 0 from success")
    mode: str = param("mean_std_norm", "per-anchor normalisation", choices=_MODES)
    w_group: float = param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)
    w_step: float = param(1.0, "omega, weight of the step advantage A_S")
    epsilon: float = param(1e-6, "guard added to the anchor's standard deviation", lo=0.0, lo_open=True)
    invalid_penalty: float = param(0.1, _PENALTY_HELP, **_PENALTY)


@dataclass(frozen=True)
class RewardFlowConfig(Checked):
    """RewardFlow's decay propagation (arXiv 2603.18859; its Sokoban recipe's settings):
    ``V = max(r, gamma * max over successors V)``, step signal ``V(next) - V(s)``, then GiGPO's
    penalty, per-anchor normalisation and episode term."""

    gamma: float = param(0.9, "decay per hop of the propagated reward (RewardFlow's Sokoban recipe)",
                         lo=0.0, lo_open=True, hi=1.0)
    mode: str = param("mean_norm", "per-anchor normalisation (upstream's default: mean_norm)", choices=_MODES)
    w_group: float = param(1.0, "weight of the trajectory advantage A_G", **_W_GROUP)
    w_step: float = param(1.0, "omega, weight of the step advantage A_S")
    invalid_penalty: float = param(0.1, _PENALTY_HELP, **_PENALTY)


def _params(cfg) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


# --------------------------------------------------------------------------------------------
# the estimators


@register("grpo", GRPOConfig, "GRPO: the trajectory advantage A_G on every step, no step credit",
          has_value=False, needs_actions=False, label="GRPO", color="#7f7f7f")
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


@register("crbc", CRBCConfig, "CRBC: Q - V of the cross-rollout Bellman closure (exact, or depth K)",
          label="CRBC", color="#2a6fdb")
def crbc(p: Process, cfg: CRBCConfig) -> Credits:
    """Closure credit (Eq. 9): solve ``(I - beta M) V = b``, ``Q = B V``, ``A = Q - V``;
    finite depth K (Eq. 10) when ``cfg.depth`` is set; then Eq. 13-14:
    ``A_final = w_G A_G + w_S [|acts(s)| >= 2] A / max(sigma(s), sigma_min)``, A_G by ``group_norm``."""
    return _crbc_credits("crbc", p, cfg.beta, cfg.depth, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         cfg.group_norm, _params(cfg))


@register("visit_local", VisitLocalConfig, "Visit-local averaging: CRBC at depth K = 0",
          label="visit-local", color="#17becf")
def visit_local(p: Process, cfg: VisitLocalConfig) -> Credits:
    """``Q0(s,a)`` = mean realised return ``beta^(T-t+1) R`` of the pair, ``V0 = sum_a mu Q0``
    (Eq. 4, 6), then the same gate, normalisation and combination as :func:`crbc`."""
    return _crbc_credits("visit_local", p, cfg.beta, 0, cfg.sigma_min, cfg.w_group, cfg.w_step,
                         cfg.group_norm, _params(cfg))


discounted_returns = B.discounted_returns  # kept importable from here


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
          needs_actions=False, label="GiGPO", color="#ff7f0e")
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
          label="shortest path", color="#9467bd")
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
          needs_actions=False, label="RewardFlow", color="#8c564b")
def rewardflow(p: Process, cfg: RewardFlowConfig) -> Credits:
    """RewardFlow (:mod:`crbc.estimators.rewardflow`): ``V = max(r, gamma max_succ V)`` on the
    group's graph, ``d = V(next) - V(s)`` (own reward on a truncated rollout's last step), then
    GiGPO's machinery on d: penalty, ``A_S`` over the anchor's occurrences, ``A_E`` over the
    group's rows, ``A = w_G A_E + omega A_S``. Credit file: value = V(s), q = V(next) (NaN, written
    null, where there is no next node), credit = d after the penalty."""
    r_N = B.step_rewards(p)
    prop = RF.propagate(p, r_N, cfg.gamma)
    t = B.step_return_terms(p, prop.d_N, B.episode_scores(p, r_N), cfg.mode, cfg.invalid_penalty)
    has_next = prop.next_N >= 0
    q_N = np.where(has_next, prop.v_X[np.where(has_next, prop.next_N, 0)], np.nan)
    return Credits("rewardflow", _params(cfg), p,
                   step_advantage_N=t.a_s_N,
                   advantage_N=cfg.w_group * t.a_e_N + cfg.w_step * t.a_s_N,
                   group_advantage_R=t.a_e_R,
                   value_N=prop.v_X[p.step_state], q_N=q_N, credit_N=t.ret_N,
                   value_S=prop.v_X[:p.n_states])
