"""The evidence of credit intervals on the Step credits heatmaps: cells that are not sure washed
out, and the "sure only" view. (The Inspector's per-action error bars are HTML:
:func:`crbc.viz.html_charts.interval_panels_html`.)"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from crbc.viz.binning import bin_width

#: the veil over a cell that is not sure: white at this opacity, so its colour is washed out
VEIL = "rgba(255,255,255,0.6)"


def _by_cell(process, flags_N: np.ndarray, n_columns: int) -> np.ndarray:
    """A per-step flag as rollouts x columns of a heatmap: True where some step of the cell has
    it (a cell is one step, or a bin of :func:`crbc.viz.binning.bin_width` steps)."""
    p = process
    t_max = int(p.rollout_len.max())
    out = np.zeros((len(p.rollout_len), t_max), dtype=bool)
    out[p.step_rollout[flags_N], p.step_t[flags_N] - 1] = True
    if n_columns != t_max:
        w = bin_width(t_max)
        pad = np.zeros((out.shape[0], w * n_columns), dtype=bool)
        pad[:, :t_max] = out
        out = pad.reshape(out.shape[0], n_columns, w).any(axis=2)
    return out


def evidence_marks(fig: go.Figure, process, evidence_N: np.ndarray, sure_only: bool = False) -> go.Figure:
    """Show each cell's evidence on a :func:`crbc.viz.heatmaps.credit_heatmap` figure: a cell
    whose step credit is **sure** keeps its colour; every other cell (unsure, or zero by
    construction) is veiled in white, so its colour is washed out. With ``sure_only`` those cells
    are blanked instead. A binned cell counts as sure when one of its steps is. Each clickable
    point's hover names its step's evidence. Returns the figure.

    The veil is one more heatmap trace (``evidence``, under the clickable ``cells``): a single
    image for the browser, where a mark per cell would be an SVG element per cell."""
    p = process
    ev = np.asarray(evidence_N)
    z = np.array(fig.data[0].z, dtype=float)
    sure = _by_cell(p, ev == "sure", z.shape[1])
    if sure_only:
        fig.data[0].z = np.where(sure, z, np.nan)
    veil = np.where(np.isfinite(z) & ~sure, 1.0, np.nan)
    base = fig.data[0]
    fig.add_trace(go.Heatmap(z=veil, x=base.x, y=base.y, colorscale=[[0, VEIL], [1, VEIL]], zmin=0, zmax=1,
                             showscale=False, hoverinfo="skip", name="evidence", xgap=base.xgap,
                             ygap=base.ygap))
    cells = next((t for t in fig.data if t.name == "cells"), None)
    if cells is not None:
        cd = np.asarray(cells.customdata, dtype=object)
        step = p.rollout_offsets[cd[:, 0].astype(int)] + cd[:, 1].astype(int) - 1
        cells.update(text=ev[step], hovertemplate=cells.hovertemplate.replace(
            "<extra>", "<br>evidence: %{text}<extra>"))
    fig.data = (fig.data[0], fig.data[-1], *fig.data[1:-1])  # the veil under the clickable cells
    return fig
