"""The evidence of credit intervals on the Step credits heatmaps, cell by cell: which cells
are sure (drawn by :mod:`crbc.viz.heatmap_svg`: the others washed out, or blank with "sure
only"). (The Inspector's per-action error bars are HTML:
:func:`crbc.viz.html_charts.interval_panels_html`.)"""

from __future__ import annotations

import numpy as np


def by_cell(process, flags_N: np.ndarray, width: int = 1) -> np.ndarray:
    """A per-step flag as rollouts x columns of a heatmap whose cells are bins of ``width``
    consecutive steps (1: a cell per step; see :func:`crbc.viz.binning.bin_width`): True where
    some step of the cell has it. Shape ``(rollouts, ceil(max length / width))``."""
    p = process
    t_max = int(p.rollout_len.max())
    out = np.zeros((len(p.rollout_len), t_max), dtype=bool)
    out[p.step_rollout[flags_N], p.step_t[flags_N] - 1] = True
    if width > 1:
        n_columns = -(-t_max // width)
        pad = np.zeros((out.shape[0], width * n_columns), dtype=bool)
        pad[:, :t_max] = out
        out = pad.reshape(out.shape[0], n_columns, width).any(axis=2)
    return out
