"""Line charts as SVG (crbc.viz.svg_charts): points where the numbers say, a log axis, missing
points that break the line, escaped names."""

from __future__ import annotations

import re

import pytest

from crbc.viz.svg_charts import Mark, Series, line_chart_svg, nice_ticks


def _points(svg: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'<circle cx="([-0-9.]+)" cy="([-0-9.]+)"', svg)]


def test_points_are_linear_in_x_and_y_and_names_are_escaped():
    svg = line_chart_svg([Series("<b>A</b> & B", [0, 1, 2, 3], [0.0, 1.0, 2.0, 3.0], "#123456")])
    pts = _points(svg)
    assert len(pts) == 4
    dx = [b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False)]
    dy = [b[1] - a[1] for a, b in zip(pts, pts[1:], strict=False)]
    assert max(dx) - min(dx) < 0.2 and max(dy) - min(dy) < 0.2 and dy[0] < 0  # up is smaller y
    assert "<b>" not in svg and "&lt;b&gt;A&lt;/b&gt; &amp; B" in svg
    assert "http" not in svg


def test_log_axis_spaces_decades_evenly_and_drops_non_positive_points():
    svg = line_chart_svg([Series("err", [0, 1, 2, 3], [1.0, 0.1, 0.0, 0.001], "#000")], log_y=True,
                         y_marks=[Mark(1e-6, "tolerance")])
    pts = _points(svg)
    assert len(pts) == 3  # the 0 is not drawn on a log axis
    (x0, y0), (x1, y1), (_, y3) = pts
    assert (y3 - y1) == pytest.approx(2 * (y1 - y0), abs=0.3)  # 0.1 -> 0.001 is two decades (coordinates rounded to 0.1)
    assert svg.count("<polyline") == 2  # the missing point breaks the line
    assert "tolerance" in svg  # the mark at 1e-6 widens the axis down to it


def test_marks_and_nice_ticks():
    svg = line_chart_svg([Series("a", [0, 10], [0.2, 0.8], "#000")], percent_y=True, y_range=(0, 1),
                         x_marks=[Mark(4, "K = 4", "#ff7f0e")])
    assert "K = 4" in svg and ">40%<" in svg and ">100%<" in svg
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.37, 0.52) == pytest.approx([-0.2, 0.0, 0.2, 0.4])
