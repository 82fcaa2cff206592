"""Colour scales sampled as plotly.js samples them, without plotly: piecewise-linear RGB.

A scale is a tuple of ``(position, (r, g, b))`` stops, positions rising from 0 to 1, channels in
0..255. :func:`sample` maps a point ``t`` in [0, 1] to the stop pair ``p_lo < t <= p_hi`` (the
first stop for ``t = 0``) and returns ``rgb(R, G, B)`` with, per channel,
``C = round_half_even(255 * (c_lo/255 + u * (c_hi/255 - c_lo/255)))``,
``u = (t - p_lo) / (p_hi - p_lo)``: the same float operations as ``plotly.colors.
sample_colorscale(..., colortype="rgb")``, so the colours are those the studio drew with plotly.
"""

from __future__ import annotations

import decimal
from bisect import bisect_left
from collections.abc import Iterable

__all__ = ["RDBU", "sample", "Scale", "SCALES", "VIRIDIS"]

Scale = tuple[tuple[float, tuple[int, int, int]], ...]


def _hex(h: str) -> tuple[int, int, int]:
    return int(h[1:3], 16), int(h[3:5], 16), int(h[5:7], 16)


def _even(stops: list) -> Scale:
    """Stops evenly spaced over [0, 1] (position ``i / (n - 1)``)."""
    n = len(stops)
    return tuple((i / (n - 1), _hex(h) if isinstance(h, str) else h) for i, h in enumerate(stops))


#: plotly's "Viridis" (matplotlib's viridis at 10 stops): the V scale, dark purple 0 .. yellow 1
VIRIDIS: Scale = _even(["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89",
                        "#35b779", "#6ece58", "#b5de2b", "#fde725"])
#: plotly's "RdBu" (ColorBrewer's, 11 stops): the diverging credit scale, red 0 .. white .5 .. blue 1
RDBU: Scale = ((0.0, (103, 0, 31)), (0.1, (178, 24, 43)), (0.2, (214, 96, 77)),
               (0.30000000000000004, (244, 165, 130)), (0.4, (253, 219, 199)), (0.5, (247, 247, 247)),
               (0.6000000000000001, (209, 229, 240)), (0.7000000000000001, (146, 197, 222)),
               (0.8, (67, 147, 195)), (0.9, (33, 102, 172)), (1.0, (5, 48, 97)))

SCALES: dict[str, Scale] = {"Viridis": VIRIDIS, "RdBu": RDBU}


def _channel(x: float) -> int:
    return int(decimal.Decimal(str(x * 255.0)).quantize(decimal.Decimal("1"),
                                                         rounding=decimal.ROUND_HALF_EVEN))


def sample(scale: str | Scale, points: Iterable[float]) -> list[str]:
    """``rgb(R, G, B)`` strings of ``points`` (each in [0, 1]) on ``scale`` (a name in
    :data:`SCALES` or the stops themselves); one string per point, in order."""
    stops = SCALES[scale] if isinstance(scale, str) else scale
    pos = [p for p, _ in stops]
    cols = [tuple(c / 255.0 for c in rgb) for _, rgb in stops]
    out = []
    for t in points:
        hi = bisect_left(pos, t)
        lo = hi - 1
        u = (t - pos[lo]) / (pos[hi] - pos[lo])
        a, b = cols[lo], cols[hi]
        rgb = [_channel(a[k] + u * float(b[k] - a[k])) for k in range(3)]
        out.append(f"rgb({rgb[0]}, {rgb[1]}, {rgb[2]})")
    return out
