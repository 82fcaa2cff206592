"""Per-step quantities of the calibrated interval on cached calibration data (issue 36), cached.

For one (setting, split, number of levels, G) of :mod:`experiments.calibration_data` (the first G
rollouts of every level's group) and posterior hyperparameters (alpha, kappa, alpha_pi), every
step n of the merged process gets (arrays of shape (N,), saved as ``.npz``, nothing pickled)::

    a      the anchor-level truth A(s_n, a_n)
    c      the closure's point credit Q - V of the step's pair (snapped: 0 where ``none``)
    sd     the standard deviation of the pair's credit over B = 200 posterior draws
           (crbc.estimators.posterior, seed 0: the draws the library makes)
    v      the closure's value V(s_n) of the anchor
    none   1.0 where the credit is 0 by construction (crbc.estimators.closure.zero_credit)
    n_s    N(s_n), the anchor's visits in the group;  n_sa  N(s_n, a_n);  n_act  actions tried at s_n
    share  the group's success share k / G
    level  the level's index in the split (0 ..), to weigh every level the same

Only ``a`` and ``level`` are not observable on a user's run. Written to
``<cache>/scores/<setting>-<split>-<levels>-G<G>-<alpha>-<kappa>-<alpha_pi>.npz``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.calibration_data import SPLITS, load

BETA, B, SEED = 0.98, 200, 0
KEYS = ("a", "c", "sd", "v", "none", "n_s", "n_sa", "n_act", "share", "level")


def cell(rows: list, G: int):
    """``(process, a_N)``: the merged process of the first G rollouts of every level and the
    truth of each of its steps."""
    from crbc.io.rollouts import RolloutGroup
    from crbc.process import merge

    groups = [RolloutGroup(g.group, g.rollouts[:G]) for g, _ in rows]
    lens = [sum(len(r.steps) for r in g.rollouts) for g in groups]
    return merge(groups), np.concatenate([a[:n] for (_, a), n in zip(rows, lens, strict=True)])


def features(p, a_N: np.ndarray, alpha: float, kappa: float, alpha_pi: float) -> dict[str, np.ndarray]:
    """The per-step arrays of the module docstring for process ``p`` with truth ``a_N`` (N,);
    the observable ones come from the library's
    :func:`crbc.estimators.calibration_strata.pair_features`."""
    from crbc.estimators import closure as C
    from crbc.estimators.calibration_strata import pair_features
    from crbc.estimators.posterior import posterior_draws

    v_S, _q_SA, c_SA = C.snap_zero(p, *C.estimate(p, BETA, None))
    c_BSA, _ = posterior_draws(p, B, SEED, BETA, alpha, kappa, alpha_pi)
    c_BSA = np.where(np.abs(c_BSA) <= 1e-12, 0.0, c_BSA)  # the library's snap (bootstrap.SNAP)
    f = pair_features(p, v_S)
    sa_N = p.step_sa
    out = {k: np.asarray(f[k], dtype=float)[sa_N] for k in ("none", "n_s", "n_sa", "n_act", "v", "share")}
    out.update(a=np.asarray(a_N, dtype=float), c=c_SA[sa_N], sd=c_BSA.std(axis=0)[sa_N],
               level=p.rollout_group[p.step_rollout].astype(float))
    return out


def scores(setting: str, split: str, n_levels: int, G: int, hyper: tuple[float, float, float],
           cache: Path) -> dict[str, np.ndarray]:
    """The cached per-step arrays of one cell (computed and written when absent)."""
    alpha, kappa, alpha_pi = hyper
    out = cache / "scores" / f"{setting}-{split}-{SPLITS[split]}-{n_levels}-G{G}-{alpha:g}-{kappa:g}-{alpha_pi:g}.npz"
    if out.exists():
        with np.load(out, allow_pickle=False) as z:
            return {k: z[k] for k in KEYS}
    p, a_N = cell(load(setting, split, n_levels, cache), G)
    f = features(p, a_N, alpha, kappa, alpha_pi)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.npz")
    np.savez(tmp, **f)
    tmp.replace(out)
    return f
