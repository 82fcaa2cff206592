"""What a chart draws on its frame: series (lines, points, bands), marker lines, the legend.

Each ``*_svg`` function takes a fitted :class:`~crbc.viz.core.axes.Frame` and returns SVG text;
every user string is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crbc.viz.core.axes import Frame
from crbc.viz.core.svg import dash_attr, points, stretches
from crbc.viz.core.text import esc

__all__ = ["as_floats", "band_svg", "legend_svg", "Mark", "marks_svg", "Series", "series_svg"]


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

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` as float arrays (None as NaN); ValueError when their lengths differ."""
        x, y = as_floats(self.x), as_floats(self.y)
        if len(x) != len(y):
            raise ValueError(f"series {self.name!r}: {len(x)} x values, {len(y)} y values")
        return x, y


@dataclass(frozen=True)
class Mark:
    """A line across the plot at ``at``: vertical (``axis="x"``) or horizontal on the left y axis
    (``axis="y"``), with a label (none when empty); a horizontal mark's label sits at
    ``label_x`` (default: the left edge)."""

    at: float
    label: str
    color: str = "#888"
    dash: str | None = "4 3"
    label_x: float | None = None
    axis: str = "x"


def as_floats(seq: Sequence[float]) -> np.ndarray:
    """A float array of ``seq`` (None as NaN)."""
    return np.array(seq if len(seq) else [], dtype=float)


def band_svg(f: Frame, s: Series) -> str:
    """The series' band: a polygon from lo to hi per unbroken run of points where both are drawn."""
    if s.band is None:
        return ""
    x = as_floats(s.x)
    lo, hi = as_floats(s.band[0]), as_floats(s.band[1])
    both = f.shown(lo, s.right_axis) & f.shown(hi, s.right_axis)
    tip = f"{s.name}: {s.band_label}" if s.band_label else s.name
    out = []
    for k in stretches(both):
        ring = np.concatenate([k, k[::-1]])
        ys = f.py(np.concatenate([hi[k], lo[k][::-1]]), s.right_axis)
        out.append(f'<polygon class="crbc-band" points="{points(f.px(x[ring]), ys)}" '
                   f'fill="{s.color}" fill-opacity="0.15" stroke="none"><title>{esc(tip)}</title></polygon>')
    return "".join(out)


def series_svg(f: Frame, s: Series) -> str:
    """One series as a group titled with its name: a polyline per unbroken stretch, then its
    points (visible markers and/or clickable hit circles, radius about half the distance to the
    next point, 3 to 7, with tooltips)."""
    x, y = s.arrays()
    good = f.shown(y, s.right_axis)
    percent = f.y2.percent if s.right_axis and f.y2 is not None else f.y.percent and not f.y.log
    alpha = f' stroke-opacity="{s.opacity:g}"' if s.opacity < 1 else ""
    fill = ' fill="transparent"' if s.picks is not None else ""  # the hit circles'
    out = [f'<g class="crbc-series{" crbc-faint" if s.opacity < 1 else ""}"{fill}><title>{esc(s.name)}</title>']
    for k in stretches(good) if s.lines else ():
        out.append(f'<polyline points="{points(f.px(x[k]), f.py(y[k], s.right_axis))}" fill="none" '
                   f'stroke="{s.color}" stroke-width="{s.width:g}"{alpha}{dash_attr(s.dash)}/>')
    if s.markers or s.picks is not None:
        idx = np.flatnonzero(good)
        r = s.marker_r or (3.5 if len(idx) <= 40 else 2.0 if len(idx) <= 120 else 1.3)  # long curves: small dots
        xs = np.unique(x[idx])
        gap = float(np.diff(f.px(xs)).min()) if len(xs) > 1 else 14.0
        hit = min(7.0, max(3.0, 0.5 * gap))
        cxs, cys = f.px(x[idx]).tolist(), f.py(y[idx], s.right_axis).tolist()
        for i, cx, cy in zip(idx.tolist(), cxs, cys, strict=True):
            out.append(_point(s, i, cx, cy, r, hit, _tip(s, i, x[i], y[i], percent)))
    out.append("</g>")
    return "".join(out)


