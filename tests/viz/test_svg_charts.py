"""The chart core (crbc.viz.core: axes, series, chart): points where the numbers say, a log axis,
missing points that break the line, escaped names, one symmetric range."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, frame_for, grid_svg
from crbc.viz.core.scales import nice_ticks, padded_range, symmetric_range
from crbc.viz.core.series import Mark, Series


def _points(svg: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'<circle cx="([-0-9.]+)" cy="([-0-9.]+)"', svg)]


def test_points_are_linear_in_x_and_y_and_names_are_escaped():
    svg = chart_svg([Series("<b>A</b> & B", [0, 1, 2, 3], [0.0, 1.0, 2.0, 3.0], "#123456")])
    pts = _points(svg)
    assert len(pts) == 4
    dx = [b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False)]
    dy = [b[1] - a[1] for a, b in zip(pts, pts[1:], strict=False)]
    assert max(dx) - min(dx) < 0.2 and max(dy) - min(dy) < 0.2 and dy[0] < 0  # up is smaller y
    assert "<b>" not in svg and "&lt;b&gt;A&lt;/b&gt; &amp; B" in svg
    assert "http" not in svg


def test_log_axis_spaces_decades_evenly_and_drops_non_positive_points():
    svg = chart_svg([Series("err", [0, 1, 2, 3], [1.0, 0.1, 0.0, 0.001], "#000")], y=Axis(log=True),
                    marks=[Mark(1e-6, "tolerance", axis="y")])
    pts = _points(svg)
    assert len(pts) == 3  # the 0 is not drawn on a log axis
    (x0, y0), (x1, y1), (_, y3) = pts
    assert (y3 - y1) == pytest.approx(2 * (y1 - y0), abs=0.3)  # 0.1 -> 0.001 is two decades (coordinates rounded to 0.1)
    assert svg.count("<polyline") == 2  # the missing point breaks the line
    assert "tolerance" in svg  # the mark at 1e-6 widens the axis down to it


def test_marks_and_nice_ticks():
    svg = chart_svg([Series("a", [0, 10], [0.2, 0.8], "#000")], y=Axis(percent=True, range=(0, 1)),
                    marks=[Mark(4, "K = 4", "#ff7f0e")])
    assert "K = 4" in svg and ">40%<" in svg and ">100%<" in svg
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.37, 0.52) == pytest.approx([-0.2, 0.0, 0.2, 0.4])


# ---------------------------------------------------------------- bands, picks, right axis, grids


def _y_ticks(svg: str, cls: str = "") -> dict[str, float]:
    """Tick label -> its text's baseline y (left axis; ``cls="crbc-y2"``: the right axis)."""
    if cls:
        return {t: float(y) - 4 for y, t in re.findall(rf'<text class="{cls}" x="[-0-9.]+" y="([-0-9.]+)"[^>]*>([^<]+)<', svg)}
    return {t: float(y) - 4 for y, t in re.findall(r'<text x="52.0" y="([-0-9.]+)" text-anchor="end"[^>]*>([^<]+)<', svg)}


def test_a_band_spans_lo_to_hi_at_the_pixels_of_its_values():
    lo, hi = [0.2, 0.3, None, 0.1], [0.8, 0.7, 0.9, 0.6]
    svg = chart_svg([Series("s", [0, 1, 2, 3], [0.5, 0.5, 0.5, 0.4], "#123456", band=(lo, hi), band_label="min–max")],
                    y=Axis(range=(0, 1)))
    ticks = _y_ticks(svg)
    y0, y1 = ticks["0"], ticks["1"]

    def py(v):
        return y0 + (y1 - y0) * v

    polys = re.findall(r'<polygon class="crbc-band" points="([^"]+)" fill="#123456" fill-opacity="0.15"', svg)
    assert len(polys) == 2  # the missing lo at x = 2 breaks the band
    first = [tuple(map(float, p.split(","))) for p in polys[0].split()]
    assert [round(y, 1) for _, y in first] == [round(py(v), 1) for v in (0.8, 0.7, 0.3, 0.2)]
    assert first[0][0] == first[3][0] < first[1][0] == first[2][0]  # forward along hi, back along lo
    assert svg.index("crbc-band") < svg.index("<polyline")  # under the line
    assert "<title>s: min–max</title>" in svg


