"""Rollouts: the group as a table; one rollout scrubbed step by step with its board and credit."""

from __future__ import annotations

import streamlit as st

from crbc.explain.anchor_names import anchor_labels
from crbc.viz.board import board_html, board_legend_html, is_board
from crbc.viz.core.credits import FIELDS, outcome
from crbc.viz.rollout import step_credit_bars_html, steps_table
from ui.core import exact_truth, state, url, widgets
from ui.core.widgets import short
from ui.rollouts import table as rollout_table

st.title("Rollouts")
st.caption(
    "A **group** is several attempts (rollouts) at the same task from the same start. Each rollout "
    "ends in success or failure; the trajectory advantage **A_G** says how much better than the "
    "group's average it scored. Step credit says which *steps* deserved it: choose a rollout and "
    "scrub through its steps.")

ctx = state.page_context()
grp, name, r = ctx.group, ctx.estimator, ctx.rollout
c = ctx.credits()
p = c.process


left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader(f"{len(grp)} rollouts")
    rollout_table.render(grp, c, r)

roll = grp.rollouts[r]
T = len(roll.steps)
# steps are 0-based, as the files number them (verl's step_index, the recorder, Step credits)
url.check_url("step", url.int_in(0, T - 1), f"this rollout has steps 0 to {T - 1}")
if st.session_state.get("step", 0) not in range(T):
    st.session_state["step"] = 0


@st.fragment
def _step_view() -> None:
    """The scrubbed step (board, action, credit, the bars, the step table): a fragment, so moving
    the step slider reruns only this part of the page (the URL's ``step`` still follows). Drawn in
    the right column (a fragment writes inside its own container only)."""
    st.subheader(f"Rollout {roll.rollout}: {T} step{'' if T == 1 else 's'}, {outcome(roll)}")
    t = st.slider("Step", 0, max(T - 1, 0), key="step", bind="query-params", disabled=T == 1,
                  help="Scrub through the rollout: the board before the step, the action taken, "
                       "and the credit the estimator gives it (steps numbered from 0, as "
                       "in the files).") if T > 1 else 0
    i = c.rollout_slice(r).start + t
    s = int(p.step_state[i])
    step = roll.steps[t]
    b, m = st.columns([3, 2])
    with b:
        st.markdown(f"**anchor {short(anchor_labels(p)[s], 80)}** before step {t}")
        # plain HTML (escaped): drawn at once, without waiting for the plotly bundle
        if is_board(step.anchor):
            st.html(board_html(step.anchor, cell=34))
            st.html(board_legend_html(step.anchor))
        else:  # a long anchor: its beginning, the rest behind "show all"
            widgets.long_text(step.anchor, "The whole anchor")
    with m:
        widgets.value("Action", step.action)  # wrapped: a long text action never runs past the column
        st.metric("Reward", "—" if step.reward is None else f"{step.reward:g}")
        st.metric(f"A_S ({name})", f"{c.step_advantage_N[i]:+.3f}",
                  help="Normalised step credit: positive = better than the anchor's average action.")
        if c.value_N is not None:
            st.caption(f"V(s) = {c.value_N[i]:.3f}, Q(s,a) = {c.q_N[i]:.3f}, "
                       f"Q − V = {c.credit_N[i]:+.3f}; A_final = {c.advantage_N[i]:+.3f}")
        else:
            st.caption(f"{name} has no value function; A_final = {c.advantage_N[i]:+.3f}")
        st.caption(f"This anchor was visited {int(p.n_s[s])} times in the group with "
                   f"{int(p.n_actions[s])} different actions.")
        truth_slot = st.empty()  # the exact truth, filled in last (it may load the model)

    st.markdown(f"**{FIELDS['step_advantage']} per step ({name})**")
    st.html(step_credit_bars_html(c, r, t))
    st.caption("Blue bars: the step did better than the average action at its anchor; red: worse. "
               "A missing bar (zero) means only one action was ever tried at that anchor (nothing to compare "
               "against). The outlined bar is the current step.")
    box, table_shown = widgets.folded("All steps of this rollout as a table", key="rollouts_steps_open")
    table_slot = box.empty()
    steps_df = None
    if table_shown:
        steps_df = steps_table(grp, r, c)
        widgets.table(steps_df, table_slot, hide_index=False)
    if step.obs or step.response:
        with st.expander("What the policy saw and wrote at this step"):
            if step.obs:
                st.text(step.obs)
            if step.response:
                widgets.pre(step.response)

    # the exact truth beside the estimate, when the group's meta identifies env, level and policy;
    # computed after everything else is drawn, so the page never waits for the model to load
    truth, no_truth = exact_truth.group_truth(ctx)
    if truth is not None:
        truth_slot.metric("true A_t (exact)", f"{truth.advantage_N[i]:+.4f}",
                          help="The policy's exact advantage of this step: Q_t(s, a) − V_t(s) at this "
                               "time t, on the scale of Q − V above (docs/MATH.md section 9).")
        if steps_df is not None:
            sl = c.rollout_slice(r)
            steps_df["true V_t"] = truth.value_N[sl].round(4)
            steps_df["true Q_t"] = truth.q_N[sl].round(4)
            steps_df["true A_t"] = truth.advantage_N[sl].round(4)
            widgets.table(steps_df, table_slot, hide_index=False)
    elif no_truth:
        truth_slot.caption(no_truth)
    widgets.fragment_done()


with right:
    _step_view()
