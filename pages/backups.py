"""Bellman backups: the finite-depth family V^(K) from K = 0 (visit-local) to the closure."""

from __future__ import annotations

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.viz.backups import sweep_table
from ui.backups import at_depth
from ui.backups import side as backups_side
from ui.core import exact_truth, state, url, widgets

TOL = 1e-6
K_CAP = 400  # deepest K the page computes (the slider's range opens at the convergence depth)

st.title("Bellman backups")
st.caption(
    "At depth **K = 0** each anchor's value is the average outcome of the rollouts that visited it "
    "(*visit-local*): it only knows its own rollouts. Each further round **K** backs values up one "
    "step through the merged graph, V^(K)(s) = β · average of V^(K−1) over where the group went "
    "next, so what other rollouts discovered flows in. As K grows, V^(K) converges to the "
    "**closure** V, which one linear solve gives exactly.")
_no_depth = [e.label for e in map(estimators.get, estimators.names())
             if "depth" not in {name for name, _m, _d in e.params()} and e.name != "visit_local"]
st.caption(
    f"Depth K belongs to the CRBC family (visit-local is K = 0, crbc any K up to the closure). "
    f"It means nothing for {', '.join(_no_depth)}: they have no backup to stop early. RewardFlow "
    "iterates over the same graph too, but with a maximum over successors instead of this "
    "average, to its own fixed point (docs/MATH.md section 11); the Lesson compares the two.")


ctx = state.page_context()
grp, beta, p = ctx.group, ctx.params["beta"], ctx.process
# one sweep as deep as the page ever shows; the range opens at the convergence depth (or the
# deepest K a shared link asks for), so Play stops where nothing changes any more
probe = ctx.sweep(beta, K_CAP, tol=TOL)  # ends at the convergence depth (its later depths equal it within TOL)
conv_full = probe.converged_at(TOL)
url.check_url("K", url.int_in(0, K_CAP), f"the depth K is a whole number from 0 to {K_CAP}")
url.check_url("kmax", url.int_in(1, K_CAP), f"the maximum depth is 1 to {K_CAP}")
k_link = st.session_state.get("K", st.query_params.get("K"))
try:
    k_link = int(float(k_link)) if k_link is not None else 0
except (TypeError, ValueError):
    k_link = 0
kmax_link = st.query_params.get("kmax")  # a link's maximum depth (checked above), else the convergence depth
default_kmax = (int(float(kmax_link)) if kmax_link is not None
                else max(conv_full if conv_full is not None else K_CAP, k_link, 1))

c1, c2, c3 = st.columns([2, 1, 3])
k_max = int(c1.number_input("Maximum depth shown", 1, K_CAP, min(default_kmax, K_CAP), key=f"kmax_{ctx.key}",
                            help="Opens at the depth where A^(K) reaches the closure (within "
                                 f"{TOL:g}); Play stops there."))
sw = probe.first(k_max) if k_max <= probe.k_max else ctx.sweep(beta, k_max)  # deeper than convergence: asked for
conv = sw.converged_at(TOL)
if "K" in st.session_state and not (0 <= int(st.session_state["K"]) <= k_max):
    st.session_state["K"] = k_max
playing = st.session_state.get("playing", False)


def _toggle() -> None:
    st.session_state["playing"] = not st.session_state.get("playing", False)
    if st.session_state["playing"] and int(st.session_state.get("K", 0)) >= k_max:
        st.session_state["K"] = 0


c2.button("Pause" if playing else "Play", on_click=_toggle, key="play", width="stretch",
          icon=":material/pause:" if playing else ":material/play_arrow:",
          help=f"Step K up once a second until the maximum depth, "
               f"{at_depth.play_stride(k_max)} round(s) a step (at most "
               f"{at_depth.PLAY_STEPS} steps a Play).")
c3.markdown(f"**β = {beta:g}** (sidebar)  \n"
            + (f":green[:material/check_circle: **converged at K = {conv}**] "
               f"(‖A^(K) − A∞‖∞ ≤ {TOL:g})" if conv is not None
               else f":orange[:material/hourglass_top: **not converged within K ≤ {k_max}**] "
                    f"(tolerance {TOL:g})" + (f"; it converges at K = {conv_full}" if conv_full
                                              else f"; not even by K = {K_CAP}")))
cov = ctx.coverage(k_max)


# the exact truth, when the group's meta identifies env, level and policy (crbc.truth)
has_truth = exact_truth.truth_possible(ctx)
colour_by = "estimate"
COLOUR_BY = {"estimate": "estimate V^(K)", "truth": "truth V", "error": "error V^(K) − truth"}
url.check_choice("backups_colour", list(COLOUR_BY) if has_truth else ["estimate"],
                 "nodes are coloured by estimate, truth or error" if has_truth
                 else "this group has no exact truth (its meta names no toy env, level and policy)",
                 COLOUR_BY.get)
if has_truth:
    colour_by = st.radio("Colour nodes by", list(COLOUR_BY), horizontal=True,
                         key="backups_colour", bind="query-params", format_func=COLOUR_BY.get)


@st.fragment(run_every=0.9 if playing else None)
def view() -> None:
    if st.session_state.get("playing", False):
        k_now = int(st.session_state.get("K", 0))
        if k_now >= k_max:
            st.session_state["playing"] = False
            st.rerun()
        st.session_state["K"] = min(k_now + at_depth.play_stride(k_max), k_max)
    k = int(st.session_state.get("K", 0))
    st.slider("Depth K", 0, k_max, value=min(k, k_max), key="K", bind="query-params",
              help="Rounds of cross-rollout backup; scrub or press Play.")
    k = int(st.session_state["K"])
    g, e = st.columns([3, 2], gap="medium")
    with g:
        at_depth.graph(ctx, sw, k, colour_by)
    with e:
        at_depth.charts(ctx, sw, cov, k, k_max, TOL, has_truth)
    st.markdown(f"**Credit table at K = {k}** beside the closure's (sorted by the gap)")
    st.dataframe(sweep_table(p, sw, k, rows=at_depth.TABLE_ROWS), hide_index=True, width="stretch", height=320,
                 column_config={"|A^(K) − A∞|": st.column_config.NumberColumn(format="%.2e")})
    pairs = len(p.n_sa)
    st.caption("One row per (anchor, action) seen in the group: N(s,a) visits, μ(a|s) how often "
               "the group chose a at s, Q^(K) and A^(K) = Q^(K) − V^(K) at this depth, and the "
               "closure's values on the right."
               + (f" Shown: the {at_depth.TABLE_ROWS:,} rows with the largest gaps of {pairs:,}; the others are "
                  "closer to the closure." if pairs > at_depth.TABLE_ROWS else ""))
    widgets.fragment_done()


view()

st.header("The backups side by side", anchor="backups-side-by-side")
st.caption("One graph, different backups (docs/MATH.md section 12): at one anchor of this group, each "
           "method's value from its successors' as one line of arithmetic, then which of them "
           "orders the anchor's actions as the exact truth does (on toy groups) or as the closure does.")
_sbs_truth, _sbs_why = exact_truth.group_truth(ctx) if has_truth else (None, "")
backups_side.render(ctx, beta, ctx.params["sigma_min"],
                    None if _sbs_truth is None else _sbs_truth.anchor_advantage_N, key="backups_sbs",
                    no_truth=_sbs_why or "The exact truth exists only for groups generated on the toy "
                                         "tasks (their meta names env, level and policy).")
