"""crbc.viz.core.palette draws the colours plotly's sample_colorscale drew (recorded here from plotly
7.1.0 once, so this runs without plotly)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from crbc.viz.core.palette import RDBU, VIRIDIS, sample
from crbc.viz.core.scales import symmetric_range
from crbc.viz.core.style import signed_color, v_color

STEPS = [i / 20 for i in range(21)]
# plotly 7.1.0's sample_colorscale(name, STEPS, colortype="rgb"), as "r,g,b" triples
OLD = {name: [f"rgb({t.replace(',', ', ')})" for t in triples.split()] for name, triples in {
    "Viridis": "68,1,84 70,19,100 72,36,116 68,52,126 64,66,134 59,81,138 53,95,140 47,108,142 42,120,142 38,131,142 34,144,140 "
               "31,157,137 40,168,131 50,179,123 70,190,111 96,200,96 124,209,79 156,216,59 188,223,42 221,227,40 253,231,37",
    "RdBu": "103,0,31 140,12,37 178,24,43 196,60,60 214,96,77 229,130,103 244,165,130 248,192,164 253,219,199 250,233,223 247,247,247 "
            "228,238,243 209,229,240 178,213,231 146,197,222 107,172,208 67,147,195 50,125,184 33,102,172 19,75,135 5,48,97",
}.items()}
# sha256 of "|".join(sample_colorscale(name, np.linspace(0, 1, 1001).tolist(), colortype="rgb"))
OLD_1001 = {"Viridis": "18fcf3f996348d4c024f8c2e5a746707c4eaf1860b7500c9963d042c4008a0e7",
            "RdBu": "ded4e12d51bb2fb2e4de3014b3122a29fff55eced3f41225e2b8c5fc10789bf7"}
# sha256 of "|".join(...) of heatmap.credit_palettes() (201 levels, then washed), drawn with plotly
OLD_HEATMAP = ("3b85e4aa9ea7d1c761cd5c17a7ac7ff9a44111039ec17469e9b4958b45be460c",
               "cf5c4c5886517a26f575c1cc5a979beae0d4c80d90ae472248b393df6ab11c50")


def _digest(colours) -> str:
    return hashlib.sha256("|".join(colours).encode()).hexdigest()


@pytest.mark.parametrize("name", ["Viridis", "RdBu"])
def test_scales_draw_the_old_plotly_colours(name):
    assert sample(name, STEPS) == OLD[name]
    assert _digest(sample(name, np.linspace(0, 1, 1001).tolist())) == OLD_1001[name]


def test_the_studio_colours_are_the_old_ones():
    from crbc.viz.heatmap import credit_palettes

    assert tuple(_digest(a) for a in credit_palettes()) == OLD_HEATMAP
    assert v_color([0.0, 0.5, 2.0]) == [OLD["Viridis"][0], OLD["Viridis"][10], OLD["Viridis"][20]]
    assert signed_color([-2.0, 0.0, 1.0], 2.0) == [OLD["RdBu"][0], OLD["RdBu"][10], OLD["RdBu"][15]]


def test_scales_are_well_formed():
    for scale in (VIRIDIS, RDBU):
        pos = [p for p, _ in scale]
        assert pos[0] == 0.0 and pos[-1] == 1.0 and pos == sorted(pos)
    assert sample(RDBU, [0.5]) == ["rgb(247, 247, 247)"]  # white at the centre


def test_one_symmetric_range():
    assert symmetric_range(np.array([-3.0, 1.0]), np.array([2.0, np.nan])) == 3.0
    assert symmetric_range(np.array([np.nan])) == symmetric_range(np.zeros(3)) == 1.0  # nothing
    assert symmetric_range(np.array([1e-6])) == 1e-3  # noise stays near the centre
    assert symmetric_range(None, np.array([-0.5])) == 0.5


def _sample_one_point_at_a_time(scale, points):
    """The obvious twin of ``sample``: plotly's arithmetic per point, each channel's decimal
    text rounded half to even."""
    import decimal
    from bisect import bisect_left

    stops = {"Viridis": VIRIDIS, "RdBu": RDBU}[scale] if isinstance(scale, str) else scale
    pos = [p for p, _ in stops]
    cols = [tuple(c / 255.0 for c in rgb) for _, rgb in stops]
    out = []
    for t in points:
        hi = bisect_left(pos, t)
        lo = hi - 1
        u = (t - pos[lo]) / (pos[hi] - pos[lo])
        a, b = cols[lo], cols[hi]
        ch = [int(decimal.Decimal(str((a[k] + u * float(b[k] - a[k])) * 255.0)).quantize(
            decimal.Decimal("1"), rounding=decimal.ROUND_HALF_EVEN)) for k in range(3)]
        out.append(f"rgb({ch[0]}, {ch[1]}, {ch[2]})")
    return out


@pytest.mark.parametrize("name", ["Viridis", "RdBu"])
def test_sample_as_arrays_matches_one_point_at_a_time(name):
    """20,000 random points, every stop, the midpoints between stops and points within 1e-12 of
    them (where rounding could differ), as a list and as an array."""
    rng = np.random.default_rng(7)
    stops = [p for p, _ in (VIRIDIS if name == "Viridis" else RDBU)]
    mids = [(a + b) / 2 for a, b in zip(stops[:-1], stops[1:], strict=True)]
    near = [min(max(x + d, 0.0), 1.0) for x in stops + mids for d in (-1e-12, 1e-12)]
    points = rng.random(20000).tolist() + stops + mids + near + [0.0, 1.0]
    want = _sample_one_point_at_a_time(name, points)
    assert sample(name, points) == want
    assert sample(name, np.asarray(points)) == want
    assert sample(name, []) == []
