"""The estimator registry: one signature for every step-credit estimator, and all it knows of each.

Every estimator is a pure function ``fn(process, config) -> Credits`` registered by name with a
frozen config dataclass whose defaults are the papers'. The registry entry (:class:`Estimator`)
is the only place that knows an estimator: its config (each field's help, range and whether the
app's sidebar shares it, see :mod:`crbc.estimators.params`), what its ``value``, ``q`` and
``credit`` are (:mod:`crbc.estimators.fields`, checked on every call), what it reads from a batch
(actions, outcome, step rewards), its raw step signal, whether its calibrated interval applies,
its display label and colour. The ``credit`` command's flags, the app's sidebar and the adapters
are built from it. :func:`compute` is the front door::

    credits = compute("crbc", groups, beta=0.98, depth=None)

This module is the registration machinery only. Each family of built-in estimators registers
itself in its own module, beside its config and its maths (:mod:`~crbc.estimators.grpo`,
:mod:`~crbc.estimators.closure`, :mod:`~crbc.estimators.gigpo`, :mod:`~crbc.estimators.rewardflow`,
:mod:`~crbc.estimators.graph_methods`; the package imports them in that order). Adding an
estimator: in a module of your own, a config class (fields declared with
:func:`crbc.estimators.params.param`) and a function decorated with :func:`register` that
declares its fields and builds its result with :func:`crbc.estimators.credits.combine`; then
regenerate docs/FORMATS.md's table (:func:`crbc.estimators.fields.fields_table`).

Shapes: ``_N`` per step (rollout after rollout, as in the input), ``_R`` per rollout, ``_S`` per
anchor, ``_SA`` per observed (anchor, action) pair; see :mod:`crbc.process`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.errors import UnknownEstimatorError
from crbc.estimators.credits import CREDIT_SCHEMA, Credits
from crbc.estimators.fields import Fields, check_fields
from crbc.estimators.params import Param, params_of
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge
from crbc.registry import Registry

__all__ = ["CREDIT_SCHEMA", "NEEDS", "REGISTRY", "SIGNALS", "Credits", "Estimator", "UnknownEstimatorError", "compute",
           "cache_key", "compute_cached", "get", "names", "register", "shared_param_specs"]

_FALLBACK_COLORS = ("#2ca02c", "#d62728", "#8c564b", "#e377c2", "#bcbd22")

#: what an estimator can read from a batch: the executed actions, the outcome R_i (``success``),
#: the step rewards (``rewards``: where no step carries one, r_{i,T_i} = 10 R_i, so R_i is read
#: instead)
NEEDS = ("actions", "success", "rewards")
#: the raw step signal an estimator is scored on against the truth and resampled for intervals:
#: ``credit`` (the declared credit field), ``step_advantage`` (A_S) or ``advantage`` (A_final, when
#: there is no step term)
SIGNALS = ("credit", "step_advantage", "advantage")


def _never(params: dict[str, Any]) -> bool:
    return False


@dataclass(frozen=True)
class Estimator:
    """One registry entry: the function, its config and every capability, declared at registration.

    name: registry key (``--estimator``). fn: ``fn(process, config) -> Credits``. config_cls: its
    frozen config dataclass. summary: one line for listings. fields: what its ``value``, ``q``
    and ``credit`` are (:class:`~crbc.estimators.fields.Fields`, checked on every call). needs: the inputs it reads besides anchors and scores (a subset of
    :data:`NEEDS`): ``actions`` (it works on (anchor, action) pairs), ``success`` (R_i),
    ``rewards`` (step rewards, or R_i where no step carries one). signal: its raw step signal
    (:data:`SIGNALS`). truth_scale: the signal is in the truth's units (Q - V of the beta-discounted
    chance of success), so its RMSE against the truth and the coverage of its intervals mean
    something; a signal on a reward scale (10 per success) ranks and signs like the truth but is
    not comparable in size. calibrated: ``calibrated(params) -> bool``, whether the calibrated
    interval (docs/MATH.md section 10.1) was fitted for these parameters. label: display name.
    color: chart colour (hex).
    """

    name: str
    fn: Callable[[Process, Any], Credits]
    config_cls: type
    summary: str
    fields: Fields = Fields()
    needs: frozenset[str] = frozenset({"actions", "success"})
    signal: str = "credit"
    truth_scale: bool = False
    calibrated: Callable[[dict[str, Any]], bool] = _never
    label: str = ""
    color: str = ""

    @property
    def has_value(self) -> bool:
        """It computes a value per step (``value`` is not declared ``none``)."""
        return self.fields.value != "none"

    @property
    def needs_actions(self) -> bool:
        """A batch must carry the executed actions."""
        return "actions" in self.needs

    def needs_success(self, has_rewards: bool) -> bool:
        """A batch must carry the outcome R_i: the estimator reads it, or reads step rewards and
        the batch has none (then the last step's reward is 10 R_i)."""
        return "success" in self.needs or ("rewards" in self.needs and not has_rewards)

    def interval_signal(self) -> str | None:
        """The step signal intervals are about: :attr:`signal`, or None without a step term."""
        return None if self.signal == "advantage" else self.signal

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
        check_fields(out, self.fields)
        return dataclasses.replace(out, credit_meaning=self.fields.credit)


REGISTRY: Registry[Estimator] = Registry("estimator", unknown_error=UnknownEstimatorError)


def register(name: str, config_cls: type, summary: str, *, value: str = "none", q: str = "none",
             credit: str = "none", needs: Collection[str] = ("actions", "success"), signal: str | None = None,
             truth_scale: bool = False, calibrated: Callable[[dict[str, Any]], bool] = _never,
             label: str | None = None, color: str | None = None):
    """Decorator: register ``fn(process, config) -> Credits`` under ``name`` with its capabilities
    (see :class:`Estimator`). ``value``, ``q``, ``credit``: names of
    :data:`crbc.estimators.fields.VALUE`, :data:`~crbc.estimators.fields.Q` and
    :data:`~crbc.estimators.fields.CREDIT` (default ``none``: the field is null); ``signal``
    defaults to ``credit`` when the credit is Q - V, else ``advantage``; ``label`` to ``name``;
    ``color`` to one of a few spare colours. ValueError for a name outside the vocabulary or a
    ``credit`` signal without a credit."""
    needs = frozenset(needs)
    if needs - set(NEEDS):
        raise ValueError(f"estimator {name!r}: needs must be among {', '.join(NEEDS)}, got {sorted(needs)}")
    try:
        fields = Fields(value, q, credit)
    except ValueError as e:
        raise ValueError(f"estimator {name!r}: {e}") from None
    sig = signal or ("credit" if credit == "q_minus_v" else "advantage")
    if sig not in SIGNALS:
        raise ValueError(f"estimator {name!r}: signal must be one of {', '.join(SIGNALS)}, got {sig!r}")
    if sig == "credit" and credit == "none":
        raise ValueError(f"estimator {name!r}: a credit signal needs a declared credit (credit='none')")

    def deco(fn):
        REGISTRY.add(Estimator(name, fn, config_cls, summary, fields, needs, sig, truth_scale, calibrated,
                               label or name, color or _FALLBACK_COLORS[len(REGISTRY) % len(_FALLBACK_COLORS)]))
        return fn

    return deco


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (for tests that register a toy estimator)."""
    REGISTRY.remove(name)


def names() -> list[str]:
    return REGISTRY.names()


def get(name: str) -> Estimator:
    """The estimator called ``name``; :class:`UnknownEstimatorError` listing the known ones otherwise."""
    return REGISTRY.get(name)


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
        (A_G), and ``value_N``, ``q_N``, ``credit_N`` as the estimator declares them
        (:mod:`crbc.estimators.fields`; None where declared ``none``).
    """
    return get(name)(groups, **params)


def cache_key(name: str, p: Process, params: Mapping[str, Any]) -> tuple:
    """The key of ``name``'s credits on ``p`` with ``params`` in a :func:`compute_cached` cache
    (a caller that computed them elsewhere files them under it)."""
    return name, id(p), tuple(sorted(params.items()))


def compute_cached(cache: dict | None, name: str, p: Process, **params: Any) -> Credits:
    """:func:`compute` of ``name`` on the process ``p``, remembered in ``cache`` (a plain dict the
    caller owns and drops; None: no memo) under ``(name, id(p), sorted params)``: one report asks
    for crbc's closure on the same group many times (its credits, each comparison, each anchor's
    arithmetic), and on a 20,000-anchor group each solve costs about half a second. The cache
    holds the Credits, and so the process: an ``id`` cannot be reused while its entry lives."""
    if cache is None:
        return compute(name, p, **params)
    key = cache_key(name, p, params)
    got = cache.get(key)
    if got is None:
        got = cache[key] = compute(name, p, **params)
    return got


def shared_param_specs() -> dict[str, tuple[Param, Any]]:
    """The parameters the app's sidebar sets once for every estimator that shares them:
    name -> (Param, default), in registry then field order. Estimators that share a name must
    agree on its description and default (ValueError otherwise)."""
    out: dict[str, tuple[Param, Any]] = {}
    for est in REGISTRY:
        for name, meta, default in est.params():
            if not meta.shared:
                continue
            if name in out and out[name] != (meta, default):
                raise ValueError(f"estimator {est.name!r} shares parameter {name!r} with another "
                                 "estimator but describes it differently")
            out.setdefault(name, (meta, default))
    return out
