"""Anchor labels: the one rule by which every table, figure and page names an anchor.

An anchor is shown by its own text when every anchor of its group is a short single line (as in
the worked example of docs/MATH.md section 8: ``s0``, ``s1``, ``s2``), otherwise as ``s<i>`` with
``i`` its order of first appearance inside the group (a Sokoban board becomes ``s0``, ``s1``...).
The two boundaries are ``z+`` and ``z-``. Labels are unique inside a group. The small lookups
that the tables share (a group's anchors, an anchor's pairs, a rollout's path) live here too.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from crbc.process import Process

__all__ = [
    "anchor_labels", "group_rollout_ids", "group_states", "is_short", "node_labels", "pair_steps",
    "rollout_path_text", "SHORT_LABEL", "state_pairs", "Z_MINUS", "Z_PLUS"
]

Z_PLUS, Z_MINUS = "z+", "z-"
SHORT_LABEL = 16  #: anchors up to this many characters on one line are shown as they are


def group_states(p: Process, group: int = 0) -> range:
    """The anchor ids of group ``group`` (anchors of a group are contiguous): one binary search in
    ``state_group``, not the slices of every group (IndexError past the last group)."""
    n = len(p.group_ids)
    if not -n <= group < n:
        raise IndexError(f"group {group} out of range ({n} groups)")
    group %= n
    lo, hi = np.searchsorted(p.state_group, [group, group + 1])
    return range(int(lo), int(hi))


def group_rollout_ids(p: Process, group: int = 0) -> np.ndarray:
    """The rollout ids (positions in the process) of group ``group``."""
    return np.flatnonzero(p.rollout_group == group)


def state_pairs(p: Process, s: int) -> np.ndarray:
    """The pair ids (SA) of anchor ``s``, in the order actions were first seen."""
    return np.flatnonzero(p.sa_state == s)


def pair_steps(p: Process, s: int, pairs: np.ndarray) -> list[np.ndarray]:
    """The step ids of each pair of ``pairs`` (ascending pair ids of anchor ``s``), each in step
    order: ``flatnonzero(step_sa == sa)`` for every ``sa``, from one sort of the anchor's steps
    (O(N + n_s log n_s), not one pass over every step per pair)."""
    at = np.flatnonzero(p.step_state == s)
    steps = at[np.argsort(p.step_sa[at], kind="stable")]
    by_pair = p.step_sa[steps]
    lo, hi = np.searchsorted(by_pair, pairs, "left"), np.searchsorted(by_pair, pairs, "right")
    return [steps[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


def is_short(text: str) -> bool:
    """Whether an anchor text can stand as its own label (one short line, not a boundary name)."""
    return bool(text) and len(text) <= SHORT_LABEL and "\n" not in text and text.strip() == text \
        and text not in (Z_PLUS, Z_MINUS)


#: labels already computed, per process object (a Process is immutable; an entry goes with it)
_DONE: weakref.WeakKeyDictionary[Process, tuple[str, ...]] = weakref.WeakKeyDictionary()


def anchor_labels(p: Process) -> tuple[str, ...]:
    """A label per anchor (S,), by the rule of the module docstring; computed once per process
    (a report names the anchors of one group in every section)."""
    got = _DONE.get(p)
    if got is None:
        got = _DONE[p] = _anchor_labels(p)
    return got


def _anchor_labels(p: Process) -> tuple[str, ...]:
    """:func:`anchor_labels` without the per-process memo."""
    labels: list[str] = [""] * p.n_states
    for sl in p.group_slices():  # once: 250,000 groups are 250,000 slices, not 250,000 squared
        states = range(sl.start, sl.stop)
        texts = [p.state_anchor[s] for s in states]
        short = all(is_short(t) for t in texts)
        for i, s in enumerate(states):
            labels[s] = texts[i] if short else f"s{i}"
    return tuple(labels)


def node_labels(p: Process) -> tuple[str, ...]:
    """Labels of the extended value vector (S + 2,): anchors, then ``z+``, ``z-``."""
    return anchor_labels(p) + (Z_PLUS, Z_MINUS)


def rollout_path_text(p: Process, r: int, labels: Sequence[str] | None = None) -> str:
    """``s0 -a-> s1 -c-> z+``: rollout ``r`` of the process as text."""
    labels = node_labels(p) if labels is None else labels
    o = p.rollout_offsets
    parts = []
    for n in range(int(o[r]), int(o[r + 1])):
        parts.append(f"{labels[p.step_state[n]]} -{p.action_names[p.sa_action[p.step_sa[n]]]}->")
    parts.append(labels[p.step_next[int(o[r + 1]) - 1]])
    return " ".join(parts)
