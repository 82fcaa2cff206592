"""The calibrated credit interval: posterior spread plus a bias scale, widened by fitted factors.

For a step's (anchor, action) pair with point credit ``c`` (the closure's Q - V on the group),
``sd`` the standard deviation of its credit over B posterior draws
(:mod:`crbc.estimators.posterior`) and ``V`` the closure's value of its anchor::

    s(s,a)   = sqrt( sd(s,a)^2 + (TAU * b(V(s)))^2 )     b(V) = sqrt(V (1 - V))  (PROXY "sqrtV"),
                                                          b = V (PROXY "V") or b = 1 ("one")
    o(s,a)   = +1 if c >= 0 else -1                       (the credit's side of 0)
    interval = c + o [ -lo(L, G, k) s ,  hi(L, G, k) s ]  (c - lo s .. c + hi s for c >= 0)

``tau b`` stands for the closure's own bias against the anchor-level truth A(s, a), which no
resampling sees. ``k`` is the pair's Mondrian stratum by the observable rule ``RULE``
(:mod:`crbc.estimators.calibration_strata`). With ``e = o (A - c) / s`` the error oriented away
from 0, on the fit levels' steps of group size G in stratum k (split-conformal per stratum,
every level weighing 1)::

    SHAPE "oriented":  lo = max(0, -q_{(1-L)/2}(e)),  hi = q_{(1+L)/2}(e)   (equal tails)
    SHAPE "symmetric": lo = hi = q_L(|e|)

tabulated on ``LEVELS`` x ``GROUP_SIZES`` per stratum (``LAMBDA_LO``, ``LAMBDA_HI``) and
interpolated linearly in L and in log2 G (constant outside 8-32). They depend on G because the
draws' spread shrinks like 1 / sqrt(G) while the bias does not. The closure shrinks credits
toward 0, so the far side ``hi`` is wider than the near side ``lo``.
The constants are fitted by ``python -m benchmarks.calibrate_intervals fit`` and copied here
from ``benchmarks/results/issue36/calibration-fit.json`` (a test checks they agree).
"""

from __future__ import annotations

import numpy as np

# BEGIN FITTED CONSTANTS (written by python -m benchmarks.calibrate_intervals constants)
#: posterior draws: pseudo weight of the unseen successor per pair, Beta concentration of its
#: value, pseudo weight of the unseen action per anchor (crbc.estimators.posterior)
ALPHA, KAPPA, ALPHA_PI = 0.5, 4.0, 0.5
#: the bias scale and the interval's shape ("oriented" or "symmetric")
TAU, PROXY, SHAPE = 0.04, 'sqrtV', 'oriented'
#: the Mondrian stratum rule (feature, edges, none apart): crbc.estimators.calibration_strata
RULE: tuple[str, tuple[float, ...], bool] = ('v', (0.9,), True)
GROUP_SIZES: tuple[int, ...] = (8, 16, 32)
LEVELS: tuple[float, ...] = (
    0.5, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56, 0.57, 0.58, 0.59, 0.6, 0.61, 0.62, 0.63, 0.64, 0.65,
    0.66, 0.67, 0.68, 0.69, 0.7, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79, 0.8,
    0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95,
    0.96, 0.97, 0.98, 0.99,)
