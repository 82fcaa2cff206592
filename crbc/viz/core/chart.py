"""Charts as static SVG from the core's parts: :func:`chart_svg` (one plot), :func:`grid_svg`
(small multiples with one legend).

A chart is a fitted :class:`~crbc.viz.core.axes.Frame`, its axes, the bands of every series
under the lines of every series, the marker lines, and a legend under the plot. It is shown by
:func:`ui.core.svg_view.svg_view`; a point's tooltip names its series, x and y, a line's its series.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from crbc.viz.core.axes import Axis, Frame, axes_svg, drawable, fit
from crbc.viz.core.series import Mark, Series, as_floats, band_svg, legend_svg, marks_svg, series_svg
from crbc.viz.core.svg import chart_open
from crbc.viz.core.text import esc

__all__ = ["chart_svg", "column_series", "frame_for", "grid_svg", "PALETTE", "PLAIN"]

#: colours of series that have none of their own, in order
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#ff7f0e")
PLAIN = Axis()  #: an axis with no title, fitted to the data
# a faint line (opacity < 1) is drawn at full strength while the pointer is on it or its points
_STYLE = "<style>.crbc-faint:hover polyline{stroke-opacity:1;stroke-width:2.5}</style>"


def frame_for(series: Sequence[Series], marks: Sequence[Mark] = (), *, x: Axis = PLAIN, y: Axis = PLAIN,
              y2: Axis | None = None, size: tuple[float, float] = (680, 300)) -> tuple[Frame, np.ndarray]:
    """The frame that holds every drawn point and band of ``series`` and every mark, and the x
    values drawn (for the integer-tick test). A right axis exists when a series uses it."""
    xs, left, right = [np.empty(0)], [np.empty(0)], [np.empty(0)]
    for s in series:
        sx, sy = s.arrays()
        log = y.log and not s.right_axis
        good = drawable(sy, log)
        xs.append(sx[good])
        side = right if s.right_axis else left
        side.append(sy[good])
        for b in s.band or ():
            b = as_floats(b)
            side.append(b[drawable(b, log)])
    xs.append(as_floats([m.at for m in marks if m.axis == "x"]))
    left.append(as_floats([m.at for m in marks if m.axis == "y" and (not y.log or m.at > 0)]))
    x_data = np.concatenate(xs)
    has_right = any(s.right_axis for s in series)
    frame = fit(x_data, np.concatenate(left), np.concatenate(right) if has_right else None,
                x=x, y=y, y2=y2, size=size)
    return frame, x_data


def chart_svg(series: Sequence[Series], *, x: Axis = PLAIN, y: Axis = PLAIN, y2: Axis | None = None,
              marks: Sequence[Mark] = (), size: tuple[float, float] = (680, 300),
              zero_line: bool | None = None, legend: bool = True) -> str:
    """The series on one plot of ``size`` = (width, height) user units plus the legend's rows
    (the SVG scales to its column). ``zero_line`` (default: ``y.symmetric``) draws y = 0 darker;
    ``legend=False`` leaves the legend out (:func:`grid_svg` draws one for all panels)."""
    f, x_data = frame_for(series, marks, x=x, y=y, y2=y2, size=size)
    out = [axes_svg(f, x_data, y.symmetric if zero_line is None else zero_line), marks_svg(f, marks)]
    out += [band_svg(f, s) for s in series]
    out += [series_svg(f, s) for s in series]
    leg, legend_h = legend_svg([s for s in series if s.legend] if legend else [], f.left, f.height, f.plot_w)
    style = _STYLE if any(s.opacity < 1 for s in series) else ""
    return f"{chart_open(f.width, f.height + legend_h)}{style}{''.join(out)}{leg}</svg>"


_VIEWBOX = re.compile(r'^<svg class="crbc-line-chart" viewBox="0 0 ([0-9.]+) ([0-9.]+)"[^>]*>')


def grid_svg(panels: Sequence[str], titles: Sequence[str] = (), *, cols: int = 3,
             legend: Sequence[Series] = (), gap: float = 8.0) -> str:
    """Small multiples: charts of :func:`chart_svg` (built with ``legend=False``) laid out
    ``cols`` to a row as one SVG, each under its title (escaped, cut to 60 characters), and
    one legend of ``legend`` under the grid. A row is as tall as its tallest panel; the grid is
    ``cols`` x (widest panel + ``gap``) wide."""
    sizes, bodies = [], []
    for svg in panels:
        m = _VIEWBOX.match(svg)
        if m is None or not svg.endswith("</svg>"):
            raise ValueError("grid_svg takes charts made by chart_svg")
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
    leg, legend_h = legend_svg(list(legend), 58.0, y - gap, width - 72)
    return f"{chart_open(width, y - gap + legend_h)}{''.join(out)}{leg}</svg>"


def column_series(names: Sequence[str], x: Sequence[float], columns: Sequence[Sequence[float]]) -> list[Series]:
    """One solid series per column, coloured from :data:`PALETTE` in order."""
    return [Series(n, x, list(np.asarray(c, dtype=float)), PALETTE[i % len(PALETTE)])
            for i, (n, c) in enumerate(zip(names, columns, strict=True))]
