"""Small charts as static HTML and SVG, built on the server and shown with ``st.html``.

A page of these loads no charting library: a new browser tab draws them at once, and a rerun
redraws them as fast as any other HTML. They are for the
figures that need no zoom or selection: the disagreement ranking, an anchor's credit intervals
and its backup tree. Every user string (anchor, action, group id) is HTML-escaped and cut short,
with the whole of it in the element's tooltip; no element loads anything from anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from crbc.explain.arithmetic import AnchorArithmetic
from crbc.explain.disagreements import Disagreement
from crbc.explain.table_rows import fmt
from crbc.viz.style import (
    EDGE_COLOR,
    HIGHLIGHT,
    NO_VALUE_COLOR,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    esc,
    signed_color,
    v_color,
)

FONT = "font:13px 'Source Sans',sans-serif;color:#31333f"
EVIDENCE_COLORS = {"sure": "#1f5fa8", "unsure": "#999999", "none": "#cccccc"}
DIFFERS, AGREES = "#c0392b", "#7f8c8d"  # disagreement bars: a different best action or the same


def _one_line(text: object, n: int) -> str:
    """A user string on one line (runs of whitespace as one space), cut to ``n`` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


# ---------------------------------------------------------------- disagreement ranking


def disagreement_bars_html(dis: Disagreement, top: int = 15, highlight: str | None = None) -> str:
    """The ``top`` anchors of a disagreement as horizontal bars, largest first: bar length
    ``mean |Δ A_S| / max`` over the shown anchors, red where the two estimators pick a different
    best action, grey where they agree, ``highlight`` (an anchor label) in the highlight colour.
    With more than one group in ``dis`` each name is ``group / anchor``."""
    rows = dis.anchors[:top]
    cmp_ = dis.comparison
    head = (f'<div style="font-weight:600;margin-bottom:6px">{esc(cmp_.x_label)} vs {esc(cmp_.y_label)}: '
            f'mean |Δ A_S| per anchor <span style="font-weight:400;color:#666">(red: they pick a different '
            f'best action)</span></div>')
    if not rows:
        return f'<div class="crbc-dis-bars" style="{FONT}">{head}<div>No anchor to rank.</div></div>'
    multi = len({r.group for r in dis.anchors}) > 1
    biggest = max(r.disagreement for r in rows) or 1.0
    out = []
    for r in rows:
        name = f"{r.group} / {r.anchor}" if multi else r.anchor
        color = HIGHLIGHT if r.anchor == highlight else (DIFFERS if r.ranks_differ else AGREES)
        pct = max(0.0, min(100.0, 100.0 * r.disagreement / biggest))
        tip = (f"{_one_line(name, 2000)}\nmean |Δ A_S| = {r.disagreement:.4f}\nvisits {r.visits}, "
               f"actions {r.actions}\nbest action differs: {'yes' if r.ranks_differ else 'no'}")
        out.append(
            f'<div class="crbc-dis-bar" title="{esc(tip)}" style="display:grid;'
            f'grid-template-columns:minmax(0,2fr) 3fr 4.5em;gap:8px;align-items:center;margin:2px 0">'
            f'<div style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis">{esc(_one_line(name, 80))}</div>'
            f'<div style="background:#f0f2f6;height:14px"><div style="width:{pct:.2f}%;height:100%;'
            f'background:{color}"></div></div>'
            f'<div style="text-align:right;font-variant-numeric:tabular-nums">{r.disagreement:.3f}</div></div>')
    return f'<div class="crbc-dis-bars" style="{FONT}">{head}{"".join(out)}</div>'


# ---------------------------------------------------------------- credit intervals


def _span(rows: Sequence[dict[str, Any]], keys: Sequence[str], with_zero: bool) -> tuple[float, float]:
    vals = [float(r[k]) for r in rows for k in keys if not _missing(r.get(k))]
    if with_zero:
        vals.append(0.0)
    if not vals:
        return -1.0, 1.0
    lo, hi = min(vals), max(vals)
    pad = 0.06 * (hi - lo) if hi > lo else max(abs(lo), 1.0) * 0.5
    return lo - pad, hi + pad


def _whisker(mid: Any, lo: Any, hi: Any, span: tuple[float, float], color: str, zero: bool) -> str:
    """One row of one panel: a line from lo to hi and a dot at mid, placed on ``span``."""
    a, b = span
    x = lambda v: 100.0 * (float(v) - a) / (b - a)  # noqa: E731 - a position in percent
    parts = ['<div style="position:relative;height:22px">']
    if zero:
        parts.append(f'<div style="position:absolute;top:0;bottom:0;left:{x(0):.2f}%;'
                     f'border-left:1px dashed #888"></div>')
    if _missing(mid):
        parts.append('<div style="position:absolute;left:4px;top:3px;color:#999">—</div>')
    else:
        if not (_missing(lo) or _missing(hi)):
            parts.append(f'<div style="position:absolute;top:10px;height:2px;left:{x(lo):.2f}%;'
                         f'width:{max(x(hi) - x(lo), 0.0):.2f}%;background:{color}"></div>')
        parts.append(f'<div style="position:absolute;top:6px;width:10px;height:10px;margin-left:-5px;'
                     f'border-radius:50%;left:{x(mid):.2f}%;background:{color}"></div>')
    parts.append("</div>")
    return "".join(parts)


