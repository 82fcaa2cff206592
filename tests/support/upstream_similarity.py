"""The slow twin of :mod:`crbc.io.similarity`: verl-agent's similarity grouping, re-implemented
(not copied) from reading it, in its shape: every observation against every cluster in order,
a fresh ``SequenceMatcher`` per comparison, a uuid per cluster.

Source (file:line): verl-agent, fork vanzll/verl-agent @ d0b97244c50f17fb43a6ef0a15bca0e95a044ff7
(upstream's history; ``gigpo/core_gigpo.py`` last changed in upstream's 29e3e8b):
``are_similar`` 72-85, ``build_step_group`` 243-331 (the assert 266-267, the similarity branch
297-321). Used by the parity tests and as the baseline of benchmarks/bench_similarity.py.
"""

from __future__ import annotations

import uuid
from difflib import SequenceMatcher

import numpy as np


def are_similar(a, b, threshold: float = 0.95) -> bool:
    """True when difflib's ratio of ``a`` (the new observation) against ``b`` (the cluster's
    representative) reaches the threshold; text only."""
    if not (isinstance(a, str) and isinstance(b, str)):
        raise ValueError("similarity grouping needs text observations")
    return SequenceMatcher(None, a, b).ratio() >= threshold


def build_step_group_similar(anchor_obs: np.ndarray, index: np.ndarray, similarity_thresh: float) -> np.ndarray:
    """One uuid per row: rows of each task group (``np.unique`` order of ``index``) visited in
    batch order, each put in the first cluster whose first observation is similar, else a new
    cluster."""
    assert 0.0 < similarity_thresh < 1.0
    out = np.empty(len(anchor_obs), dtype=object)
    for g in np.unique(index):
        locs = np.where(index == g)[0]
        clusters: list[dict] = []
        for obs, loc in zip(anchor_obs[locs], locs, strict=True):
            home = None
            for cluster in clusters:
                if are_similar(obs, cluster["rep"], similarity_thresh):
                    home = cluster
                    break
            if home is None:
                clusters.append({"rep": obs, "locs": [loc]})
            else:
                home["locs"].append(loc)
        for cluster in clusters:
            uid = str(uuid.uuid4())
            for loc in cluster["locs"]:
                out[loc] = uid
    assert not any(x is None for x in out)
    return out


def clusters_of(texts: list[str], tau: float) -> tuple[list[int], list[str]]:
    """One group's ``(label_T, reps_C)`` from :func:`build_step_group_similar`, clusters numbered
    by their first row (the form :func:`crbc.io.similarity.cluster_texts` returns)."""
    obs = np.empty(len(texts), dtype=object)
    obs[:] = texts
    return clusters_from_uids(texts, build_step_group_similar(obs, np.zeros(len(texts), dtype=np.int64), tau))


def clusters_from_uids(texts, uids) -> tuple[list[int], list[str]]:
    """``(label_T, reps_C)`` of one group's rows given their cluster uids (rows in batch order):
    clusters numbered by their first row, each represented by its first row's text."""
    number: dict[str, int] = {}
    reps: list[str] = []
    labels = []
    for text, u in zip(texts, uids, strict=True):
        if u not in number:
            number[u] = len(reps)
            reps.append(text)
        labels.append(number[u])
    return labels, reps
