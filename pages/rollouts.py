"""Rollouts: the group as a table; one rollout scrubbed step by step with its board and credit."""

from __future__ import annotations

import html

import streamlit as st

from crbc.labels import anchor_labels
from crbc.viz import charts
from crbc.viz.style import board_html, board_legend_html, is_board
from pages import common

st.title("Rollouts")
st.caption(
    "A **group** is several attempts (rollouts) at the same task from the same start. Each rollout "
    "ends in success or failure; the trajectory advantage **A_G** says how much better than the "
    "group's average it scored. Step credit says which *steps* deserved it: choose a rollout and "
    "scrub through its steps.")

ctx = common.page_context()
grp, name, r = ctx.group, ctx.estimator, ctx.rollout
c = ctx.credits()
p = c.process


left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader(f"{len(grp)} rollouts")
    # static table and plain HTML bars below: this page is the landing page, and plotly's and the
    # data grid's JavaScript would add about 1.5 s before anything but the title is drawn
    st.table(charts.rollouts_table(grp, c))
    st.caption("Choose a rollout in the sidebar. score is the trajectory score; "
               "A_G = (score − group mean) / group std.")

roll = grp.rollouts[r]
T = len(roll.steps)
if st.session_state.get("step", 1) not in range(1, T + 1):
    st.session_state["step"] = 1
with right:
    st.subheader(f"Rollout {roll.rollout}: {T} steps, {charts.outcome(roll)}")
    t = st.slider("Step", 1, T, key="step", bind="query-params", disabled=T == 1,
                  help="Scrub through the rollout: the board before the step, the action taken, "
                       "and the credit the estimator gives it.") if T > 1 else 1
    i = c.rollout_slice(r).start + t - 1
    s = int(p.step_state[i])
    step = roll.steps[t - 1]
    b, m = st.columns([3, 2])
    with b:
        st.markdown(f"**anchor {anchor_labels(p)[s]}** before step {t}")
        # plain HTML (escaped): drawn at once, without waiting for the plotly bundle
        st.html(board_html(step.anchor, cell=34) if is_board(step.anchor) else
                f"<div style='font:28px monospace;padding:24px 0'>{html.escape(step.anchor)}</div>")
        if is_board(step.anchor):
            st.html(board_legend_html())
    with m:
        st.metric("Action", step.action)
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

st.markdown(f"**{charts.FIELDS['step_advantage']} per step ({name})**")
st.html(charts.step_credit_bars_html(c, r, t - 1))
st.caption("Blue bars: the step did better than the average action at its anchor; red: worse. "
           "A missing bar (zero) means only one action was ever tried at that anchor (nothing to compare "
           "against). The outlined bar is the current step.")
with st.expander("All steps of this rollout as a table"):
    table_slot = st.empty()
    steps_df = charts.steps_table(grp, r, c)
    table_slot.table(steps_df)
if step.obs or step.response:
    with st.expander("What the policy saw and wrote at this step"):
        if step.obs:
            st.text(step.obs)
        if step.response:
            st.code(step.response, language=None)

# the exact truth beside the estimate, when the group's meta identifies env, level and policy;
# computed after everything else is drawn, so the page never waits for the model to load
truth, no_truth = common.group_truth(ctx)
if truth is not None:
    truth_slot.metric("true A_t (exact)", f"{truth.advantage_N[i]:+.4f}",
                      help="The policy's exact advantage of this step: Q_t(s, a) − V_t(s) at this "
                           "time t, on the scale of Q − V above (CRBC.md section 9).")
    sl = c.rollout_slice(r)
    steps_df["true V_t"] = truth.value_N[sl].round(4)
    steps_df["true Q_t"] = truth.q_N[sl].round(4)
    steps_df["true A_t"] = truth.advantage_N[sl].round(4)
    table_slot.table(steps_df)
elif no_truth:
    truth_slot.caption(no_truth)