def interval_panels_html(rows: Sequence[dict[str, Any]], level: float) -> str:
    """Two panels, one line per action (``crbc.estimators.bootstrap.pair_table`` rows: ``action``,
    ``n``, ``q``, ``q_lo``, ``q_hi``, ``credit``, ``lo``, ``hi``, ``evidence``): Q with its
    interval and Q - V with its interval, a dashed line at 0 in the second. A dot is the estimate,
    its line the ``level`` interval; blue where the interval excludes 0 (sure), grey where it
    does not, light grey where the credit is 0 by construction. Each panel has one x scale for
    all actions, printed under it; a missing value is a dash."""
    q_span = _span(rows, ("q", "q_lo", "q_hi"), with_zero=False)
    c_span = _span(rows, ("credit", "lo", "hi"), with_zero=True)
    grid = "display:grid;grid-template-columns:minmax(0,1.3fr) 2fr 2fr;gap:0 14px;align-items:center"
    out = [f'<div style="{grid};font-weight:600;color:#555867"><div>action (n)</div>'
           f'<div>Q(s,a), {level:.0%} interval</div><div>Q − V, {level:.0%} interval</div></div>']
    for r in rows:
        color = EVIDENCE_COLORS.get(r.get("evidence"), "#999999")
        tip = (f"{_one_line(r['action'], 2000)} (n={r['n']})\nQ = {fmt(r['q'], 3)} "
               f"[{fmt(r['q_lo'], 3)}, {fmt(r['q_hi'], 3)}]\nQ − V = {fmt(r['credit'], 3)} "
               f"[{fmt(r['lo'], 3)}, {fmt(r['hi'], 3)}]\nevidence: {r.get('evidence')}")
        out.append(f'<div class="crbc-interval" title="{esc(tip)}" style="{grid};border-top:1px solid #eef0f4">'
                   f'<div style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis">'
                   f'{esc(_one_line(r["action"], 40))} (n={int(r["n"])})</div>'
                   f'{_whisker(r["q"], r["q_lo"], r["q_hi"], q_span, color, zero=False)}'
                   f'{_whisker(r["credit"], r["lo"], r["hi"], c_span, color, zero=True)}</div>')

    def axis(span: tuple[float, float], zero: bool) -> str:
        a, b = span
        mid = (f'<span style="position:absolute;left:{100 * -a / (b - a):.2f}%;transform:translateX(-50%)">0</span>'
               if zero and a < 0 < b else "")
        return (f'<div style="position:relative;height:16px;color:#666;font-size:11px">'
                f'<span style="position:absolute;left:0">{a:+.3g}</span>{mid}'
                f'<span style="position:absolute;right:0">{b:+.3g}</span></div>')

    out.append(f'<div style="{grid};border-top:1px solid #c9ccd3"><div></div>{axis(q_span, False)}'
               f'{axis(c_span, True)}</div>')
    return f'<div class="crbc-intervals" style="{FONT}">{"".join(out)}</div>'


# ---------------------------------------------------------------- backup tree


def _free_spot(x1: float, y1: float, x2: float, y2: float, placed: list[tuple[float, float]],
               box: tuple[float, float] = (56.0, 16.0)) -> tuple[float, float]:
    """Where to write an edge's label: the first point at 55, 75, 35, 85 or 25 % of the way from
    (x1, y1) to (x2, y2) whose ``box`` (width, height) overlaps no label in ``placed`` (else the
    55 % point); the spot is appended to ``placed``. Edges that converge on one successor, or
    cross, would otherwise write their P labels over each other."""
    spots = [(x1 + f * (x2 - x1), y1 + f * (y2 - y1)) for f in (0.55, 0.75, 0.35, 0.85, 0.25)]
    free = next((pt for pt in spots if all(abs(pt[0] - qx) >= box[0] or abs(pt[1] - qy) >= box[1]
                                           for qx, qy in placed)), spots[0])
    placed.append(free)
    return free


