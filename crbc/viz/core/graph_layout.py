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
    "check_single", "compute_layout", "crossings", "inversions", "LABEL_ALL_MAX", "Layout", "layout", "rollout_edges",
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


def inversions(v: np.ndarray) -> int:
    """Strict inversions of a sequence: #{(i, j) : i < j and v_i > v_j} (equal values never
    count). Bottom-up merge sort on dense ranks r (0 .. R - 1), vectorised per level: at block
    width w, every element of a right block finds how many of its left block's (sorted) values are
    <= it with one ``searchsorted`` over the keys ``pair * R + r``, the rest of that block are the
    inversions; then each pair of blocks is merged by sorting the same keys. O(n log^2 n) time,
    O(n) memory (the obvious pairwise count is O(n^2) in both)."""
    v = np.asarray(v)
    n = len(v)
    if n < 2:
        return 0
    r = np.unique(v, return_inverse=True)[1].reshape(-1).astype(np.int64)
    R = int(r.max()) + 1
    idx = np.arange(n, dtype=np.int64)
    total, w = 0, 1
    while w < n:
        pair = idx // (2 * w)
        right = (idx // w) % 2 == 1
        key = pair * R + r
        left_keys = key[~right]  # ascending: pairs in order, each left block already sorted
        at = np.searchsorted(left_keys, key[right], side="right")
        total += int(((pair[right] + 1) * w - at).sum())  # pair p's left block ends at (p + 1) w
        r = np.sort(key) - pair * R
        w *= 2
    return total


def _layer_edges(layer: np.ndarray, succ: list[set[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(L, a, b)``: every edge a -> b from layer L to layer L + 1 (E,), sorted by L."""
    e = [(a, b) for a in range(len(layer)) for b in succ[a] if layer[b] == layer[a] + 1]
    arr = np.array(e, dtype=np.int64).reshape(-1, 2)
    L = layer[arr[:, 0]]
    order = np.argsort(L, kind="stable")
    return L[order], arr[order, 0], arr[order, 1]


def _count_crossings(edges: tuple[np.ndarray, np.ndarray, np.ndarray], y: np.ndarray) -> int:
    """:func:`crossings` of the edges of :func:`_layer_edges` at the positions ``y``."""
    L, a, b = edges
    if not len(L):
        return 0
    ya, yb = y[a], y[b]
    order = np.lexsort((yb, ya, L))
    L, yb = L[order], yb[order]
    return sum(inversions(part) for part in np.split(yb, np.flatnonzero(np.diff(L)) + 1))


def crossings(layer: np.ndarray, y: np.ndarray, succ: list[set[int]]) -> int:
    """Number of crossing pairs among edges joining consecutive layers (the quantity the sweeps
    reduce): edges (a, b) and (c, d) from layer L to L + 1 cross when (y_a - y_c)(y_b - y_d) < 0.
    Per layer, edges sorted by (y_a, y_b) cross exactly at the strict inversions of their y_b
    (:func:`inversions`; Barth, Juenger and Mutzel 2002): O(E log^2 E), not the O(E^2) pairwise
    matrix (a 20,000-anchor group's layer of 30,000 edges would need 7 GB for it)."""
    if not len(layer):
        return 0
    return _count_crossings(_layer_edges(layer, succ), np.asarray(y, dtype=float))


def _near_edges(layer: np.ndarray, nbrs: list[set[int]], earlier: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(m, a)``: every neighbour a in ``nbrs[m]`` on an earlier layer than m (``earlier``) or
    a later one."""
    e = [(m, a) for m in range(len(layer)) for a in nbrs[m]
         if (layer[a] < layer[m] if earlier else layer[a] > layer[m])]
    arr = np.array(e, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _order_layers(layer: np.ndarray, pred: list[set[int]], succ: list[set[int]], n_s: np.ndarray,
                  sweeps: int = 6) -> np.ndarray:
    """Vertical positions: barycentre heuristic (Sugiyama et al. 1981), alternating a sweep to
    the right (mean position of the predecessors in earlier layers) and one to the left (of the
    successors in later layers); the ordering with the fewest crossings is kept.

    Each layer's keys are one ``bincount`` over its anchors' neighbour edges (key(m) = mean of
    y over the neighbours, y(m) itself without one) and its order one ``lexsort`` by (key,
    -visits, id): the positions are half-integers, so the sums are exact and the keys equal
    ``np.mean`` of the neighbours' positions bit for bit (the slow obvious twin, one anchor at a
    time, is in tests/report/test_report_scale.py)."""
    n = len(layer)
    y = _positions(layer, np.zeros(n), n_s)
    edges = _layer_edges(layer, succ)
    best, best_x = y, _count_crossings(edges, y)
    top = int(layer.max()) if n else 0
    members = [np.flatnonzero(layer == L) for L in range(top + 1)]
    near = {True: _near_edges(layer, pred, True), False: _near_edges(layer, succ, False)}
    n_s = np.asarray(n_s)
    for sweep in range(sweeps):
        forward = sweep % 2 == 0
        key = y.copy()
        m_E, a_E = near[forward]
        at_E = layer[m_E]
        layers = range(1, top + 1) if forward else range(top - 1, -1, -1)
        for L in layers:
            sel = at_E == L
            tot = np.bincount(m_E[sel], weights=y[a_E[sel]], minlength=n)
            cnt = np.bincount(m_E[sel], minlength=n)
            mem = members[L]
            has = cnt[mem] > 0
            key[mem[has]] = tot[mem[has]] / cnt[mem[has]]
            # re-rank this layer now, so the next layer of the sweep sees its new order
            order = mem[np.lexsort((mem, -n_s[mem], key[mem]))]
            y[order] = np.arange(len(order)) - (len(order) - 1) / 2.0
        c = _count_crossings(edges, y)
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
