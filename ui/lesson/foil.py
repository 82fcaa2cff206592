"""The Lesson's section 8: the shortest-path foil beside the closure (hops and values of every
anchor, the anchor where they rank its actions differently, the way on to the rare-route sample),
RewardFlow's maximum (:mod:`ui.lesson.rewardflow`) and the backup at the first anchor as a picture."""

from __future__ import annotations

import streamlit as st

import crbc.explain.lesson_questions as Qs
import crbc.explain.lesson_tables as T
from crbc.explain.arithmetic import AnchorArithmetic
from crbc.viz.backup_tree import backup_tree_svg
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.svg_view import svg_view
from ui.core.widgets import short
from ui.lesson import data as D
from ui.lesson import rewardflow
from ui.lesson import sections as S
from ui.lesson import state as L


def _load_rare() -> None:
    st.session_state["lesson_start"] = L.RARE


def render(view: S.LessonView, ctx: PageContext, beta: float, sigma_min: float, ar: AnchorArithmetic) -> None:
    """Section 8's body under its header, on the lesson group's context ``ctx``; ``ar``: the first anchor's arithmetic
    (from sections 3-6), drawn as a tree at the end. The RewardFlow part shows the closure's values
    only once the section's question is answered."""
    table, fold, p = view.table, view.fold, ctx.process
    st.markdown(
        "GraphGPO-style **shortest path** scores an anchor by the **fewest hops** from it to success on "
        "the same merged graph, ignoring how often each edge was seen: V_sp = 0.8^hops (the column "
        "below, between 0 and 1). Its step credit uses the successor's value on the reward scale of a "
        "win, 10 × 0.8^hops (as GiGPO's returns are 10 × won), then normalises per anchor; only the "
        "order and the sign of those credits are comparable with the closure's. It takes an extremum: "
        "one lucky route is enough. The closure instead weighs every route by how often it was observed.")
    foil = ctx.kept("lesson", ("foil_table", float(beta)), lambda: T.foil_table(p, beta=beta))
    with fold(f"Hops and values of the {view.n_anchors} anchors", key="foil") as shown:
        if shown:
            table(foil)
    dis = D.foil_disagreements(ctx, beta, sigma_min)
    foil_answered = S.ask(Qs.foil_question(p, beta))
    top = dis.anchors[0]
    if top.ranks_differ:
        other = ("gives every action there the same credit" if top.best_y == "(tie)"
                 else f"prefers **{short(top.best_y, 80)}**")
        st.markdown(f"Where it matters most, at **{short(top.anchor, 80)}**, the closure prefers "
                    f"**{short(top.best_x, 80)}** while shortest path {other}:")
    table([r for r in dis.pairs if r.anchor == top.anchor], drop=("group",))
    if st.session_state.get("lesson_start", L.WORKED) != L.RARE:
        st.markdown("The rare-route sample shows the same effect on a gridworld fork.")
        st.button("Continue on the rare-route sample", on_click=_load_rare, key="lesson_go_rare",
                  icon=":material/alt_route:")
    rewardflow.foil(view, p, beta, reveal=foil_answered)
    st.markdown("Explore any anchor's arithmetic on the **Inspector** page, and where estimators "
                "disagree most on **Disagreements**.")
    box, shown = widgets.folded("The backup at the first anchor as a picture", key="lesson_backup_open")
    if shown:
        with box:
            svg_view(backup_tree_svg(ar), key="lesson_backup_tree")
