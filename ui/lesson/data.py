"""What the Lesson page reads about its group, computed here and kept by the lesson group's
context (:func:`ui.core.context.group_context`) so that the page only draws and a rerun computes
nothing again (tests/project/test_layers.py: pages call no estimator): the closure's V now and
before the last change, and the shortest-path disagreements of section 8."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.estimators.closure import estimate
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge
from ui.core.context import PageContext, group_digest


@dataclass(frozen=True, eq=False)
class Values:
    """``v_S``: the closure's V per anchor (Eq. 9); ``delta_S``: V now minus V before the last
    change, per anchor (NaN for an anchor that is new), or None without a change."""

    v_S: np.ndarray
    delta_S: np.ndarray | None


def values(ctx: PageContext, before: RolloutGroup | None, beta: float) -> Values:
    """The closure's values of the lesson group and how each moved since ``before`` (the group
    before the last edit), anchor by anchor; kept by ``ctx``."""
    p, beta = ctx.process, float(beta)
    return ctx.kept("lesson", ("values", None if before is None else group_digest(before), beta),
                    lambda: _values(p, before, beta))


def _values(p: Process, before: RolloutGroup | None, beta: float) -> Values:
    v_now = estimate(p, beta, None)[0]
    if before is None:
        return Values(v_now, None)
    p_b = merge([before])
    v_b = dict(zip(p_b.state_anchor, estimate(p_b, beta, None)[0], strict=True))
    return Values(v_now, np.array([v_now[s] - v_b.get(a, np.nan) for s, a in enumerate(p.state_anchor)]))


def foil_disagreements(ctx: PageContext, beta: float, sigma_min: float):
    """crbc against shortest_path on the lesson group (:func:`crbc.explain.disagreements.disagreements`)."""
    return ctx.disagreement("crbc vs shortest_path", {"beta": beta, "sigma_min": sigma_min, "depth": None})
