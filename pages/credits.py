"""Step credits: every registered estimator side by side on the same group."""

from __future__ import annotations

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.explain.anchor_names import anchor_labels
from crbc.truth import accuracy
from crbc.viz import accuracy as VA
from crbc.viz import charts, heatmaps
from crbc.viz.style import png_config, snapshot
from ui import exact_truth, figure_cache, state, url, widgets

st.title("Step credits")
st.caption(
    "Every estimator gives each step a credit: did this action do better (blue) or worse (red) than "
    "what the group usually did from the same anchor? **grpo** gives no step credit (only the "
    "trajectory's A_G); **visit_local** compares raw outcomes of visits; **crbc** compares values "
    "after recombining all rollouts through the merged graph; **gigpo** normalises discounted step "
    "returns per anchor; **shortest_path** rewards being few hops from any success. "
    "Edit β, K, σ_min, w_G and w_S under *Parameters* in the sidebar.")

CLICKABLE_MAX = 2000  # clickable cells over all panels (each is an SVG point in the browser)

ctx = state.page_context()
grp, r = ctx.group, ctx.rollout
names = estimators.names()
all_c = {n: ctx.credits(n) for n in names}

url.check_choice("field", list(charts.FIELDS), "the field shown is one of " + ", ".join(charts.FIELDS))
f1, f2 = st.columns([3, 2])
field = f1.radio("Show", list(charts.FIELDS), format_func=charts.FIELDS.get, horizontal=True,
                 key="field", bind="query-params")
f2.caption("A_S is comparable across estimators (each normalised per anchor); A_final adds the "
           "trajectory term; Q − V is the raw credit (estimators with a value function only).")

# the exact truth, when the group's meta identifies env, level and policy (crbc.truth); its
# heatmap's place is kept first and filled after the estimators' (it may load the model)
has_truth = exact_truth.truth_possible(ctx)

st.subheader("Rollouts × steps, one panel per estimator")
shown = [n for n in names if charts.field_N(all_c[n], field) is not None]
zmax = heatmaps.shared_range([all_c[n] for n in shown], field)
st.caption(f"**One colour scale for every panel**, symmetric around 0: dark blue = +{zmax:.3g}, "
           f"dark red = −{zmax:.3g} (the largest |{charts.FIELDS[field].split(' (')[0]}| of any "
           "estimator here), so the same colour means the same number everywhere. Each row is a "
           "rollout: ✓ succeeded, ✗ failed or timed out (its length in brackets). "
           "**Click a cell** to open that step's anchor in the Inspector.")


def _open_cell(key: str) -> None:
    """A heatmap click opens that step's anchor in the Inspector, from the callback itself: the
    Step credits page does not run again first."""
    for cd in widgets.selected_customdata(key):
        if len(cd) >= 6:
            st.session_state["inspect_anchor"] = {"group": grp.group, "anchor": anchor_labels(ctx.process)[int(cd[5])],
                                                  "step": (int(cd[0]), int(cd[1]))}
            url.switch_page("pages/inspector.py")


# ---- evidence (crbc.credit_intervals): not-sure cells washed out, and the "sure only" view
m1, m2 = st.columns([2, 3])
marks_on = m1.toggle("Evidence: wash out the cells that are not sure", value=True, key="credits_marks",
                     help="Sure: the 90% interval of the step's credit, from resampling this group's "
                          "own rollouts, excludes 0. A cell keeps its colour when its credit is sure; "
                          "an unsure cell, or one whose credit is 0 by construction, is washed out "
                          "(hover a cell for its evidence). It says nothing about actions no one tried.")
sure_only = m2.toggle("Sure only", key="credits_sure_only", disabled=not marks_on,
                      help="Blank every cell whose credit is not sure.")


@st.cache_resource(show_spinner=False, max_entries=64)
def _evidence(key: str, name: str, params: tuple, _process):
    from crbc.estimators.bootstrap import credit_intervals

    return credit_intervals(_process, name, n_resamples=100, seed=0, **dict(params)).evidence_N


def _marked(name: str, fig):
    """The heatmap with its evidence veil (estimators with a step credit only)."""
    from crbc.estimators.bootstrap import signal_of
    from crbc.viz.intervals import evidence_marks

    if not marks_on or signal_of(name) is None:
        return fig
    ev = _evidence(ctx.key, name, tuple(sorted(ctx.estimator_params(name).items())), ctx.process)
    return evidence_marks(fig, ctx.process, ev, sure_only)


