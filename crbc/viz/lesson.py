"""Figure and table builders for the lesson, the anchor inspector and the disagreement finder.

Pure builders: they take what :mod:`crbc.explain`, :mod:`crbc.tables` and :mod:`crbc.compare`
computed and return printable rows, LaTeX
strings or plotly figures. They never call ``st.*`` and never estimate anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

from ..compare import Disagreement
from ..explain import AnchorArithmetic, DenseSystem
from ..rows import cells, fmt
from ..tables import DepthTable
from .style import CREDIT_SCALE, EDGE_COLOR, HIGHLIGHT, Z_MINUS_COLOR, Z_PLUS_COLOR, v_color

# columns holding advantages are shown with a sign (+0.0960), the rest plainly (0.4802)
SIGNED_PREFIXES = ("A", "Δ", "max |Δ|", "min", "max", "credit")


def _signed(col: str) -> bool:
    return col.startswith(SIGNED_PREFIXES) and not col.startswith("actions")


def format_rows(rows: Iterable[Any], digits: int = 4, signed: Sequence[str] | None = None,
                drop: Sequence[str] = ("state",), fields: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Typed rows (:mod:`crbc.rows`) or plain dicts as printable rows under their column titles,
    numbers as fixed-decimal strings (advantage columns signed), for a static table.

    Integers stay integers, booleans become ``yes``/``no``, ``None`` becomes ``—``; columns in
    ``drop`` are removed; ``fields`` (attribute names) keeps only those, in that order."""
    out = []
    for row in rows:
        new = {}
        for k, v in cells(row, fields).items():
            if k in drop:
                continue
            sg = (k in signed) if signed is not None else _signed(k)
            if isinstance(v, bool):
                new[k] = "yes" if v else "no"
            elif isinstance(v, int):
                new[k] = str(v)
            elif isinstance(v, float):
                new[k] = fmt(v, digits, sg)
            elif v is None:
                new[k] = "—"
            else:
                new[k] = str(v)
        out.append(new)
    return out


def _tex_label(label: str) -> str:
    if label.startswith("s") and label[1:].isdigit():
        return f"s_{{{label[1:]}}}"
    return r"\text{" + label.replace("_", r"\_").replace("#", r"\#") + "}"


def system_latex(ds: DenseSystem, digits: int = 4) -> str:
    """``(I - beta M) V = b`` with the numbers, and the solution, as one LaTeX display."""
    n = len(ds.labels)
    a_rows = [" & ".join(fmt(ds.a[i, j], digits) for j in range(n)) for i in range(n)]
    v_syms = r" \\ ".join(f"V({_tex_label(lab)})" for lab in ds.labels)
    b_vals = r" \\ ".join(fmt(x, digits) for x in ds.b)
    sol = r" \\ ".join(fmt(x, digits) for x in ds.v)
    return (r"\underbrace{\begin{pmatrix}" + r" \\ ".join(a_rows) + r"\end{pmatrix}}_{I-\beta M}"
            + r"\begin{pmatrix}" + v_syms + r"\end{pmatrix} = "
            + r"\underbrace{\begin{pmatrix}" + b_vals + r"\end{pmatrix}}_{b}"
            + r"\quad\Longrightarrow\quad V = \begin{pmatrix}" + sol + r"\end{pmatrix}")


def arithmetic_markdown(ar: AnchorArithmetic) -> list[str]:
    """The backup at one anchor as code lines: one Q line per action, then V, sigma and the gate."""
    lines = [a.q_expression for a in ar.actions]
    lines.append(ar.v_expression)
    for a in ar.actions:
        q = "Q" if ar.depth is None else f"Q^({ar.depth})"
        lines.append(f"A({ar.label},{a.action}) = {q} - V = {fmt(a.q)} - {fmt(ar.v)} = {fmt(a.a, signed=True)}")
    lines.append(ar.sigma_expression)
    lines.append(ar.gate_expression)
    for a in ar.actions:
        lines.append(f"A_S({ar.label},{a.action}) = {fmt(a.a_s, signed=True)}")
    return lines


def depth_figure(table: DepthTable, title: str | None = None, height: int = 340) -> go.Figure:
    """Lines of each column of :func:`crbc.tables.depth_table` over K, closure as a dashed level."""
    rows = table.records()
    finite = [r for r in rows if r["K"] != "∞"]
    closure = next((r for r in rows if r["K"] == "∞"), None)
    ks = [int(r["K"]) for r in finite]
    fig = go.Figure()
    cols = list(table.columns)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#ff7f0e"]
    for i, c in enumerate(cols):
        color = palette[i % len(palette)]
        fig.add_trace(go.Scatter(x=ks, y=[r[c] for r in finite], mode="lines+markers", name=c,
                                 line=dict(color=color), hovertemplate=f"{c}<br>K=%{{x}}: %{{y:.4f}}<extra></extra>"))
        if closure is not None:
            fig.add_trace(go.Scatter(x=[ks[0], ks[-1]], y=[closure[c]] * 2, mode="lines",
                                     line=dict(color=color, dash="dot", width=1), showlegend=False,
                                     hovertemplate=f"{c} at the closure: %{{y:.4f}}<extra></extra>"))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10), title=title,
                      xaxis_title="depth K (dotted: K = ∞)", legend=dict(orientation="h", y=-0.25),
                      plot_bgcolor="white")
    fig.update_xaxes(dtick=1, gridcolor="#eee")
    fig.update_yaxes(gridcolor="#eee", zerolinecolor="#bbb")
    return fig


