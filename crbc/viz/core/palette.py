"""Colour scales sampled as plotly.js samples them, without plotly: piecewise-linear RGB.

A scale is a tuple of ``(position, (r, g, b))`` stops, positions rising from 0 to 1, channels in
0..255. :func:`sample` maps a point ``t`` in [0, 1] to the stop pair ``p_lo < t <= p_hi`` (the
first stop for ``t = 0``) and returns ``rgb(R, G, B)`` with, per channel,
``C = round_half_even(255 * (c_lo/255 + u * (c_hi/255 - c_lo/255)))``,
``u = (t - p_lo) / (p_hi - p_lo)``: the same float operations as ``plotly.colors.
sample_colorscale(..., colortype="rgb")``, so the colours are those the studio drew with plotly.
Plotly rounds the decimal text of ``255 * x`` half to even; that text is the shortest one that
reads back as the float, so it lies on the same side of every ``k + 0.5`` (itself a float) as the
float does, and ``numpy.rint`` of the float (half to even) gives the same integer. The points are
mapped as arrays (20,000 anchors in about 10 ms); tests/viz/test_palette.py keeps the per-point
decimal version as its twin.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

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


def sample(scale: str | Scale, points: Iterable[float]) -> list[str]:
    """``rgb(R, G, B)`` strings of ``points`` (each in [0, 1]) on ``scale`` (a name in
    :data:`SCALES` or the stops themselves); one string per point, in order."""
    stops = SCALES[scale] if isinstance(scale, str) else scale
    pos = np.array([p for p, _ in stops], dtype=float)
    cols = np.array([rgb for _, rgb in stops], dtype=float) / 255.0  # (n_stops, 3)
    t = np.asarray(list(points) if not isinstance(points, np.ndarray) else points, dtype=float).reshape(-1)
    hi = np.searchsorted(pos, t, side="left")  # bisect_left; t = 0 gives hi = 0, lo = -1 (the last
    lo = hi - 1  # stop), and u = 1 then lands on the first stop, as plotly's own arithmetic does
    u = (t - pos[lo]) / (pos[hi] - pos[lo])
    a, b = cols[lo], cols[hi]
    rgb = np.rint((a + u[:, None] * (b - a)) * 255.0).astype(np.int64)
    return [f"rgb({r}, {g}, {b_})" for r, g, b_ in rgb.tolist()]
