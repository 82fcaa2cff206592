"""The Bellman backups page at one depth K: the merged graph coloured by the estimate V^(K), the
exact truth or the error, beside the convergence, evidence coverage and truth-gap charts; and
how far one step of Play moves K (:func:`play_stride`)."""

from __future__ import annotations

import streamlit as st

from crbc.estimators.closure import DepthSweep
from crbc.estimators.coverage import MAX_CELLS, Coverage, coverage_cells
from crbc.truth import accuracy
from crbc.viz.backups import convergence_chart_svg, coverage_chart_svg, truth_gap_chart_svg
from crbc.viz.core.graph_layout import MAX_DRAWN
from crbc.viz.graph import graph_svg
from ui.core import exact_truth
from ui.core.context import PageContext
from ui.core.svg_view import svg_view

#: the most steps one Play takes (at 0.9 s a step: under a minute, whatever the depth)
PLAY_STEPS = 60
#: the credit table's rows at one depth: those with the largest gaps (a 20,000-anchor group has
#: 48,754 (anchor, action) pairs, 4 MB of table on every depth shown)
TABLE_ROWS = 1000


def play_stride(k_max: int) -> int:
    """Rounds of backup per Play step: 1 up to ``PLAY_STEPS`` rounds, then ceil(k_max / PLAY_STEPS),
    so a user's run converging at K = 171 plays in 57 steps of 3, not 171 of 1."""
    return max(1, -(-int(k_max) // PLAY_STEPS))


def _truth(ctx: PageContext, sw: DepthSweep):
    """(GroupTruth or None, reason, gaps): computed on first use (it may load the model)."""
    truth, no_truth = exact_truth.group_truth(ctx)
    gaps = None if truth is None else accuracy.value_gaps(sw.v_KS, sw.v_S, truth.anchor_value_S, ctx.process.n_s)
    return truth, no_truth, gaps


def graph(ctx: PageContext, sw: DepthSweep, k: int, colour_by: str) -> None:
    """The graph at depth ``k`` of sweep ``sw``, its nodes coloured by ``colour_by`` ("estimate",
    "truth" or "error"; the estimate, with the reason, when the group has no truth), the chosen
    rollout's path in orange and rings on the anchors that moved in this round."""
    p, beta = ctx.process, ctx.params["beta"]
    label = f"V^({k})"
    values = sw.v_KS[k]
    delta = sw.v_KS[k] - sw.v_KS[k - 1] if k >= 1 else None
    mode = colour_by
    truth, no_truth, _ = _truth(ctx, sw) if mode != "estimate" else (None, None, None)
    if truth is None and mode != "estimate":
        st.caption(no_truth)
        mode = "estimate"
    elif mode == "truth":
        label, values = "true V", truth.anchor_value_S
    elif mode == "error":
        label, values = f"V^({k}) − true V", sw.v_KS[k] - truth.anchor_value_S
    figure = ctx.kept("figure",
        ("backup_graph_svg", beta, k, mode, ctx.rollout),
        lambda: graph_svg(p, values, highlight_rollout=ctx.rollout, value_name=label,
                          signed=mode == "error", delta_S=delta if mode == "estimate" else None,
                          shown_width_px=680))
    st.markdown(f"**Anchors coloured by {label}** (orange: rollout {ctx.rollout}'s path)")
    svg_view(figure, key="backup_graph", download=f"graph_K{k}")
    moved = 0 if delta is None or mode != "estimate" else int((abs(delta) > 1e-9).sum())
    st.caption(("" if mode != "estimate" else "Rings: the anchors whose value changed in this round, blue up and red down "
                f"(width: how much; the biggest moves are written). {moved} of {p.n_states} "
                "anchors moved at this K." if k else "K = 0: every anchor averages its own "
                "visits; press Play to watch the values flow.")
               + " Hover a node for its text."
               + (f" The drawing shows {MAX_DRAWN:,} of the {p.n_states:,} anchors: rollout {ctx.rollout}'s path "
                  "and the busiest (the line under its legend says so)."
                  if p.n_states > MAX_DRAWN else ""))


def _coverage(ctx: PageContext, cov: Coverage | None, k: int, k_max: int) -> None:
    """The evidence coverage chart at depth ``k``, or why a group this large has none."""
    if cov is None:
        p = ctx.process
        st.caption(f"**Evidence coverage** (the paper's Fig. 5) is not drawn for this group: its "
                   f"{p.n_states:,} anchors and {len(p.rollout_offsets) - 1:,} rollouts need "
                   f"{coverage_cells(p):,} hop distances and reaches, more than the "
                   f"{MAX_CELLS:,} the studio builds for one page.")
        return
    svg_view(ctx.kept("figure",("backup_cov", k_max, k), lambda: coverage_chart_svg(cov, k)),
             key="cov", download="coverage")
    heard = cov.count_KS[k]
    st.caption(
        f"**Evidence coverage** (the paper's Fig. 5): at depth K an anchor's value has heard "
        f"the outcomes of the rollouts that pass within K hops of it. At K = {k}: on average "
        f"{cov.mean_fraction_K[k]:.0%} of the group's {cov.n_rollouts} outcomes, at least "
        f"{int(heard.min())}; every anchor has heard all it ever can"
        + (f" from K = {cov.complete_at()} on." if cov.complete_at() is not None else " beyond this range."))


def charts(ctx: PageContext, sw: DepthSweep, cov: Coverage | None, k: int, k_max: int, tol: float, has_truth: bool) -> None:
    """At depth ``k`` (of 0..``k_max``): the gap to the closure against the Cor. 3 bound (``tol``:
    the convergence tolerance), the evidence coverage ``cov``, and with ``has_truth`` the
    estimate's gap to the exact truth (or why there is none)."""
    beta = ctx.params["beta"]
    svg_view(ctx.kept("figure",("backup_conv", beta, k_max, k),
                                 lambda: convergence_chart_svg(sw, k, tol)),
             key="conv", download="convergence")
    st.caption(
        "Blue: largest gap between V^(K) and the closure's V over all anchors; red: the same "
        "for the advantages A = Q − V; dashed: the guarantee of Cor. 3, "
        "2β^K/(1−β)·‖TV0 − V0‖. Errors of exactly 0 are drawn at 1e-16.")
    _coverage(ctx, cov, k, k_max)
    truth, no_truth, gaps = _truth(ctx, sw) if has_truth else (None, None, None)
    if truth is not None:
        gap_K, gap_inf, to_closure = gaps
        st.markdown("**Visit-weighted mean |V − V_true| over anchors**")
        svg_view(truth_gap_chart_svg(gap_K, gap_inf, to_closure, k), key="truth_gap", download="truth_gap")
        st.caption(
            f"How far the estimate still is from the **truth** (the policy's exact values): at "
            f"K = {k} the visit-weighted mean |V^(K) − V_true| is {gap_K[k]:.3f}; the closure "
            f"itself stays {gap_inf:.3f} away. Backups remove the gap to the closure (dotted), "
            "not the closure's own error: that comes from the group having seen only a few "
            "rollouts, and only more rollouts shrink it.")
    elif has_truth:
        st.caption(no_truth)
