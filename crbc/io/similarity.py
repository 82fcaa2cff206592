"""Approximate anchors: observations merged by text similarity, exactly as verl-agent's GiGPO does.

verl-agent (github.com/langfengQ/verl-agent, ``gigpo/core_gigpo.py`` as of its commit 29e3e8b,
read in the fork vanzll/verl-agent whose history is upstream's, file unchanged up to d0b9724):
``are_similar`` (lines 72-85) is ``SequenceMatcher(None, a, b).ratio() >= threshold`` with ``a``
the new observation and ``b`` the cluster's representative, difflib's default ``autojunk=True``;
``build_step_group(..., enable_similarity=True, similarity_thresh=tau)`` (lines 243-331, the
similarity branch 297-321) asserts ``0 < tau < 1`` (line 267) and, per task group (``index``),
visits the group's rows in batch order; each observation joins the **first** existing cluster,
in creation order, whose representative (the cluster's first observation, never updated) passes
``are_similar``, else it opens a new cluster. All the steps of a group are clustered together,
whatever their time step.

:func:`cluster_texts` returns the same clusters, faster, and only by skipping work whose outcome
is already known:

- **Exact copies** join through a dict. A text equal to one seen before meets the same
  representatives in the same order with the same ratios, so it lands where the first copy did
  (and a text that opened a cluster has ratio 1 with itself).
- **Upper bounds** rule a cluster out without ``ratio()``. With M the number of matched
  characters ``ratio() = 2.0 * M / (la + lb)`` (difflib's ``_calculate_ratio``), and M is at most
  ``min(la, lb)`` (``real_quick_ratio``) and at most ``sum_c min(count_a(c), count_b(c))``
  (``quick_ratio``): matched characters are equal characters, each used once; autojunk only
  removes matches. The bound is computed with the same float expression ``2.0 * Q / (la + lb)``
  as ``ratio()``, so ``bound < tau`` proves ``ratio() < tau``. Character counts are kept per
  cluster in buckets (code point itself below 256, else ``256 + cp % 256``): a bucket's
  ``min(x1 + x2, y1 + y2) >= min(x1, y1) + min(x2, y2)``, so bucketing only loosens the bound.
- **One index per representative**: difflib indexes ``b`` (``set_seq2``: the b2j table without
  the autojunk "popular" characters) once per cluster, and that very table is used for every
  text compared with it.
- **An early answer** (:func:`reaches`): the matching blocks are found window by window as
  ``get_matching_blocks`` finds them, and the search stops as soon as the blocks found prove
  ``ratio() >= tau`` or the windows left cannot reach it; each window's longest block is found
  by :class:`BlockFinder`, difflib's own loop over fewer positions. (A compiled difflib,
  cydifflib 1.2.0, gives the same ratios but is slower here: its block search zero-fills the
  window's width for every position of a; benchmarks/bench_difflib_ports.py.)
- **In C when built**: ``crbc.io.blockmatch`` (crbc/io/blockmatch.c, an optional extension
  built by ``pip install``) is the same index, the same block search and the same early answer
  compiled: ``Index(b).reaches(a, tau)`` decides exactly what :func:`reaches` with
  :class:`BlockFinder` decides (tests/io/test_similarity_compiled.py). Without it (no compiler
  at install time), or with ``CRBC_PURE_PYTHON_SIMILARITY=1`` in the environment, the Python
  path above runs: the same clusters, slower.

Bounded work (a user's data in a shared studio): at most ``max_comparisons`` ``ratio()`` calls
per group (:data:`MAX_COMPARISONS`) and ``max_pairs`` (text, cluster) pairs looked at in all
(bounds included, :data:`MAX_PAIRS`), else :class:`SimilarityError` naming the group.
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left
from collections.abc import Sequence
from difflib import SequenceMatcher
from numbers import Real

import numpy as np

from crbc.io.grouped_rows import rows_by_label

try:
    from crbc.io import blockmatch
except ImportError:  # not built (no C compiler at install time): the pure-Python path
    blockmatch = None

__all__ = ["BUCKETS", "MAX_COMPARISONS", "MAX_PAIRS", "SimilarityError", "check_similarity",
           "cluster_texts", "describe_similarity"]

MAX_COMPARISONS = 200_000  #: ``ratio()`` calls one group may need (about 100 us each at 500 characters in Python, 3 us compiled)
MAX_PAIRS = 50_000_000  #: (distinct text, cluster) pairs one group may need, bounds included
BUCKETS = 512  #: character-count buckets per cluster (the quick_ratio bound)
PURE_PYTHON_ENV = "CRBC_PURE_PYTHON_SIMILARITY"  #: set to 1: never the compiled block search


def compiled_block_search():
    """The compiled block search (module ``crbc.io.blockmatch``) when it was built and
    :data:`PURE_PYTHON_ENV` is not ``1``, else None (the pure-Python :class:`BlockFinder`)."""
    if os.environ.get(PURE_PYTHON_ENV) == "1":
        return None
    return blockmatch


class SimilarityError(ValueError):
    """A similarity threshold out of (0, 1), or a group that needs more comparisons than allowed."""


def check_similarity(tau: object, what: str = "anchor similarity") -> float | None:
    """``tau`` as a float when ``0 < tau < 1`` (None passes through: no merging); else
    :class:`SimilarityError` saying what was given. verl-agent asserts the same open interval:
    1 would be the exact text, 0 merges everything."""
    if tau is None:
        return None
    if isinstance(tau, bool) or not isinstance(tau, (Real, str)):
        raise SimilarityError(f"{what}: a number between 0 and 1 (exclusive), not {type(tau).__name__}")
    try:
        t = float(tau)
    except ValueError:
        raise SimilarityError(f"{what}: a number between 0 and 1 (exclusive), not {tau!r}") from None
    if not (math.isfinite(t) and 0.0 < t < 1.0):
        raise SimilarityError(f"{what} must satisfy 0 < TAU < 1 (1 would be the exact text, 0 merges "
                              f"everything), got {tau!r}")
    return t


def describe_similarity(tau: float | None) -> str:
    """How reports name the merging: ``""`` for none, else ``difflib ratio >= TAU``."""
    return "" if tau is None else f"observations merged at difflib ratio >= {tau:g} (verl-agent's similarity)"


def codes_of(text: str) -> np.ndarray:
    """The text's code points as an array (lone surrogates kept as they are)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def bucket_of(cp: np.ndarray) -> np.ndarray:
    """Each code point's bucket: itself below 256, else ``256 + cp % 256``."""
    return np.where(cp < 256, cp, 256 + (cp & 255)).astype(np.intp)


