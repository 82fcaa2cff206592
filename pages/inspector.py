"""Anchor inspector: one anchor's board, its actions and successors, and the backup arithmetic.

Pick the anchor from the list (sorted by visits or by how much two estimators disagree there) or
by clicking it in the graph. Another page can send the reader here with
``st.session_state["inspect_anchor"] = {"group": <group id>, "anchor": <label>}`` before
``st.switch_page("pages/inspector.py")``.
"""

from __future__ import annotations

import streamlit as st

import crbc.explain.arithmetic as E
import crbc.explain.lesson_tables as T
from crbc.explain import disagreements as compare
from crbc.explain.anchor_names import anchor_labels
from crbc.explain.table_rows import depth_name
from crbc.viz.backup_tree import backup_tree_svg
from crbc.viz.board import is_board
from crbc.viz.graph import graph_svg
from crbc.viz.lesson import arithmetic_markdown, format_rows
from ui.core import state, url, widgets
from ui.core.params import depth_options
from ui.core.svg_view import svg_view
from ui.core.widgets import short
from ui.inspector import boards, evidence, observation
from ui.inspector.token_strip import render as token_strip

# URL-bound widgets show their options as they are (no format_func): Streamlit matches a shared
# URL's value against the displayed option text, so that text must be stable
# the sidebar's depth choices, as a scale: K = 0, 1, ... and the closure ("inf") at the end
DEPTHS = sorted(depth_options(), key=lambda k: not k.isdigit())  # stable: 0..64 keep their order
SORTS = ("visits", "disagreement")


def _pick_from_graph(labels: tuple[str, ...], picked: str) -> None:
    """Graph click -> the anchor picker (a callback, so it runs before the picker is drawn)."""
    if picked.isdigit() and int(picked) < len(labels):
        st.session_state["inspect"] = labels[int(picked)]


st.title("Anchor inspector")
st.caption("One anchor, all of its arithmetic: the actions observed there with mu, their successors "
           "with P and V, the backup Q = beta · Σ P V written out, the advantage, the scale sigma, "
           "the gate and the step credit A_S, at the closure or at any depth K.")

ctx = state.page_context()
grp, p, params = ctx.group, ctx.process, ctx.params
beta, sigma_min = params["beta"], params["sigma_min"]
labels = anchor_labels(p)
ss = st.session_state

# a request from another page (e.g. Disagreements) wins over the previous choice
req = ss.pop("inspect_anchor", None)
if isinstance(req, dict) and req.get("anchor") in labels and req.get("group") in (None, grp.group):
    ss["inspect"] = req["anchor"]
    if req.get("step"):
        pos, t = req["step"]
        ss["_inspect_step"] = (req["anchor"], pos, t)
        st.info(f"Opened from Step credits: rollout {grp.rollouts[pos].rollout}, step {t} "
                f"({short(grp.rollouts[pos].steps[t].action, 80)} at {short(req['anchor'], 80)}).",
                icon=":material/ads_click:")
# forget remembered choices that do not fit this group (defaults then come from the widgets,
# or from the URL when the view was opened from a shared link)
for key, options, why in (("inspect", labels, "this group has no anchor of that name"),
                          ("inspect_sort", SORTS, "anchors are listed by visits or disagreement"),
                          ("inspect_cmp", compare.COMPARISONS.names(), "no such comparison"),
                          ("inspect_K", DEPTHS, "not a depth (inf or a whole number)")):
    url.check_choice(key, options, why)
    if key in ss and ss[key] not in options:
        del ss[key]

c_pick, c_graph = st.columns([2, 3])
with c_pick:
    sort = st.segmented_control("List anchors by", SORTS, key="inspect_sort", required=True,
                                default="visits", bind="query-params")
    shared = {"beta": beta, "sigma_min": sigma_min, "depth": params["depth"]}
    if sort == "disagreement":
        cmp_name = st.selectbox("Disagreement between", compare.COMPARISONS.names(), key="inspect_cmp",
                                bind="query-params")
        dis = ctx.disagreement(cmp_name, shared)
        order = [r.anchor for r in dis.anchors]
        info = {r.anchor: f"mean |Δ A_S| {r.disagreement:.3f} ({r.visits} visits)" for r in dis.anchors}
    else:
        rows = compare.anchors_by_visits(p)
        order = [r.anchor for r in rows]
        info = {r.anchor: f"{r.visits} visits, {r.actions} action(s)" for r in rows}
    chosen = st.selectbox(f"Anchor (listed by {sort})", order, key="inspect", bind="query-params")
    st.caption(f"{short(chosen, 80)}: {info[chosen]}. Next: "
               + ", ".join(f"{short(lab, 80)} ({info[lab]})" for lab in order[:4] if lab != chosen))

state_i = labels.index(chosen)
with c_graph:
    closure = {"beta": beta, "depth": None, "sigma_min": sigma_min}
    graph = ctx.kept("figure", ("inspect_graph_svg", beta, sigma_min, state_i),
                     lambda: graph_svg(p, ctx.credits("crbc", closure).value_S, selected=state_i))
    svg_view(graph, key="inspect_graph", on_pick=lambda picked: _pick_from_graph(tuple(labels), picked))
    st.caption("Click an anchor in the graph to inspect it (colour: V at the closure; hover for its text).")


@st.fragment
def _anchor_view() -> None:
    """Everything below the picker at the chosen depth: a fragment, so a change of the depth
    reruns only this part (the URL's ``inspect_K`` still follows)."""
    state = state_i
    st.divider()
    k_choice = st.select_slider("Depth K (inf = the exact closure)", DEPTHS, value="inf", key="inspect_K",
                                bind="query-params",
                                help="K = 0: visit-local averages; K ≥ 1: K rounds of backups; inf: the "
                                     "closure. Drag, or use the arrow keys, to watch the anchor converge.")
    depth = None if k_choice == "inf" else int(k_choice)
    ar = E.anchor_arithmetic(p, state, beta=beta, depth=depth, sigma_min=sigma_min)
    k_name = depth_name(depth)
    st.subheader(f"Anchor {short(ar.label, 80)} · {k_name}")
    c_board, c_tree = st.columns([1, 2])
    with c_board:
        boards.card(ar, depth)
    with c_tree:  # SVG and HTML below: a depth change redraws no plotly figure
        svg_view(backup_tree_svg(ar), key="inspect_tree")

    evidence.render(ctx, state, depth)
    if not is_board(ar.anchor):
        observation.render(ctx, chosen, ar.anchor)
    token_strip(ctx, chosen, ar.anchor)  # a recorded run's kept tokens: the advantage on each token

    c_act, c_succ = st.columns([1, 1])
    with c_act:
        st.markdown("**Actions observed here**")
        widgets.table(format_rows(ar.rows()))
    with c_succ:
        st.markdown("**Their successors**" + ("" if depth != 0 else " (K = 0 averages realised returns; nothing is backed up)"))
        widgets.table(format_rows(ar.successor_rows()))

    st.markdown("**The arithmetic, with the numbers**")
    widgets.pre("\n".join(arithmetic_markdown(ar)))

    st.markdown("**The same anchor at every depth** (A^(K) of each action; the last row is the closure)")
    k_show = max(6, depth or 0)
    depths = ctx.kept("figure",("inspect_depths", beta, k_show),
                                 lambda: T.depth_table(p, group=0, beta=beta, k_max=k_show, what="A"))
    cols = [c for c in depths.columns if c.startswith(f"A({ar.label},")]
    widgets.table(format_rows(depths.records(cols)))

    boards.successors(p, ar)
    widgets.fragment_done()


_anchor_view()
