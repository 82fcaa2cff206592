"""The Lesson's RewardFlow panel: a maximum over routes beside the closure's average, on the lesson
group (section 8) and on the Sokoban group whose exact truth is known (section 9)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from crbc.explain.rare_route import RouteRow, entering_credit, rare_and_reliable, route_table
from crbc.explain.table_rows import fmt
from crbc.process import Process
from ui.core.widgets import short

GAMMA = 0.9  # RewardFlow's Sokoban recipe (docs/MATH.md section 11)


def _pair_text(rare: RouteRow, reliable: RouteRow, with_truth: bool) -> str:
    a, b = short(reliable.anchor, 80), short(rare.anchor, 80)
    text = (f"RewardFlow gives **{a}** and **{b}** the same value, V = {fmt(rare.v_rewardflow)}: "
            f"from each, some rollout reached success. But {reliable.succeeded} of the "
            f"{reliable.through} rollouts through {a} succeeded, and only {rare.succeeded} of "
            f"{rare.through} through {b}. The closure weighs each route by how often it worked: "
            f"V = {fmt(reliable.v_closure)} against {fmt(rare.v_closure)}.")
    if with_truth and rare.v_true is not None and reliable.v_true is not None:
        same = (reliable.v_true > rare.v_true) == (reliable.v_closure > rare.v_closure)
        text += (f" The truth {'agrees with' if same else 'goes against'} the closure's order "
                 f"here: V = {fmt(reliable.v_true)} against {fmt(rare.v_true)}.")
    return text


def _credit_walk(p: Process, rare: RouteRow, reliable: RouteRow, beta: float) -> str | None:
    """One sentence per route on the closure's step credit of the step that takes it:
    credit = Q(parent, action) - V(parent), with the numbers."""
    parts = []
    for row, name in ((rare, "rare"), (reliable, "reliable")):
        got = entering_credit(p, row.state, beta)
        if got is None:
            return None
        parent, action, q, v = got
        parts.append(f"the step that takes the {name} route, **{action}** at {short(parent, 40)}, gets "
                     f"credit Q − V = {fmt(q)} − {fmt(v)} = **{fmt(q - v)}**")
    return ("**Their own credit.** In the closure, " + "; ".join(parts) + ". Q(s, a) averages where the "
            f"action led with how often each successor was reached, so a route that worked {rare.succeeded} "
            f"time(s) in {rare.through} tries pulls its step's credit down; RewardFlow's maximum does not.")


def foil(view, p: Process, beta: float, reveal: bool = True) -> None:
    """Section 8's second foil on the lesson group: the table and the rare-route pair, if any.
    With ``reveal`` False (the shortest-path question above is not answered yet) the closure's
    values stay hidden, so they do not give the answer away."""
    st.subheader("RewardFlow: a published method with the same maximum")
    st.markdown(
        "RewardFlow (arXiv 2603.18859) also merges the group's states into one graph, then lets "
        f"reward flow backwards by a **maximum**: V(s) = max(r(s), {GAMMA} × the best V among the "
        "states the group went to next). Its step credit is the difference V(next) − V(s). A rare "
        "route that succeeded once lifts every state that can reach it as high as a route that "
        "almost always works. **Scale:** RewardFlow's V is on the environment's reward scale (a win "
        "pays 10 × won, as in verl-agent; the gridworld's moves cost 0.1 each), so it lies between 0 "
        "and 10, while the closure's V is a discounted probability of success between 0 and 1: "
        "compare the two columns by their order, not by their size.")
    if not reveal:
        st.caption("Answer the question above to compare RewardFlow's values with the closure's.")
        return
    rows = route_table(p, beta=beta, gamma=GAMMA)
    pair = rare_and_reliable(rows)
    if pair is None:
        st.caption("In this group no two states tie under RewardFlow with different success rates; "
                   "the rare-route sample shows the effect.")
    else:
        st.markdown(_pair_text(*pair, with_truth=False))
        walk = _credit_walk(p, *pair, beta=beta)
        if walk:
            st.markdown(walk)
    with view.fold(f"RewardFlow's and the closure's V of the {view.n_anchors} anchors", key="rewardflow") as shown:
        if shown:
            view.table(rows)


def with_truth(view, tp: Process, truth_value_N: np.ndarray, beta: float) -> None:
    """Section 9's RewardFlow line: the rare-route pair of the truth group, with the true V."""
    rows = route_table(tp, beta=beta, gamma=GAMMA, true_value_N=truth_value_N)
    pair = rare_and_reliable(rows)
    if pair is None:
        return
    st.markdown("**RewardFlow on this group.** " + _pair_text(*pair, with_truth=True))
    view.table([r for r in rows if r.state in (pair[0].state, pair[1].state)])