@st.cache_resource(show_spinner=False, max_entries=32)
def _heat(key: str, field: str, params: tuple, marks: bool, sure: bool, height: int, _shown: tuple,
          clickable: tuple):
    """The one figure of every panel, built once per (group, field, parameters, marks): a
    revisit or a rerun for another widget sends it again without building it (st.plotly_chart
    copies a figure; nothing changes the cached one)."""
    return snapshot(heatmaps.credit_heatmaps(
        {n: _marked(n, heatmaps.credit_heatmap(all_c[n], field, zmax=zmax, height=height,
                                               clickable=n in clickable)) for n in _shown},
        height_per_panel=height,
        titles={n: f"<b>{n}</b>" + (" (click a cell)" if n in clickable and len(clickable) < len(_shown) else "")
                for n in _shown}))


height = int(min(120 + 22 * len(grp), 520))
truth_box = st.container() if has_truth else None
# an all-zero panel would be a blank rectangle: drawn only when every panel is all zero
panels = [n for n in shown if charts.field_N(all_c[n], field).any()] or shown
for n in names:
    if n not in shown:
        st.info(f"{n}: no value function, so no Q − V.")
    elif n not in panels:
        st.caption(f"All zero: {n} gives no step-level {charts.FIELDS[field]} on this group, "
                   "so it has no panel below.")
# one figure: a panel per estimator, one shared colour bar; a click on a cell of any panel opens
# that step's anchor in the Inspector
# a clickable cell is an SVG point in the browser: beyond CLICKABLE_MAX of them, only the sidebar
# estimator's panel takes clicks (the others show the same hover from the heatmap itself)
clickable = tuple(panels) if len(panels) * ctx.process.n_steps <= CLICKABLE_MAX else \
    (ctx.estimator if ctx.estimator in panels else panels[0],)
heat = _heat(ctx.key, field, tuple((n, tuple(sorted(ctx.estimator_params(n).items()))) for n in panels),
             marks_on, sure_only, height, tuple(panels), clickable)
if len(clickable) < len(panels):
    st.caption(f"This group has {ctx.process.n_steps} steps: only the **{clickable[0]}** panel (the "
               "sidebar's estimator) takes clicks, so the page draws quickly; choose another "
               "estimator in the sidebar to click on its panel. Every panel shows its values on hover.")
st.plotly_chart(heat, width="stretch", key="heat_credits", on_select=lambda: _open_cell("heat_credits"),
                selection_mode="points", config=png_config(f"{grp.group.replace('/', '_')}.heatmaps"))
st.caption(" · ".join(f"**{n}**: {estimators.get(n).summary.replace('*', '×')}" for n in panels))

# the timeline is drawn before the truth is computed (a cold start loads the model), and redrawn
# with the truth line once it is known
st.subheader(f"Rollout {grp.rollouts[r].rollout}, step by step")
all_params = tuple((n, tuple(sorted(ctx.estimator_params(n).items()))) for n in names)
timeline = figure_cache.figure("credits_timeline", (ctx.key, all_params, r, field),
                               lambda: charts.timeline_figure(all_c, r, field))
timeline_slot = st.empty()
if has_truth:
    timeline_slot.plotly_chart(timeline, width="stretch", key="timeline_pre",
                               config=png_config(f"{grp.group.replace('/', '_')}.timeline"))

truth, no_truth = exact_truth.group_truth(ctx)
if truth is not None:
    with truth_box:
        st.markdown("**truth** · the policy's exact advantage A_t = Q_t − V_t of each step "
                    "(return units, like Q − V)")
        st.plotly_chart(VA.truth_heatmap(ctx.process, truth.advantage_N, height=height),
                        width="stretch", key="heat_truth",
                        config=png_config(f"{grp.group.replace('/', '_')}.truth.heatmap"))
elif truth_box is not None:
    truth_box.caption(no_truth)

if truth is not None:
    timeline = figure_cache.figure(
        "credits_timeline_truth", (ctx.key, all_params, r, field),
        lambda: VA.with_truth_line(charts.timeline_figure(all_c, r, field),
                                   truth.advantage_N[all_c[names[0]].rollout_slice(r)]))
timeline_slot.plotly_chart(timeline, width="stretch", key="timeline",
                           config=png_config(f"{grp.group.replace('/', '_')}.timeline"))
st.caption("Where the lines disagree, the estimators tell the learner different stories about the "
           "same step. Choose another rollout in the sidebar."
           + (" The dashed black line is the truth (right axis)." if truth is not None else ""))

