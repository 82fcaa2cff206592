"""Figures of credit intervals: error bars of Q and Q - V per action (Inspector) and the evidence
on the Step credits heatmaps (cells that are not sure washed out, and the "sure only" view)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from crbc.viz.binning import bin_width


def _short(text: str, n: int = 28) -> str:
    """An action as a plotly label: escaped (plotly reads <b>, <br>, ...) and cut to n characters."""
    text = " ".join(str(text).split())
    return html.escape(text if len(text) <= n else text[: n - 1] + "…")


def _bars(rows: Sequence[dict[str, Any]], mid: str, lo: str, hi: str) -> dict[str, Any]:
    x = [np.nan if r[mid] is None else r[mid] for r in rows]
    plus = [np.nan if r[hi] is None or r[mid] is None else r[hi] - r[mid] for r in rows]
    minus = [np.nan if r[lo] is None or r[mid] is None else r[mid] - r[lo] for r in rows]
    return dict(x=x, error_x=dict(type="data", array=plus, arrayminus=minus, visible=True, thickness=2))


def interval_figure(rows: Sequence[dict[str, Any]], level: float, height: int | None = None) -> go.Figure:
    """Two panels, one row per action (``crbc.estimators.bootstrap.pair_table`` rows): Q with its
    interval, and Q - V with its interval (a dashed line at 0; sure pairs in colour)."""
    labels = [f"{_short(r['action'])} (n={r['n']})" for r in rows]
    color = {"sure": "#1f5fa8", "unsure": "#999999", "none": "#cccccc"}
    colors = [color[r["evidence"]] for r in rows]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(f"Q(s,a), {level:.0%} interval", f"Q − V, {level:.0%} interval"))
    if any(r["q"] is not None for r in rows):
        fig.add_trace(go.Scatter(y=labels, mode="markers", marker=dict(size=10, color=colors),
                                 showlegend=False, hovertemplate="Q = %{x:.3f}<extra></extra>",
                                 **_bars(rows, "q", "q_lo", "q_hi")), row=1, col=1)
    fig.add_trace(go.Scatter(y=labels, mode="markers", marker=dict(size=10, color=colors),
                             showlegend=False, hovertemplate="Q − V = %{x:.3f}<extra></extra>",
                             **_bars(rows, "credit", "lo", "hi")), row=1, col=2)
    fig.add_vline(x=0, line_dash="dash", line_color="#888", row=1, col=2)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(height=height or int(90 + 34 * max(len(rows), 1)),
                      margin=dict(l=10, r=10, t=30, b=20), plot_bgcolor="white")
    return fig


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
