"""Observable per-pair features of a group and the Mondrian strata of the calibrated interval.

Every quantity here is read off the group itself (no setting label, no truth), per (anchor,
action) pair, shape (SA,) on a merged process ``p``::

    none   the credit is 0 by construction (crbc.estimators.closure.zero_credit)
    n_s    N(s), the anchor's visits in its group          n_sa   N(s, a)
    n_act  the number of distinct actions tried at s       v      the closure's value V(s)
    share  the group's success share k / G                 G      the group's size

A stratum rule ``(feature, edges, split_none)`` puts a pair in stratum

    k = 0                                           if split_none and none
    k = [split_none] + #{ e in edges : x >= e }     otherwise (x the pair's feature)

so there are ``len(edges) + 1 + [split_none]`` strata; the rule ``("", (), False)`` is one
stratum (the interval pooled over every pair).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FEATURES", "n_strata", "pair_features", "stratum"]

FEATURES = ("n_s", "n_sa", "n_act", "v", "share", "G")


def pair_features(p, value_S: np.ndarray) -> dict[str, np.ndarray]:
    """The features of the module docstring for every pair of process ``p`` (arrays of shape
    (SA,)), with ``value_S`` (S,) the closure's value of every anchor."""
    from crbc.estimators.closure import zero_credit

    s_SA = p.sa_state
    g_S = p.state_group[s_SA]
    n_G = np.bincount(p.rollout_group, minlength=len(p.group_ids)).astype(float)
    k_G = np.bincount(p.rollout_group, weights=p.rollout_success.astype(float), minlength=len(p.group_ids))
    return {"none": zero_credit(p), "n_s": p.n_s[s_SA].astype(float), "n_sa": p.n_sa.astype(float),
            "n_act": p.n_actions[s_SA].astype(float), "v": np.asarray(value_S, dtype=float)[s_SA],
            "share": (k_G / np.maximum(n_G, 1.0))[g_S], "G": n_G[g_S]}


def n_strata(rule: tuple[str, tuple[float, ...], bool]) -> int:
    """How many strata the rule makes."""
    _feature, edges, split_none = rule
    return len(edges) + 1 + int(split_none)


def stratum(features: dict[str, np.ndarray], rule: tuple[str, tuple[float, ...], bool]) -> np.ndarray:
    """The stratum of every pair (int array, the shape of the feature arrays) by ``rule``."""
    feature, edges, split_none = rule
    none = np.asarray(features["none"], dtype=bool)
    k = np.zeros(none.shape, dtype=np.int64)
    if edges:
        x = np.asarray(features[feature], dtype=float)
        k = np.searchsorted(np.asarray(edges, dtype=float), x, side="right").astype(np.int64)
    if split_none:
        k = np.where(none, 0, k + 1)
    return k
