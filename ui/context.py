"""What a page draws from: the loaded source, the chosen group, and every result computed on it,
each cached once.

Pages never compute and never cache: they ask the :class:`PageContext` that
:func:`ui.state.page_context` returns, and draw. Each result is computed once per input and kept
by :func:`ui.session_memo.memo`: shared by every session for shipped samples, run folders and
generated groups; kept in the asking session only for an upload (a key starting ``upload:``), so
nothing derived from a user's file ever sits in a cache that another session reads.

    ctx.process                      the merged empirical process of the chosen group
    ctx.credits(name, params)        an estimator's credits on it (registry.compute)
    ctx.file_credits(name)           the same over every group of the source
    ctx.intervals(name, params)      its credit intervals (the validated default B, seed 0)
    ctx.file_intervals(name)         the same over every group of the source
    ctx.disagreement(comparison, params)  where two estimators disagree most (crbc.explain)
    ctx.file_disagreement(comparison, params)  the same over every group of the source
    ctx.sweep(beta, k_max), ctx.coverage(k_max)   the finite-depth backups and their evidence
    ctx.trainer_N, ctx.file_trainer_N()           the advantage the user's trainer recorded
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from crbc.estimators import closure
from crbc.estimators import registry as estimators
from crbc.estimators.bootstrap import DEFAULT_B, CreditIntervals, credit_intervals
from crbc.estimators.coverage import Coverage, coverage
from crbc.explain import disagreements as compare
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge
from ui.session_memo import memo

__all__ = ["PageContext", "Source"]


@dataclass(frozen=True, eq=False)
class Source:
    """A loaded data source. key: content-hash cache key (``sample:...``, ``upload:<sha1>``,
    ``gen:<sha1>``, ``run:<sha1>``). label: for people. groups: its groups. recorded_key: the
    anchor key its anchors already carry (a run's ``config.anchor_key``; "" for none)."""

    key: str
    label: str
    groups: tuple[RolloutGroup, ...]
    recorded_key: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))


def _params_key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted(params.items()))


@memo(max_entries=64)
def cached_process(key: str, _group: RolloutGroup) -> Process:
    return merge([_group])


@memo(max_entries=256)
def _credits(key: str, name: str, params: tuple, _process: Process) -> estimators.Credits:
    return estimators.compute(name, _process, **dict(params))


@memo(max_entries=8, show_spinner="Computing the credits of every group...")
def _file_credits(key: str, name: str, params: tuple, _groups: tuple) -> estimators.Credits:
    return estimators.compute(name, merge(list(_groups)), **dict(params))


@memo(max_entries=64)
def _intervals(key: str, name: str, params: tuple, _process: Process) -> CreditIntervals:
    return credit_intervals(_process, name, n_resamples=DEFAULT_B, seed=0, **dict(params))


@memo(max_entries=8, show_spinner="Resampling every group...")
def _file_intervals(key: str, name: str, params: tuple, _process: Process) -> CreditIntervals:
    return credit_intervals(_process, name, n_resamples=DEFAULT_B, seed=0, **dict(params))


@memo(max_entries=64, show_spinner="Comparing the estimators...")
def _disagreement(key: str, comparison: str, params: tuple, _process: Process, _trainer) -> compare.Disagreement:
    return compare.disagreements(_process, comparison, trainer_N=_trainer, **dict(params))


@memo(max_entries=8, show_spinner="Comparing the estimators on every group...")
def _file_disagreement(key: str, comparison: str, params: tuple, _groups: tuple, _trainer) -> compare.Disagreement:
    return compare.disagreements(list(_groups), comparison, trainer_N=_trainer, **dict(params))


@memo(max_entries=64)
def _trainer(key: str, _groups: tuple):
    """(N,) the trainer's advantage per step in merge order, or None when no step carries one."""
    import numpy as np

    from crbc.run_analysis.review import trainer_advantage

    adv = trainer_advantage(list(_groups))
    return adv if adv is not None and np.isfinite(adv).any() else None


@memo(max_entries=32)
def _sweep(key: str, beta: float, k_max: int, _process: Process) -> closure.DepthSweep:
    return closure.depth_sweep(_process, beta, k_max)


@memo(max_entries=32)
def _coverage(key: str, k_max: int, _process: Process) -> Coverage:
    return coverage(_process, k_max)