def test_picks_sit_on_their_points_and_are_escaped():
    x, y = [0, 1, 2, 3], [0.1, float("nan"), 0.3, 0.4]
    picks = ["0|a", "1|b", "2|<script>x</script>", "3|a|b"]
    svg = chart_svg([Series("m", x, y, "#123456", picks=picks, tips=["t0", "t1", "<i>t2</i>", "t3"]),
                          Series("seed", x, y, "#654321", markers=False, picks=picks, point_tips=False)])
    assert "<script>" not in svg and "<i>" not in svg
    marked = re.findall(r'<g data-pick="([^"]*)"><title>([^<]*)</title><circle cx="([-0-9.]+)" cy="([-0-9.]+)" '
                        r'r="[0-9.]+" fill="#123456"[^>]*/><circle cx="([-0-9.]+)" cy="([-0-9.]+)" r="([0-9.]+)"', svg)
    assert [m[0] for m in marked] == ["0|a", "2|&lt;script&gt;x&lt;/script&gt;", "3|a|b"]  # none on the NaN
    assert [m[1] for m in marked] == ["t0", "&lt;i&gt;t2&lt;/i&gt;", "t3"]
    assert all(m[2] == m[4] and m[3] == m[5] and float(m[6]) >= 3 for m in marked)  # the hit circle is on the dot
    bare = re.findall(r'<circle data-pick="([^"]*)" cx="([-0-9.]+)" cy="([-0-9.]+)" r="[0-9.]+"/>', svg)
    assert [b[0] for b in bare] == [m[0] for m in marked] and [b[1:] for b in bare] == [m[2:4] for m in marked]
    assert svg.count('fill="transparent"') == 2  # the hit circles' groups
    default = chart_svg([Series("p", [0, 1], [0.25, 0.5], "#000")], y=Axis(percent=True))
    assert "<title>p: x = 1, y = 50.0%</title>" in default


def test_the_right_axis_is_symmetric_and_both_zero_lines_coincide():
    svg = chart_svg([Series("left", [0, 1, 2], [-2.0, 1.0, 0.5], "#111"),
                          Series("truth A_t", [0, 1, 2], [-0.1, 0.3, 0.2], "#222", right_axis=True)],
                    y=Axis("A_S", symmetric=True), y2=Axis("<b>truth</b> A_t", symmetric=True))
    left, right = _y_ticks(svg), _y_ticks(svg, "crbc-y2")
    assert left["0"] == pytest.approx(right["0"], abs=0.05)
    assert set(left) >= {"-2", "2"} and set(right) >= {"-0.2", "0.2"}  # +-2.1 and +-0.315
    assert left["-2"] - left["0"] == pytest.approx(left["0"] - left["2"], abs=0.1)
    assert right["-0.2"] - right["0"] == pytest.approx(right["0"] - right["0.2"], abs=0.1)
    zero = re.search(r'<line class="crbc-zero" [^>]*y1="([-0-9.]+)"', svg)
    assert zero and float(zero.group(1)) == pytest.approx(left["0"], abs=0.05)
    assert "&lt;b&gt;truth&lt;/b&gt; A_t" in svg and "rotate(90)" in svg
    (pts,) = re.findall(r'<polyline points="([^"]+)" fill="none" stroke="#222"', svg)
    ys = [float(p.split(",")[1]) for p in pts.split()]
    assert ys[1] == pytest.approx(right["0"] + (right["0.2"] - right["0"]) * 1.5, abs=0.15)  # 0.3 on the right scale


def test_many_points_make_one_polyline_per_line_and_no_markers():
    x = list(range(100))
    svg = chart_svg([Series(f"run {i}", x, [i + 0.01 * k for k in x], "#123", markers=False, width=1,
                                 opacity=0.45) for i in range(32)])
    assert svg.count("<polyline") == 32 and "<circle" not in svg
    assert svg.count('class="crbc-series crbc-faint"><title>run ') == 32 and "<style>" in svg


