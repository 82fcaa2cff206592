"""Step credits: every registered estimator side by side on the same group."""

from __future__ import annotations

import numpy as np
import streamlit as st

from crbc.estimators import registry as estimators
from crbc.viz import accuracy as VA
from crbc.viz.core.credits import FIELDS, field_N
from crbc.viz.heatmap import Panel, heatmaps_svg, shared_range
from crbc.viz.rollout import timeline_chart_svg
from ui.core import exact_truth, state, url, widgets
from ui.core.svg_view import svg_view
from ui.credits import downloads, scatter
from ui.credits import heatmaps as credit_heatmaps

st.title("Step credits")
st.caption(
    "Every estimator gives each step a credit: did this action do better (blue) or worse (red) than "
    "what the group usually did from the same anchor? They differ in how they back a value up over "
    f"the group's merged graph ({len(estimators.names())} registered: "
    + ", ".join(f"**{n}**" for n in estimators.names())
    + "; each one's rule is under the heatmaps, its arithmetic at one anchor on *Bellman backups*). "
    "Edit β, K, σ_min, w_G and w_S under *Parameters* in the sidebar.")

ctx = state.page_context()
grp, r = ctx.group, ctx.rollout
names = estimators.names()
all_c = {n: ctx.credits(n) for n in names}
all_params = tuple((n, tuple(sorted(ctx.estimator_params(n).items()))) for n in names)  # figure keys
trainer_N = ctx.trainer_N  # the advantage the user's trainer gave each step (recorded runs), or None
extra = {"trainer": trainer_N} if trainer_N is not None else {}

url.check_choice("field", list(FIELDS), "the field shown is one of " + ", ".join(FIELDS),
                 FIELDS.get)  # the bound radio writes its label into the URL
f1, f2 = st.columns([3, 2])
field = f1.radio("Show", list(FIELDS), format_func=FIELDS.get, horizontal=True,
                 key="field", bind="query-params")
f2.caption("A_S is comparable across estimators (each normalised per anchor); A_final adds the "
           "trajectory term; Q − V is the raw credit (estimators with a value function only).")

# the exact truth, when the group's meta identifies env, level and policy (crbc.truth); its
# heatmap's place is kept first and filled after the estimators' (it may load the model)
has_truth = exact_truth.truth_possible(ctx)

st.subheader("Rollouts × steps, one panel per estimator")
shown = [n for n in names if field_N(all_c[n], field) is not None]
zmax = shared_range([all_c[n] for n in shown], field)
if trainer_N is not None and field == "advantage":  # the trainer's advantage is an A_final: one scale
    zmax = max(zmax, float(np.nanmax(np.abs(trainer_N))))
st.caption(f"**One colour scale for every panel**, symmetric around 0: dark blue = +{zmax:.3g}, "
           f"dark red = −{zmax:.3g} (the largest |{FIELDS[field].split(' (')[0]}| of any "
           "estimator here), so the same colour means the same number everywhere. Each row is a "
           "rollout: ✓ succeeded, ✗ failed or timed out (its length in brackets). "
           "Hover a cell for its step, action, anchor, value and evidence; **click a cell** to see "
           "that step under every estimator, and open its anchor in the Inspector from there.")


# ---- evidence (crbc.credit_intervals): not-sure cells washed out, and the "sure only" view
m1, m2 = st.columns([2, 3])
marks_on = m1.toggle("Evidence: wash out the cells that are not sure", value=True, key="credits_marks",
                     help="Sure: the step's 90% interval excludes 0 (crbc: the calibrated interval, "
                          "measured on toy tasks to hold the truth about 90% of the time, see the "
                          "Estimator accuracy page; other estimators: the resampling range of this "
                          "group's rollouts, not calibrated). A cell keeps its colour when its credit "
                          "is sure; an unsure cell, or one whose credit is 0 by construction (none), "
                          "is washed out (hover a cell for its evidence).")
sure_only = m2.toggle("Sure only", key="credits_sure_only", disabled=not marks_on,
                      help="Blank every cell whose credit is not sure.")