def backup_figure(ar: AnchorArithmetic, height: int | None = None) -> go.Figure:
    """The backup tree at one anchor: anchor -> actions (mu, Q, A_S) -> successors (P, V).

    Node colours: successors on the V scale (z+ green, z- red), actions on the credit scale."""
    succ_nodes: list[tuple[str, float]] = []
    for a in ar.actions:
        for x in a.successors:
            if x.label not in [s for s, _ in succ_nodes]:
                succ_nodes.append((x.label, x.v))
    n_a, n_x = len(ar.actions), max(len(succ_nodes), 1)
    span = max(n_a, n_x)
    ya = {a.action: (span - 1) / 2 - (i - (n_a - 1) / 2) for i, a in enumerate(ar.actions)}
    yx = {lab: (span - 1) / 2 - (i - (n_x - 1) / 2) for i, (lab, _) in enumerate(succ_nodes)}
    y0 = (span - 1) / 2
    fig = go.Figure()
    ann = []
    for a in ar.actions:
        fig.add_trace(go.Scatter(x=[0, 1], y=[y0, ya[a.action]], mode="lines", showlegend=False,
                                 line=dict(color=EDGE_COLOR, width=1 + 6 * a.mu), hoverinfo="skip"))
        ann.append(dict(x=0.5, y=(y0 + ya[a.action]) / 2, text=f"mu={fmt(a.mu, 3)}", showarrow=False,
                        font=dict(size=11, color="#555"), bgcolor="white"))
        for x in a.successors:
            fig.add_trace(go.Scatter(x=[1, 2], y=[ya[a.action], yx[x.label]], mode="lines", showlegend=False,
                                     line=dict(color=EDGE_COLOR, width=1 + 6 * x.p), hoverinfo="skip"))
            ann.append(dict(x=1.55, y=ya[a.action] + 0.55 * (yx[x.label] - ya[a.action]),
                            text=f"P={fmt(x.p, 3)}", showarrow=False, font=dict(size=11, color="#555"),
                            bgcolor="white"))
    k = "" if ar.depth is None else f"<sup>({ar.depth})</sup>"
    fig.add_trace(go.Scatter(x=[0], y=[y0], mode="markers+text", text=[f"<b>{ar.label}</b><br>V{k}={fmt(ar.v)}"],
                             textposition="bottom center", marker=dict(size=34, color=v_color(ar.v)[0],
                                                                       line=dict(color="#333", width=1)),
                             hoverinfo="skip", showlegend=False))
    amax = max([abs(a.a_s) for a in ar.actions] + [1e-9])
    fig.add_trace(go.Scatter(
        x=[1] * n_a, y=[ya[a.action] for a in ar.actions], mode="markers+text",
        text=[f"<b>{a.action}</b><br>Q={fmt(a.q)}<br>A_S={fmt(a.a_s, 2, True)}" for a in ar.actions],
        textposition="top center",
        marker=dict(size=22, symbol="square", color=[a.a_s for a in ar.actions], colorscale=CREDIT_SCALE,
                    cmin=-amax, cmax=amax, line=dict(color="#333", width=1)),
        hoverinfo="skip", showlegend=False))
    colors = [Z_PLUS_COLOR if lab == "z+" else Z_MINUS_COLOR if lab == "z-" else v_color(v)[0]
              for lab, v in succ_nodes]
    vname = "V" if ar.depth in (None, 0) else f"V<sup>({ar.depth - 1})</sup>"
    fig.add_trace(go.Scatter(
        x=[2] * len(succ_nodes), y=[yx[lab] for lab, _ in succ_nodes], mode="markers+text",
        text=[f"<b>{lab}</b><br>{vname}={fmt(v)}" if not (isinstance(v, float) and math.isnan(v))
              else f"<b>{lab}</b>" for lab, v in succ_nodes],
        textposition="middle right", marker=dict(size=26, color=colors, line=dict(color="#333", width=1)),
        hoverinfo="skip", showlegend=False))
    fig.update_layout(annotations=ann, height=height or max(220, 110 * span),
                      margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="white")
    fig.update_xaxes(visible=False, range=[-0.4, 2.7], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-0.8, span - 0.2], fixedrange=True)
    return fig


def disagreement_figure(dis: Disagreement, top: int = 15, height: int = 320,
                        highlight: str | None = None) -> go.Figure:
    """Bars of the per-anchor disagreement (largest first); ``highlight`` an anchor label."""
    rows = dis.anchors[:top]
    multi = len({r.group for r in dis.anchors}) > 1
    names = [f"{r.group} / {r.anchor}" if multi else r.anchor for r in rows]
    colors = [HIGHLIGHT if r.anchor == highlight else ("#c0392b" if r.ranks_differ else "#7f8c8d")
              for r in rows]
    fig = go.Figure(go.Bar(
        x=names, y=[r.disagreement for r in rows], marker_color=colors,
        customdata=[[r.visits, r.actions, "yes" if r.ranks_differ else "no"] for r in rows],
        hovertemplate="%{x}<br>mean |Δ A_S| = %{y:.4f}<br>visits %{customdata[0]}, actions %{customdata[1]}"
                      "<br>best action differs: %{customdata[2]}<extra></extra>"))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), plot_bgcolor="white",
                      title=f"{dis.comparison.x_label} vs {dis.comparison.y_label}: mean |Δ A_S| per anchor "
                            "(red: they pick a different best action)", title_font_size=13)
    fig.update_yaxes(gridcolor="#eee", title="mean |Δ A_S|")
    fig.update_xaxes(type="category")
    return fig
