"""Where two estimators disagree: anchors, steps and (anchor, action) pairs ranked by |Δ A_S|.

Both sides are compared on the step credit A_S, which every estimator normalises per anchor,
so the two share a scale. The trainer's own advantage (``Step.trainer_advantage``, recorded
runs) is a side too (:func:`trainer_comparison`): it has no A_S, so the trainer against an
estimator compares the trainer's advantage with the estimator's A_final (the advantage it would
have trained with); a step without a recorded trainer advantage counts as 0 on that side.
Differences within float noise are agreement (:func:`snap`: the stated tolerance, which the run
review uses too). One group or every group of a file (anchors never match across
groups). Rows are typed (:mod:`crbc.explain.table_rows`); anchors are named by :mod:`crbc.explain.anchor_names`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.estimators.registry import compute_cached, get
from crbc.explain.anchor_names import anchor_labels, group_states, node_labels
from crbc.explain.table_rows import col
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge
from crbc.registry import Registry

__all__ = [
    "AGREE_DECIMALS", "AnchorDisagreement", "anchors_by_visits", "AnchorVisits", "Comparison", "comparison_named",
    "comparison_names", "COMPARISONS", "Disagreement", "disagreements", "PairDisagreement", "register_comparison",
    "snap", "StepDisagreement", "TRAINER", "trainer_comparison"
]


@dataclass(frozen=True)
class Comparison:
    """Two estimators (with fixed extra parameters) whose step credits A_S are compared."""

    name: str
    x: str
    y: str
    x_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    y_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    signal: str = "step_advantage"  #: the Credits field compared: step_advantage (A_S) or advantage (A_final)

    @property
    def x_label(self) -> str:
        return _est_label(self.x, self.x_params, self.signal)

    @property
    def y_label(self) -> str:
        return _est_label(self.y, self.y_params, self.signal)

    @property
    def value_name(self) -> str:
        """What is compared: "A_S", or "A" (the trainer's advantage against an A_final)."""
        return "A_S" if self.signal == "step_advantage" else "A"


TRAINER = "trainer"  #: the side that is the user's trainer's own advantage

#: the stated tolerance of agreement: advantages equal to 6 decimals are equal (float32 noise on
#: values of order 1 is ~1e-7); the one owner (the run review, crbc.run_analysis.review, uses it)
AGREE_DECIMALS = 6


def snap(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to :data:`AGREE_DECIMALS` decimals: values closer than float noise are equal
    (a trainer's advantage recomputed in float32 and crbc's in float64 differ by ~1e-8 relative,
    which must not rank as disagreement)."""
    return np.round(np.asarray(x, dtype=float), AGREE_DECIMALS)


def _est_label(name: str, params: dict[str, Any], signal: str = "step_advantage") -> str:
    if name == "crbc" and params.get("depth") is not None:
        return f"crbc K={params['depth']}"
    return name


def trainer_comparison(estimator: str) -> Comparison:
    """The trainer's own advantage (x) against ``estimator``'s A_final (y)."""
    return Comparison(f"trainer vs {estimator}", TRAINER, estimator, signal="advantage")


#: the fixed comparisons the studio and the reports offer, in registration order (the
#: ``trainer vs NAME`` ones are made on demand by :func:`trainer_comparison`)
COMPARISONS: Registry[Comparison] = Registry(
    "comparison", name_rule=(re.compile(r"^\S(.*\S)?$"), "a phrase without leading or trailing space"))


def register_comparison(name: str, x: str, y: str, *, x_params: dict[str, Any] | None = None,
                        y_params: dict[str, Any] | None = None, signal: str = "step_advantage") -> Comparison:
    """Register a comparison of estimator ``x`` against ``y`` (each with fixed extra parameters)
    on ``signal`` (``step_advantage``: A_S, or ``advantage``: A_final); ValueError if the name
    is taken."""
    return COMPARISONS.add(Comparison(name, x, y, dict(x_params or {}), dict(y_params or {}), signal))


register_comparison("crbc vs shortest_path", "crbc", "shortest_path")
register_comparison("crbc vs gigpo", "crbc", "gigpo")
register_comparison("crbc vs rewardflow", "crbc", "rewardflow")
register_comparison("K = 0 vs closure", "visit_local", "crbc")

def comparison_names(estimators: Sequence[str], has_trainer: bool) -> list[str]:
    """The comparisons a source offers, the default first: with a recorded trainer advantage
    "trainer vs crbc" (then the trainer against every other estimator, then the fixed ones), so a
    recorded run opens on how the trainer's advantage differs from crbc's; else the fixed ones."""
    fixed = COMPARISONS.names()
    if not has_trainer:
        return fixed
    ordered = sorted(estimators, key=lambda n: n != "crbc")
    return [f"trainer vs {n}" for n in ordered] + fixed


def _params_for(name: str, shared: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    out = get(name).shared(shared)  # the shared parameters the registry says it takes
    out.update(fixed)
    return out


def sides(comparison: str | Comparison, **shared: Any) -> list[tuple[str, dict[str, Any]]]:
    """The estimators ``comparison`` computes with the shared parameters ``shared``: (name,
    params) per side, the trainer's side left out. A caller that has these credits already
    hands them to :func:`disagreements` in its ``cache`` under
    :func:`crbc.estimators.registry.compute_cached`'s key, and nothing is computed twice."""
    cmp_ = comparison_named(comparison) if isinstance(comparison, str) else comparison
    return [(name, _params_for(name, shared, fixed)) for name, fixed in ((cmp_.x, cmp_.x_params), (cmp_.y, cmp_.y_params))
            if name != TRAINER]


@dataclass(frozen=True)
class _FileAnchor:
    """The leading columns of a row about one anchor of a file: its group, its label, its id."""

    group: str = col()
    anchor: str = col()
    state: int = col(hidden=True)


@dataclass(frozen=True)
class AnchorVisits(_FileAnchor):
    """One anchor with its visits and number of distinct actions."""

    visits: int = col()
    actions: int = col()


@dataclass(frozen=True)
class AnchorDisagreement(AnchorVisits):
    """One anchor: visits, actions, mean and max |Δ A_S| over its visits, each side's best action
    ("(tie)" when all its actions get the same credit) and whether the two bests differ."""

    disagreement: float = col("mean |Δ|")
    max_abs: float = col("max |Δ|")
    best_x: str = col("best by {x_label}")
    best_y: str = col("best by {y_label}")
    ranks_differ: bool = col("ranks differ")
    x_label: str = col(hidden=True, default="x")
    y_label: str = col(hidden=True, default="y")


@dataclass(frozen=True)
class StepDisagreement:
    """One step: where it is (t: its step, 0-based as in the files), A_S under each side and
    Δ = A_S^x - A_S^y (for the trainer: its advantage and the estimator's A_final)."""

    group: str = col()
    rollout: int = col()
    t: int = col()
    anchor: str = col()
    state: int = col(hidden=True)
    action: str = col()
    a_s_x: float = col("A_S {x_label}")
    a_s_y: float = col("A_S {y_label}")
    delta: float = col("Δ")
    x_label: str = col(hidden=True, default="x")
    y_label: str = col(hidden=True, default="y")


@dataclass(frozen=True)
class PairDisagreement(_FileAnchor):
    """One (anchor, action): visits and the mean A_S under each side, and their difference."""

    action: str = col()
    n_sa: int = col("N(s,a)")
    a_s_x: float = col("A_S {x_label}")
    a_s_y: float = col("A_S {y_label}")
    delta: float = col("Δ")
    x_label: str = col(hidden=True, default="x")
    y_label: str = col(hidden=True, default="y")


@dataclass(frozen=True)
class Disagreement:
    """Anchors, steps and pairs ranked by how much two estimators' step credits A_S differ.

    Per step: ``delta = A_S^x - A_S^y`` (both are normalised per anchor, so they share a scale).
    Per anchor: ``disagreement`` = mean |delta| over the anchor's visits (= sum_a mu(a|s) |mean
    delta| when every occurrence of a pair gets the same credit), ``max_abs``, and the best action
    under each estimator (highest mean A_S); ``ranks_differ`` flags a different best action.
    ``anchors`` and ``steps`` are sorted by disagreement, largest first; ``pairs`` by |Δ|.
    """

    comparison: Comparison
    anchors: list[AnchorDisagreement]
    steps: list[StepDisagreement]
    pairs: list[PairDisagreement]


def _side(name: str, p: Process, shared: dict[str, Any], fixed: dict[str, Any], signal: str,
          trainer_N: np.ndarray | None, cache: dict | None = None) -> np.ndarray:
    """(N,) one side's signal: the trainer's advantage (NaN -> 0), or the estimator's field
    (computed once per ``cache``: :func:`crbc.estimators.registry.compute_cached`)."""
    if name == TRAINER:
        if trainer_N is None or len(trainer_N) != p.n_steps:
            raise ValueError("this source records no trainer advantage (Step.trainer_advantage) to compare")
        return np.nan_to_num(np.asarray(trainer_N, dtype=float))
    return getattr(compute_cached(cache, name, p, **_params_for(name, shared, fixed)), f"{signal}_N")


def comparison_named(name: str) -> Comparison:
    """A comparison by its name: one of :data:`COMPARISONS`, or ``"trainer vs NAME"`` (the trainer's
    advantage against estimator NAME's A_final); KeyError for any other name."""
    if name in COMPARISONS:
        return COMPARISONS.get(name)
    if name.startswith("trainer vs "):
        return trainer_comparison(name.removeprefix("trainer vs "))
    raise KeyError(f"no comparison {name!r} (known: {', '.join(COMPARISONS.names())}, or 'trainer vs NAME')")


def disagreements(groups: Sequence[RolloutGroup] | Process, comparison: str | Comparison,
                  trainer_N: np.ndarray | None = None, *, with_steps: bool = True, cache: dict | None = None,
                  **shared: Any) -> Disagreement:
    """Rank anchors and steps of ``groups`` (one group, or every group of a file) by the
    disagreement of two estimators. ``shared`` are sidebar parameters (beta, depth, sigma_min,
    ...); each estimator takes the ones the registry says it shares. ``trainer_N``: (N,) the
    trainer's advantage per step in merge order, for a side named :data:`TRAINER`. Step ``t``
    is numbered from 0, as the files number steps. ``with_steps=False`` leaves ``steps`` empty
    (a caller that shows anchors and pairs only: N rows it would not read); ``cache``: a dict
    in which each side's credits are computed once (:func:`crbc.estimators.registry.compute_cached`).

    Cost: O(N + SA log SA) array work and one row object per anchor and pair (and per step
    with ``with_steps``); the pairs of each anchor come from one stable sort of ``sa_state``
    (ascending pair id within an anchor, as :func:`crbc.explain.anchor_names.state_pairs`)."""
    cmp_ = comparison_named(comparison) if isinstance(comparison, str) else comparison
    p = groups if isinstance(groups, Process) else merge(groups)
    ax_N = _side(cmp_.x, p, shared, cmp_.x_params, cmp_.signal, trainer_N, cache)
    ay_N = _side(cmp_.y, p, shared, cmp_.y_params, cmp_.signal, trainer_N, cache)
    # float noise is agreement (snap): a trainer's float32 advantage against crbc's float64 one
    # differs by ~1e-8, never a disagreement
    d_N = snap(ax_N - ay_N)
    labels = node_labels(p)
    n_sa = p.n_sa
    mx_SA = snap(np.bincount(p.step_sa, weights=ax_N, minlength=len(n_sa)) / n_sa)
    my_SA = snap(np.bincount(p.step_sa, weights=ay_N, minlength=len(n_sa)) / n_sa)
    d_SA = snap(mx_SA - my_SA)
    score_S = np.bincount(p.step_state, weights=np.abs(d_N), minlength=p.n_states) / p.n_s
    max_S = np.zeros(p.n_states)
    np.maximum.at(max_S, p.step_state, np.abs(d_N))
    xl, yl = cmp_.x_label, cmp_.y_label
    by_state = np.argsort(p.sa_state, kind="stable")
    count_S = np.bincount(p.sa_state, minlength=p.n_states)
    starts = np.concatenate([[0], np.cumsum(count_S)[:-1]])
    best_x_S, tie_x_S = _best(mx_SA[by_state], starts, count_S)
    best_y_S, tie_y_S = _best(my_SA[by_state], starts, count_S)
    act_SA = [p.action_names[a] for a in p.sa_action.tolist()]
    order = by_state.tolist()
    anchors, pairs = [], []
    for s, (lo, k) in enumerate(zip(starts.tolist(), count_S.tolist(), strict=True)):
        bx, by = act_SA[order[lo + best_x_S[s]]], act_SA[order[lo + best_y_S[s]]]
        tie_x, tie_y = bool(tie_x_S[s]), bool(tie_y_S[s])
        group = p.group_ids[int(p.state_group[s])]
        anchors.append(AnchorDisagreement(
            group, labels[s], s, int(p.n_s[s]), k, float(score_S[s]), float(max_S[s]),
            "(tie)" if tie_x else bx, "(tie)" if tie_y else by,
            bool(k > 1 and (tie_x != tie_y or (not tie_x and bx != by))), xl, yl))
        for sa in order[lo:lo + k]:
            pairs.append(PairDisagreement(group, labels[s], s, act_SA[sa], int(n_sa[sa]), float(mx_SA[sa]),
                                          float(my_SA[sa]), float(d_SA[sa]), xl, yl))
    steps = _step_rows(p, labels, ax_N, ay_N, d_N, xl, yl) if with_steps else []
    anchors.sort(key=lambda r: (-r.disagreement, -r.visits, r.state))
    pairs.sort(key=lambda r: (-abs(r.delta), r.state))
    return Disagreement(cmp_, anchors, steps, pairs)


def _best(m: np.ndarray, starts: np.ndarray, count: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Per anchor, over its pairs' values ``m`` (anchors' runs of ``count`` entries from
    ``starts``, every run non-empty): the offset in its run of the first largest value
    (``np.argmax`` of the run) and whether the run is a tie (two or more pairs, max == min, i.e.
    ``np.ptp == 0``)."""
    if not len(count):
        return [], np.zeros(0, dtype=bool)
    hi = np.maximum.reduceat(m, starts)
    lo = np.minimum.reduceat(m, starts)
    run = np.repeat(np.arange(len(count)), count)
    pos = np.arange(len(m)) - starts[run]
    first = np.minimum.reduceat(np.where(m == hi[run], pos, len(m)), starts)
    return first.tolist(), (count > 1) & (hi == lo)


def _step_rows(p: Process, labels, ax_N: np.ndarray, ay_N: np.ndarray, d_N: np.ndarray, xl: str,
               yl: str) -> list[StepDisagreement]:
    """A row per step, largest |Δ| first (ties: group, rollout, t)."""
    steps = []
    for n in range(p.n_steps):
        r = int(p.step_rollout[n])
        steps.append(StepDisagreement(
            p.group_ids[int(p.rollout_group[r])], int(p.rollout_index[r]), int(p.step_t[n]) - 1,
            labels[p.step_state[n]], int(p.step_state[n]), p.action_names[p.sa_action[p.step_sa[n]]],
            float(ax_N[n]), float(ay_N[n]), float(d_N[n]), xl, yl))
    steps.sort(key=lambda r: (-abs(r.delta), r.group, r.rollout, r.t))
    return steps


def anchors_by_visits(p: Process, group: int | None = None) -> list[AnchorVisits]:
    """Anchors (of one group, or all) sorted by visits, then actions."""
    labels = anchor_labels(p)
    states = range(p.n_states) if group is None else group_states(p, group)
    rows = [AnchorVisits(p.group_ids[int(p.state_group[s])], labels[s], s, int(p.n_s[s]),
                         int(p.n_actions[s])) for s in states]
    rows.sort(key=lambda r: (-r.visits, -r.actions, r.state))
    return rows