#: lo(L, G, k) and hi(L, G, k): per stratum k, rows G in GROUP_SIZES, columns LEVELS
LAMBDA_LO: tuple[tuple[tuple[float, ...], ...], ...] = (
    (  # stratum 0
        (0.0, 0.0, 0.0, 0.0002, 0.0008, 0.0015, 0.0028, 0.0052, 0.008, 0.0131, 0.0182, 0.024,
         0.0297, 0.0366, 0.0467, 0.056, 0.0639, 0.0755, 0.0836, 0.0946, 0.1071, 0.121,
         0.1321, 0.1458, 0.1712, 0.1933, 0.2166, 0.2514, 0.2756, 0.3127, 0.3479, 0.3664,
         0.428, 0.4932, 0.5058, 0.5717, 0.674, 0.7799, 0.93, 1.0983, 1.3324, 1.5088,
         1.7203, 2.04, 2.2678, 2.5111, 3.1347, 4.0886, 5.2233, 8.4696,),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0001, 0.0005, 0.0015, 0.0033, 0.0044,
         0.0069, 0.0108, 0.0171, 0.0251, 0.0379, 0.0479, 0.061, 0.0754, 0.0947, 0.1171,
         0.1348, 0.1657, 0.1809, 0.1974, 0.2262, 0.2449, 0.2835, 0.3232, 0.376, 0.4339,
         0.502, 0.5549, 0.6272, 0.717, 0.7816, 0.871, 1.1203, 1.3402, 1.4718, 1.8015,
         2.1953, 2.4954, 3.4739, 3.9152, 4.741, 6.4332,),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0001, 0.0004,
         0.0013, 0.0038, 0.0064, 0.0105, 0.0132, 0.0222, 0.0338, 0.0409, 0.0553, 0.0806,
         0.1186, 0.1488, 0.1834, 0.2351, 0.2793, 0.3158, 0.3238, 0.3575, 0.3931, 0.4918,
         0.5923, 0.6291, 0.7511, 0.8776, 1.0611, 1.2311, 1.3654, 1.6826, 2.1997, 2.6507,
         3.1074, 3.3002, 5.089, 10.8727,),
    ),
    (  # stratum 1
        (0.2577, 0.2751, 0.2885, 0.3097, 0.3354, 0.3482, 0.3666, 0.3736, 0.398, 0.4165, 0.4368,
         0.4539, 0.4762, 0.4962, 0.5035, 0.5151, 0.5411, 0.5481, 0.5811, 0.6109, 0.6274,
         0.6521, 0.7019, 0.7417, 0.7851, 0.8341, 0.8711, 0.9061, 0.9575, 1.0027, 1.0603,
         1.104, 1.143, 1.2058, 1.2358, 1.286, 1.351, 1.4007, 1.4705, 1.5415, 1.6049,
         1.6508, 1.7201, 1.7901, 1.8689, 2.0344, 2.1968, 2.4481, 2.7396, 3.3473,),
        (0.2322, 0.2499, 0.2695, 0.2854, 0.3057, 0.3118, 0.3225, 0.3323, 0.3514, 0.3653, 0.3804,
         0.4053, 0.4196, 0.441, 0.4646, 0.4895, 0.5113, 0.5382, 0.5593, 0.579, 0.5993,
         0.6182, 0.6464, 0.6736, 0.6983, 0.7431, 0.7794, 0.8137, 0.8526, 0.884, 0.918,
         0.9462, 0.9796, 1.0221, 1.0668, 1.1081, 1.1583, 1.2172, 1.2814, 1.335, 1.4078,
         1.4978, 1.5671, 1.6533, 1.752, 1.9028, 2.0523, 2.2977, 2.5612, 3.0609,),
        (0.2014, 0.2084, 0.2288, 0.2336, 0.2499, 0.267, 0.2789, 0.2943, 0.3178, 0.3292, 0.3444,
         0.36, 0.3767, 0.3961, 0.4082, 0.4238, 0.4419, 0.4625, 0.4796, 0.5057, 0.5221,
         0.5472, 0.5708, 0.5913, 0.6133, 0.643, 0.6669, 0.6987, 0.728, 0.7487, 0.7859,
         0.8142, 0.8445, 0.8915, 0.9259, 0.9673, 1.0135, 1.0642, 1.1279, 1.1919, 1.2604,
         1.3372, 1.415, 1.4796, 1.5801, 1.699, 1.8504, 2.0072, 2.2342, 2.7001,),
    ),
    (  # stratum 2
        (0.1046, 0.1056, 0.1065, 0.1088, 0.111, 0.1134, 0.1152, 0.1183, 0.1236, 0.1272, 0.1311,
         0.1345, 0.1362, 0.1387, 0.1443, 0.1498, 0.1529, 0.159, 0.1652, 0.1675, 0.1702,
         0.1738, 0.1767, 0.1836, 0.1892, 0.1928, 0.2018, 0.2066, 0.2214, 0.2261, 0.2328,
         0.2384, 0.2436, 0.2603, 0.2693, 0.2783, 0.2892, 0.2976, 0.3111, 0.3311, 0.3415,
         0.363, 0.4002, 0.4363, 0.4579, 0.4845, 0.5103, 0.6044, 0.6657, 0.7719,),
        (0.1245, 0.1275, 0.1313, 0.1348, 0.1394, 0.1426, 0.1488, 0.1542, 0.1608, 0.1665, 0.1691,
         0.1753, 0.1768, 0.1805, 0.1838, 0.1911, 0.1947, 0.1985, 0.2047, 0.2109, 0.2139,
         0.22, 0.2259, 0.2348, 0.2393, 0.2428, 0.2447, 0.2472, 0.2552, 0.2695, 0.2745,
         0.2804, 0.29, 0.3007, 0.3114, 0.3211, 0.3357, 0.3542, 0.3695, 0.3878, 0.3973,
         0.4106, 0.4253, 0.4496, 0.5091, 0.5696, 0.6741, 0.7441, 0.7967, 1.0056,),
        (0.1184, 0.1214, 0.1251, 0.128, 0.1296, 0.1324, 0.1346, 0.1395, 0.1424, 0.1453, 0.1537,
         0.159, 0.165, 0.1683, 0.1717, 0.1752, 0.1796, 0.1885, 0.1948, 0.1987, 0.2044,
         0.2115, 0.2212, 0.2324, 0.2429, 0.2485, 0.2566, 0.2639, 0.2701, 0.2754, 0.2855,
         0.2992, 0.3096, 0.3132, 0.3197, 0.3316, 0.3413, 0.3463, 0.3654, 0.3739, 0.3911,
         0.4227, 0.4431, 0.4702, 0.5209, 0.5706, 0.6445, 0.6928, 0.8213, 1.0157,),
    ),
)
LAMBDA_HI: tuple[tuple[tuple[float, ...], ...], ...] = (
    (  # stratum 0
        (0.1039, 0.1116, 0.1132, 0.1156, 0.1183, 0.122, 0.1245, 0.1286, 0.1365, 0.1438, 0.1484,
         0.1534, 0.1613, 0.1699, 0.1791, 0.186, 0.1918, 0.1988, 0.2036, 0.2174, 0.2277,
         0.2413, 0.2477, 0.2628, 0.2754, 0.2954, 0.3114, 0.3289, 0.357, 0.3748, 0.3953,
         0.4238, 0.444, 0.4986, 0.5499, 0.6147, 0.6557, 0.771, 0.8654, 0.9885, 1.0729,
         1.2217, 1.4162, 1.596, 1.8338, 2.0824, 2.413, 3.11, 3.8819, 5.287,),
        (0.0743, 0.0832, 0.0923, 0.1003, 0.1067, 0.1165, 0.1262, 0.1332, 0.1391, 0.1469, 0.1526,
         0.1557, 0.1631, 0.1686, 0.1732, 0.1871, 0.1911, 0.1988, 0.2045, 0.2141, 0.2255,
         0.2398, 0.2563, 0.2635, 0.2743, 0.2874, 0.2988, 0.3184, 0.332, 0.3534, 0.3711,
         0.385, 0.4133, 0.4408, 0.4593, 0.4947, 0.5309, 0.5728, 0.6047, 0.6768, 0.793,
         0.8791, 0.975, 1.1538, 1.3459, 1.6507, 1.9995, 2.7836, 3.7362, 5.8264,),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0026, 0.0133, 0.0374, 0.0537, 0.061, 0.0725,
         0.0858, 0.1034, 0.1201, 0.131, 0.14, 0.1606, 0.1721, 0.1825, 0.1896, 0.1994,
         0.2084, 0.2167, 0.239, 0.2519, 0.2625, 0.272, 0.3027, 0.3116, 0.3178, 0.3334,
         0.3465, 0.3559, 0.3998, 0.4442, 0.4886, 0.5347, 0.5973, 0.7533, 0.9318, 1.0617,
         1.3406, 1.6518, 1.9798, 2.7869, 4.2345,),
    ),
    (  # stratum 1
        (0.9729, 1.0018, 1.0316, 1.0521, 1.085, 1.1129, 1.1512, 1.1795, 1.1985, 1.21, 1.2322, 1.267,
         1.2963, 1.3308, 1.356, 1.3819, 1.4059, 1.4357, 1.4752, 1.5039, 1.5161, 1.5434,
         1.5819, 1.6124, 1.6573, 1.6886, 1.7424, 1.7696, 1.8102, 1.8665, 1.8984, 1.9435,
         2.0231, 2.0655, 2.1263, 2.1601, 2.2272, 2.2886, 2.3487, 2.3974, 2.4819, 2.5462,
         2.6688, 2.8347, 2.9677, 3.2955, 3.4564, 3.8741, 4.6463, 5.5895,),
        (1.018, 1.0356, 1.052, 1.0882, 1.1143, 1.134, 1.1519, 1.1753, 1.2085, 1.2259, 1.2456,
         1.2618, 1.2739, 1.3064, 1.3229, 1.3479, 1.3627, 1.4085, 1.4434, 1.4848, 1.5258,
         1.5529, 1.5908, 1.6226, 1.6483, 1.6907, 1.7136, 1.75, 1.7815, 1.8175, 1.8673,
         1.9036, 1.9582, 2.0035, 2.055, 2.0825, 2.1599, 2.2043, 2.2536, 2.3544, 2.4614,
         2.521, 2.6306, 2.7632, 2.954, 3.2006, 3.4227, 3.8521, 4.3789, 5.1686,),
        (1.0573, 1.0828, 1.1045, 1.1193, 1.15, 1.1735, 1.1964, 1.2096, 1.2381, 1.2593, 1.276,
         1.2907, 1.316, 1.3415, 1.3625, 1.3939, 1.4163, 1.4426, 1.4668, 1.4926, 1.5203,
         1.5478, 1.5646, 1.6054, 1.6268, 1.6545, 1.6888, 1.7151, 1.7575, 1.8051, 1.8551,
         1.89, 1.9278, 1.9839, 2.0309, 2.0772, 2.1187, 2.202, 2.2783, 2.3662, 2.457,
         2.5823, 2.6881, 2.8262, 2.9644, 3.1714, 3.3829, 3.65, 4.1291, 5.2911,),
    ),
    (  # stratum 2
        (0.2431, 0.2571, 0.2734, 0.2835, 0.2856, 0.3038, 0.3208, 0.3348, 0.3404, 0.3611, 0.3916,
         0.3971, 0.4049, 0.4234, 0.4402, 0.4548, 0.4841, 0.5092, 0.5359, 0.5611, 0.5994,
         0.6255, 0.6481, 0.6768, 0.7056, 0.7328, 0.7784, 0.8213, 0.8502, 0.8687, 0.9116,
         0.9797, 0.985, 1.0386, 1.0895, 1.1822, 1.2885, 1.3253, 1.4172, 1.5179, 1.5954,
         1.7306, 1.8513, 1.9916, 2.2955, 2.7357, 3.1734, 3.8166, 4.2528, 5.3394,),
        (0.3, 0.3112, 0.3234, 0.3265, 0.3373, 0.3471, 0.3566, 0.3644, 0.3897, 0.411, 0.4245, 0.4508,
         0.4664, 0.4904, 0.5133, 0.532, 0.5561, 0.5835, 0.5905, 0.6174, 0.64, 0.6606,
         0.7168, 0.7214, 0.7572, 0.8095, 0.8638, 0.8968, 0.9326, 0.9808, 1.0241, 1.0783,
         1.1141, 1.1446, 1.275, 1.3262, 1.411, 1.5307, 1.6084, 1.7376, 1.864, 1.978,
         2.3167, 2.4032, 2.6622, 3.0475, 3.3705, 4.0667, 4.7795, 7.3476,),
        (0.2868, 0.2933, 0.2994, 0.3124, 0.3211, 0.327, 0.3359, 0.3534, 0.3575, 0.3692, 0.3781,
         0.3967, 0.412, 0.4181, 0.4336, 0.4548, 0.4757, 0.4878, 0.5037, 0.5406, 0.562,
         0.59, 0.6119, 0.6271, 0.6493, 0.6686, 0.6907, 0.713, 0.7482, 0.7887, 0.8256,
         0.8859, 0.9578, 1.0191, 1.0722, 1.1504, 1.1824, 1.2753, 1.3359, 1.3832, 1.4931,
         1.7045, 1.9647, 2.1149, 2.3494, 2.6826, 2.9185, 3.3844, 4.2587, 5.2678,),
    ),
)
# END FITTED CONSTANTS


