"""The rows of each label of a flat label array, from one stable sort.

``for g, rows in rows_by_label(group_N)`` gives what ``for g in np.unique(group_N): rows =
np.flatnonzero(group_N == g)`` gives (the labels ascending, each label's rows ascending) in
O(N log N) instead of one pass over every row per label: with 250,000 two-rollout groups that is
the difference between a second and hours. numpy only.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["rows_by_label"]


def rows_by_label(label_N: np.ndarray) -> Iterator[tuple[np.generic, np.ndarray]]:
    """``(label, rows)`` for each distinct value of ``label_N`` (N,), ascending; ``rows``: the
    indices where ``label_N == label``, ascending (a stable argsort keeps equal labels in order)."""
    label_N = np.asarray(label_N)
    if label_N.size == 0:
        return
    order = np.argsort(label_N, kind="stable")
    ordered = label_N[order]
    cuts = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True):
        yield ordered[a], order[a:b]