def backup_tree_svg(ar: AnchorArithmetic, label_chars: int = 32) -> str:
    """The backup tree at one anchor as SVG: the anchor (left, coloured by its V) -> each observed
    action (middle, a square coloured by its A_S on the credit scale; the edge's width grows with
    mu) -> each successor (right, coloured by V; z+ green, z- red; grey at K = 0, where nothing is
    backed up; the edge's width grows with P). Labels are cut to ``label_chars`` characters,
    the whole string in the node's tooltip. Width 680 user units (about a page column, so text
    is drawn near its own size), 100 per row."""
    succ: dict[str, float | None] = {}
    for a in ar.actions:
        for x in a.successors:
            succ.setdefault(x.label, x.v)
    n_a, n_x = len(ar.actions), max(len(succ), 1)
    span = max(n_a, n_x, 2)
    row_h, top = 100.0, 30.0
    width, height = 680.0, top + row_h * span

    def y_of(i: int, n: int) -> float:
        return top + row_h * (span - n) / 2 + row_h * (i + 0.5)

    xa_, xs_, xx_ = 50.0, 270.0, 470.0
    y0 = top + row_h * span / 2
    ya = {a.action: y_of(i, n_a) for i, a in enumerate(ar.actions)}
    yx = {lab: y_of(i, n_x) for i, lab in enumerate(succ)}
    edges, notes, nodes = [], [], []
    placed: list[tuple[float, float]] = []
    note = ('<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="12" fill="#555" '
            'paint-order="stroke" stroke="white" stroke-width="4">{t}</text>')
    for a in ar.actions:
        edges.append(f'<line x1="{xa_}" y1="{y0:.1f}" x2="{xs_}" y2="{ya[a.action]:.1f}" stroke="{EDGE_COLOR}" '
                     f'stroke-width="{1 + 6 * a.mu:.2f}"/>')
        notes.append(note.format(x=(xa_ + xs_) / 2, y=(y0 + ya[a.action]) / 2, t=f"mu={fmt(a.mu, 3)}"))
        for x in a.successors:
            edges.append(f'<line x1="{xs_}" y1="{ya[a.action]:.1f}" x2="{xx_}" y2="{yx[x.label]:.1f}" '
                         f'stroke="{EDGE_COLOR}" stroke-width="{1 + 6 * x.p:.2f}"/>')
            lx, ly = _free_spot(xs_, ya[a.action], xx_, yx[x.label], placed)
            notes.append(note.format(x=lx, y=ly, t=f"P={fmt(x.p, 3)}"))
    k = "" if ar.depth is None else f"({ar.depth})"
    nodes.append(f'<g data-node="anchor"><title>{esc(ar.label)}</title>'
                 f'<circle cx="{xa_}" cy="{y0:.1f}" r="17" fill="{v_color(ar.v)[0]}" stroke="#333"/>'
                 f'<text x="{xa_}" y="{y0 + 34:.1f}" text-anchor="middle" font-weight="600">'
                 f'{esc(_one_line(ar.label, 18))}</text>'
                 f'<text x="{xa_}" y="{y0 + 50:.1f}" text-anchor="middle">V{k}={fmt(ar.v)}</text></g>')
    amax = max([abs(a.a_s) for a in ar.actions] + [1e-9])
    for a in ar.actions:
        y = ya[a.action]
        nodes.append(f'<g data-node="action" data-label="{esc(a.action)}"><title>{esc(a.action)}</title>'
                     f'<rect x="{xs_ - 11}" y="{y - 11:.1f}" width="22" height="22" '
                     f'fill="{signed_color(a.a_s, amax)[0]}" stroke="#333"/>'
                     f'<text x="{xs_}" y="{y - 46:.1f}" text-anchor="middle" font-weight="600">'
                     f'{esc(_one_line(a.action, label_chars))}</text>'
                     f'<text x="{xs_}" y="{y - 31:.1f}" text-anchor="middle">Q={fmt(a.q)}</text>'
                     f'<text x="{xs_}" y="{y - 16:.1f}" text-anchor="middle">A_S={fmt(a.a_s, 2, True)}</text></g>')
    v_name = "V" if ar.depth in (None, 0) else f"V({ar.depth - 1})"
    for lab, v in succ.items():
        y = yx[lab]
        no_value = _missing(v)
        fill = (Z_PLUS_COLOR if lab == "z+" else Z_MINUS_COLOR if lab == "z-"
                else NO_VALUE_COLOR if no_value else v_color(v)[0])
        value = "" if no_value else f'<tspan x="{xx_ + 20}" dy="16">{v_name}={fmt(v)}</tspan>'
        nodes.append(f'<g data-node="successor" data-label="{esc(lab)}" data-fill="{fill}">'
                     f'<title>{esc(lab)}</title>'
                     f'<circle cx="{xx_}" cy="{y:.1f}" r="13" fill="{fill}" stroke="#333"/>'
                     f'<text x="{xx_ + 20}" y="{y - 3:.1f}"><tspan font-weight="600">'
                     f'{esc(_one_line(lab, label_chars - 4))}</tspan>{value}</text></g>')
    return (f'<svg class="crbc-backup-tree" viewBox="0 0 {width:.0f} {height:.0f}" width="100%" '
            f'style="max-height:{height:.0f}px;{FONT}" font-size="13" fill="#31333f" '
            f'role="img" aria-label="backup tree">'
            f'{"".join(edges)}{"".join(notes)}{"".join(nodes)}</svg>')
