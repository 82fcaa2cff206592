"""Figures of credit intervals: error bars of Q and Q - V per action (Inspector) and evidence
marks on the Step credits heatmaps (sure / unsure / none per cell, and the "sure only" view)."""

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


#: how a cell's evidence is marked on the clickable ``cells`` points: (marker symbol, size px)
MARK_STYLE = {"sure": ("circle", 7), "unsure": ("circle-open", 7), "none": ("circle", 2)}


def evidence_marks(fig: go.Figure, process, evidence_N: np.ndarray, sure_only: bool = False) -> go.Figure:
    """Mark each cell of a :func:`crbc.viz.heatmaps.credit_heatmap` figure by its evidence
    (● sure, ○ unsure, · none); with ``sure_only``, blank the cells that are not sure. Returns
    the figure.

    The marks are the clickable ``cells`` points themselves made visible (a marker symbol and
    size per point, from the evidence of the step each point opens: ``customdata`` [rollout
    position, step t, ...]), so a cell costs the browser one SVG point, not a point and a text
    label (a text must be measured before it is placed)."""
    p = process
    ev = np.asarray(evidence_N)
    if sure_only:
        z = np.array(fig.data[0].z, dtype=float)
        keep = np.zeros((len(p.rollout_len), int(p.rollout_len.max())), dtype=bool)
        sure = ev == "sure"
        keep[p.step_rollout[sure], p.step_t[sure] - 1] = True
        if z.shape[1] != keep.shape[1]:  # binned columns: a bin stays if any of its steps is sure
            w = bin_width(keep.shape[1])
            pad = np.zeros((keep.shape[0], w * z.shape[1]), dtype=bool)
            pad[:, :keep.shape[1]] = keep
            keep = pad.reshape(keep.shape[0], z.shape[1], w).any(axis=2)
        fig.data[0].z = np.where(keep, z, np.nan)
    cells = next(t for t in fig.data if t.name == "cells")
    cd = np.asarray(cells.customdata, dtype=object)
    step = p.rollout_offsets[cd[:, 0].astype(int)] + cd[:, 1].astype(int) - 1
    kinds = ev[step]
    symbol = np.array([MARK_STYLE.get(k, ("circle", 0))[0] for k in kinds])
    size = np.array([MARK_STYLE.get(k, ("circle", 0))[1] for k in kinds])
    cells.update(marker=dict(symbol=symbol, size=size, color="rgba(20,20,20,0.7)", opacity=1,
                             line=dict(width=1, color="rgba(20,20,20,0.7)")),
                 selected=dict(marker=dict(opacity=1)), unselected=dict(marker=dict(opacity=1)))
    return fig
