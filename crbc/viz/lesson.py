"""Figure and table builders for the lesson, the anchor inspector and the disagreement finder.

Pure builders: they take what :mod:`crbc.explain.arithmetic`, :mod:`crbc.explain.lesson_tables` and :mod:`crbc.explain.disagreements`
computed and return printable rows, LaTeX
strings or plotly figures. They never call ``st.*`` and never estimate anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from crbc.explain.anchor_names import anchor_labels
from crbc.explain.arithmetic import AnchorArithmetic, DenseSystem
from crbc.explain.disagreements import StepDisagreement
from crbc.explain.lesson_tables import DepthTable
from crbc.explain.table_rows import cells, fmt
from crbc.process import Process
from crbc.viz.layout import layout
from crbc.viz.style import (
    EDGE_COLOR,
    NO_VALUE_COLOR,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    plain,
    v_color,
)

# columns holding advantages are shown with a sign (+0.0960), the rest plainly (0.4802)
SIGNED_PREFIXES = ("A", "Δ", "max |Δ|", "min", "max", "credit")


def _signed(col: str) -> bool:
    return col.startswith(SIGNED_PREFIXES) and not col.startswith("actions")


def format_rows(rows: Iterable[Any], digits: int = 4, signed: Sequence[str] | None = None,
                drop: Sequence[str] = ("state",), fields: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Typed rows (:mod:`crbc.explain.table_rows`) or plain dicts as printable rows under their column titles,
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
    return r"\text{" + "".join(_TEX_TEXT.get(ch, ch) for ch in label[:40]) + "}"


# LaTeX's special characters as text-mode commands: a user's label is never TeX
_TEX_TEXT = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
             "^": r"\textasciicircum{}", "_": r"\_", "~": r"\textasciitilde{}", "%": r"\%"}


def system_latex(ds: DenseSystem, digits: int = 4) -> str:
    """``(I - beta M) V = b`` with the numbers, as one LaTeX display (the solution is
    :func:`solution_latex`, a display of its own so neither is wider than a projector's column)."""
    n = len(ds.labels)
    a_rows = [" & ".join(fmt(ds.a[i, j], digits) for j in range(n)) for i in range(n)]
    v_syms = r" \\ ".join(f"V({_tex_label(lab)})" for lab in ds.labels)
    b_vals = r" \\ ".join(fmt(x, digits) for x in ds.b)
    return (r"\underbrace{\begin{pmatrix}" + r" \\ ".join(a_rows) + r"\end{pmatrix}}_{I-\beta M}"
            + r"\begin{pmatrix}" + v_syms + r"\end{pmatrix} = "
            + r"\underbrace{\begin{pmatrix}" + b_vals + r"\end{pmatrix}}_{b}")


def solution_latex(ds: DenseSystem, digits: int = 4) -> str:
    """``=> V = (V(s0), ..., V(sn))^T``: the solved system of :func:`system_latex` as one display."""
    sol = r" \\ ".join(fmt(x, digits) for x in ds.v)
    v_syms = r" \\ ".join(f"V({_tex_label(lab)})" for lab in ds.labels)
    return (r"\Longrightarrow\quad \begin{pmatrix}" + v_syms + r"\end{pmatrix} = \begin{pmatrix}"
            + sol + r"\end{pmatrix}")


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
    """Lines of each column of :func:`crbc.explain.lesson_tables.depth_table` over K, closure as a dashed level."""
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
        fig.add_trace(go.Scatter(x=ks, y=[r[c] for r in finite], mode="lines+markers", name=plain(c),
                                 line=dict(color=color), hovertemplate="%{fullData.name}<br>K=%{x}: %{y:.4f}<extra></extra>"))
        if closure is not None:
            fig.add_trace(go.Scatter(x=[ks[0], ks[-1]], y=[closure[c]] * 2, mode="lines", name=plain(c),
                                     line=dict(color=color, dash="dot", width=1), showlegend=False,
                                     hovertemplate="%{fullData.name} at the closure: %{y:.4f}<extra></extra>"))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10), title=title,
                      xaxis_title="depth K (dotted: K = ∞)", legend=dict(orientation="h", y=-0.25),
                      plot_bgcolor="white")
    fig.update_xaxes(dtick=1, gridcolor="#eee")
    fig.update_yaxes(gridcolor="#eee", zerolinecolor="#bbb")
    return fig


