"""The Lesson's sections 3 to 6: the closure step by step on the lesson's group (anchors and the
merged process; counts, mu and P; the one linear system; from values to step credit), every
number computed by :mod:`crbc.explain` from the group shown."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

import crbc.explain.arithmetic as E
import crbc.explain.lesson_tables as T
from crbc.explain.anchor_names import SHORT_LABEL, node_labels
from crbc.explain.table_rows import num
from crbc.viz.lesson import arithmetic_markdown, solution_latex, system_latex
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.widgets import short
from ui.lesson import sections as S
from ui.lesson.parts import ANCHORS

LATEX_MAX_ANCHORS = 5  # the (I - beta M) V = b display fits its column up to here
TABLE_MAX_ANCHORS = 40
BIG = S.BIG  # beyond this many anchors, the long per-anchor tables fold into expanders


def render(ctx: PageContext, view: S.LessonView, params: dict[str, Any], v_now: np.ndarray, root: int):  # noqa: C901
    """Sections 3 to 6 on the lesson group's context ``ctx`` (its tables kept there) with the sidebar's ``params`` (beta, sigma_min, w_group,
    w_step); ``v_now``: (S,) the closure's V; ``root``: the anchor whose arithmetic is written out.
    Returns that anchor's :class:`crbc.explain.arithmetic.AnchorArithmetic` (section 8 draws it)."""
    beta, sigma_min = params["beta"], params["sigma_min"]
    w_group, w_step = params["w_group"], params["w_step"]
    table, fold, p = view.table, view.fold, ctx.process
    labels = node_labels(p)
    n_anchors = p.n_states
    # ---- 3. anchors and the merged process ----------------------------------------------------------
    st.header("3 · Anchors: merging the rollouts into one process", anchor=ANCHORS[3])
    st.markdown(
        "Rollouts that reach the same anchor share it: their futures become evidence about each other. "
        "Merging all steps by anchor turns the group into one graph, the **empirical process**: each "
        "observed transition (anchor, action) → successor is an edge, counted as often as it was seen.")
    tables = ctx.kept("lesson", ("process_tables",), lambda: T.process_tables(p))
    with fold(f"The {n_anchors} anchors and {len(tables.transitions)} observed transitions", key="process") as shown:
        if shown:
            view.side_by_side([1, 2], ("Anchors", tables.states, None),
                              ("Observed transitions", tables.transitions, ("anchor", "action", "successor", "n_sax")))
    if any(len(a) > SHORT_LABEL or "\n" in a for a in p.state_anchor):
        box, shown = widgets.folded("What the labels s0, s1, ... stand for (the anchor keys)", key="lesson_keys")
        if shown:
            with box:
                for s in range(n_anchors):
                    st.markdown(f"**{short(labels[s], 80)}**")
                    widgets.long_text(p.state_anchor[s], "The whole anchor")

    # ---- 4. counts, mu and P ----------------------------------------------------------------------------
    st.header("4 · Counts, the behaviour policy mu and the transitions P", anchor=ANCHORS[4])
    st.markdown(
        "Dividing the counts gives two tables of probabilities, with no smoothing (what was never "
        r"seen has probability 0): how often each action was taken at an anchor, "
        r"$\mu(a\mid s) = N(s,a)/N(s)$, and where it led, $P(x\mid s,a) = N(s,a,x)/N(s,a)$.")
    with fold(f"mu(a|s) for {len(tables.pairs)} pairs and P(x|s,a) for {len(tables.transitions)} transitions",
              key="mu_p") as shown:
        if shown:
            view.side_by_side([2, 3], ("mu(a|s)", tables.pairs, None), ("P(x|s,a)", tables.transitions, None))

    # ---- 5. the linear system ----------------------------------------------------------------------------
    st.header("5 · One linear system for all values", anchor=ANCHORS[5])
    st.markdown(
        r"The value $V(s)$ is the discounted probability of reaching success from $s$ if we keep "
        r"acting like the group did. It satisfies one Bellman equation per anchor: "
        r"$V(s) = \beta \sum_a \mu(a\mid s) \sum_x P(x\mid s,a) V(x)$ with $V(z+) = 1$, $V(z-) = 0$. "
        r"Moving the anchors to the left gives $(I - \beta M)\,V = b$, where "
        r"$M(s,s') = \sum_a \mu(a\mid s) P(s'\mid s,a)$ and $b(s) = \beta \sum_a \mu(a\mid s) P(z+\mid s,a)$. "
        "One solve gives every value at once: no iteration, no sampling.")
    if n_anchors <= TABLE_MAX_ANCHORS:
        ds = ctx.kept("lesson", ("dense_system", beta), lambda: E.dense_system(p, beta=beta, max_states=TABLE_MAX_ANCHORS))
        if n_anchors <= LATEX_MAX_ANCHORS:
            st.latex(system_latex(ds))
            st.latex(solution_latex(ds))
        with fold(f"The {n_anchors} × {n_anchors} system, row by row", key="system") as shown:
            if shown:
                widgets.rows_view(ds.rows())
                st.caption(f"Rows: I - beta M, then b and the solution V (residual {ds.residual:.1e}).")
    else:
        st.info(f"This group has {n_anchors} anchors; the matrix is shown for up to {TABLE_MAX_ANCHORS}.")
    if n_anchors > BIG:  # the solution stays on the page, whatever is folded
        st.markdown(f"**The solution V**, one value per anchor ({n_anchors} anchors):")
        table([{"anchor": labels[s], "N(s)": int(p.n_s[s]), "V": float(v_now[s])} for s in range(n_anchors)])

    # ---- 6. Q, A, sigma, gate, A_S, A_final -------------------------------------------------------------
    st.header("6 · From values to step credit", anchor=ANCHORS[6])
    st.markdown(
        r"With $V$ known, each action gets a one-step look-ahead, $Q(s,a) = \beta \sum_x P(x\mid s,a)\,V(x)$, "
        r"and its **advantage** $A(s,a) = Q(s,a) - V(s)$: better or worse than the anchor's average. "
        r"Advantages are put on a common scale per anchor with $\sigma(s)^2 = \sum_a \mu(a\mid s) A(s,a)^2$, "
        r"floored at $\sigma_{\min}$ = " + num(sigma_min) + ". An anchor where only one action was ever "
        r"taken has nothing to compare: the **gate** sets its credit to 0. So "
        r"$A_S = [\#\text{actions} \ge 2]\; A / \max(\sigma, \sigma_{\min})$.")
    ar = root_arithmetic(ctx, root, beta, sigma_min)
    st.markdown(f"At **{short(ar.label, 80)}**, written out:")
    widgets.pre("\n".join(arithmetic_markdown(ar)))
    with fold("The same for every (anchor, action) of the group", always_label=True, key="pairs") as shown:
        if shown:
            table(ctx.kept("lesson", ("pair_table", beta, sigma_min),
                           lambda: T.pair_table(p, beta=beta, depth=None, sigma_min=sigma_min)))
    st.markdown(
        r"The final advantage of each step adds the trajectory part back: "
        rf"$A_\text{{final}} = w_G A_G + w_S A_S$ with $w_G$ = {num(w_group)}, $w_S$ = {num(w_step)}. "
        "Now two occurrences of the same action at the same anchor get the same step credit, whatever "
        "happened afterwards in their own rollout.")
    with fold(f"Every step's credit ({p.n_steps} steps)", key="steps") as shown:
        if shown:
            table(T.step_table(p, estimator="crbc", beta=beta, depth=None, sigma_min=sigma_min, w_group=w_group,
                               w_step=w_step))

    return ar


def root_arithmetic(ctx: PageContext, root: int, beta: float, sigma_min: float):
    """The closure's arithmetic at anchor ``root`` of the lesson group (kept in ``ctx``): section 6
    writes it out, section 8 draws it as a tree."""
    return ctx.kept("lesson", ("arithmetic", root, beta, sigma_min),
                    lambda: E.anchor_arithmetic(ctx.process, root, beta=beta, depth=None, sigma_min=sigma_min))
