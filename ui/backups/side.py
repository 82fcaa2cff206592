"""The backups side by side, drawn: pick an anchor, read each method's backup there as one line of
arithmetic, predict which method ranks the anchor's actions right, then see the truth.

The numbers are :func:`crbc.explain.backups_side.side_by_side`'s; this module only draws. Used by
the Bellman backups page (on the sidebar's group: a shipped sample, a generated or an uploaded
one) and by the Lesson's section 10 (on the group whose truth is known).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from crbc.explain import backups_side as B
from crbc.explain.anchor_names import node_labels
from crbc.explain.lesson_questions import Question
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.widgets import short


def render(ctx: PageContext, beta: float, sigma_min: float,  # noqa: C901
           anchor_advantage_N: np.ndarray | None, key: str, no_truth: str = "", ask=None) -> None:
    """The view on the process of ``ctx``, which keeps each anchor's arithmetic (per anchor, beta,
    sigma_min and whether the truth is the reference); ``anchor_advantage_N``: the exact
    anchor-level A(s,a) per step, or None (then ``no_truth`` says why and the closure is the
    reference); ``key``: a prefix for widgets; ``ask``: the Lesson's
    :func:`ui.lesson.sections.ask` (the question joins its link and handout)."""
    p = ctx.process
    anchors = B.choosable_anchors(p)
    if not anchors:
        st.info("No anchor of this group saw two or more actions: every method gives each step the "
                "same credit as its neighbours there, so there is nothing to rank.")
        return
    labels = node_labels(p)
    opts = anchors[:200]
    ss = st.session_state
    if ss.get(f"{key}_anchor") not in opts:
        ss.pop(f"{key}_anchor", None)
    s = st.selectbox("Anchor to compare at", opts, key=f"{key}_anchor",
                     format_func=lambda i: f"{short(labels[i], 60)}  ({int(p.n_s[i])} visits, "
                                           f"{int(p.n_actions[i])} actions)",
                     help="Anchors where the group tried two or more actions, most visited first.")
    sb = ctx.side_by_side(s, beta, sigma_min, anchor_advantage_N)
    if len(labels[s]) > 12 or "\n" in p.state_anchor[s]:
        widgets.long_text(p.state_anchor[s], "The whole anchor")
    if sb.compared_note:
        st.caption(sb.compared_note)
    st.markdown(f"Actions observed at **{short(sb.label, 60)}**: " + ", ".join(f"**{short(a, 40)}**" for a in sb.actions)
                + ". Each method below backs a value up over the same graph, then scores the actions:")
    for m in sb.lines:
        st.markdown(f"**{m.method}** — {m.rule}")
        widgets.pre("\n".join((m.value_line, *m.action_lines)))
    ref = "the exact truth" if sb.truth is not None else "the closure (this group has no exact truth)"
    if sb.truth is None and no_truth:
        st.caption(no_truth)
    others = [m.method for m in sb.lines if m.method != "crbc" or sb.truth is not None]
    right = [m for m in sb.right if m in others]
    text = f"Which method orders the actions at {short(sb.label, 40)} most like {ref}?"
    if ask is not None:  # the Lesson: its question framework (the shared link, the handout)
        opts = tuple(others) + (() if right else ("none of them",))
        why = (f"{', '.join(right)} order{'s' if len(right) == 1 else ''} the most pairs of actions like {ref}."
               if right else f"no method orders any pair of actions like {ref} here.")
        q = Question(f"sbs{sb.state}", "10", text, opts, right[0] if right else "none of them", why,
                     tuple(right[1:]))
        if not ask(q):
            return
    else:
        with st.container(border=True):
            got = st.pills(f":material/psychology: **Predict first.** {text}", others,
                           key=f"{key}_pred_{sb.state}_{p.n_steps}", selection_mode="single")
            if got is None:
                st.caption("Choose a method to reveal the reference's order.")
                return
            if got in right:
                st.success(f"Right: {got} orders them most like {ref}"
                           + (f", and so do {', '.join(x for x in right if x != got)}." if len(right) > 1 else "."))
            else:
                st.warning(f"Not quite: {got} orders fewer pairs of actions like {ref}. "
                           + (f"Right here: {', '.join(right)}." if right else "None of them does here."))
    rows = sb.rows(lambda a: short(a, 30))
    widgets.table(rows)
    st.caption("Scores are each method's own units (crbc and the truth: Q − V, a probability; "
               "rewardflow, shortest_path, gigpo: rewards of 10 per win): compare orders, not sizes. "
               "A tie at the top means the method cannot tell the actions apart here; pairs ordered like it: "
               "of every two actions, how many the method puts in the reference's order.")
