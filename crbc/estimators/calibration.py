"""The calibrated credit interval: posterior spread plus a bias scale, widened by a fitted factor.

For a step's (anchor, action) pair with point credit ``c`` (the closure's Q - V on the group),
``sd`` the standard deviation of its credit over B posterior draws
(:mod:`crbc.estimators.posterior`) and ``V`` the closure's value of its anchor::

    s(s,a)   = sqrt( sd(s,a)^2 + (TAU * b(V(s)))^2 )     b(V) = sqrt(V (1 - V))  (PROXY "sqrtV"),
                                                          b = V (PROXY "V") or b = 1 ("one")
    interval = [ c - lambda(L, G) s ,  c + lambda(L, G) s ]

``tau b`` stands for the closure's own bias against the anchor-level truth A(s, a), which no
resampling sees; ``lambda(L, G)`` is the L-quantile of the normalised error ``|A - c| / s`` on
the fit levels at group size G (split-conformal), tabulated on ``LEVELS`` x ``GROUP_SIZES`` and
interpolated linearly in L and in log2 G (constant outside 8-32). It depends on G because the
draws' spread shrinks like 1 / sqrt(G) while the bias does not.
The constants are fitted by ``python -m benchmarks.calibrate_intervals fit`` and copied here
from ``benchmarks/results/issue36/calibration-fit.json`` (a test checks they agree).
"""

from __future__ import annotations

import numpy as np

#: posterior draws: pseudo weight of the unseen successor per pair, Beta concentration of its
#: value, pseudo weight of the unseen action per anchor (crbc.estimators.posterior)
ALPHA, KAPPA, ALPHA_PI = 0.5, 4.0, 0.5
#: the bias scale
TAU, PROXY = 0.01, "sqrtV"
#: lambda(L, G) on a grid of levels (columns) for G in GROUP_SIZES (rows), from calibration-fit.json
GROUP_SIZES: tuple[int, ...] = (8, 16, 32)
LEVELS: tuple[float, ...] = (
    0.5, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56, 0.57, 0.58, 0.59, 0.6, 0.61, 0.62, 0.63, 0.64,
    0.65, 0.66, 0.67, 0.68, 0.69, 0.7, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79,
    0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94,
    0.95, 0.96, 0.97, 0.98, 0.99)
LAMBDA: tuple[tuple[float, ...], ...] = (
    (0.2297, 0.2426, 0.2532, 0.266, 0.2769, 0.2925, 0.3032, 0.3218, 0.3371, 0.3552, 0.3678,
     0.3875, 0.4075, 0.42, 0.4496, 0.4814, 0.5007, 0.5222, 0.5557, 0.5866, 0.6174, 0.656,
     0.6781, 0.7072, 0.7579, 0.7949, 0.8222, 0.8716, 0.9407, 1.0024, 1.0887, 1.1555,
     1.2532, 1.3528, 1.41, 1.4865, 1.61, 1.7203, 1.8394, 1.9861, 2.0929, 2.3339, 2.4841,
     2.712, 3.0002, 3.3559, 3.7389, 4.2633, 5.6086, 6.5093),
    (0.3122, 0.3278, 0.3472, 0.3601, 0.3758, 0.4051, 0.4183, 0.4398, 0.4563, 0.4754, 0.4916,
     0.5066, 0.5321, 0.5565, 0.5859, 0.6113, 0.6351, 0.6569, 0.6901, 0.7211, 0.7709,
     0.8024, 0.83, 0.8767, 0.9372, 0.9844, 1.042, 1.1139, 1.1704, 1.2272, 1.2936, 1.376,
     1.4295, 1.5214, 1.5931, 1.6808, 1.7794, 1.9301, 2.0369, 2.1463, 2.323, 2.4686,
     2.6696, 2.925, 3.2502, 3.5655, 3.7973, 4.3763, 5.406, 7.0031),
    (0.4392, 0.4533, 0.4738, 0.492, 0.5082, 0.5347, 0.5632, 0.589, 0.6037, 0.6296, 0.6556,
     0.6704, 0.6997, 0.7342, 0.7669, 0.7883, 0.8127, 0.8392, 0.8811, 0.9208, 0.9731,
     1.011, 1.0466, 1.0776, 1.1273, 1.1823, 1.256, 1.3082, 1.3938, 1.4423, 1.5205, 1.6016,
     1.6975, 1.7754, 1.8843, 1.9617, 2.1205, 2.2017, 2.3589, 2.5419, 2.7065, 2.8977,
     3.0391, 3.2972, 3.6833, 4.0364, 4.5813, 5.1799, 6.3549, 7.9563),
)


def bias_proxy(v: np.ndarray, proxy: str = PROXY) -> np.ndarray:
    """``b(V)``: ``sqrt(V (1 - V))`` (``"sqrtV"``), ``V`` (``"V"``) or 1 (``"one"``), elementwise."""
    v = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)
    if proxy == "sqrtV":
        return np.sqrt(v * (1.0 - v))
    return v if proxy == "V" else np.ones_like(v)


def widening(level: float, group_size) -> np.ndarray:
    """``lambda(L, G)``: linear in L on the fitted grid, linear in log2 G between the fitted
    group sizes, held constant outside them (G below 8 or above 32 was not measured);
    ``group_size`` scalar or array. ValueError for a level outside the grid."""
    if not LEVELS or not LEVELS[0] <= level <= LEVELS[-1]:
        raise ValueError(f"the calibrated interval is fitted for levels {LEVELS[0] if LEVELS else '?'}"
                         f"-{LEVELS[-1] if LEVELS else '?'}, got {level}")
    per_g = [np.interp(level, LEVELS, row) for row in LAMBDA]
    g = np.log2(np.maximum(np.asarray(group_size, dtype=float), 1.0))
    return np.interp(g, np.log2(GROUP_SIZES), per_g)


def calibrated_interval(c_SA: np.ndarray, c_BSA: np.ndarray, v_SA: np.ndarray, level: float,
                        g_SA: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo_SA, hi_SA)`` of the module docstring: point credits ``c_SA`` (SA,), posterior credit
    draws ``c_BSA`` (B, SA), the anchor value of each pair ``v_SA`` (SA,) and the size G of its
    group ``g_SA`` (SA,)."""
    s = np.sqrt(c_BSA.std(axis=0) ** 2 + (TAU * bias_proxy(v_SA)) ** 2)
    lam = widening(level, g_SA)
    return c_SA - lam * s, c_SA + lam * s
