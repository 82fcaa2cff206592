"""Anchor graph: the merged empirical process of the group as an interactive, offline graph."""

from __future__ import annotations

import streamlit as st

from crbc.viz.anchor_graph import anchor_graph_html
from crbc.viz.core.graph_layout import LABEL_ALL_MAX
from ui.core import exact_truth, report_download, state, static_assets, url, widgets
from ui.graph import similarity as graph_similarity

st.title("Anchor graph")
st.caption(
    "Rollouts of a group often pass through the **same state** (an *anchor*). Merging them gives "
    "one graph: each node is an anchor, each arrow an observed transition (labelled by the action "
    "and how often it was seen out of the times that action was taken there). Every rollout ends in "
    "one of two absorbing boundaries: **z+ success** or **z− failure**.")

ctx = state.page_context()
grp, r = ctx.group, ctx.rollout
params = ctx.estimator_params("crbc")
c = ctx.credits("crbc", params)
p = c.process

a, b, d = st.columns(3)
a.metric("Anchors", p.n_states)
b.metric("Observed transitions", len(p.transitions()[0]))
d.metric("Steps merged", p.n_steps)


# the exact truth, when the group's meta identifies env, level and policy (crbc.truth); it is
# computed only when asked for (it may load the model)
COLOUR_BY = {"estimate": "estimate V(s) (crbc)", "truth": "truth V(s)",
             "error": "error: estimate − truth"}
colour_by, truth, no_truth = "estimate", None, None
has_truth = exact_truth.truth_possible(ctx)
url.check_choice("graph_colour", list(COLOUR_BY) if has_truth else ["estimate"],
                 "nodes are coloured by estimate, truth or error" if has_truth
                 else "this group has no exact truth (its meta names no toy env, level and policy)",
                 COLOUR_BY.get)
if has_truth:
    colour_by = st.radio("Colour nodes by", list(COLOUR_BY), format_func=COLOUR_BY.get,
                         horizontal=True, key="graph_colour", bind="query-params")
    if colour_by != "estimate":
        truth, no_truth = exact_truth.group_truth(ctx)
        if truth is None:
            st.caption(no_truth)
            colour_by = "estimate"
node_values = {"estimate": c.value_S, "truth": truth.anchor_value_S if truth else None,
               "error": c.value_S - truth.anchor_value_S if truth else None}[colour_by]


def _graph() -> str:
    """The graph's HTML, drawn once per (group, parameters, rollout, colouring)."""
    name = {"estimate": "V", "truth": "true V", "error": "V − true V"}[colour_by]
    return ctx.kept("figure",
        ("anchor_graph_html", tuple(sorted(params.items())), r, colour_by),
        lambda: anchor_graph_html(c.process, node_values, highlight_rollout=r, height_px=620, value_name=name,
                                  signed=colour_by == "error", assets_url=static_assets.vis_url()))


st.iframe(_graph(), height=630)
depth = "exact closure" if params.get("depth") is None else f"depth K = {params['depth']}"
st.caption(
    f"Node colour: **V(s)**, the β-discounted probability (β = {params['beta']:g}) of reaching "
    f"success from this anchor if you keep acting like the group did (crbc, {depth}); "
    "yellow ≈ 1, dark purple ≈ 0 (the same scale on every page). Node size: how often the anchor "
    f"was visited. Orange: the path of rollout {grp.rollouts[r].rollout} (choose another in the "
    "sidebar). Hover a node to see its board; drag to pan, scroll to zoom. **Find anchor** (top "
    "right of the graph) jumps to an anchor by its label or a piece of its key."
    + (f" With {p.n_states} anchors, only the chosen path is labelled (more than {LABEL_ALL_MAX}); "
       "hover the others." if p.n_states > LABEL_ALL_MAX else ""))
if colour_by != "estimate":
    st.caption(
        "**Truth**: the policy's exact value of each anchor (its finite-horizon V_t, averaged over "
        "the times t the policy is there, weighted by how likely it is there). **Error**: red where "
        "the group's estimate is below the truth, blue where above (white: exact).")
# built only while open (a link that carries graph_tau opens it, so the slider keeps its value)
fold, fold_open = widgets.folded("What a similarity TAU would merge here (approximate anchors)",
                                 key="graph_similarity_open", expanded="graph_tau" in st.query_params)
if fold_open:
    with fold:
        graph_similarity.similarity_section(ctx)
report_download.group_button(ctx, "dl_report_graph")
