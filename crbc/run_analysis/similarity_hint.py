"""What merging similar observations would do to a batch whose anchors are shared by nobody:
the doctor's ``no_shared_anchors`` suggestion (issue 53).

For each TAU of :data:`TAUS` (most cautious first), each group's anchors are merged as
``--anchor-similarity TAU`` merges them (:func:`crbc.io.similarity.cluster_texts`, the anchors in
order of first visit) and two numbers are taken on the merged anchors:

    later_shared(TAU) = #{steps with t >= 2 at an anchor >= 2 rollouts of the group visit} / #{steps with t >= 2}
    once(TAU)         = #{steps at an anchor visited by exactly one step} / N
    merged(TAU)       = #{anchors} - #{merged anchors}      (anchors folded into another: the cost)

:func:`suggestion` names the largest TAU whose ``later_shared`` reaches
:data:`crbc.run_analysis.health.MERGE_WARNING_SHARE` (the finding's own threshold), with what it
buys and costs, or says that no TAU down to the smallest helps. Bounded, as the doctor also
runs inside the trainer's recorder: each group may spend at most :data:`HINT_COMPARISONS` text
comparisons per TAU (a TAU that needs more is left out) and the whole suggestion at most
:data:`HINT_SECONDS` (then it says nothing).
"""

from __future__ import annotations

import time

import numpy as np

from crbc.io.grouped_rows import rows_by_label
from crbc.io.similarity import SimilarityError, cluster_texts
from crbc.run_analysis.health import MERGE_WARNING_SHARE

__all__ = ["HINT_COMPARISONS", "HINT_SECONDS", "TAUS", "merged_numbers", "suggestion"]

TAUS = (0.99, 0.95, 0.9, 0.8)
HINT_COMPARISONS = 2_000  #: per group and TAU
HINT_SECONDS = 2.0  #: for the whole suggestion


class _OutOfTime(Exception):
    pass


def merged_numbers(p, tau: float, deadline: float = float("inf")) -> tuple[float, float, int] | None:
    """``(later_shared, once, merged)`` of process ``p`` (:class:`crbc.process.Process`) with its
    anchors merged at ``tau`` (module docstring); None when a group needs more than
    :data:`HINT_COMPARISONS` comparisons. Raises ``_OutOfTime`` past ``deadline``
    (``time.perf_counter()``)."""
    group_N = p.rollout_group[p.step_rollout]
    label_N = np.empty(p.n_steps, dtype=np.int64)
    offset = 0
    lookup = np.zeros(p.n_states, dtype=np.int64)  # anchor -> label; groups' anchors are disjoint
    for _, rows in rows_by_label(group_N):  # each group's steps: rollouts in order, steps in time order
        if time.perf_counter() > deadline:
            raise _OutOfTime
        states, first = np.unique(p.step_state[rows], return_index=True)
        in_order = states[np.argsort(first, kind="stable")]
        try:
            labels, reps = cluster_texts([str(p.state_anchor[s]) for s in in_order.tolist()], tau,
                                         max_comparisons=HINT_COMPARISONS)
        except SimilarityError:
            return None
        lookup[in_order] = np.asarray(labels, dtype=np.int64) + offset
        label_N[rows] = lookup[p.step_state[rows]]
        offset += len(reps)
    width = max(len(p.rollout_group), 1)
    pair = np.unique(label_N * width + p.step_rollout)
    rollouts_L = np.bincount(pair // width, minlength=offset)
    visits_L = np.bincount(label_N, minlength=offset)
    later = p.step_t >= 2
    shared = rollouts_L[label_N] >= 2
    later_shared = float(shared[later].mean()) if later.any() else float("nan")
    return later_shared, float((visits_L[label_N] == 1).mean()), int(p.n_states - offset)


def suggestion(p) -> str:
    """One or two sentences for the ``no_shared_anchors`` finding (module docstring); "" when the
    anchors are not text that similarity could merge (a process with fewer than 2 anchors)."""
    if p.n_states < 2:
        return ""
    once_now = float((np.bincount(p.step_state, minlength=p.n_states)[p.step_state] == 1).mean())
    deadline = time.perf_counter() + HINT_SECONDS
    last = None
    for tau in TAUS:
        try:
            got = merged_numbers(p, tau, deadline)
        except _OutOfTime:
            return ""
        if got is None:
            continue
        last = (tau, got)
        later_shared, once, merged = got
        if later_shared >= MERGE_WARNING_SHARE:
            before = f" (now {100 * once_now:.0f}%)"
            return (f" Merging similar observations would help: at --anchor-similarity {tau:g} "
                    f"(anchor_similarity={tau:g} in the trainer, as verl-agent's similarity_thresh), "
                    f"{100 * later_shared:.0f}% of the later steps would share an anchor and "
                    f"{100 * once:.0f}% of the steps would sit at an anchor seen once{before}; the cost: "
                    f"{merged} of {p.n_states} anchors would merge into others, and each merge of two "
                    "different states averages them as one.")
    if last is None:
        return ""
    tau, (later_shared, _, merged) = last
    return (f" Merging similar observations would not help enough: even at --anchor-similarity {tau:g} "
            f"only {100 * later_shared:.0f}% of the later steps would share an anchor ({merged} of "
            f"{p.n_states} anchors merged).")
