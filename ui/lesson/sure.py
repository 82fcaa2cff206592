"""The end of the Lesson's section 9: how sure a credit is, watching one pair's interval shrink as G grows.

Drawn by :func:`render` at the end of ``pages/lesson.py``; the numbers come from
:mod:`crbc.explain.growing_group`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from crbc.explain import growing_group as GG
from crbc.explain.anchor_names import node_labels
from crbc.viz.reliability import interval_note, load_report
from ui.core import state
from ui.core.context import PageContext


def _rows(ctx: PageContext, anchor: str, action: str, truth: float | None, beta: float,
          sigma_min: float) -> list[dict]:
    """The pair's interval for growing G, kept by the group's context (its content)."""
    group = ctx.group
    return ctx.kept("lesson", ("sure_rows", anchor, action, truth, beta, sigma_min),
                    lambda: GG.intervals_by_size(group, anchor, action, GG.sizes_for(len(group)), truth=truth,
                                                 beta=beta, sigma_min=sigma_min))


def render(ctx: PageContext, truth, beta: float, sigma_min: float, table: Callable) -> None:
    """The section on the group of ``ctx`` (one level); ``truth``: its GroupTruth or None;
    ``table``: the Lesson's table renderer."""
    st.subheader("How sure is a credit: the interval shrinks as the group grows")
    st.markdown(
        "A credit computed from a few rollouts can look confident and still rest on one lucky "
        "visit. Reweight the group's own rollouts at random (plus a little mass on what no rollout "
        "showed), recompute, and widen the spread of the credit by a factor fitted on toy levels: "
        "that is its calibrated interval (90% here). Below: the same (anchor, action) on the same "
        "level, computed from the first G rollouts of the group, for growing G.")
    p = ctx.process
    pair = GG.busiest_pair(p)
    if pair is None:
        st.info("No anchor of this group saw two or more actions: every step credit is 0 by construction.")
        return
    anchor, action = p.state_anchor[int(p.sa_state[pair])], p.action_names[int(p.sa_action[pair])]
    true_sa = None
    if truth is not None:
        true_sa = float(np.mean(truth.anchor_advantage_N[p.step_sa == pair]))
    rows = _rows(ctx, anchor, action, true_sa, float(beta), float(sigma_min))
    st.markdown("The most visited pair where the group tried two or more actions: anchor "
                f"**{node_labels(p)[int(p.sa_state[pair])]}**, action:")
    st.text(action + (f"   (its true advantage A(s,a) = {true_sa:+.4f})" if true_sa is not None else ""))
    table(rows)
    st.caption("Read down the rows: the interval narrows as G grows, because each resample draws "
               "from more rollouts. sure: the interval excludes 0; unsure: it holds 0; none: the credit is 0 by "
               "construction (for example while the first G rollouts tried only one action at this anchor: "
               "section 6's gate is shut); not visited: none of the first G rollouts took this action here, so "
               "there is no credit yet. covers the truth: whether the interval holds the level's exact A(s,a). "
               + interval_note(load_report(state.SHIPPED_DIR), 0.9))
    sure = ctx.kept("lesson", ("sure_pair", float(beta), float(sigma_min)),
                    lambda: GG.sure_pair(p, beta=beta, sigma_min=sigma_min))
    if sure is not None and sure != pair:
        s_anchor, s_action = p.state_anchor[int(p.sa_state[sure])], p.action_names[int(p.sa_action[sure])]
        s_true = None if truth is None else float(np.mean(truth.anchor_advantage_N[p.step_sa == sure]))
        st.markdown(f"**A sure one.** At anchor **{node_labels(p)[int(p.sa_state[sure])]}** the action below "
                    "is credited with an interval that excludes 0 once the group is large enough: "
                    "the evidence says its sign, whatever the resample.")
        st.text(s_action + (f"   (its true advantage A(s,a) = {s_true:+.4f})" if s_true is not None else ""))
        table(_rows(ctx, s_anchor, s_action, s_true, float(beta), float(sigma_min)))
    st.markdown(
        "**Why a small credit can cover a larger truth.** The closure's credit is *shrunk* towards "
        "0 compared with the truth: it averages only over what the group's own rollouts did next, "
        "and every continuation that no rollout tried counts as nothing, so where the group saw "
        "few continuations the credit is pulled to 0 (a credit of −0.006 beside a true −0.032 is "
        "typical). The calibrated interval is widened by a factor fitted on other toy levels "
        "precisely so that it still covers the truth about 90% of the time despite that shrinkage: "
        "an interval around a shrunk credit that covers a larger true value is what it was built "
        "to do, not luck. Read its *sign* when it is sure, and its width as how much the group knows.")

