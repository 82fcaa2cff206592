"""The Lesson's section 10, one graph and different backups, built around why: at an anchor where the
methods disagree, each method's arithmetic, a prediction, then small multiples of every method's
score per action beside the truth and one sentence per wrong method. Numbers from
:mod:`crbc.explain.backups_side` and :mod:`crbc.explain.lesson_backups`; this module only draws."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import streamlit as st

from crbc.explain import backups_side as B
from crbc.explain import lesson_backups as LB
from crbc.explain.anchor_names import node_labels
from crbc.explain.lesson_questions import Question
from crbc.process import Process
from crbc.viz.lesson_multiples import Panel, small_multiples_svg
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.svg_view import svg_view
from ui.core.widgets import short

KEY = "lesson_sbs"
DISCOUNTS = ("Each method keeps its own recipe's discount: the closure β = 0.98 (CRBC's paper), "
             "RewardFlow γ = 0.9 (its Sokoban recipe), shortest path 0.8 (the foil of section 8), "
             "GiGPO, GraphGPO, HGPO and G2PO γ = 0.95 (verl-agent's recipes). GiGPO's and G2PO's "
             "\"mean return\" is the same number: the mean, over the anchor's steps, of the step's own "
             "discounted return Σ γ^k r (−0.1 a move, +10 a win); G2PO then adds one step of backup.")


def _options(ctx: PageContext, beta: float, sigma_min: float, truth_N) -> list[int]:
    """The anchors to compare at (two or more actions tried, most visited first; at most 200),
    with the one in the session valid: at first the anchor where the methods disagree most."""
    p = ctx.process
    anchors = ctx.kept("lesson", ("choosable",), lambda: B.choosable_anchors(p))
    opts, ss = anchors[:200], st.session_state
    if opts and ss.get(f"{KEY}_anchor") not in opts:
        first = ctx.kept("lesson", ("separating", beta, sigma_min, truth_N is not None),
                         lambda: LB.separating_anchor(p, beta, sigma_min, truth_N))
        ss[f"{KEY}_anchor"] = first if first in opts else opts[0]
    return opts


def _anchor(ctx: PageContext, beta: float, sigma_min: float, truth_N) -> int | None:
    """The anchor picker, starting at the anchor where the methods disagree most."""
    p, opts = ctx.process, _options(ctx, beta, sigma_min, truth_N)
    if not opts:
        return None
    labels = node_labels(p)
    return int(st.selectbox(
        "Anchor to compare at", opts, key=f"{KEY}_anchor",
        format_func=lambda i: f"{short(labels[i], 60)}  ({int(p.n_s[i])} visits, {int(p.n_actions[i])} actions)",
        help="Anchors where the group tried two or more actions, most visited first; the page starts "
             "where the methods disagree most."))


def _side_by_side(ctx: PageContext, s: int, beta: float, sigma_min: float, truth_N):
    return ctx.kept("lesson", ("side_by_side", s, beta, sigma_min, truth_N is not None),
                    lambda: B.side_by_side(ctx.process, s, beta=beta, sigma_min=sigma_min, anchor_advantage_N=truth_N))


def question(ctx: PageContext, beta: float, sigma_min: float, truth_N: np.ndarray | None, on: str = "") -> Question | None:
    """Section 10's question at the anchor chosen in this session (at first the one where the
    methods disagree most), as :func:`render` asks it; None when no anchor saw two actions.
    The handout prints it whichever part of the Lesson is shown."""
    opts = _options(ctx, beta, sigma_min, truth_N)
    if not opts:
        return None
    s = int(st.session_state[f"{KEY}_anchor"])
    sb = _side_by_side(ctx, s, beta, sigma_min, truth_N)
    methods, _note = LB.lesson_methods(sb)
    return _question(ctx.process, s, sb, methods, on)


def render(ctx: PageContext, beta: float, sigma_min: float, truth_N: np.ndarray | None, ask: Callable,
           on: str = "") -> None:
    """Section 10's body on the group of ``ctx`` (the truth group of section 9) with its exact
    anchor-level A per step ``truth_N`` (None: judged against the closure; the truth is the
    group's own, so whether it is given keys what is kept); ``on``: that group in words, for the
    handout (empty: the lesson group)."""
    p = ctx.process
    s = _anchor(ctx, beta, sigma_min, truth_N)
    if s is None:
        st.info("No anchor of this group saw two or more actions: there is nothing to rank.")
        return
    sb = _side_by_side(ctx, s, beta, sigma_min, truth_N)
    methods, note = LB.lesson_methods(sb)
    if len(sb.label) > 12 or "\n" in p.state_anchor[s]:
        widgets.long_text(p.state_anchor[s], "The whole anchor")
    st.markdown(f"Actions observed at **{short(sb.label, 60)}**: " + ", ".join(f"**{short(a, 40)}**" for a in sb.actions)
                + ". Each method below backs a value up over the same graph, then scores the actions:")
    st.caption(DISCOUNTS)
    for m in methods:
        st.markdown(f"**{m.method}** — {m.rule} ({LB.SOURCES.get(m.method, '')})")
        widgets.pre("\n".join((m.value_line, *m.action_lines)))
    if note:
        st.caption(note)
    if not ask(_question(p, s, sb, methods, on)):
        return
    _reveal(p, sb, methods)


def _question(p: Process, s: int, sb: B.SideBySide, methods, on: str) -> Question:
    """Predict first. Where the methods put different actions first and the truth is known: which
    action does the truth put first (the answer says which methods agree); else which method
    orders the actions most like the reference. ``on``: the group in words for the handout, which
    then also prints the anchor and each method's lines (empty: the lesson group)."""
    q = _plain_question(sb, methods)
    if not on:
        return q
    data = (*p.state_anchor[s].split("\n"), *(f"{m.method}: {x}" for m in methods for x in (m.value_line, *m.action_lines)))
    return dataclasses.replace(q, on=on, data=data)


def _plain_question(sb: B.SideBySide, methods) -> Question:
    cp = LB.camps(sb, methods)
    at = short(sb.label, 40)
    if sb.truth is not None and cp.split and cp.truth_first != "(tie)":
        t = dict(zip(sb.actions, sb.truth, strict=True))
        right = cp.firsts.get(cp.truth_first, ())
        why = (f"the truth puts **{cp.truth_first}** first (A = {t[cp.truth_first]:+.4f}; "
               + ", ".join(f"{a} {v:+.4f}" for a, v in t.items() if a != cp.truth_first) + "). "
               + (f"So {', '.join(right)} got the first action right here" if right else "No method got it")
               + "; below, each method's scores and why the others went wrong.")
        return Question(f"sbs{sb.state}", "10",
                        f"The methods disagree at {at}: {cp.text()}. Which action does the exact "
                        "truth put first?", tuple(sb.actions), cp.truth_first, why)
    ref = "the exact truth" if sb.truth is not None else "the closure (this group has no exact truth)"
    others = [m.method for m in methods if m.method != "crbc" or sb.truth is not None]
    right = [m for m in sb.right if m in others]
    opts = tuple(others) + (() if right else ("none of them",))
    why = (f"{', '.join(right)} order{'s' if len(right) == 1 else ''} the most pairs of actions like {ref}."
           if right else f"no method orders any pair of actions like {ref} here.")
    return Question(f"sbs{sb.state}", "10", f"Which method orders the actions at {at} most like {ref}?",
                    opts, right[0] if right else "none of them", why, tuple(right[1:]))


def _reveal(p: Process, sb: B.SideBySide, methods) -> None:
    ref_scores = sb.truth if sb.truth is not None else methods[0].scores
    ref_name = "truth A(s,a)" if sb.truth is not None else "closure A(s,a)"
    panels = [Panel(ref_name, ref_scores, f"best: {sb.best(ref_scores)}", is_truth=True)]
    for m in methods:
        k, n = B.pairs_agreeing(m.scores, ref_scores)
        panels.append(Panel(m.method, m.scores, f"{k}/{n} pairs like the {'truth' if sb.truth is not None else 'closure'}"))
    st.markdown(f"**Each method's score per action at {short(sb.label, 40)}**, beside the "
                f"{'truth' if sb.truth is not None else 'closure'} (★ its first action; each panel on its own "
                "scale, so read the order, not the size):")
    svg_view(small_multiples_svg([short(a, 10) for a in sb.actions], panels, columns=4, panel_w=170),
             key=f"{KEY}_multiples")
    rows = [{"method": ref_name, **{short(a, 30): float(v) for a, v in zip(sb.actions, ref_scores, strict=True)},
             "first": sb.best(ref_scores), "pairs like it": "—"}]
    for m in methods:
        rows.append({"method": m.method, **{short(a, 30): float(v) for a, v in zip(sb.actions, m.scores, strict=True)},
                     "first": sb.best(m.scores), "pairs like it": "{}/{}".format(*B.pairs_agreeing(m.scores, ref_scores))})
    widgets.table(rows)
    whys = LB.why_wrong(sb, methods, p)
    if whys:
        st.markdown("**Why the others order them differently**, each from its own rule and numbers:")
        for w in whys:
            st.markdown(w.sentence)
            widgets.pre("\n".join(w.lines))
    st.caption("Units: crbc and the truth give Q − V, a discounted probability of success; rewardflow, "
               "shortest_path, gigpo, graphgpo and g2po give rewards of 10 per win; hgpo a normalised step "
               "advantage. Pairs like it: of every two actions, how many the method puts in the reference's order.")
