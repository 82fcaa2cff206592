"""Line charts as static SVG (shown by :func:`ui.svg_view.svg_view`), built on the server.

For the curves over the depth K (the Lesson's A^(K), the Bellman backups' errors and coverage)
and over training iterations (:mod:`crbc.viz.runs`): a few series of at most a few thousand
points, read by eye and by hovering (a point's tooltip names its series, x and y; a line's
names its series). Linear or log-10 y axis, an optional linear right axis, round tick values,
shaded bands, clickable points (``data-pick``), vertical and horizontal marker lines, a legend
under the plot, and :func:`grid_svg` for small multiples with one shared legend. Every user
string is escaped with :func:`crbc.viz.style.esc`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crbc.viz.style import esc

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#ff7f0e")
ZERO_COLOR = "#888"
# a faint line (opacity < 1) is drawn at full strength while the pointer is on it or its points
_STYLE = "<style>.crbc-faint:hover polyline{stroke-opacity:1;stroke-width:2.5}</style>"


@dataclass(frozen=True)
class Series:
    """One line: ``y`` over ``x`` (NaN and, on a log axis, non-positive points are left out and
    break the line), drawn in ``color`` at ``width`` and ``opacity``; ``dash`` an SVG dash
    pattern ("6 4") or None for solid; ``legend``: listed under the plot.

    ``band = (lo, hi)``, both of ``len(x)``: a filled polygon from lo to hi in the series' colour
    at 0.15 opacity, under every line (``band_label`` in its tooltip). ``picks``: per point, a
    click value (the point carries ``data-pick``, with an invisible hit circle about it, even
    when ``markers`` is False). ``tips``: per point, its tooltip (default "name: x = .., y = ..");
    ``point_tips=False``: no tooltip per point (the line's name shows instead; for big series).
    ``right_axis``: on the chart's right y axis. ``lines=False``: points only (a scatter; the
    dots half transparent, of radius ``marker_r`` when given).
    """

    name: str
    x: Sequence[float]
    y: Sequence[float]
    color: str
    dash: str | None = None
    markers: bool = True
    legend: bool = True
    band: tuple[Sequence[float], Sequence[float]] | None = None
    band_label: str = ""
    picks: Sequence[str] | None = None
    tips: Sequence[str] | None = None
    point_tips: bool = True
    right_axis: bool = False
    width: float = 2.0
    opacity: float = 1.0
    lines: bool = True
    marker_r: float | None = None


@dataclass(frozen=True)
class Mark:
    """A vertical (``at`` on x) or horizontal (``at`` on y) line across the plot, with a label
    (none when empty)."""

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


def _label(v: float, percent: bool, log: bool, step: float = 1.0) -> str:
    """A tick label; percentages get as many decimals as the tick step needs (0.5 % steps: 1)."""
    if percent:
        digits = max(0, math.ceil(-math.log10(step * 100) - 1e-9)) if step > 0 else 0
        return f"{v:.{digits}%}"
    if log:
        return f"1e{int(round(v))}"
    return f"{v:g}"


def _arr(seq: Sequence[float]) -> np.ndarray:
    """A float array of ``seq`` (None as NaN)."""
    return np.array(seq if len(seq) else [], dtype=float)


def _stretches(mask: np.ndarray) -> list[np.ndarray]:
    """Indices of the unbroken stretches of True in ``mask`` (a False point breaks the line)."""
    idx = np.flatnonzero(mask)
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if len(idx) else []


def _pts(xs: np.ndarray, ys: np.ndarray) -> str:
    """"x,y x,y ..." with one decimal (formatted in one go: many thousand points per chart)."""
    return " ".join(["%.1f,%.1f"] * len(xs)) % tuple(np.column_stack([xs, ys]).ravel().tolist())


def _range(vals, symmetric: bool) -> tuple[float, float]:
    """An axis range over ``vals``, padded 5 % (symmetric: +-max |v|, padded)."""
    v = np.asarray(vals, dtype=float)
    if not len(v):
        return (-1.0, 1.0) if symmetric else (0.0, 1.0)
    if symmetric:
        top = float(np.abs(v).max()) * 1.05 or 1.0
        return -top, top
    lo, hi = float(v.min()), float(v.max())
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(lo) * 0.1, 0.5)
    return lo - pad, hi + pad


def _legend(items: Sequence[Series], left: float, top: float, width: float) -> tuple[list[str], float]:
    """Legend rows from ``top`` across ``width`` (a swatch: the line, over its band if any); the
    markup and its height."""
    per_row = max(1, int(width // 200))
    out = []
    for i, s in enumerate(items):
        lx = left + (i % per_row) * (width / per_row)
        ly = top + 14 + 20 * (i // per_row)
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        if s.band is not None:
            out.append(f'<rect x="{lx:.1f}" y="{ly - 10:.1f}" width="22" height="12" fill="{s.color}" '
                       f'fill-opacity="0.15"/>')
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly - 4:.1f}" y2="{ly - 4:.1f}" stroke="{s.color}" '
                   f'stroke-width="2"{dash}/><text x="{lx + 28:.1f}" y="{ly:.1f}">{esc(s.name[:48])}</text>')
    rows = math.ceil(len(items) / per_row)
    return out, (20 * rows + 8 if rows else 0)


def _open(width: float, height: float) -> str:
    return (f'<svg class="crbc-line-chart" viewBox="0 0 {width:g} {height:g}" width="100%" font-size="12" '
            f'fill="#31333f" role="img" style="max-width:{width * 1.4:.0f}px;font-family:\'Source Sans\',sans-serif">')


def line_chart_svg(series: Sequence[Series], *, x_title: str = "", y_title: str = "",
                   log_y: bool = False, y_range: tuple[float, float] | None = None,
                   percent_y: bool = False, x_marks: Sequence[Mark] = (), y_marks: Sequence[Mark] = (),
                   width: int = 680, height: int = 300, y2_title: str = "",
                   y2_range: tuple[float, float] | None = None, percent_y2: bool = False,
                   y_symmetric: bool = False, zero_line: bool | None = None,
                   show_legend: bool = True, x_ticks: Sequence[tuple[float, str]] | None = None) -> str:
    """The series on one plot of ``width`` x ``height`` user units plus the legend's rows (the
    SVG scales to its column).

    ``log_y``: the y axis is log10 (ticks at powers of ten); ``y_range``: fixed limits (else the
    data's, padded 5 %); ``percent_y``: y tick labels as percentages; ``x_marks`` / ``y_marks``:
    vertical / horizontal marker lines (left axis). Integer x ticks when every x is a whole
    number. Series with ``right_axis`` use a linear right axis (``y2_range``, ``y2_title``,
    ``percent_y2``; ticks on the right). ``y_symmetric``: each axis without a fixed range spans
    +-(its largest |y| or band end) x 1.05, so both axes put 0 at the same height; ``zero_line``
    (default: ``y_symmetric``) draws y = 0 darker. ``show_legend=False`` leaves the legend out
    (:func:`grid_svg` draws one for all panels). ``x_ticks``: the x axis' ticks as ``(x, label)``
    pairs (e.g. a log axis drawn on log2 G, labelled with G) instead of round values.
    """
    def ty(v):  # a value on the left axis' scale (log10 on a log axis)
        return np.log10(v) if log_y else v

    arrays = []  # per series: x, y, the points drawn, and its band (lo, hi) as arrays
    for s in series:
        x, y = _arr(s.x), _arr(s.y)
        if len(x) != len(y):
            raise ValueError(f"series {s.name!r}: {len(x)} x values, {len(y)} y values")
        with np.errstate(invalid="ignore"):
            good = np.isfinite(y) & ((y > 0) if log_y and not s.right_axis else True)
        band = None if s.band is None else (_arr(s.band[0]), _arr(s.band[1]))
        arrays.append((x, y, good, band))

    def values(right_axis: bool) -> np.ndarray:
        parts = [np.empty(0)]
        for s, (_, y, good, band) in zip(series, arrays, strict=True):
            if s.right_axis == right_axis:
                parts.append(y[good])
                if band is not None:
                    for b in band:
                        with np.errstate(invalid="ignore"):
                            parts.append(b[np.isfinite(b) & ((b > 0) if log_y and not right_axis else True)])
        return np.concatenate(parts)

    right_s = [s for s in series if s.right_axis]
    xs_all = np.concatenate([np.empty(0)] + [x[good] for x, _, good, _ in arrays] + [_arr([m.at for m in x_marks])])
    x_lo, x_hi = (float(xs_all.min()), float(xs_all.max())) if len(xs_all) else (0.0, 1.0)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5
    if y_range is not None:
        y_lo, y_hi = float(ty(y_range[0])), float(ty(y_range[1]))
    else:
        ys = np.concatenate([ty(values(False)), ty(_arr([m.at for m in y_marks if not log_y or m.at > 0]))])
        y_lo, y_hi = _range(ys, y_symmetric and not log_y)
    y2_lo, y2_hi = y2_range if y2_range is not None else _range(values(True), y_symmetric)
    left, right, top = 58.0, (58.0 if right_s else 14.0), 10.0
    bottom = 38.0 + (14 if x_title else 0)
    plot_h = height - top - bottom
    plot_w = width - left - right

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

    def py2(y: float) -> float:
        return top + (1 - (y - y2_lo) / (y2_hi - y2_lo)) * plot_h

    out = [f'<rect x="{left}" y="{top}" width="{plot_w:.1f}" height="{plot_h:.1f}" fill="white" stroke="#ddd"/>']
    y_ticks = ([float(k) for k in range(math.ceil(y_lo), math.floor(y_hi) + 1)] if log_y
               else nice_ticks(y_lo, y_hi))
    if log_y and len(y_ticks) > 8:
        y_ticks = y_ticks[:: math.ceil(len(y_ticks) / 8)]
    step = y_ticks[1] - y_ticks[0] if len(y_ticks) > 1 else 1.0
    for v in y_ticks:
        if y_lo <= v <= y_hi:
            out.append(f'<line x1="{left}" x2="{left + plot_w:.1f}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>'
                       f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end" fill="#666">'
                       f'{_label(v, percent_y, log_y, step)}</text>')
    if right_s:
        ticks2 = nice_ticks(y2_lo, y2_hi)
        step2 = ticks2[1] - ticks2[0] if len(ticks2) > 1 else 1.0
        for v in ticks2:
            if y2_lo <= v <= y2_hi:
                out.append(f'<text class="crbc-y2" x="{left + plot_w + 6:.1f}" y="{py2(v) + 4:.1f}" fill="#666">'
                           f'{_label(v, percent_y2, False, step2)}</text>')
    if x_ticks is None:
        whole = bool(np.all(np.mod(xs_all, 1) == 0))
        ticks = nice_ticks(x_lo, x_hi, max(2, min(8, int(plot_w // 40))))
        if whole:
            ticks = sorted({int(round(t)) for t in ticks if float(t).is_integer()}) or [int(x_lo)]
        x_ticks = [(float(v), f"{v:g}") for v in ticks]
    for v, text in x_ticks:
        out.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{top}" y2="{top + plot_h:.1f}" stroke="#f2f2f2"/>'
                   f'<text x="{px(v):.1f}" y="{top + plot_h + 16:.1f}" text-anchor="middle" fill="#666">{esc(text)}</text>')
    if x_title:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34:.1f}" text-anchor="middle" '
                   f'fill="#444">{esc(x_title)}</text>')
    if y_title:
        out.append(f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
                   f'fill="#444">{esc(y_title)}</text>')
    if y2_title and right_s:
        out.append(f'<text transform="translate({width - 10:.1f} {top + plot_h / 2:.1f}) rotate(90)" '
                   f'text-anchor="middle" fill="#444">{esc(y2_title)}</text>')
    if (y_symmetric if zero_line is None else zero_line) and not log_y and y_lo < 0 < y_hi:
        out.append(f'<line class="crbc-zero" x1="{left}" x2="{left + plot_w:.1f}" y1="{py(0):.1f}" '
                   f'y2="{py(0):.1f}" stroke="{ZERO_COLOR}"/>')
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
                   f'stroke-width="2"{dash}/>')
        if m.label:
            out.append(f'<text x="{x + (4 if anchor == "start" else -4):.1f}" y="{top + 12:.1f}" '
                       f'text-anchor="{anchor}" fill="{m.color}" font-size="11">{esc(m.label)}</text>')
    for s, (x, _, _, band) in zip(series, arrays, strict=True):  # every band under every line
        if band is None:
            continue
        fy = py2 if s.right_axis else (lambda v: py(ty(v)))
        lo, hi = band
        with np.errstate(invalid="ignore"):
            both = np.isfinite(lo) & np.isfinite(hi) & (((lo > 0) & (hi > 0)) if log_y and not s.right_axis else True)
        tip = f"{s.name}: {s.band_label}" if s.band_label else s.name
        for k in _stretches(both):
            ring = np.concatenate([k, k[::-1]])
            out.append(f'<polygon class="crbc-band" points="{_pts(px(x[ring]), fy(np.concatenate([hi[k], lo[k][::-1]])))}" '
                       f'fill="{s.color}" fill-opacity="0.15" stroke="none"><title>{esc(tip)}</title></polygon>')
    for s, arr in zip(series, arrays, strict=True):
        out.append(_series(s, arr, px, py2 if s.right_axis else (lambda v: py(ty(v))),
                           percent_y2 if s.right_axis else percent_y and not log_y, plot_w))
    legend_items = [s for s in series if s.legend] if show_legend else []
    leg, legend_h = _legend(legend_items, left, height, plot_w)
    out += leg
    style = _STYLE if any(s.opacity < 1 for s in series) else ""
    return f"{_open(width, height + legend_h)}{style}{''.join(out)}</svg>"


def _series(s: Series, arr, px, fy, percent: bool, plot_w: float) -> str:
    """One series as a group titled with its name: a polyline per unbroken stretch, then its
    points (visible markers and/or clickable hit circles with tooltips)."""
    x, y, good, _ = arr
    dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
    alpha = f' stroke-opacity="{s.opacity:g}"' if s.opacity < 1 else ""
    fill = ' fill="transparent"' if s.picks is not None else ""  # the hit circles'
    out = [f'<g class="crbc-series{" crbc-faint" if s.opacity < 1 else ""}"{fill}><title>{esc(s.name)}</title>']
    for k in _stretches(good) if s.lines else ():
        out.append(f'<polyline points="{_pts(px(x[k]), fy(y[k]))}" fill="none" stroke="{s.color}" '
                   f'stroke-width="{s.width:g}"{alpha}{dash}/>')
    if s.markers or s.picks is not None:
        idx = np.flatnonzero(good)
        r = s.marker_r or (3.5 if len(idx) <= 40 else 2.0 if len(idx) <= 120 else 1.3)  # long curves: small dots
        xs = np.unique(x[idx])
        gap = float(np.diff(px(xs)).min()) if len(xs) > 1 else 14.0
        hit = min(7.0, max(3.0, 0.5 * gap))  # about half the distance to the next point
        cxs, cys = px(x[idx]).tolist(), fy(y[idx]).tolist()
        for i, cx, cy in zip(idx.tolist(), cxs, cys, strict=True):
            if not s.point_tips:
                tip = ""
            elif s.tips is not None:
                tip = f"<title>{esc(s.tips[i])}</title>"
            else:
                shown = f"{y[i]:.1%}" if percent else f"{y[i]:.4g}"
                tip = f"<title>{esc(s.name)}: x = {x[i]:g}, y = {shown}</title>"
            dot = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" fill="{s.color}"' + ("" if s.lines else ' fill-opacity="0.6"')
            if s.picks is None:
                out.append(f"{dot}>{tip}</circle>" if s.markers else "")
            elif s.markers:  # the dot grows on hover (ui/svg_view.py's style), the hit circle catches clicks
                out.append(f'<g data-pick="{esc(s.picks[i])}">{tip}{dot} stroke="{s.color}" stroke-width="0"/>'
                           f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{hit:.0f}" stroke="none"/></g>')
            else:  # a bare hit circle, filled transparent by its series' group
                bare = f'<circle data-pick="{esc(s.picks[i])}" cx="{cx:.1f}" cy="{cy:.1f}" r="{hit:.0f}"'
                out.append(f"{bare}>{tip}</circle>" if tip else f"{bare}/>")
    out.append("</g>")
    return "".join(out)


_VIEWBOX = re.compile(r'^<svg class="crbc-line-chart" viewBox="0 0 ([0-9.]+) ([0-9.]+)"[^>]*>')


def grid_svg(panels: Sequence[str], titles: Sequence[str] = (), *, cols: int = 3,
             legend: Sequence[Series] = (), gap: float = 8.0) -> str:
    """Small multiples: charts of :func:`line_chart_svg` (built with ``show_legend=False``) laid
    out ``cols`` to a row as one SVG, each under its title (escaped, cut to 60 characters), and
    one legend of ``legend`` under the grid. A row is as tall as its tallest panel; the grid is
    ``cols`` x (widest panel + ``gap``) wide."""
    sizes, bodies = [], []
    for svg in panels:
        m = _VIEWBOX.match(svg)
        if m is None or not svg.endswith("</svg>"):
            raise ValueError("grid_svg takes charts made by line_chart_svg")
        sizes.append((float(m.group(1)), float(m.group(2))))
        bodies.append(svg[m.end():-len("</svg>")])
    cols = max(1, min(cols, len(panels) or 1))
    cell_w = max((w for w, _ in sizes), default=300.0) + gap
    head = 18.0 if titles else 0.0
    out, y = [], 0.0
    for row in range(math.ceil(len(panels) / cols)):
        cells = range(row * cols, min(len(panels), (row + 1) * cols))
        for i in cells:
            x = (i - row * cols) * cell_w
            if i < len(titles):
                out.append(f'<text class="crbc-panel-title" x="{x + 58 + (sizes[i][0] - 72) / 2:.1f}" '
                           f'y="{y + 13:.1f}" text-anchor="middle" font-weight="600" fill="#31333f">'
                           f'{esc(str(titles[i])[:60])}</text>')
            out.append(f'<g transform="translate({x:.1f} {y + head:.1f})">{bodies[i]}</g>')
        y += head + max(sizes[i][1] for i in cells) + gap
    width = cols * cell_w - gap
    leg, legend_h = _legend(list(legend), 58.0, y - gap, width - 72)
    return f"{_open(width, y - gap + legend_h)}{''.join(out)}{''.join(leg)}</svg>"


def column_series(names: Sequence[str], x: Sequence[float], columns: Sequence[Sequence[float]]) -> list[Series]:
    """One solid series per column, coloured from :data:`PALETTE` in order."""
    return [Series(n, x, list(np.asarray(c, dtype=float)), PALETTE[i % len(PALETTE)])
            for i, (n, c) in enumerate(zip(names, columns, strict=True))]