def grouped_steps(steps: Sequence[StepDisagreement], x_label: str, y_label: str) -> list[dict[str, Any]]:
    """The steps list of a disagreement (:class:`crbc.explain.disagreements.StepDisagreement` rows), one
    printable row per (group, anchor, action) in the order of its first (largest) step: how
    many steps share it, in which rollouts (and steps t), the A_S of each side (the mean when
    an estimator credits occurrences differently, as GiGPO does) and the largest |Δ| among
    them. Display grouping only: no estimate is computed."""
    out: dict[tuple, dict[str, Any]] = {}
    xs: dict[tuple, list[float]] = {}
    ys: dict[tuple, list[float]] = {}
    for r in steps:
        key = (r.group, r.anchor, r.action)
        row = out.get(key)
        if row is None:
            row = out[key] = {"group": r.group, "anchor": r.anchor, "action": r.action,
                              "steps": 0, "where": [], f"A_S {x_label}": 0.0, f"A_S {y_label}": 0.0,
                              "max |Δ|": 0.0}
            xs[key], ys[key] = [], []
        row["steps"] += 1
        row["where"].append(f"r{r.rollout}·t{r.t}")
        xs[key].append(float(r.a_s_x))
        ys[key].append(float(r.a_s_y))
        row["max |Δ|"] = max(row["max |Δ|"], abs(float(r.delta)))
    rows = []
    for key, row in out.items():
        row[f"A_S {x_label}"] = sum(xs[key]) / len(xs[key])
        row[f"A_S {y_label}"] = sum(ys[key]) / len(ys[key])
        where = row["where"]
        row["where"] = ", ".join(where[:6]) + (f" (+{len(where) - 6})" if len(where) > 6 else "")
        rows.append(row)
    return rows


