"""Where the anchors of a merged process sit in a drawing: a layered left-to-right layout.

Layer = fewest hops from a start anchor; the order inside a layer comes from barycentre sweeps
that reduce edge crossings (Sugiyama, Tagawa and Toda 1981); a layer is one column, or, taller than
:data:`WRAP_ROWS` anchors, several side by side (:func:`_wrapped`); the two absorbing boundaries
(z+ success, z- failure) take a last column on the right. Shared by the vis-network page
(:mod:`crbc.viz.anchor_graph`) and the SVG drawings (:mod:`crbc.viz.graph`, :mod:`crbc.viz.lesson_graph`), so all draw the
same picture.

A group of more than :data:`MAX_DRAWN` anchors is drawn cut (:func:`drawn`): the anchors a drawing
must show (a highlighted path, a chosen anchor), then the busiest, laid out alone in the whole
graph's column order; the drawing says how many of how many it shows.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from crbc.process import Process

__all__ = [
    "check_single", "compute_layout", "crossings", "Drawn", "drawn", "drawn_anchors", "drawn_layout", "full_hops", "inversions",
    "LABEL_ALL_MAX", "Layout", "layout", "MAX_DRAWN", "rollout_edges", "transitions", "WRAP_ROWS", "X_GAP", "Y_GAP"
]

X_GAP, Y_GAP = 190.0, 95.0
LABEL_ALL_MAX = 25  # beyond this many anchors, labels only on the chosen path (hover for the rest)
#: the most anchors one drawing shows (:func:`drawn_anchors`): a drawing of 20,000 anchors is a 9 MB
#: SVG that nobody can read, and building and sending it held a shared server for seconds
MAX_DRAWN = 300
#: the most anchors one column holds: a taller layer wraps into side-by-side columns (a random or
#: ring-shaped group puts most of its anchors a hop or two from its start, one column of hundreds)
WRAP_ROWS = 16


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
    """Layered left-to-right layout: layer = fewest hops from a start anchor; inside a layer,
    anchors are ordered by barycentre sweeps (:func:`_order_layers`), filled into columns of at
    most :data:`WRAP_ROWS` (:func:`_wrapped`) and centred; the two boundaries take a last column
    on the right. Computed once per process (its arrays are
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
    return _layered(n, starts, p.step_state[inner], p.step_next[inner], np.asarray(p.n_s))


def _layered(n: int, starts: np.ndarray, src: np.ndarray, dst: np.ndarray, n_s: np.ndarray,
             layer: np.ndarray | None = None) -> Layout:
    """The layout of ``n`` anchors with the edges ``src[i] -> dst[i]`` (E,): each anchor's layer is
    its fewest hops from one of ``starts`` (or the given ``layer`` (n,)), the order inside a layer
    from :func:`_order_layers`, its columns from :func:`_wrapped`, the boundaries in a last column."""
    succ: list[set[int]] = [set() for _ in range(n)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if a != b:
            succ[a].add(b)
            pred[b].add(a)
    if layer is None:
        layer = _hops(n, starts, succ)
    column, y = _wrapped(layer, _order_layers(layer, pred, succ, n_s), WRAP_ROWS)
    x = column.astype(float)
    last = float(column.max()) + 1.0 if n else 1.0
    spread = max(1.0, float(np.abs(y).max()) if n else 1.0)
    # narrower columns for deep graphs, so the drawing keeps a landscape shape near 16:9
    widest = int(np.bincount(column).max()) if n else 1
    gap_x = float(np.clip(Y_GAP * max(widest, 2) * 1.8 / (last + 1), 110.0, X_GAP))
    out = Layout(x_S=x * gap_x, y_S=y * Y_GAP, layer_S=layer,
                 x_B=np.array([last, last]) * gap_x,
                 y_B=np.array([-0.5 * spread - 0.5, 0.5 * spread + 0.5]) * Y_GAP)
    for a in (out.x_S, out.y_S, out.layer_S, out.x_B, out.y_B):
        a.flags.writeable = False  # shared by every caller of layout()
    return out


def _wrapped(layer: np.ndarray, y: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(column, y)`` (n,) each: layer L's anchors in their ``y`` order (top to bottom) filled
    into ``ceil(k_L / rows)`` columns of at most ``rows`` anchors, left to right; layer L's columns
    all left of layer L + 1's; each column centred (y = rank in it - (size - 1) / 2). A layer of at
    most ``rows`` anchors gets one column and keeps the centred ranks :func:`_order_layers` gave."""
    n = len(layer)
    if n == 0:
        return layer.copy(), y.copy()
    counts = np.bincount(layer)
    first = np.concatenate([[0], np.cumsum(-(-counts // rows))[:-1]])  # each layer's first column
    order = np.lexsort((y, layer))  # by layer, then top to bottom
    rank = np.arange(n) - (np.cumsum(counts) - counts)[layer[order]]  # place inside its layer
    size = np.minimum(rows, counts[layer[order]] - rank // rows * rows)  # anchors in its column
    column, out = np.empty(n, dtype=int), np.empty(n)
    column[order] = first[layer[order]] + rank // rows
    out[order] = rank % rows - (size - 1) / 2.0
    return column, out


def _hops(n: int, starts: np.ndarray, succ: list[set[int]]) -> np.ndarray:
    """Fewest hops from any of ``starts`` to each of ``n`` anchors (breadth first; 0 where none
    reaches, which merged rollouts cannot produce)."""
    layer = np.full(n, -1, dtype=int)
    q = deque(int(s) for s in starts)
    layer[starts] = 0
    while q:
        a = q.popleft()
        for b in succ[a]:
            if layer[b] < 0:
                layer[b] = layer[a] + 1
                q.append(b)
    layer[layer < 0] = 0
    return layer


def drawn_anchors(p: Process, keep: Iterable[int] = (), cap: int | None = None) -> np.ndarray:
    """The anchors one drawing of ``p`` shows, ascending ids: every anchor when there are at most
    ``cap`` (default :data:`MAX_DRAWN`); else the anchors of ``keep`` (in their order, at most
    ``cap``), then the busiest others (most visits N(s), ties by lower id) up to ``cap`` in all."""
    n = p.n_states
    cap = MAX_DRAWN if cap is None else int(cap)
    if n <= cap:
        return np.arange(n)
    shown = np.zeros(n, dtype=bool)
    chosen = list(dict.fromkeys(int(s) for s in keep if 0 <= int(s) < n))[:cap]
    shown[chosen] = True
    busiest = np.lexsort((np.arange(n), -np.asarray(p.n_s)))
    shown[busiest[~shown[busiest]][:cap - len(chosen)]] = True
    return np.flatnonzero(shown)


def drawn_layout(p: Process, shown: np.ndarray) -> Layout:
    """The layout of the anchors ``shown`` (ascending ids, from :func:`drawn_anchors`) alone, in
    ``p``'s anchor ids: :func:`layout` when every anchor is shown; else the graph induced on
    them (an edge is drawn when both its ends are), each keeping its column order from the whole
    graph (its fewest hops from a start, :func:`full_hops`, with the empty columns closed up)
    and ordered inside its column by :func:`_order_layers` on the induced edges. A hidden
    anchor's ``x_S``, ``y_S`` are NaN and its ``layer_S`` -1."""
    n, m = p.n_states, len(shown)
    if m == n:
        return layout(p)
    check_single(p)
    sub = np.full(n, -1, dtype=np.int64)
    sub[shown] = np.arange(m)
    inner = p.step_next < n
    a, b = sub[p.step_state[inner]], sub[p.step_next[inner]]
    both = (a >= 0) & (b >= 0)
    hops = full_hops(p)[shown]
    columns = np.unique(hops, return_inverse=True)[1].reshape(-1)
    lay = _layered(m, np.zeros(0, dtype=int), a[both], b[both], np.asarray(p.n_s)[shown], layer=columns)
    x, y, layer = np.full(n, np.nan), np.full(n, np.nan), np.full(n, -1, dtype=int)
    x[shown], y[shown], layer[shown] = lay.x_S, lay.y_S, lay.layer_S
    return Layout(x_S=x, y_S=y, layer_S=layer, x_B=lay.x_B, y_B=lay.y_B)


@dataclass(frozen=True)
class Drawn:
    """What one drawing of a group shows: ``shown``, the anchor ids (ascending); their
    ``layout`` (:func:`drawn_layout`); ``mask`` (S + 2,), True at every shown anchor and at both
    boundaries; ``n_states``, the group's anchors."""

    shown: np.ndarray
    layout: Layout
    mask: np.ndarray
    n_states: int

    @property
    def cut(self) -> bool:
        return len(self.shown) < self.n_states

    def note(self, highlight_rollout: int | None = None, selected: int | None = None) -> str:
        """The sentence a cut drawing carries: how many anchors it shows and which it kept first
        (``highlight_rollout``'s path, the ``selected`` anchor and its neighbours)."""
        first = ([f"rollout {highlight_rollout}'s path"] if highlight_rollout is not None else []) + (
            ["the chosen anchor and its neighbours"] if selected is not None else [])
        return (f"{len(self.shown):,} of {self.n_states:,} anchors drawn: "
                + "".join(f"{k}, " for k in first[:-1]) + (f"{first[-1]} and " if first else "")
                + "the busiest; an edge is drawn when both its ends are")


def drawn(p: Process, keep: Iterable[int] = ()) -> Drawn:
    """:func:`drawn_anchors` of ``p`` keeping ``keep`` first, with their :func:`drawn_layout`."""
    shown = drawn_anchors(p, keep)
    mask = np.ones(p.n_states + 2, dtype=bool)
    mask[:p.n_states] = False
    mask[shown] = True
    return Drawn(shown, drawn_layout(p, shown), mask, p.n_states)


def full_hops(p: Process) -> np.ndarray:
    """Each anchor's fewest hops from a start anchor of ``p`` over every observed transition
    (S,), by a breadth-first search in compiled code (``scipy.sparse.csgraph``) from one extra
    node joined to every start; the same numbers as :func:`compute_layout`'s layers."""
    n = p.n_states
    starts = np.unique(p.step_state[p.rollout_offsets[:-1]])
    inner = p.step_next < n
    src = np.concatenate([p.step_state[inner], np.full(len(starts), n)])
    dst = np.concatenate([p.step_next[inner], starts])
    g = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n + 1, n + 1))
    d = shortest_path(g, method="D", unweighted=True, indices=n)[:n]
    return np.where(np.isfinite(d), d - 1, 0).astype(int)


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