def test_grid_lays_out_panels_with_titles_and_one_legend():
    series = [Series("<b>a</b>", [0, 1], [0, 1], "#111"), Series("b", [0, 1], [1, 0], "#222")]
    panels = [chart_svg(series, size=(300, 200), legend=False) for _ in range(4)]
    assert "<line x1" in panels[0] and "&lt;b&gt;a" not in panels[0].split("</g>")[-1]  # no legend in a panel
    svg = grid_svg(panels, ["one", "<script>two</script>", "three", "four"], cols=3, legend=series)
    assert svg.startswith('<svg class="crbc-line-chart" viewBox="0 0 916 ') and "<script>" not in svg
    shifts = re.findall(r'<g transform="translate\(([-0-9.]+) ([-0-9.]+)\)">', svg)
    assert shifts == [("0.0", "18.0"), ("308.0", "18.0"), ("616.0", "18.0"), ("0.0", "244.0")]
    assert re.findall(r'class="crbc-panel-title"[^>]*>([^<]*)<', svg)[1] == "&lt;script&gt;two&lt;/script&gt;"
    assert svg.count("&lt;b&gt;a&lt;/b&gt;</text>") == 1  # the shared legend, once
    with pytest.raises(ValueError):
        grid_svg(["<svg></svg>"])


def test_percent_ticks_keep_the_decimals_their_step_needs():
    svg = chart_svg([Series("a", [0, 1], [0.001, 0.02], "#000")], y=Axis(percent=True, range=(0, 0.02)))
    labels = list(_y_ticks(svg))
    assert len(labels) == len(set(labels)) and "0.5%" in labels


def test_given_x_ticks_replace_the_round_ones_and_are_escaped():
    """A log axis drawn on log2 G, labelled with G (the Estimator accuracy charts)."""
    svg = chart_svg([Series("s", [1, 2, 4], [0.1, 0.2, 0.3], "#123456")],
                    x=Axis(ticks=[(1.0, "2"), (2.0, "4"), (4.0, "<16>")]))
    labels = re.findall(r'text-anchor="middle" fill="#666">([^<]*)</text>', svg)
    assert labels == ["2", "4", "&lt;16&gt;"]


def test_one_symmetric_range_for_colour_bars_and_axes():
    """An axis asked to be symmetric spans +-1.05 z, z the colour bars' half-width."""
    vals = np.array([-0.3, 0.12, np.nan])
    assert symmetric_range(vals) == pytest.approx(0.3)
    assert padded_range(vals[np.isfinite(vals)], symmetric=True) == pytest.approx((-0.315, 0.315))
    assert symmetric_range(np.zeros(3)) == 1.0 and symmetric_range(np.array([1e-5])) == 1e-3
    assert padded_range(np.zeros(0), symmetric=True) == pytest.approx((-1.05, 1.05))
    f, _ = frame_for([Series("s", [0, 1], [-0.3, 0.12], "#000")], y=Axis(symmetric=True))
    assert (f.y_lo, f.y_hi) == pytest.approx((-0.315, 0.315))


def test_the_frame_maps_the_fitted_range_onto_the_plot_area():
    """px / py send the fitted range to the plot area's edges; a log axis works in decades; marks
    widen the range; a right axis makes room on the right."""
    s = [Series("a", [2, 6], [10.0, 1000.0], "#000")]
    f, _ = frame_for(s, [Mark(10, "x")], y=Axis(log=True), size=(400, 200))
    assert (f.x_lo, f.x_hi) == (2.0, 10.0) and f.plot_w == 400 - 58 - 14
    assert f.px(2.0) == pytest.approx(58) and f.px(10.0) == pytest.approx(58 + f.plot_w)
    assert f.py(100.0) == pytest.approx((f.py(10.0) + f.py(1000.0)) / 2)  # the middle decade
    r, _ = frame_for(s + [Series("b", [2, 6], [0.0, 4.0], "#111", right_axis=True)], size=(400, 200))
    assert r.y2 is not None and r.plot_w == 400 - 58 - 58
    assert r.py(4.0, right=True) < r.py(0.0, right=True)