class _Clusters:
    """The growing clusters of one group: representatives, lengths, bucket counts, and each
    representative's index (difflib's ``b2j``), built on its first comparison: a compiled
    ``blockmatch.Index`` when ``compiled`` is the module, else a ``SequenceMatcher``."""

    def __init__(self, compiled=None) -> None:
        self.compiled = compiled
        self.reps: list[str] = []
        self.matchers: list = []
        self.len_C = np.zeros(16, dtype=np.int64)
        self.hist_CK = np.zeros((16, BUCKETS), dtype=np.int32)
        self._where: tuple[str, dict[str, list[int]]] | None = None

    def add(self, text: str, hist: np.ndarray) -> int:
        c = len(self.reps)
        if c == len(self.len_C):
            self.len_C = np.concatenate([self.len_C, np.zeros_like(self.len_C)])
            self.hist_CK = np.concatenate([self.hist_CK, np.zeros_like(self.hist_CK)])
        self.reps.append(text)
        self.matchers.append(None)
        self.len_C[c] = len(text)
        self.hist_CK[c] = hist
        return c

    def candidates(self, text: str, hist: np.ndarray, tau: float) -> np.ndarray:
        """The clusters, in order, that the two upper bounds cannot rule out."""
        n, la = len(self.reps), len(text)
        lb = self.len_C[:n]
        total = (la + lb).astype(np.float64)
        total[total == 0] = 1.0  # both empty: equal texts, which the dict has already joined
        alive = 2.0 * np.minimum(la, lb) / total >= tau
        idx = np.nonzero(alive)[0]
        if len(idx) == 0:
            return idx
        cols = np.nonzero(hist)[0]
        q = np.minimum(self.hist_CK[idx][:, cols], hist[cols]).sum(axis=1)
        return idx[2.0 * q / total[idx] >= tau]

    def similar(self, c: int, text: str, tau: float) -> bool:
        """``SequenceMatcher(None, text, rep).ratio() >= tau`` for cluster ``c``'s rep: the
        compiled ``Index(rep).reaches``, or :func:`reaches` with :class:`BlockFinder` on
        difflib's own index of the rep (the text's character positions kept for its next
        cluster)."""
        m = self.matchers[c]
        if self.compiled is not None:
            if m is None:
                m = self.matchers[c] = self.compiled.Index(self.reps[c])
            return m.reaches(text, tau)
        if m is None:
            m = self.matchers[c] = SequenceMatcher(None, "", self.reps[c])
        if self._where is None or self._where[0] is not text:
            self._where = (text, positions(text))
        rep = self.reps[c]
        return reaches(len(text), len(rep), BlockFinder(text, rep, m.b2j, self._where[1]).find_longest_match, tau)


