"""What the Lesson page reads about its group, computed here so that the page only draws
(tests/project/test_layers.py: pages call no estimator): the merged process, the closure's V
now and before the last change, and the shortest-path disagreements of section 8."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.estimators.closure import estimate
from crbc.explain import disagreements as compare
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge


def process_of(group: RolloutGroup) -> Process:
    """The group merged into its empirical process (docs/MATH.md section 2)."""
    return merge([group])


@dataclass(frozen=True, eq=False)
class Values:
    """``v_S``: the closure's V per anchor (Eq. 9); ``delta_S``: V now minus V before the last
    change, per anchor (NaN for an anchor that is new), or None without a change."""

    v_S: np.ndarray
    delta_S: np.ndarray | None


def values(p: Process, before: RolloutGroup | None, beta: float) -> Values:
    """The closure's values of ``p`` and how each moved since ``before`` (the group before the
    last edit), anchor by anchor."""
    v_now = estimate(p, beta, None)[0]
    if before is None:
        return Values(v_now, None)
    p_b = merge([before])
    v_b = dict(zip(p_b.state_anchor, estimate(p_b, beta, None)[0], strict=True))
    return Values(v_now, np.array([v_now[s] - v_b.get(a, np.nan) for s, a in enumerate(p.state_anchor)]))


def foil_disagreements(p: Process, beta: float, sigma_min: float):
    """crbc against shortest_path on ``p`` (:func:`crbc.explain.disagreements.disagreements`)."""
    return compare.disagreements(p, "crbc vs shortest_path", beta=beta, sigma_min=sigma_min, depth=None)
