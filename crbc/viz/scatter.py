"""Two estimators' per-step credits against each other: a dot per step (the folded scatter)."""

from __future__ import annotations

import numpy as np

from crbc.estimators.registry import Credits
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg
from crbc.viz.core.credits import FIELDS, est_label, field_N
from crbc.viz.core.scales import symmetric_range
from crbc.viz.core.series import Mark, Series
from crbc.viz.core.style import OUTCOME_COLORS

__all__ = ["scatter_chart_svg"]


def scatter_chart_svg(cx: Credits, cy: Credits, field: str = "step_advantage", width: int = 520,
                      height: int = 420) -> str:
    """Per-step ``field`` of estimator ``cx`` (x) against ``cy`` (y) as an SVG scatter, a dot per
    step coloured by its rollout's outcome (a time-out counts as a failure), both axes on
    +-(the largest |value|) x 1.05 with the dotted diagonal y = x; a dot's tooltip names its
    rollout, step and both values. An estimator without the field counts as all zero."""
    p = cx.process
    x, y = field_N(cx, field), field_N(cy, field)
    x = np.zeros(p.n_steps) if x is None else x
    y = np.zeros(p.n_steps) if y is None else y
    succ = p.rollout_success[p.step_rollout]
    xl, yl = est_label(cx.estimator), est_label(cy.estimator)
    lim = symmetric_range(x, y) * 1.05
    series = [Series("y = x", [-lim, lim], [-lim, lim], "#bbb", dash="2 3", markers=False, legend=False, width=1)]
    for label, mask in (("success", succ), ("failure", ~succ)):
        idx = np.flatnonzero(mask)
        tips = [f"rollout r{int(p.rollout_index[p.step_rollout[n]])}, step {int(p.step_t[n]) - 1}: "
                f"{xl} {x[n]:+.3f}, {yl} {y[n]:+.3f}" for n in idx]
        series.append(Series(f"step of a {label}", x[idx], y[idx], OUTCOME_COLORS[label], lines=False,
                             marker_r=3.0, tips=tips))
    name = FIELDS[field].split(" (")[0]
    return chart_svg(series, x=Axis(f"{xl} ({name})"), y=Axis(f"{yl} ({name})", range=(-lim, lim)), zero_line=True,
                     marks=[Mark(0.0, "", "#888", dash=None)], size=(width, height))
