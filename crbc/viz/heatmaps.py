"""Step-credit heatmaps' numbers: rollouts x steps matrices and one shared colour range.

The drawing itself is server-built SVG: :mod:`crbc.viz.heatmap_svg`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from crbc.estimators.registry import Credits
from crbc.process import Process
from crbc.viz.charts import field_N
from crbc.viz.style import symmetric_range


def step_matrix(p: Process, values_N: np.ndarray | None) -> np.ndarray:
    """Rollouts x steps (R x max length, NaN padded) of a per-step array in the process's step
    order: ``out[step_rollout[n], step_t[n] - 1] = values_N[n]`` (all NaN for ``None``)."""
    out = np.full((len(p.rollout_len), int(p.rollout_len.max())), np.nan)
    if values_N is not None:
        out[p.step_rollout, p.step_t - 1] = values_N
    return out


def credit_matrix(c: Credits, field: str) -> np.ndarray:
    """Rollouts x steps (NaN padded) of a per-step field."""
    return step_matrix(c.process, field_N(c, field))


def shared_range(all_credits: Iterable[Credits], field: str) -> float:
    """One symmetric colour range for several heatmaps: the largest |value| of ``field`` over
    all of them (1 when every value is zero or missing), so a colour means the same number in
    every panel."""
    return symmetric_range(*[field_N(c, field) for c in all_credits])
