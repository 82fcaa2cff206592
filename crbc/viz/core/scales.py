"""Ranges and ticks of axes and colour bars.

:func:`symmetric_range` is the one half-width used for every signed quantity (a credit colour
bar, a symmetric axis); :func:`padded_range` the range of an ordinary axis; :func:`nice_ticks`
round tick values.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["nice_ticks", "padded_range", "round_step", "step_ticks", "symmetric_range"]


def symmetric_range(*arrays: np.ndarray | None) -> float:
    """Half-width ``z`` of a range ``[-z, z]`` centred on 0 for signed quantities:
    ``z = max(max_i |x_i|, 1e-3)`` over the finite values of all ``arrays`` (None skipped), so
    noise below 1e-3 stays near the centre; ``z = 1`` when no array has a finite non-zero value."""
    finite = [a[np.isfinite(a)] for a in (np.asarray(x, dtype=float) for x in arrays if x is not None)]
    vals = [float(np.abs(a).max()) for a in finite if a.size]
    top = max(vals) if vals else 0.0
    return max(top, 1e-3) if top > 0 else 1.0


def padded_range(vals: np.ndarray, symmetric: bool = False) -> tuple[float, float]:
    """An axis range over finite ``vals``: ``[min - 5 %, max + 5 %]`` of the span (a single value
    ``v``: ``v +- max(|v| / 10, 0.5)``; none: [0, 1]); ``symmetric``: ``+-1.05 z`` with
    ``z = symmetric_range(vals)``, so 0 sits in the middle."""
    v = np.asarray(vals, dtype=float)
    if symmetric:
        top = 1.05 * symmetric_range(v)
        return -top, top
    if not len(v):
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(lo) * 0.1, 0.5)
    return lo - pad, hi + pad


def round_step(raw: float) -> float:
    """The smallest of 1, 2, 5, 10 times ``10^floor(log10(raw))`` that is at least ``raw``."""
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: multiples of ``round_step((hi - lo) / count)``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    step = round_step((hi - lo) / max(count, 1))
    start = math.ceil(lo / step - 1e-9) * step
    return [round(start + i * step, 12) for i in range(int((hi - start) / step + 1e-9) + 1)]


def step_ticks(n_steps: int, most: int = 9) -> list[int]:
    """0-based step numbers to mark on an axis of ``n_steps`` steps: 0 and the multiples of
    ``round_step(max(n_steps / most, 1))``, so about ``most + 1`` marks at the most."""
    step = int(round_step(max(n_steps / most, 1.0)))
    return sorted({0, *range(step, n_steps, step)})