@dataclass(frozen=True, eq=False)
class PageContext:
    """What a page renders: the chosen group of the current source, rollout, estimator, parameters.

    source: the loaded data. index: the chosen group's position in ``source.groups``. rollout:
    the chosen rollout's index inside the group (0-based). estimator: the sidebar's estimator
    (registry name). params: every shared sidebar parameter (name -> value).
    """

    source: Source
    index: int
    rollout: int
    estimator: str
    params: Mapping[str, Any]

    @property
    def groups(self) -> tuple[RolloutGroup, ...]:
        return self.source.groups

    @property
    def group(self) -> RolloutGroup:
        return self.source.groups[self.index]

    @property
    def key(self) -> str:
        """Cache key of the chosen group (content hash of the source and the group index)."""
        return f"{self.source.key}#{self.index}"

    @cached_property
    def process(self) -> Process:
        """The merged empirical process of the chosen group (cached across runs, read-only)."""
        return cached_process(self.key, self.group)

    @property
    def trainer_N(self):
        """(N,) the advantage the user's trainer gave each step of the chosen group (NaN where a
        step has none), in the process's step order; None when the group records none."""
        return _trainer(self.key, (self.group,))

    def file_trainer_N(self):
        """:attr:`trainer_N` over every group of the source (the order of :meth:`file_credits`)."""
        return _trainer(self.source.key, tuple(self.groups))

    def estimator_params(self, name: str) -> dict[str, Any]:
        """The shared sidebar parameters that estimator ``name`` takes (the others keep defaults)."""
        return estimators.get(name).shared(dict(self.params))

    def credits(self, name: str | None = None, params: Mapping[str, Any] | None = None) -> estimators.Credits:
        """Credits of the chosen group under ``name`` (default: the sidebar's estimator) with
        ``params`` (default: its sidebar parameters); cached by group, name and parameters."""
        name = name or self.estimator
        params = self.estimator_params(name) if params is None else params
        return _credits(self.key, name, _params_key(params), self.process)

    def file_credits(self, name: str) -> estimators.Credits:
        """Credits of every group of the source under ``name`` with its sidebar parameters (each
        group's anchors merged inside that group only, as everywhere); cached like :meth:`credits`."""
        return _file_credits(self.source.key, name, _params_key(self.estimator_params(name)), tuple(self.groups))

    def intervals(self, name: str, params: Mapping[str, Any] | None = None) -> CreditIntervals | None:
        """The credit intervals of ``name`` on the chosen group (docs/MATH.md section 10: the
        validated default B = 200, the estimator's default method, level 0.9, seed 0) with
        ``params`` (default: its sidebar parameters); None for an estimator without a step signal."""
        if estimators.get(name).interval_signal() is None:
            return None
        params = self.estimator_params(name) if params is None else params
        return _intervals(self.key, name, _params_key(params), self.process)

    def file_intervals(self, name: str) -> CreditIntervals | None:
        """:meth:`intervals` over every group of the source (the order of :meth:`file_credits`)."""
        if estimators.get(name).interval_signal() is None:
            return None
        return _file_intervals(self.source.key, name, _params_key(self.estimator_params(name)),
                               self.file_credits(name).process)

    def disagreement(self, comparison: str, params: Mapping[str, Any]) -> compare.Disagreement:
        """Where the two sides of ``comparison`` (a name of
        :func:`crbc.explain.disagreements.comparison_named`, the trainer's advantage included)
        disagree on the chosen group, with the shared ``params``."""
        trainer = self.trainer_N if comparison.startswith("trainer vs ") else None
        return _disagreement(self.key, comparison, _params_key(params), self.process, trainer)

    def file_disagreement(self, comparison: str, params: Mapping[str, Any]) -> compare.Disagreement:
        """:meth:`disagreement` over every group of the source."""
        trainer = self.file_trainer_N() if comparison.startswith("trainer vs ") else None
        return _file_disagreement(self.source.key, comparison, _params_key(params), tuple(self.groups), trainer)

    def sweep(self, beta: float, k_max: int) -> closure.DepthSweep:
        """V^(K), Q^(K), A^(K) for K = 0..k_max and the closure (cached)."""
        return _sweep(self.key, float(beta), int(k_max), self.process)

    def coverage(self, k_max: int) -> Coverage:
        """Evidence coverage C^(K)(s) for K = 0..k_max (crbc.estimators.coverage; cached)."""
        return _coverage(self.key, int(k_max), self.process)
