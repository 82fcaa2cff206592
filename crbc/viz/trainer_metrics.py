"""The trainer's own metrics over iterations as small multiples (one SVG): the CPU trainer's
names and verl's (``episode/...``, ``critic/...``, ``actor/...``, the recorder's ``crbc/...``),
chosen by :func:`crbc.io.runs.trainer_metric_names`. Drawn in the run report and on Training runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crbc.io.runs import trainer_metric_names
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, grid_svg
from crbc.viz.core.series import Mark, Series

__all__ = ["metric_series", "numeric_names", "trainer_metrics_svg"]


def metric_series(metrics: Sequence[Mapping[str, Any]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(iterations (n,), values (n,))`` of ``name`` over the metric lines that hold a number for it."""
    its, vals = [], []
    for m in metrics:
        v = m.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and "iteration" in m:
            its.append(int(m["iteration"]))
            vals.append(float(v))
    return np.asarray(its, dtype=int), np.asarray(vals, dtype=float)


def numeric_names(metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every metric name with a number on some line, in order of first appearance."""
    names: dict[str, None] = {}
    for m in metrics:
        for k, v in m.items():
            if k != "iteration" and isinstance(v, (int, float)) and not isinstance(v, bool):
                names[k] = None
    return list(names)


def trainer_metrics_svg(metrics: Sequence[Mapping[str, Any]], iteration: int | None = None,
                        names: Sequence[str] | None = None, cols: int = 3) -> str | None:
    """Small multiples of the trainer's metrics (``metrics``: metrics.jsonl's lines, each with
    ``iteration``), one panel per name of ``names`` (default :func:`trainer_metric_names` of
    what the lines hold), an orange line at ``iteration``; None when there is nothing to draw."""
    names = list(names) if names is not None else trainer_metric_names(numeric_names(metrics))
    marks = [Mark(iteration, "", "#ff7f0e")] if iteration is not None else []
    panels, titles = [], []
    for m in names:
        its, vals = metric_series(metrics, m)
        if not len(its):
            continue
        pct = ("success" in m or m.endswith("_share") or "sign_agreement" in m) and bool(np.all(np.abs(vals) <= 1))
        panels.append(chart_svg([Series(m, its, vals, "#31333f", markers=len(its) <= 60, width=1.6)],
                                x=Axis("iteration"), y=Axis(percent=pct), size=(400, 210), legend=False,
                                marks=marks))
        titles.append(m)
    return grid_svg(panels, titles, cols=cols) if panels else None
