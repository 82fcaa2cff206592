"""The merged empirical process of one group drawn as a graph: a plotly figure here, the pyvis
page in :mod:`crbc.viz.graph_html` (re-exported).

Both drawings share :func:`layout`: anchors in layers by their hop distance from the start
anchor(s), the two absorbing boundaries (z+ success, z- failure) in a last column on the right.
Positions are fixed and physics is off, so the graph never moves between reruns.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.graph_html import anchor_graph_html, external_urls, vis_assets  # noqa: F401 (re-exported)
from crbc.viz.layout import (  # noqa: F401  (re-exported: the graph drawings' public names)
    LABEL_ALL_MAX,
    X_GAP,
    Y_GAP,
    Layout,
    _check_single,
    _edges,
    _fmt,
    crossings,
    layout,
    rollout_edges,
)
from crbc.viz.style import (
    BOARD_COLORS,
    CREDIT_SCALE,
    HIGHLIGHT,
    V_SCALE,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    cut,
    symmetric_range,
)

# --------------------------------------------------------------------------------------------
# plotly version (fast to re-render; used for the Bellman backups animation)


def _segments(xs: np.ndarray, ys: np.ndarray, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """x, y (3 E,) of segments a -> b: ``x_a, x_b, NaN`` each (plotly breaks a line at NaN)."""
    ab, gap = np.asarray(pairs, dtype=int).reshape(-1, 2), np.full((len(pairs), 1), np.nan)
    return (np.hstack([xs[ab], gap]).ravel(), np.hstack([ys[ab], gap]).ravel())


def graph_figure(p: Process, value_S: np.ndarray, *, title: str | None = None,
                 highlight_rollout: int | None = None, height: int = 520,
                 value_name: str = "V", delta_S: np.ndarray | None = None,
                 signed: bool = False) -> go.Figure:
    """The same graph as :func:`anchor_graph_html` as a plotly figure (nodes coloured by value;
    ``signed``: a signed quantity on the diverging credit scale centred on 0).

    Beyond :data:`LABEL_ALL_MAX` anchors only the highlighted rollout's anchors are labelled
    (hover names every node). ``delta_S`` (e.g. V^(K) - V^(K-1)) adds a trace ``ΔV``: a ring
    around every node whose value moved, blue when it rose and red when it fell, its width
    growing with |Δ|, and the amount printed next to the largest few moves."""
    _check_single(p)
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    # SVG scatter redraws faster than WebGL for the sizes we show (and needs no GPU)
    Sc = go.Scatter if n + p.n_steps < 20000 else go.Scattergl
    xs = np.concatenate([lay.x_S, lay.x_B])
    ys = -np.concatenate([lay.y_S, lay.y_B])  # plotly's y grows upwards
    ex, ey = _segments(xs, ys, [(a, x) for a, _act, x, _c in _edges(p) if a != x])
    fig = go.Figure()
    fig.add_trace(Sc(x=ex, y=ey, mode="lines", line=dict(color="#c7cdd4", width=1), hoverinfo="skip",
                     showlegend=False, name="transitions"))
    if highlight_rollout is not None:
        hx, hy = _segments(xs, ys, [(a, x) for a, _act, x in rollout_edges(p, highlight_rollout)])
        fig.add_trace(Sc(x=hx, y=hy, mode="lines", line=dict(color=HIGHLIGHT, width=3),
                                   hoverinfo="skip", name=f"rollout {highlight_rollout}"))
    n_max = max(int(p.n_s.max()), 1)
    hover = [f"<b>{html.escape(labels[s])}</b>  {value_name} = {_fmt(value_S[s])}<br>"
             f"visits {int(p.n_s[s])}<br><span style='font-family:monospace'>"
             + "<br>".join(html.escape(cut(r, 120)) for r in p.state_anchor[s][:4000].split("\n")[:12]) + "</span>"
             for s in range(n)]
    on_path = set()
    if highlight_rollout is not None:
        on_path = {a for a, _, _ in rollout_edges(p, highlight_rollout)}
    shown = [html.escape(lab[:40], quote=False).replace("%", "&#37;")  # a texttemplate: no %{..}
             if (n <= LABEL_ALL_MAX or s in on_path) else "" for s, lab in enumerate(labels)]
    fig.add_trace(Sc(
        x=lay.x_S, y=-lay.y_S, mode="markers+text", name="anchors",
        customdata=np.array([["anchor", s] for s in range(n)], dtype=object),
        showlegend=False, textposition="bottom center", texttemplate=np.array(shown, dtype=str),
        textfont=dict(size=12, color="#333"),
        marker=dict(size=8 + 18 * np.sqrt(p.n_s / n_max), color=np.asarray(value_S, dtype=float),
                    colorscale=CREDIT_SCALE if signed else V_SCALE,
                    cmin=-symmetric_range(value_S) if signed else 0.0,
                    cmax=symmetric_range(value_S) if signed else 1.0,
                    line=dict(color="#333", width=0.5),
                    colorbar=dict(title=dict(text=value_name, side="right"), thickness=14,
                                  len=0.8, y=0.45)),
        text=np.array(hover), hovertemplate="%{text}<extra></extra>"))
    if delta_S is not None:
        d = np.asarray(delta_S, dtype=float)
        moved = np.flatnonzero(np.isfinite(d) & (np.abs(d) > 1e-9))
        dmax = float(np.abs(d[moved]).max()) if len(moved) else 1.0
        top = set(moved[np.argsort(-np.abs(d[moved]))[:8]].tolist())
        fig.add_trace(Sc(
            x=lay.x_S[moved], y=-lay.y_S[moved], mode="markers+text", name="ΔV", showlegend=False,
            marker=dict(symbol="circle-open", size=(8 + 18 * np.sqrt(p.n_s[moved] / n_max)) + 9,
                        color=["#2166ac" if d[s] > 0 else "#b2182b" for s in moved],
                        line=dict(width=1.5 + 3.5 * np.abs(d[moved]) / dmax)),
            text=[f"{d[s]:+.3f}" if s in top else "" for s in moved], textposition="top right",
            textfont=dict(size=11, color=["#2166ac" if d[s] > 0 else "#b2182b" for s in moved]),
            customdata=[[html.escape(labels[s][:200]), f"{d[s]:+.4f}"] for s in moved],
            hovertemplate="%{customdata[0]}: ΔV = %{customdata[1]}<extra>change at this K</extra>"))
    fig.add_trace(go.Scatter(
        x=lay.x_B, y=-lay.y_B, mode="markers+text", showlegend=False, name="boundaries",
        marker=dict(symbol="square", size=22, color=[Z_PLUS_COLOR, Z_MINUS_COLOR]),
        text=["z+ success (V=1)", "z- failure (V=0)"], textposition=["top center", "bottom center"], hoverinfo="text"))
    fig.update_xaxes(visible=False, range=[xs.min() - X_GAP * 0.4, xs.max() + X_GAP * 1.3])
    fig.update_yaxes(visible=False)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      title=title, plot_bgcolor="white", uirevision="graph",
                      legend=dict(orientation="h", x=0, y=0, yanchor="top", xanchor="left"),
                      hoverlabel=dict(bgcolor="white"))
    return fig


__all__ = ["Layout", "layout", "rollout_edges", "anchor_graph_html", "graph_figure", "external_urls",
           "vis_assets", "BOARD_COLORS"]