def _tip(s: Series, i: int, x: float, y: float, percent: bool) -> str:
    """Point ``i``'s ``<title>``: its given tip, else "name: x = .., y = ..", or none."""
    if not s.point_tips:
        return ""
    if s.tips is not None:
        return f"<title>{esc(s.tips[i])}</title>"
    shown = f"{y:.1%}" if percent else f"{y:.4g}"
    return f"<title>{esc(s.name)}: x = {x:g}, y = {shown}</title>"


def _point(s: Series, i: int, cx: float, cy: float, r: float, hit: float, tip: str) -> str:
    """A marker (a dot), a clickable marker (a dot and a hit circle under ``data-pick``; the dot
    grows on hover, ui/core/svg_view.py's style), or a bare hit circle."""
    dot = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" fill="{s.color}"' + ("" if s.lines else ' fill-opacity="0.6"')
    if s.picks is None:
        return f"{dot}>{tip}</circle>" if s.markers else ""
    if s.markers:
        return (f'<g data-pick="{esc(s.picks[i])}">{tip}{dot} stroke="{s.color}" stroke-width="0"/>'
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{hit:.0f}" stroke="none"/></g>')
    bare = f'<circle data-pick="{esc(s.picks[i])}" cx="{cx:.1f}" cy="{cy:.1f}" r="{hit:.0f}"'
    return f"{bare}>{tip}</circle>" if tip else f"{bare}/>"


def marks_svg(f: Frame, marks: Sequence[Mark]) -> str:
    """Horizontal marks (within the y range; a log axis draws only positive ones) with their
    labels, then vertical marks, each labelled at the top on the side with room."""
    left, top, w, h = f.left, f.top, f.plot_w, f.plot_h
    out = []
    for m in (m for m in marks if m.axis == "y"):
        if (not f.y.log or m.at > 0) and f.y_lo <= (np.log10(m.at) if f.y.log else m.at) <= f.y_hi:
            y = f.py(m.at)
            lx = left + 6 if m.label_x is None else f.px(m.label_x)
            anchor = "start" if lx < left + w * 0.6 else "end"
            out.append(f'<line x1="{left}" x2="{left + w:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{m.color}"'
                       f'{dash_attr(m.dash)}/><text class="crbc-mark" '
                       f'data-x="{m.label_x if m.label_x is not None else f.x_lo:g}" x="{lx:.1f}" y="{y - 4:.1f}" '
                       f'text-anchor="{anchor}" fill="{m.color}" font-size="11">{esc(m.label)}</text>')
    for m in (m for m in marks if m.axis == "x"):
        x = f.px(m.at)
        anchor = "start" if x < left + w * 0.7 else "end"
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + h:.1f}" stroke="{m.color}" '
                   f'stroke-width="2"{dash_attr(m.dash)}/>')
        if m.label:
            out.append(f'<text x="{x + (4 if anchor == "start" else -4):.1f}" y="{top + 12:.1f}" '
                       f'text-anchor="{anchor}" fill="{m.color}" font-size="11">{esc(m.label)}</text>')
    return "".join(out)


def legend_svg(items: Sequence[Series], left: float, top: float, width: float) -> tuple[str, float]:
    """Legend rows from ``top`` across ``width``, ``floor(width / 200)`` entries a row (a swatch:
    the line, over its band if any); the markup and its height (20 a row + 8, or 0)."""
    per_row = max(1, int(width // 200))
    out = []
    for i, s in enumerate(items):
        lx = left + (i % per_row) * (width / per_row)
        ly = top + 14 + 20 * (i // per_row)
        if s.band is not None:
            out.append(f'<rect x="{lx:.1f}" y="{ly - 10:.1f}" width="22" height="12" fill="{s.color}" '
                       f'fill-opacity="0.15"/>')
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly - 4:.1f}" y2="{ly - 4:.1f}" stroke="{s.color}" '
                   f'stroke-width="2"{dash_attr(s.dash)}/><text x="{lx + 28:.1f}" y="{ly:.1f}">{esc(s.name[:48])}</text>')
    rows = math.ceil(len(items) / per_row)
    return "".join(out), (20 * rows + 8 if rows else 0)
