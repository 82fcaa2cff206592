"""Bellman backups: the finite-depth family V^(K) from K = 0 (visit-local) to the closure."""

from __future__ import annotations

import streamlit as st

from crbc import accuracy
from crbc.viz import accuracy as VA
from crbc.viz import charts
from crbc.viz.graph import graph_figure
from crbc.viz.style import png_config
from pages import common

TOL = 1e-6

st.title("Bellman backups")
st.caption(
    "At depth **K = 0** each anchor's value is the average outcome of the rollouts that visited it "
    "(*visit-local*): it only knows its own rollouts. Each further round **K** backs values up one "
    "step through the merged graph, V^(K)(s) = β · average of V^(K−1) over where the group went "
    "next, so what other rollouts discovered flows in. As K grows, V^(K) converges to the "
    "**closure** V, which one linear solve gives exactly.")

ctx = common.page_context()
grp, beta, p = ctx.group, ctx.params["beta"], ctx.process
longest = int(p.rollout_len.max())
default_kmax = int(min(max(2 * longest, 12), 150))

c1, c2, c3 = st.columns([2, 1, 3])
k_max = int(c1.number_input("Maximum depth shown", 1, 400, default_kmax, key="kmax",
                            help="Depths 0..this are precomputed once; the slider scrubs them."))
sw = ctx.sweep(beta, k_max)
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
          help="Step K up once a second until the maximum depth.")
c3.markdown(f"**β = {beta:g}** (sidebar)  \n"
            + (f":green[:material/check_circle: **converged at K = {conv}**] "
               f"(‖A^(K) − A∞‖∞ ≤ {TOL:g})" if conv is not None
               else f":orange[:material/hourglass_top: **not converged within K ≤ {k_max}**] "
                    f"(tolerance {TOL:g}); raise the maximum depth"))


# the exact truth, when the group's meta identifies env, level and policy (crbc.truth)
has_truth = common.truth_possible(ctx)
colour_by = "estimate"
if has_truth:
    colour_by = st.radio("Colour nodes by", ["estimate", "truth", "error"], horizontal=True,
                         key="backups_colour", bind="query-params",
                         format_func={"estimate": "estimate V^(K)", "truth": "truth V",
                                      "error": "error V^(K) − truth"}.get)


def _truth():
    """(GroupTruth or None, reason, gaps): computed on first use (it may load the model)."""
    truth, no_truth = common.group_truth(ctx)
    gaps = None if truth is None else accuracy.value_gaps(sw.v_KS, sw.v_S, truth.anchor_value_S, p.n_s)
    return truth, no_truth, gaps


@st.fragment(run_every=0.9 if playing else None)
def view() -> None:
    if st.session_state.get("playing", False):
        k_now = int(st.session_state.get("K", 0))
        if k_now >= k_max:
            st.session_state["playing"] = False
            st.rerun()
        st.session_state["K"] = k_now + 1
    k = int(st.session_state.get("K", 0))
    st.slider("Depth K", 0, k_max, value=min(k, k_max), key="K", bind="query-params",
              help="Rounds of cross-rollout backup; scrub or press Play.")
    k = int(st.session_state["K"])
    g, e = st.columns([3, 2], gap="medium")
    with g:
        label = f"V^({k})"
        values = sw.v_KS[k]
        mode = colour_by
        truth, no_truth, _ = _truth() if mode != "estimate" else (None, None, None)
        if truth is None and mode != "estimate":
            st.caption(no_truth)
            mode = "estimate"
        elif mode == "truth":
            label, values = "true V", truth.anchor_value_S
        elif mode == "error":
            label, values = f"V^({k}) − true V", sw.v_KS[k] - truth.anchor_value_S
        st.plotly_chart(graph_figure(p, values, title=f"Anchors coloured by {label}",
                                     highlight_rollout=ctx.rollout, height=500,
                                     value_name=label, signed=mode == "error"),
                        width="stretch", key="backup_graph", config={"displayModeBar": False})
    with e:
        st.plotly_chart(charts.convergence_figure(sw, k, TOL), width="stretch", key="conv",
                        config=png_config("convergence"))
        st.caption(
            "Blue: largest gap between V^(K) and the closure's V over all anchors; red: the same "
            "for the advantages A = Q − V; dashed: the guarantee of Cor. 3, "
            "2β^K/(1−β)·‖TV0 − V0‖. Errors of exactly 0 are drawn at 1e-16.")
        truth, no_truth, gaps = _truth() if has_truth else (None, None, None)
        if truth is not None:
            gap_K, gap_inf, to_closure = gaps
            st.plotly_chart(VA.truth_gap_figure(gap_K, gap_inf, to_closure, k), width="stretch",
                            key="truth_gap", config=png_config("truth_gap"))
            st.caption(
                f"How far the estimate still is from the **truth** (the policy's exact values): at "
                f"K = {k} the visit-weighted mean |V^(K) − V_true| is {gap_K[k]:.3f}; the closure "
                f"itself stays {gap_inf:.3f} away. Backups remove the gap to the closure (dotted), "
                "not the closure's own error: that comes from the group having seen only a few "
                "rollouts, and only more rollouts shrink it.")
        elif has_truth:
            st.caption(no_truth)
    st.markdown(f"**Credit table at K = {k}** beside the closure's (sorted by the gap)")
    st.dataframe(charts.sweep_table(p, sw, k), hide_index=True, width="stretch", height=320,
                 column_config={"|A^(K) − A∞|": st.column_config.NumberColumn(format="%.2e")})
    st.caption("One row per (anchor, action) seen in the group: N(s,a) visits, μ(a|s) how often "
               "the group chose a at s, Q^(K) and A^(K) = Q^(K) − V^(K) at this depth, and the "
               "closure's values on the right.")


view()
