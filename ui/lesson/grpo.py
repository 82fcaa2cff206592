"""The Lesson's section 2: GRPO's one number per trajectory, and an (anchor, action) pair it
credits differently in different rollouts (the numbers are :mod:`crbc.explain.lesson_tables`')."""

from __future__ import annotations

import streamlit as st

import crbc.explain.lesson_tables as T
from crbc.process import Process
from ui.core.widgets import short, text
from ui.lesson.sections import BIG, LessonView


def render(view: LessonView, p: Process, traj: list[T.TrajectoryRow]) -> None:
    """Section 2's body under its header: the rollouts' GRPO advantages (``traj``: section 1's
    :func:`crbc.explain.lesson_tables.trajectory_table`), a pair credited with both signs, and
    every pair's GRPO credits (folded on a big group)."""
    table, fold = view.table, view.fold
    st.markdown(
        "GRPO scores a whole rollout: its advantage is the rollout's score minus the group mean, "
        "divided by the group's standard deviation, "
        "`A_G(i) = (score(i) − mean score) / (std + 1e-6)`. "
        "Every step of the rollout receives that same number.")
    table(traj, fields=("rollout", "score", "a_g") if view.n_anchors > BIG else ("rollout", "path", "score", "a_g"))
    spread = T.grpo_pair_spread(p)
    mixed = [r for r in spread if r.min < 0 < r.max]
    if mixed:
        m = mixed[0]
        st.markdown(
            f"Look at action **{short(m.action, 80)}** at **{short(m.anchor, 80)}**: it occurs {m.occurrences} times and "
            f"GRPO credits it with {text(m.a_g_values)}, depending only on what happened *later* "
            "in each rollout. GRPO cannot tell the actions apart; it can only tell the trajectories apart.")
    else:
        st.markdown("In this group no (anchor, action) pair sits in both a success and a failure, but "
                    "GRPO still gives every step of a rollout the same number.")
    with fold(f"GRPO's credit of each of the {len(spread)} (anchor, action) pairs", key="grpo") as shown:
        if shown:
            table(spread, fields=("anchor", "action", "occurrences", "a_g_values"))