def positions(text: str) -> dict[str, list[int]]:
    """Each character's positions in ``text``, ascending."""
    out: dict[str, list[int]] = {}
    for i, ch in enumerate(text):
        out.setdefault(ch, []).append(i)
    return out


class BlockFinder:
    """``SequenceMatcher(None, a, b).find_longest_match`` for one pair, given difflib's own index
    of b (``b2j``: each character's positions in b, none for a "popular" one under autojunk).

    difflib's loop (isjunk None) runs over every i in ``[alo, ahi)``: over each indexed j of
    ``a[i]`` in ``[blo, bhi)``, ``k(i, j) = k(i - 1, j - 1) + 1`` (0 when absent), and the best is
    the **first** (i, j) in that order whose k beats the best so far; it is then extended
    backwards and forwards over equal characters (popular ones included) within the window.
    Here the loop runs only over the i whose character b indexes (``seeds``; the others add
    nothing and leave ``k(i, .)`` empty, so a seed after a gap starts afresh), and the extensions
    find the end of the common run with slice comparisons (galloping, then bisecting) instead of
    one character at a time. The same (i, j, k) comes out."""

    def __init__(self, a: str, b: str, b2j: dict[str, list[int]], where: dict[str, list[int]]) -> None:
        self.a, self.b, self.b2j = a, b, b2j
        if len(where) < len(b2j):
            found = [where[ch] for ch in where if ch in b2j]
        else:
            found = [where[ch] for ch in b2j if ch in where]
        self.seeds = sorted(i for p in found for i in p) if len(found) != 1 else found[0]

    def find_longest_match(self, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
        a, b, b2j, seeds = self.a, self.b, self.b2j, self.seeds
        besti, bestj, size = alo, blo, 0
        j2len: dict[int, int] = {}
        last = -2
        for s in range(bisect_left(seeds, alo), bisect_left(seeds, ahi)):
            i = seeds[s]
            get = j2len.get if i == last + 1 else {}.get
            j2len = {}
            for j in b2j[a[i]]:
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = j2len[j] = get(j - 1, 0) + 1
                if k > size:
                    besti, bestj, size = i - k + 1, j - k + 1, k
            last = i
        back = _common_suffix(a, b, besti, bestj, min(besti - alo, bestj - blo))
        besti, bestj, size = besti - back, bestj - back, size + back
        size += _common_prefix(a, b, besti + size, bestj + size, min(ahi - besti - size, bhi - bestj - size))
        return besti, bestj, size


def _common_prefix(a: str, b: str, i: int, j: int, n: int) -> int:
    """The length of the common prefix of ``a[i:i + n]`` and ``b[j:j + n]``."""
    if n <= 0 or a[i] != b[j]:
        return 0
    lo, step = 1, 1  # a[i:i + lo] == b[j:j + lo]
    while True:
        hi = min(n, lo + step)
        if a[i + lo:i + hi] != b[j + lo:j + hi]:
            break
        if hi == n:
            return n
        lo, step = hi, 2 * step
    while hi - lo > 1:  # equal up to lo, not up to hi
        mid = (lo + hi) // 2
        if a[i + lo:i + mid] == b[j + lo:j + mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _common_suffix(a: str, b: str, i: int, j: int, n: int) -> int:
    """The length of the common suffix of ``a[i - n:i]`` and ``b[j - n:j]``."""
    if n <= 0 or a[i - 1] != b[j - 1]:
        return 0
    lo, step = 1, 1
    while True:
        hi = min(n, lo + step)
        if a[i - hi:i - lo] != b[j - hi:j - lo]:
            break
        if hi == n:
            return n
        lo, step = hi, 2 * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[i - mid:i - lo] == b[j - mid:j - lo]:
            lo = mid
        else:
            hi = mid
    return lo


def _shorter(alo: int, ahi: int, blo: int, bhi: int) -> int:
    """The most characters a window can match: its shorter side."""
    return min(ahi - alo, bhi - blo)


def reaches(la: int, lb: int, find_longest_match, tau: float, bound=_shorter) -> bool:
    """``ratio() >= tau`` for texts of lengths ``la``, ``lb`` given their matcher's
    ``find_longest_match``, stopping as soon as the answer is known.

    ``ratio() = 2.0 * M / (la + lb)`` with M the summed sizes of difflib's matching blocks:
    ``get_matching_blocks`` takes a window (alo, ahi, blo, bhi), the whole texts first, finds its
    longest block with ``find_longest_match`` and goes on with the windows left and right of it;
    M is the same whatever the order the windows are taken in. Here the same
    ``find_longest_match`` calls are made on the same windows, and after each one: ``found`` (the
    blocks so far) is a lower bound of M, ``found + sum of bound(window)`` over the windows still
    to do an upper bound (``bound``: by default the window's shorter side); ``2.0 * found / T >= tau`` answers yes, ``2.0 * (found +
    pending) / T < tau`` answers no (the same float expression as ``ratio()``, so each is exact).
    With every window done ``found = M`` and the answer is ``ratio() >= tau`` itself."""
    total = la + lb
    if total == 0:
        return 1.0 >= tau
    found, pending = 0, bound(0, la, 0, lb)
    windows = [(0, la, 0, lb)]
    while windows:
        if 2.0 * found / total >= tau:
            return True
        if 2.0 * (found + pending) / total < tau:
            return False
        alo, ahi, blo, bhi = windows.pop()
        pending -= bound(alo, ahi, blo, bhi)
        i, j, k = find_longest_match(alo, ahi, blo, bhi)
        if k:
            found += k
            if alo < i and blo < j:
                windows.append((alo, i, blo, j))
                pending += bound(alo, i, blo, j)
            if i + k < ahi and j + k < bhi:
                windows.append((i + k, ahi, j + k, bhi))
                pending += bound(i + k, ahi, j + k, bhi)
    return 2.0 * found / total >= tau


def cluster_texts(texts: Sequence[str], tau: float, *, where: str = "the group",
                  max_comparisons: int = MAX_COMPARISONS, max_pairs: int = MAX_PAIRS) -> tuple[list[int], list[str]]:
    """verl-agent's similarity clusters of one group's observations (see the module docstring).

    Args:
        texts: the group's observations in verl-agent's row order (rollouts in file order, each
            rollout's steps in time order).
        tau: the threshold, ``0 < tau < 1``: text a joins the first cluster whose representative b
            has ``SequenceMatcher(None, a, b).ratio() >= tau``.
        where: how an error names the group.
        max_comparisons, max_pairs: the work allowed (module docstring).

    Returns:
        ``(label_T, reps_C)``: each text's cluster (numbered in order of creation) and each
        cluster's representative, its first text.

    Raises:
        SimilarityError: ``tau`` outside (0, 1), or more work than allowed (naming ``where``).
        TypeError: a text that is not a ``str`` (verl-agent refuses it too).
    """
    t = check_similarity(tau)
    assert t is not None
    cl = _Clusters(compiled_block_search())
    seen: dict[str, int] = {}
    labels: list[int] = []
    ratios = pairs = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{where}, observation {i}: similarity merges text, not {type(text).__name__}")
        c = seen.get(text)
        if c is None:
            hist = np.bincount(bucket_of(codes_of(text)), minlength=BUCKETS).astype(np.int32)
            pairs += len(cl.reps)
            if pairs > max_pairs:
                raise SimilarityError(_too_much(where, f"{max_pairs:,} text pairs", i, len(cl.reps), t))
            for cand in cl.candidates(text, hist, t).tolist():
                ratios += 1
                if ratios > max_comparisons:
                    raise SimilarityError(_too_much(where, f"{max_comparisons:,} text comparisons", i,
                                                    len(cl.reps), t))
                if cl.similar(cand, text, t):
                    c = cand
                    break
            if c is None:
                c = cl.add(text, hist)
            seen[text] = c
        labels.append(c)
    return labels, cl.reps


def _too_much(where: str, limit: str, i: int, n_clusters: int, tau: float) -> str:
    return (f"anchor similarity {tau:g}: {where} needs more than {limit} to merge its observations "
            f"(stopped at observation {i:,}, {n_clusters:,} clusters so far). Text this varied "
            "rarely merges: key the anchors first (an anchor key that keeps the current state), or "
            "leave the similarity off")


# --------------------------------------------------------------------------------------------
# applied to groups, to columns and to a trainer's rows (every one of them through this file)


def similar_groups(groups, tau: float | None) -> list:
    """The groups with each step's anchor replaced by its cluster's representative
    (:func:`cluster_texts` over the group's steps: rollouts in order, steps in time order); the
    original anchor is kept as the step's ``obs`` when it had none. ``tau=None`` returns the
    groups unchanged."""
    import dataclasses

    from crbc.io.rollouts import RolloutGroup

    t = check_similarity(tau)
    if t is None:
        return list(groups)
    out = []
    for g in groups:
        labels, reps = cluster_texts([s.anchor for r in g.rollouts for s in r.steps], t,
                                     where=f"group {g.group!r}")
        it = iter(labels)
        rollouts = tuple(dataclasses.replace(r, steps=tuple(
            dataclasses.replace(s, anchor=reps[next(it)], obs=s.anchor if s.obs is None else s.obs)
            for s in r.steps)) for r in g.rollouts)
        out.append(RolloutGroup(g.group, rollouts))
    return out


def similar_codes(code_N: np.ndarray, group_N: np.ndarray, texts: Sequence[str], tau: float | None,
                  names: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """``(code_N, texts)`` re-coded so that each step's anchor is its cluster's representative.

    ``code_N`` (N,) indexes ``texts`` (the anchor of each step), ``group_N`` (N,) the group of
    each step; steps in verl-agent's order (within a group: rollout after rollout, steps in
    time order). A group's clusters depend only on its distinct texts in order of first
    appearance (a copy goes where its first appearance went), so each group clusters those.
    ``names``: group names for errors. Returns new codes into a new list of texts."""
    t = check_similarity(tau)
    code_N = np.asarray(code_N, dtype=np.int64)
    if t is None:
        return code_N, list(texts)
    group_N = np.asarray(group_N)
    out_N = np.empty_like(code_N)
    interned: dict[str, int] = {}
    for g, rows in rows_by_label(group_N):  # groups ascending, as np.unique (upstream's order does not matter)
        codes, first = np.unique(code_N[rows], return_index=True)
        in_order = codes[np.argsort(first, kind="stable")]
        name = names[int(g)] if names is not None else g
        labels, reps = cluster_texts([texts[c] for c in in_order.tolist()], t, where=f"group {name!r}")
        rep_code = np.array([interned.setdefault(r, len(interned)) for r in reps], dtype=np.int64)
        lookup = dict(zip(in_order.tolist(), rep_code[labels].tolist(), strict=True))
        out_N[rows] = [lookup[c] for c in code_N[rows].tolist()]
    return out_N, list(interned)


def similar_columns(cols, tau: float | None):
    """:class:`crbc.io.columns.Columns` with each step's anchor its cluster's representative
    (per group, steps in file order: the group's rollouts in file order, steps in time order);
    unchanged for ``tau=None``."""
    import dataclasses

    t = check_similarity(tau)
    if t is None:
        return cols
    group_N = np.repeat(cols.rollout_group, np.diff(cols.rollout_offsets))
    code_N, texts = similar_codes(cols.anchor_code, group_N, cols.anchor_texts, t, names=cols.group_ids)
    return dataclasses.replace(cols, anchor_code=code_N, anchor_texts=tuple(texts))