slug = grp.group.replace("/", "_")
truth_box = st.container() if has_truth else None
# an all-zero panel would be a blank rectangle: drawn only when every panel is all zero
panels = [n for n in shown if field_N(all_c[n], field).any()] or shown
for n in names:
    if n not in shown:
        st.info(f"{n}: no value function, so no Q − V.")
    elif n not in panels:
        st.caption(f"All zero: {n} gives no step-level {FIELDS[field]} on this group, "
                   "so it has no panel below.")


# one SVG: a panel per estimator, one shared colour bar (server-built: the page loads no
# plotly.js for it); a click on a cell shows that step under it
if panels:
    credit_heatmaps.render(ctx, all_c, field, all_params, panels, zmax=zmax, marks_on=marks_on,
                           sure_only=sure_only, extra=extra, has_truth=has_truth, slug=slug)
st.caption(" · ".join(f"**{n}**: {estimators.get(n).summary.replace('*', '×')}" for n in panels)
           + (" · **trainer**: the advantage your trainer gave each step (recorded with the run), on "
              "the same colours; it is an A_final, so compare it under *Show: A_final*" if extra else ""))

# the timeline is drawn before the truth is computed (a cold start loads the model), and redrawn
# with the truth line once it is known
st.subheader(f"Rollout {grp.rollouts[r].rollout}, step by step")
trainer_R = None if trainer_N is None else trainer_N[all_c[names[0]].rollout_slice(r)]
timeline = ctx.kept("figure",("credits_timeline_svg", all_params, r, field),
                               lambda: timeline_chart_svg(all_c, r, field, trainer_R=trainer_R))
timeline_slot = st.empty()
if has_truth:
    with timeline_slot:
        svg_view(timeline, key="timeline_pre")

truth, no_truth = exact_truth.group_truth(ctx)
if truth is not None:
    with truth_box:
        st.markdown("**truth** · the policy's exact advantage A_t = Q_t − V_t of each step "
                    "(return units, like Q − V)")
        truth_rows = credit_heatmaps.shown_rows(ctx)  # a big group: the rollouts the panels above draw
        truth_svg = ctx.kept(  # the truth depends on the group and beta only
            "figure", ("credits_truth_svg", float(ctx.params.get("beta", 0.98)), truth_rows and tuple(truth_rows)),
            lambda: heatmaps_svg(ctx.process, [Panel("truth", truth.advantage_N)], value_name="true A_t",
                                 scale_name="true A_t (its own scale)", rows=truth_rows))
        svg_view(truth_svg, key="heat_truth", on_pick=credit_heatmaps.picker(grp.group),
                 download=f"{slug}.truth.heatmap")
elif truth_box is not None:
    truth_box.caption(no_truth)

if truth is not None:
    timeline = ctx.kept("figure",
        ("credits_timeline_truth_svg", all_params, r, field),
        lambda: timeline_chart_svg(all_c, r, field, truth.advantage_N[all_c[names[0]].rollout_slice(r)],
                                          trainer_R=trainer_R))
with timeline_slot:
    svg_view(timeline, key="timeline", download=f"{slug}.timeline")
st.caption("Where the lines disagree, the estimators tell the learner different stories about the "
           "same step. Choose another rollout in the sidebar."
           + (" The dashed black line is the truth (right axis)." if truth is not None else ""))

if truth is not None:
    st.subheader("Which estimator agrees with the truth on this group?")
    widgets.table(exact_truth.agreement_table(ctx, all_c, truth, all_params), hide_index=False)
    st.caption(f"Each estimator's raw step signal ({VA.signals_sentence()}) against the true A_t of "
               "the same step: share of steps with the right sign (|A_t| > 0.001; a zero credit is a "
               "miss), rank correlation over all steps, and the root-mean-square error where the "
               "signal is in the truth's units. Over many levels: the *Estimator accuracy* page.")
elif no_truth:
    st.caption(no_truth)

scatter.render(ctx, all_c, names, all_params, field, slug)  # folded: built only when opened
downloads.render(ctx, all_c, field, shown, extra, timeline)