def bias_proxy(v: np.ndarray, proxy: str | None = None) -> np.ndarray:
    """``b(V)``: ``sqrt(V (1 - V))`` (``"sqrtV"``), ``V`` (``"V"``) or 1 (``"one"``), elementwise;
    ``proxy`` None is ``PROXY``."""
    proxy = PROXY if proxy is None else proxy
    v = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)
    if proxy == "sqrtV":
        return np.sqrt(v * (1.0 - v))
    return v if proxy == "V" else np.ones_like(v)


def widening(level: float, group_size, stratum=0) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` at level L: linear in L on the fitted grid, linear in log2 G between the
    fitted group sizes, held constant outside them (G below 8 or above 32 was not measured);
    ``group_size`` and ``stratum`` scalars or arrays of one shape. ValueError for a level outside
    the grid."""
    if not LEVELS or not LEVELS[0] <= level <= LEVELS[-1]:
        raise ValueError(f"the calibrated interval is fitted for levels {LEVELS[0] if LEVELS else '?'}"
                         f"-{LEVELS[-1] if LEVELS else '?'}, got {level}")
    g = np.log2(np.maximum(np.asarray(group_size, dtype=float), 1.0))
    k = np.broadcast_to(np.asarray(stratum, dtype=np.int64), g.shape)
    out = []
    for tables in (LAMBDA_LO, LAMBDA_HI):
        side = np.empty(g.shape)
        for j, table in enumerate(tables):
            per_g = [np.interp(level, LEVELS, row) for row in table]
            sel = k == j
            side[sel] = np.interp(g[sel], np.log2(GROUP_SIZES), per_g)
        out.append(side if side.ndim else float(side))
    return out[0], out[1]


def calibrated_interval(c_SA: np.ndarray, c_BSA: np.ndarray, v_SA: np.ndarray, level: float,
                        g_SA: np.ndarray, k_SA: np.ndarray | int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lo_SA, hi_SA)`` of the module docstring: point credits ``c_SA`` (SA,), posterior credit
    draws ``c_BSA`` (B, SA), the anchor value of each pair ``v_SA`` (SA,), the size G of its
    group ``g_SA`` (SA,) and its stratum ``k_SA`` (SA,; :func:`strata`)."""
    s = np.sqrt(c_BSA.std(axis=0) ** 2 + (TAU * bias_proxy(v_SA)) ** 2)
    near, far = widening(level, g_SA, k_SA)
    up = np.asarray(c_SA) >= 0
    return c_SA - np.where(up, near, far) * s, c_SA + np.where(up, far, near) * s


def strata(p, value_S: np.ndarray) -> np.ndarray:
    """The stratum (SA,) of every pair of process ``p`` by ``RULE``, from its observable features
    (:func:`crbc.estimators.calibration_strata.pair_features`)."""
    from crbc.estimators.calibration_strata import pair_features, stratum

    return stratum(pair_features(p, value_S), RULE)
