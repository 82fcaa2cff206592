"""Line charts as static SVG (shown by :func:`ui.svg_view.svg_view`): no plotly.js on the page.

For the curves over the depth K (the Lesson's A^(K), the Bellman backups' errors and coverage):
a few series of at most a few hundred points, read by eye and by hovering a point (its
tooltip names the series, x and y). Linear or log-10 y axis, round tick values, optional
vertical and horizontal marker lines, a legend under the plot. Every name is HTML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crbc.viz.style import esc

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#ff7f0e")


@dataclass(frozen=True)
class Series:
    """One line: ``y`` over ``x`` (NaN and, on a log axis, non-positive points are left out and
    break the line), drawn in ``color``; ``dash`` an SVG dash pattern ("6 4") or None for solid;
    ``legend``: listed under the plot."""

    name: str
    x: Sequence[float]
    y: Sequence[float]
    color: str
    dash: str | None = None
    markers: bool = True
    legend: bool = True


@dataclass(frozen=True)
class Mark:
    """A vertical (``at`` on x) or horizontal (``at`` on y) line across the plot, with a label."""

    at: float
    label: str
    color: str = "#888"
    dash: str | None = "4 3"
    label_x: float | None = None  # a horizontal mark's label at this x (default: the left edge)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, about
    ``count`` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    return [round(start + i * step, 12) for i in range(int((hi - start) / step + 1e-9) + 1)]


def _label(v: float, percent: bool, log: bool) -> str:
    if percent:
        return f"{v:.0%}"
    if log:
        return f"1e{int(round(v))}"
    return f"{v:g}"


def line_chart_svg(series: Sequence[Series], *, x_title: str = "", y_title: str = "",
                   log_y: bool = False, y_range: tuple[float, float] | None = None,
                   percent_y: bool = False, x_marks: Sequence[Mark] = (), y_marks: Sequence[Mark] = (),
                   width: int = 680, height: int = 300) -> str:
    """The series on one plot of ``width`` x ``height`` user units (the SVG scales to its column).
    ``log_y``: the y axis is log10 (ticks at powers of ten); ``y_range``: fixed limits (else the
    data's, padded 5 %); ``percent_y``: y tick labels as percentages; ``x_marks`` / ``y_marks``:
    vertical / horizontal marker lines. Integer x ticks when every x is a whole number."""
    def ty(v: float) -> float:
        return math.log10(v) if log_y else v

    pts = [[(float(x), ty(float(y))) for x, y in zip(s.x, s.y, strict=True)
            if y is not None and math.isfinite(float(y)) and (not log_y or float(y) > 0)] for s in series]
    xs_all = [x for ps in pts for x, _ in ps] + [m.at for m in x_marks]
    ys_all = [y for ps in pts for _, y in ps] + [ty(m.at) for m in y_marks if not log_y or m.at > 0]
    x_lo, x_hi = (min(xs_all), max(xs_all)) if xs_all else (0.0, 1.0)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5
    if y_range is not None:
        y_lo, y_hi = ty(y_range[0]), ty(y_range[1])
    else:
        y_lo, y_hi = (min(ys_all), max(ys_all)) if ys_all else (0.0, 1.0)
        pad = 0.05 * (y_hi - y_lo) if y_hi > y_lo else max(abs(y_lo) * 0.1, 0.5)
        y_lo, y_hi = y_lo - pad, y_hi + pad
    legend_items = [s for s in series if s.legend]
    per_row = max(1, int((width - 72) // 200))
    legend_h = 20 * math.ceil(len(legend_items) / per_row)
    left, right, top = 58.0, 14.0, 10.0
    bottom = 38.0 + (14 if x_title else 0)
    plot_h = height - top - bottom
    plot_w = width - left - right

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

    out = [f'<rect x="{left}" y="{top}" width="{plot_w:.1f}" height="{plot_h:.1f}" fill="white" stroke="#ddd"/>']
    y_ticks = ([float(k) for k in range(math.ceil(y_lo), math.floor(y_hi) + 1)] if log_y
               else nice_ticks(y_lo, y_hi))
    if log_y and len(y_ticks) > 8:
        y_ticks = y_ticks[:: math.ceil(len(y_ticks) / 8)]
    for v in y_ticks:
        if y_lo <= v <= y_hi:
            out.append(f'<line x1="{left}" x2="{left + plot_w:.1f}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>'
                       f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end" fill="#666">'
                       f'{_label(v, percent_y, log_y)}</text>')
    whole = all(float(x).is_integer() for x in xs_all)
    x_ticks = nice_ticks(x_lo, x_hi, 8)
    if whole:
        x_ticks = sorted({int(round(t)) for t in x_ticks if float(t).is_integer()}) or [int(x_lo)]
    for v in x_ticks:
        out.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{top}" y2="{top + plot_h:.1f}" stroke="#f2f2f2"/>'
                   f'<text x="{px(v):.1f}" y="{top + plot_h + 16:.1f}" text-anchor="middle" fill="#666">{v:g}</text>')
    if x_title:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34:.1f}" text-anchor="middle" '
                   f'fill="#444">{esc(x_title)}</text>')
    if y_title:
        out.append(f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
                   f'fill="#444">{esc(y_title)}</text>')
    for m in y_marks:
        if (not log_y or m.at > 0) and y_lo <= ty(m.at) <= y_hi:
            y = py(ty(m.at))
            dash = f' stroke-dasharray="{m.dash}"' if m.dash else ""
            lx = left + 6 if m.label_x is None else px(m.label_x)
            anchor = "start" if lx < left + plot_w * 0.6 else "end"
            out.append(f'<line x1="{left}" x2="{left + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{m.color}"{dash}/>'
                       f'<text class="crbc-mark" data-x="{m.label_x if m.label_x is not None else x_lo:g}" '
                       f'x="{lx:.1f}" y="{y - 4:.1f}" text-anchor="{anchor}" fill="{m.color}" '
                       f'font-size="11">{esc(m.label)}</text>')
    for m in x_marks:
        x = px(m.at)
        dash = f' stroke-dasharray="{m.dash}"' if m.dash else ""
        anchor = "start" if x < left + plot_w * 0.7 else "end"
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h:.1f}" stroke="{m.color}" '
                   f'stroke-width="2"{dash}/><text x="{x + (4 if anchor == "start" else -4):.1f}" y="{top + 12:.1f}" '
                   f'text-anchor="{anchor}" fill="{m.color}" font-size="11">{esc(m.label)}</text>')
    for s, ps in zip(series, pts, strict=True):
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        runs, run = [], []
        for x, y in zip(s.x, s.y, strict=True):  # a missing point breaks the line
            ok = y is not None and math.isfinite(float(y)) and (not log_y or float(y) > 0)
            if ok:
                run.append(f"{px(float(x)):.1f},{py(ty(float(y))):.1f}")
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
        for r in runs:
            out.append(f'<polyline points="{" ".join(r)}" fill="none" stroke="{s.color}" stroke-width="2"{dash}/>')
        if s.markers:
            r = 3.5 if len(ps) <= 40 else 2.0 if len(ps) <= 120 else 1.3  # long curves: small dots
            for x, y in ps:
                shown = 10 ** y if log_y else y
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{r}" fill="{s.color}">'
                           f'<title>{esc(s.name)}: x = {x:g}, y = {shown:.4g}</title></circle>')
    for i, s in enumerate(legend_items):
        lx = left + (i % per_row) * (plot_w / per_row)
        ly = height + 14 + 20 * (i // per_row)
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly - 4:.1f}" y2="{ly - 4:.1f}" stroke="{s.color}" '
                   f'stroke-width="2"{dash}/><text x="{lx + 28:.1f}" y="{ly:.1f}">{esc(s.name[:48])}</text>')
    total_h = height + legend_h + (8 if legend_h else 0)
    return (f'<svg class="crbc-line-chart" viewBox="0 0 {width} {total_h}" width="100%" font-size="12" '
            f'fill="#31333f" role="img" style="max-width:{width * 1.4:.0f}px;font-family:\'Source Sans\',sans-serif">'
            f'{"".join(out)}</svg>')


def column_series(names: Sequence[str], x: Sequence[float], columns: Sequence[Sequence[float]]) -> list[Series]:
    """One solid series per column, coloured from :data:`PALETTE` in order."""
    return [Series(n, x, list(np.asarray(c, dtype=float)), PALETTE[i % len(PALETTE)])
            for i, (n, c) in enumerate(zip(names, columns, strict=True))]
