"""Where the anchors of a merged process sit in a drawing: a layered left-to-right layout.

Layer (column) = fewest hops from a start anchor; the order inside a layer comes from
barycentre sweeps that reduce edge crossings (Sugiyama, Tagawa and Toda 1981); the two absorbing
boundaries (z+ success, z- failure) take a last column on the right. Shared by the vis-network page
(:mod:`crbc.viz.anchor_graph`) and the SVG drawings (:mod:`crbc.viz.graph`, :mod:`crbc.viz.lesson_graph`), so all draw the
same picture.
"""

from __future__ import annotations

import weakref
from collections import deque
from dataclasses import dataclass

import numpy as np

from crbc.process import Process

__all__ = [
    "check_single", "compute_layout", "crossings", "LABEL_ALL_MAX", "Layout", "layout", "rollout_edges",
    "transitions", "X_GAP", "Y_GAP"
]

X_GAP, Y_GAP = 190.0, 95.0
LABEL_ALL_MAX = 25  # beyond this many anchors, labels only on the chosen path (hover for the rest)


@dataclass(frozen=True)
class Layout:
    """Node positions: ``x_S``, ``y_S`` for anchors, ``x_B``, ``y_B`` for [z+, z-]; ``layer_S``."""

    x_S: np.ndarray
    y_S: np.ndarray
    layer_S: np.ndarray
    x_B: np.ndarray
    y_B: np.ndarray


def check_single(p: Process) -> None:
    """Refuse a process merged from several groups (a graph drawing shows one group)."""
    if len(p.group_ids) != 1:
        raise ValueError("graph drawings take the process of a single group")


#: layouts already computed, per process object (a Process is immutable; an entry goes with it)
_DONE: weakref.WeakKeyDictionary[Process, Layout] = weakref.WeakKeyDictionary()


def layout(p: Process) -> Layout:
    """Layered left-to-right layout: layer (column) = fewest hops from a start anchor; inside a
    layer, anchors are ordered by barycentre sweeps (:func:`_order_layers`) and centred; the two
    boundaries take a last column on the right. Computed once per process (its arrays are
    read-only); :func:`compute_layout` always computes it."""
    got = _DONE.get(p)
    if got is None:
        got = _DONE[p] = compute_layout(p)
    return got


def compute_layout(p: Process) -> Layout:
    """:func:`layout` without the per-process memo."""
    check_single(p)
    n = p.n_states
    starts = np.unique(p.step_state[p.rollout_offsets[:-1]])
    inner = p.step_next < n
    src, dst = p.step_state[inner], p.step_next[inner]
    succ: list[set[int]] = [set() for _ in range(n)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if a != b:
            succ[a].add(b)
            pred[b].add(a)
    layer = np.full(n, -1, dtype=int)
    q = deque(int(s) for s in starts)
    layer[starts] = 0
    while q:
        a = q.popleft()
        for b in succ[a]:
            if layer[b] < 0:
                layer[b] = layer[a] + 1
                q.append(b)
    layer[layer < 0] = 0  # unreachable from a start cannot happen for merged rollouts; be safe
    y = _order_layers(layer, pred, succ, p.n_s)
    x = layer.astype(float)
    last = float(layer.max()) + 1.0
    spread = max(1.0, float(np.abs(y).max()) if n else 1.0)
    # narrower columns for deep graphs, so the drawing keeps a landscape shape near 16:9
    widest = int(np.bincount(layer).max())
    gap_x = float(np.clip(Y_GAP * max(widest, 2) * 1.8 / (last + 1), 110.0, X_GAP))
    out = Layout(x_S=x * gap_x, y_S=y * Y_GAP, layer_S=layer,
                 x_B=np.array([last, last]) * gap_x,
                 y_B=np.array([-0.5 * spread - 0.5, 0.5 * spread + 0.5]) * Y_GAP)
    for a in (out.x_S, out.y_S, out.layer_S, out.x_B, out.y_B):
        a.flags.writeable = False  # shared by every caller of layout()
    return out


def _positions(layer: np.ndarray, key: np.ndarray, n_s: np.ndarray) -> np.ndarray:
    """Rank the anchors of each layer by ``key`` (ties: busier first, then id) and centre them."""
    y = np.zeros(len(layer))
    for L in range(int(layer.max()) + 1 if len(layer) else 0):
        members = sorted(np.flatnonzero(layer == L).tolist(), key=lambda m: (key[m], -n_s[m], m))
        k = len(members)
        for i, m in enumerate(members):
            y[m] = i - (k - 1) / 2.0
    return y


def crossings(layer: np.ndarray, y: np.ndarray, succ: list[set[int]]) -> int:
    """Number of crossing pairs among edges joining consecutive layers (the quantity the sweeps
    reduce)."""
    total = 0
    for L in range(int(layer.max()) if len(layer) else 0):
        e = np.array([(y[a], y[b]) for a in np.flatnonzero(layer == L) for b in succ[a]
                      if layer[b] == L + 1]).reshape(-1, 2)
        d0 = e[:, 0][:, None] - e[:, 0][None, :]
        d1 = e[:, 1][:, None] - e[:, 1][None, :]
        total += int(((d0 * d1) < 0).sum()) // 2
    return total


def _order_layers(layer: np.ndarray, pred: list[set[int]], succ: list[set[int]], n_s: np.ndarray,
                  sweeps: int = 6) -> np.ndarray:
    """Vertical positions: barycentre heuristic (Sugiyama et al. 1981), alternating a sweep to
    the right (mean position of the predecessors in earlier layers) and one to the left (of the
    successors in later layers); the ordering with the fewest crossings is kept."""
    n = len(layer)
    y = _positions(layer, np.zeros(n), n_s)
    best, best_x = y, crossings(layer, y, succ)
    for sweep in range(sweeps):
        forward = sweep % 2 == 0
        key = y.copy()
        layers = range(1, int(layer.max()) + 1) if forward else range(int(layer.max()) - 1, -1, -1)
        for L in layers:
            for m in np.flatnonzero(layer == L):
                nb = [a for a in (pred[m] if forward else succ[m])
                      if (layer[a] < L if forward else layer[a] > L)]
                key[m] = np.mean(y[nb]) if nb else y[m]
            # re-rank this layer now, so the next layer of the sweep sees its new order
            members = np.flatnonzero(layer == L)
            order = sorted(members.tolist(), key=lambda m: (key[m], -n_s[m], m))
            for i, m in enumerate(order):
                y[m] = i - (len(order) - 1) / 2.0
        c = crossings(layer, y, succ)
        if c < best_x:
            best, best_x = y.copy(), c
    return best


def rollout_edges(p: Process, r: int) -> list[tuple[int, int, int]]:
    """The chosen rollout as (anchor, action index, successor) triples (successor ids: S = z+,
    S + 1 = z-)."""
    sl = slice(int(p.rollout_offsets[r]), int(p.rollout_offsets[r + 1]))
    return list(zip(p.step_state[sl].tolist(), p.sa_action[p.step_sa[sl]].tolist(),
                    p.step_next[sl].tolist(), strict=True))


def transitions(p: Process) -> list[tuple[int, int, int, int]]:
    """Distinct observed transitions as (anchor, action index, successor, count)."""
    sa, nxt, cnt = p.transitions()
    return [(int(p.sa_state[a]), int(p.sa_action[a]), int(x), int(c))
            for a, x, c in zip(sa.tolist(), nxt.tolist(), cnt.tolist(), strict=True)]
