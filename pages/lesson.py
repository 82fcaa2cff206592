"""Lesson: credit assignment on a small group, in the order a teacher would take it.

Every number on this page is computed by ``crbc`` (through ``crbc.explain.arithmetic``) from the
group shown. This file only draws the twelve sections, those of the part chosen
(``ui/lesson/parts.py``: five parts, or every section on one page); the lesson's own copy of the group and its
callbacks are in ``ui/lesson/state.py``, the pieces it draws with in ``ui/lesson/sections.py``.
"""

from __future__ import annotations

import streamlit as st

import crbc.explain.lesson_tables as T
from crbc.explain.anchor_names import node_labels
from crbc.explain.table_rows import num
from crbc.viz.lesson_graph import lesson_graph_svg
from ui.core import state, url
from ui.core.context import group_context
from ui.core.svg_view import svg_view
from ui.core.widgets import short
from ui.lesson import backups as lesson_backups
from ui.lesson import closure as lesson_closure
from ui.lesson import data as D
from ui.lesson import depth as lesson_depth
from ui.lesson import foil as lesson_foil
from ui.lesson import grpo
from ui.lesson import handout as lesson_handout
from ui.lesson import luck as lesson_luck
from ui.lesson import page as lesson_page
from ui.lesson import parts as lesson_parts
from ui.lesson import pipeline as lesson_pipeline
from ui.lesson import sections as S
from ui.lesson import state as L
from ui.lesson import sure as lesson_sure

BIG = S.BIG  # beyond this many anchors, the long per-anchor tables fold into expanders

ctx = state.page_context(require=False)  # the sidebar's group is one possible start
lesson_page.style()
st.title("Lesson: who gets the credit?")
st.markdown(
    "A group of rollouts of one task ends in successes and failures. Which *steps* deserve the "
    "credit? This page walks through the answer of the Cross-Rollout Bellman Closure (CRBC), one "
    "idea at a time, on a group small enough to check by hand. Every number below is computed "
    "by `crbc` from the group shown: change the group and watch every table follow.")

url.check_choice("lesson_start", L.STARTS, "the lesson starts from the worked example, the rare "
                    "route or the sidebar group")
if "lesson_start" in st.session_state and st.session_state["lesson_start"] not in L.STARTS:
    del st.session_state["lesson_start"]
st.radio("Start from", L.STARTS, key="lesson_start", horizontal=True, bind="query-params",
         captions=["docs/MATH.md section 8, checkable by hand", "the same with retries: backups that move",
                   "a gridworld fork (sample_rollouts/)",
                   "whatever the sidebar has loaded"])
st.caption("This lesson works on its own copy of the group picked here. The sidebar's data ("
           + (f"group **{short(ctx.group.group, 60)}**" if ctx else "nothing loaded")
           + ") feeds the other pages, and this one only when you start from *sidebar group*.")
L.restore_from_url()
part = lesson_parts.picker()
lesson_page.land_on_hash(lesson_parts.PART_OF_ANCHOR, part.key, lesson_parts.show)  # early: keeps a linked section in view
share_box = st.container()  # filled at the end: the link to this state and the handout
group = L.current_group()
if group is None:
    st.info("No group is loaded in the sidebar; pick the worked example or the rare-route sample.")
    st.stop()

params = ctx.params if ctx else state.shared_params()
beta, sigma_min = params["beta"], params["sigma_min"]
w_group, w_step = params["w_group"], params["w_step"]
lctx = group_context(group, private=L.is_private(), params=params)  # keeps every result of the lesson group
p = lctx.process
view = S.LessonView.of(p)
table, fold = view.table, view.fold
labels = node_labels(p)
n_anchors = p.n_states
root = 0  # the first anchor of the group: where every rollout starts in these examples
busy = st.empty()  # on a big group the sections take seconds: say so until the last one is drawn
if n_anchors > BIG:
    busy.info(f"This group has {n_anchors} anchors: the sections below appear one by one as "
              "they are computed (a few seconds on a laptop).", icon=":material/hourglass_top:")

A = lesson_parts.ANCHORS
traj = T.trajectory_table(p)
vals = D.values(lctx, st.session_state.get("lesson_before"), beta)  # and how they moved with the last edit
v_now, delta = vals.v_S, vals.delta_S
if not part.shows(1):
    S.group_line(group, n_anchors, beta)