def lesson_graph_figure(p: Process, value_S: np.ndarray, *, value_name: str = "V",
                        delta_S: np.ndarray | None = None, height: int = 380,
                        title: str | None = None) -> go.Figure:
    """The lesson's group as a graph that is also its control panel.

    Nodes: anchors (coloured and labelled by ``value_S``; NaN: grey, no number) and the two
    boundaries. Edges: one line per observed (anchor, successor), its actions written on it.
    Clickable points, each with ``customdata`` = [kind, a, b]:

    - ``["edge", i, t]`` a diamond on each observed (anchor, action, successor): its first step
      (rollout position i, step t), to edit;
    - ``["outcome", i, 0]`` one chip per rollout beside its boundary (✓ / ✗, with the rollout's id of the file),
      to flip that rollout's outcome;
    - ``["node", s, 0]`` the anchors.

    ``delta_S`` adds rings (blue: rose, red: fell) on the anchors whose value changed, with the
    change written beside them (before/after an edit, or one round of backup).
    """
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    xs = np.concatenate([lay.x_S, lay.x_B])
    ys = -np.concatenate([lay.y_S, lay.y_B])
    fig = go.Figure()
    sa, nxt, _cnt = p.transitions()
    pairs: dict[tuple[int, int], list[str]] = {}
    for a_sa, x in zip(sa.tolist(), nxt.tolist(), strict=True):
        pairs.setdefault((int(p.sa_state[a_sa]), int(x)), []).append(p.action_names[p.sa_action[a_sa]])
    ex, ey = [], []
    for (s, x), _acts in pairs.items():
        if s != x:
            ex += [xs[s], xs[x], None]
            ey += [ys[s], ys[x], None]
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=EDGE_COLOR, width=1.5),
                             hoverinfo="skip", showlegend=False, name="edges"))
    # one clickable diamond per observed transition, at 60% of its edge (self-loops: above)
    first: dict[tuple[int, int, int], tuple[int, int]] = {}
    for i in range(len(p.rollout_offsets) - 1):
        for k in range(int(p.rollout_offsets[i]), int(p.rollout_offsets[i + 1])):
            key = (int(p.step_state[k]), int(p.sa_action[p.step_sa[k]]), int(p.step_next[k]))
            first.setdefault(key, (i, int(p.step_t[k])))
    mx, my, mtext, mdata, mhover = [], [], [], [], []
    seen: dict[tuple[int, int], int] = {}
    for (s, act, x), (i, t) in first.items():
        j = seen[(s, x)] = seen.get((s, x), -1) + 1
        if s == x:
            px, py = xs[s], ys[s] + 28 + 22 * j
        else:
            f = 0.6
            px, py = xs[s] + f * (xs[x] - xs[s]), ys[s] + f * (ys[x] - ys[s]) + 24 * j  # labels apart
        name = p.action_names[act]
        xname = "z+" if x == n else "z-" if x == n + 1 else labels[x]
        mx.append(px)
        my.append(py)
        mtext.append(plain(name, 24))
        mdata.append(["edge", i, t])
        mhover.append(f"{plain(labels[s])} --{plain(name)}--> {plain(xname)}<br>click: edit rollout {int(p.rollout_index[i])}, step {t}")
    fig.add_trace(go.Scatter(x=mx, y=my, mode="markers+text", text=mtext, textposition="top center",
                             textfont=dict(size=11, color="#444"),
                             marker=dict(symbol="diamond", size=11, color="white",
                                         line=dict(color=EDGE_COLOR, width=1.5)),
                             customdata=mdata, hovertext=mhover, hoverinfo="text",
                             showlegend=False, name="steps"))
    v = np.asarray(value_S, dtype=float)
    known = np.isfinite(v)
    colors = [v_color(x)[0] if ok else NO_VALUE_COLOR for x, ok in zip(v, known, strict=True)]
    text = [f"<b>{plain(labels[s], 40)}</b><br>{value_name}={fmt(v[s], 3)}" if known[s] else f"<b>{plain(labels[s], 40)}</b>"
            for s in range(n)]
    fig.add_trace(go.Scatter(x=lay.x_S, y=-lay.y_S, mode="markers+text", text=text,
                             textposition="bottom center", textfont=dict(size=12),
                             marker=dict(size=30, color=colors, line=dict(color="#333", width=1)),
                             customdata=[["node", s, 0] for s in range(n)],
                             hovertext=[f"{plain(labels[s])}: visited {int(p.n_s[s])} times" for s in range(n)],
                             hoverinfo="text", showlegend=False, name="anchors"))
    fig.add_trace(go.Scatter(x=lay.x_B, y=-lay.y_B, mode="markers+text", text=["z+ (V=1)", "z- (V=0)"],
                             textposition=["top center", "bottom center"],
                             marker=dict(symbol="square", size=24, color=[Z_PLUS_COLOR, Z_MINUS_COLOR]),
                             hoverinfo="skip", showlegend=False, name="boundaries"))
    # outcome chips: one per rollout, in a column right of the boundary it reached
    cx, cy, ctext, ccol, cdata, chover = [], [], [], [], [], []
    count = {0: 0, 1: 0}
    gap = (float(lay.x_B[0]) - float(lay.x_S.min())) / max(float(lay.layer_S.max()) + 1, 1.0)
    for i in range(len(p.rollout_offsets) - 1):
        ok = bool(p.rollout_success[i])
        b = 0 if ok else 1
        k = count[b]
        count[b] += 1
        cx.append(float(lay.x_B[b]) + 0.55 * gap * (1 + k // 4))
        cy.append(-float(lay.y_B[b]) + (1 if b == 0 else -1) * 22 * (k % 4) - (0 if b == 0 else 0))
        ctext.append(f"{int(p.rollout_index[i])} {'✓' if ok else '✗'}")
        ccol.append(Z_PLUS_COLOR if ok else Z_MINUS_COLOR)
        cdata.append(["outcome", i, 0])
        chover.append(f"rollout {int(p.rollout_index[i])} {'succeeded' if ok else 'failed'}: click to flip its outcome")
    fig.add_trace(go.Scatter(x=cx, y=cy, mode="markers+text", text=ctext, textposition="middle right",
                             textfont=dict(size=12, color=ccol),
                             marker=dict(symbol="circle", size=14, color="white", line=dict(color=ccol, width=2)),
                             customdata=cdata, hovertext=chover, hoverinfo="text", showlegend=False,
                             name="outcomes"))
    if delta_S is not None:
        d = np.asarray(delta_S, dtype=float)
        moved = [s for s in range(n) if np.isfinite(d[s]) and abs(d[s]) > 5e-5]
        fig.add_trace(go.Scatter(
            x=[lay.x_S[s] for s in moved], y=[-lay.y_S[s] for s in moved], mode="markers+text",
            marker=dict(symbol="circle-open", size=42,
                        color=["#2166ac" if d[s] > 0 else "#b2182b" for s in moved], line=dict(width=3)),
            text=[f"{d[s]:+.3f}" for s in moved], textposition="top right",
            textfont=dict(size=12, color=["#2166ac" if d[s] > 0 else "#b2182b" for s in moved]),
            hoverinfo="skip", showlegend=False, name="changed"))
    fig.update_xaxes(visible=False, range=[float(xs.min()) - 60, float(max(cx + [xs.max()])) + 90],
                     fixedrange=True)
    fig.update_yaxes(visible=False, fixedrange=True)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=36 if title else 10, b=10), title=title,
                      plot_bgcolor="white", clickmode="event+select", dragmode=False,
                      hoverlabel=dict(bgcolor="white"))
    return fig