if truth is not None:
    st.subheader("Which estimator agrees with the truth on this group?")
    widgets.table(VA.agreement_table(accuracy.group_agreement(all_c, truth.advantage_N)), hide_index=False)
    st.caption("Each estimator's raw step signal (Q − V for the CRBC family, A_S for gigpo and "
               "shortest_path, A_final for grpo) against the true A_t of the same step: share of "
               "steps with the right sign (|A_t| > 0.001; a zero credit is a miss), rank "
               "correlation over all steps, and for Q − V the root-mean-square error. Over many "
               "levels: the *Estimator accuracy* page.")
elif no_truth:
    st.caption(no_truth)

# the scatter is folded: drawn (plotly's slowest first draw on this page) only when asked for
box, scatter_open = widgets.folded("Two estimators, step by step (a scatter of their credits)",
                                   key="credits_scatter_open")
if scatter_open:
    with box:
        s1, s2 = st.columns(2)
        x_name = s1.selectbox("x axis", names, index=names.index("gigpo") if "gigpo" in names else 0,
                              key="scatter_x")
        y_name = s2.selectbox("y axis", names, index=names.index("crbc") if "crbc" in names else 0,
                              key="scatter_y")
        scatter = figure_cache.figure("credits_scatter", (ctx.key, all_params, x_name, y_name, field),
                                      lambda: charts.scatter_figure(all_c[x_name], all_c[y_name], field))
        st.plotly_chart(scatter, width="stretch", key="scatter",
                        config=png_config(f"{grp.group.replace('/', '_')}.scatter"))
        st.caption("Each dot is one step. On the dotted diagonal both estimators agree; dots in the "
                   "top-left or bottom-right quadrants are steps they judge in opposite directions.")
        st.download_button("Scatter figure · HTML", lambda: charts.figure_html(scatter),
                           file_name=f"{grp.group.replace('/', '_')}.{x_name}-vs-{y_name}.scatter.html",
                           mime="text/html", on_click="ignore", key="dl_scatter", icon=":material/image:")

st.subheader("Download")
d1, d2, d3 = st.columns(3)
est = d1.selectbox("Estimator to export", names, index=names.index(ctx.estimator),
                   key="export_est")
slug = grp.group.replace("/", "_")
d2.download_button(f"{est} credits · crbc.credit/1 JSONL", lambda: charts.credits_jsonl(all_c[est]),
                   file_name=f"{slug}.{est}.credits.jsonl", mime="application/jsonl",
                   on_click="ignore", key="dl_jsonl", icon=":material/download:", width="stretch")
d3.download_button("All estimators · CSV (one row per step)",
                   lambda: charts.credits_frame(all_c).to_csv(index=False),
                   file_name=f"{slug}.credits.csv", mime="text/csv", on_click="ignore", key="dl_csv",
                   icon=":material/download:", width="stretch")
f1, f2 = st.columns(2)
f1.download_button(f"{est} heatmap · HTML",
                   lambda: charts.figure_html(heatmaps.credit_heatmap(all_c[est], field, title=est)),
                   file_name=f"{slug}.{est}.heatmap.html", mime="text/html", on_click="ignore",
                   key="dl_heat", icon=":material/image:", width="stretch")
f2.download_button("Timeline figure · HTML", lambda: charts.figure_html(timeline),
                   file_name=f"{slug}.timeline.html", mime="text/html", on_click="ignore",
                   key="dl_timeline", icon=":material/image:", width="stretch")
if len(ctx.groups) > 1:
    st.markdown(f"**The whole file** ({len(ctx.groups)} groups, every step with its anchor):")
    w1, w2 = st.columns(2)
    w1.download_button(f"{est}, all groups · crbc.credit/1 JSONL",
                       lambda: charts.credits_jsonl(ctx.file_credits(est)),
                       file_name=f"all-groups.{est}.credits.jsonl", mime="application/jsonl",
                       on_click="ignore", key="dl_file_jsonl", icon=":material/download:", width="stretch")
    w2.download_button("All estimators, all groups · CSV (one row per step)",
                       lambda: charts.credits_frame({n: ctx.file_credits(n) for n in names}).to_csv(index=False),
                       file_name="all-groups.credits.csv", mime="text/csv", on_click="ignore",
                       key="dl_file_csv", icon=":material/download:", width="stretch")
st.caption("Figures download as standalone HTML with plotly.js inside: they open offline. For a PNG, "
           "use the camera button at the top right of any chart (it appears on hover).")
