"""An anchor's credit intervals (the Inspector): per action, Q and Q - V with their intervals,
as two HTML panels on one scale each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crbc.explain.table_rows import fmt
from crbc.viz.core.html import FONT
from crbc.viz.core.text import esc, missing, one_line

__all__ = ["EVIDENCE_COLORS", "interval_panels_html"]

EVIDENCE_COLORS = {"sure": "#1f5fa8", "unsure": "#999999", "none": "#cccccc"}


def _span(rows: Sequence[dict[str, Any]], keys: Sequence[str], with_zero: bool) -> tuple[float, float]:
    vals = [float(r[k]) for r in rows for k in keys if not missing(r.get(k))]
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
    if missing(mid):
        parts.append('<div style="position:absolute;left:4px;top:3px;color:#999">—</div>')
    else:
        if not (missing(lo) or missing(hi)):
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
        tip = (f"{one_line(r['action'], 2000)} (n={r['n']})\nQ = {fmt(r['q'], 3)} "
               f"[{fmt(r['q_lo'], 3)}, {fmt(r['q_hi'], 3)}]\nQ − V = {fmt(r['credit'], 3)} "
               f"[{fmt(r['lo'], 3)}, {fmt(r['hi'], 3)}]\nevidence: {r.get('evidence')}")
        out.append(f'<div class="crbc-interval" title="{esc(tip)}" style="{grid};border-top:1px solid #eef0f4">'
                   f'<div style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis">'
                   f'{esc(one_line(r["action"], 40))} (n={int(r["n"])})</div>'
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