# ---- 1. the group ---------------------------------------------------------------------------
if part.shows(1):
    st.header("1 · The group", anchor=A[1])
    st.markdown(
        f"Group **{short(group.group, 120)}**: {len(group)} rollouts of the same task from the same start, "
        f"{sum(r.success for r in group)} of them successful. Each step is an **anchor** (an exact "
        "key of the environment state) and the **action** executed there; the last step leads to a "
        "boundary: **z+** after a success, **z-** after a failure or a time-out. "
        f"The discount is beta = {num(beta)} (sidebar, *Parameters*).")
    g1, g2 = st.columns([2, 3]) if n_anchors <= BIG else (st.container(), None)
    with g1, fold(f"The {len(group)} rollouts as paths of anchors", key="paths") as shown:  # folded on a big group
        if shown:
            table(traj, fields=("rollout", "path", "r"))
    if g2 is not None:
        with g2:
            gkey = f"lesson_graph_{st.session_state.get('lesson_version', 0)}"
            svg_view(lesson_graph_svg(p, v_now, delta_S=delta, shown_width_px=400), key=gkey, on_pick=L.graph_pick)
            st.caption("**The graph is the control.** Click a numbered chip (✓ / ✗) to flip that "
                       "rollout's outcome; click a ◇ on an edge to edit that step below. Node colour "
                       "and number: V at the closure." + (" Rings: how each V moved with the last "
                                                          "change (blue up, red down)." if delta is not None else ""))
    S.change_panel(view, group, labels, v_now, delta)

# ---- 2. GRPO ----------------------------------------------------------------------------------
if part.shows(2):
    st.header("2 · GRPO: one number per trajectory", anchor=A[2])
    grpo.render(view, p, traj)

# ---- 3-6. the closure, step by step (section 8 draws the first anchor's arithmetic again) ------------
ar = None
if part.shows(3):
    ar = lesson_closure.render(lctx, view, params, v_now, root)

# ---- 7. finite depth -------------------------------------------------------------------------------
if part.shows(7):
    st.header("7 · Finite depth: from visit-local averages to the closure", anchor=A[7])
    lesson_depth.render(lctx, beta, sigma_min, table, fold, S.ask, big=n_anchors > S.BIG)

# ---- 8. the foil ---------------------------------------------------------------------------------------
if part.shows(8):
    st.header("8 · The shortest-path foil", anchor=A[8])
    lesson_foil.render(view, lctx, beta, sigma_min,
                       ar if ar is not None else lesson_closure.root_arithmetic(lctx, root, beta, sigma_min))

# ---- 9. which estimate is right? ---------------------------------------------------------------
if part.shows(9):
    st.header("9 · Which estimate is right?", anchor=A[9])
    tgroup, tt = S.truth_section(beta)
    lesson_sure.render(group_context(tgroup, private=False) if tgroup is not None else lctx, tt, beta, sigma_min, table)

# ---- 10. the backups side by side ----------------------------------------------------------------
if part.shows(10):
    st.header("10 · One graph, different backups", anchor=A[10])
    st.markdown(
        "Every method above merges the rollouts into the same graph; they differ only in how they back "
        "a value up over it: a **maximum** (RewardFlow), the **shortest path** (GraphGPO), the anchor's "
        "**own returns** (GiGPO), **history-cluster** means (HGPO), one-step **TD on group means** (G2PO), "
        "and the **fixed point** (the closure). On the Sokoban group of section 9, at the anchor where "
        "they disagree most (pick another if you like), read each backup with its numbers and predict "
        "which one orders the actions as the exact truth does; then see every method's scores side by "
        "side, and why each wrong one went wrong.")
    tgroup, tt, _why = S.truth_sample(beta)
    if tgroup is not None and tt is not None:
        lesson_backups.render(group_context(tgroup, private=False), beta, sigma_min, tt.anchor_advantage_N, ask=S.ask,
                              on=f"the Sokoban group {tgroup.group} of section 9")
    else:
        st.caption("Without the shipped Sokoban sample this runs on the lesson group, judged against the closure.")
        lesson_backups.render(lctx, beta, sigma_min, None, ask=S.ask)

# ---- 11. luck against skill ---------------------------------------------------------------------
if part.shows(11):
    lesson_luck.render(beta, S.ask, table)

# ---- 12. when the pipeline is wrong ---------------------------------------------------------------
if part.shows(12):
    lesson_pipeline.render(lctx, table, fold)
lesson_parts.way_on(part)
busy.empty()
lesson_handout.share_and_print(share_box, lctx, L.write_url(), beta, sigma_min)
