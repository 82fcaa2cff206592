"""Training runs' drill-down: one run's iteration (picked, or clicked on a curve), its estimator
diagnostics, its groups, and the buttons that open a group in the other pages."""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

import crbc.io.runs as R
from crbc.io.rollouts import RolloutFormatError
from crbc.run_analysis import no_signal as NS
from crbc.run_analysis.diagnostics import DIAGNOSTICS
from crbc.viz import run_curves as V
from ui.core import report_download, run_source, state, url, widgets
from ui.core.context import Keyed, owned_by_session
from ui.core.svg_view import svg_view
from ui.runs import listing

#: how the groups are ranked, for people
SORTS = {"success": "success (lowest first)", "no_signal": "no signal at all",
         **{k: f"no signal: {v}" for k, v in NS.SHORT.items()}, "any_reason": "any no-signal reason"}

#: short names of the estimator diagnostics (crbc.run_analysis.diagnostics) for the metric tiles
SHORT = {"step_credit_share": "non-zero A_S", "multi_action_anchors": "anchors, ≥ 2 actions",
         "mean_abs_step_adv": "mean |A_S|", "rank_crbc_gigpo": "ρ crbc ~ gigpo",
         "rank_crbc_visit_local": "ρ crbc ~ visit_local", "rare_route_disagreements": "rare-route disagr."}


def _index(key: str, index: int) -> dict:
    """A selectbox's starting ``index``, unless the session already holds its value (a click, a
    link): Streamlit warns when both are given."""
    return {} if key in st.session_state else {"index": index}


#: the fold holding one iteration's batch, and the link parameters that open it
OPEN = "runs_drill_open"
LINK_PARAMS = ("runs_run", "runs_iter", "runs_sort", "runs_group")


def render(runs: list[R.Run], run_key_of: dict[str, str], runs_ctx: Keyed,
           open_in: list[tuple[str, str, str]], sort: str = "success") -> None:
    """The drill-down under the curves, folded until asked for: a click on a curve's point, a
    link that names a run, iteration, ranking or group (:data:`LINK_PARAMS`), or the reader
    opening it (its figures, tiles and table are then built and drawn; folded, they cost nothing).
    ``run_key_of``: run label -> its content key (``shipped:...`` or ``upload:<hash>``);
    ``runs_ctx``: the figures' key of the chosen runs; ``open_in``: (page path, title, icon) of the
    pages a group opens in; ``sort``: how the groups are ranked until a click says otherwise
    (:data:`crbc.run_analysis.no_signal.GROUP_SORTS`, what the curve measures)."""
    st.subheader("Drill into an iteration")
    with_rollouts = [r for r in runs if r.iterations_with_rollouts]
    if not with_rollouts:
        st.info("None of the selected runs ships its rollouts.")
        return
    # a link opens the fold when it arrives (its values new to this session), not on every run:
    # folded again by the reader, it stays folded though the address still holds the values
    link = tuple(st.query_params.get(k) for k in LINK_PARAMS)
    if st.session_state.get("_runs_click") is not None or (any(link) and st.session_state.get("_runs_link") != link):
        st.session_state[OPEN] = True
    st.session_state["_runs_link"] = link
    box, shown = widgets.folded("One iteration's batch: the estimator's diagnostics and the groups, worst first",
                                key=OPEN)
    if not shown:
        st.caption("Click a point of the curves above, or open this, to pick a run's iteration and "
                   "open one of its groups in the other pages.")
        return
    with box:
        _iteration(runs, with_rollouts, run_key_of, runs_ctx, open_in, sort)


def _iteration(runs: list[R.Run], with_rollouts: list[R.Run], run_key_of: dict[str, str],  # noqa: C901
               runs_ctx: Keyed, open_in: list[tuple[str, str, str]], sort: str) -> None:
    """The drill-down's body: the run, iteration and ranking pickers, the diagnostics, the groups."""
    labels = [r.label for r in with_rollouts]
    click = st.session_state.pop("_runs_click", None)
    if click is not None and click[1] not in labels:  # a seed that saved no rollouts: its experiment's run that did
        clicked = next((r for r in runs if r.label == click[1]), None)
        twin = next((r for r in with_rollouts if clicked is not None and (r.experiment, r.estimator)
                     == (clicked.experiment, clicked.estimator)), None)
        if twin is not None:
            st.session_state["_runs_twin"] = (click[1], twin.label)
            click = (click[0], twin.label, *click[2:])
    if click is not None and click[1] in labels:
        st.session_state["runs_run"] = click[1]
        st.session_state["runs_iter"] = click[0]
        st.session_state["runs_sort"] = click[2] if len(click) > 2 else sort
    twin = st.session_state.pop("_runs_twin", None)
    if twin is not None:
        st.info(f"{widgets.text(twin[0])} saved no rollouts: showing the same iteration of "
                f"{widgets.text(twin[1])}, the run of its experiment that did.", icon=":material/info:")
    url.check_choice("runs_run", labels, "no run of that name is selected")
    url.drop_invalid("runs_run", labels)
    d1, d2, d3 = st.columns([2, 1, 1.5])
    run_name = d1.selectbox("Run", labels, key="runs_run", bind="query-params")
    run = with_rollouts[labels.index(run_name)]
    its = list(run.iterations_with_rollouts)
    url.check_url("runs_iter", url.one_of(its), f"this run has iterations {its[0]} to {its[-1]}")
    url.drop_invalid("runs_iter", its)
    iteration = d2.selectbox("Iteration", its, key="runs_iter", bind="query-params",
                             help="Or click a point of the curves above.")
    url.check_choice("runs_sort", list(NS.GROUP_SORTS), "no such ranking", SORTS.get)
    by = d3.selectbox("Groups worst first by", list(NS.GROUP_SORTS), key="runs_sort", bind="query-params",
                      **_index("runs_sort", list(NS.GROUP_SORTS).index(sort)), format_func=SORTS.get,
                      help="A click on a curve ranks by what that curve measures: success, lowest first; "
                           "a no-signal reason, the largest share first.")
    if Path(run.source).is_dir():  # a folder (an uploaded .zip has none to read the report from)
        report_download.run_button(run.source, run.name, iteration, "runs_dl_report")

    st.markdown("**Estimator diagnostics per iteration** (computed on each iteration's batch; the "
                "dotted line is the chosen iteration)")
    diag_svg = runs_ctx.kept("figure", ("runs_diagnostics", iteration),
                                   lambda: V.diagnostics_svg(runs, selected=iteration))
    if diag_svg:
        svg_view(diag_svg, key="runs_diag", download="diagnostics")
    else:
        st.caption("None of the selected runs recorded these diagnostics.")
    rec = next((m for m in run.metrics if m["iteration"] == iteration), {})
    if rec:
        cols = st.columns(len(DIAGNOSTICS))
        for col, (key, label) in zip(cols, DIAGNOSTICS.items(), strict=True):
            v = rec.get(f"diag.{key}")
            col.metric(SHORT.get(key, key), "—" if v is None else (f"{v:.0%}" if "share" in key else f"{v:.3g}"),
                       help=f"{label} (iteration {iteration} of {run.label})")

    try:
        groups = listing.iteration_groups(f"{run_key_of[run.label]}#{run.name}", run, iteration)
    except (RolloutFormatError, KeyError, OSError) as e:
        st.error(f"The rollouts of iteration {iteration} could not be read: {widgets.text(e)}")
        return
    sr = rec.get("success_rate")
    st.markdown(f"**{widgets.text(run.label)}, iteration {iteration}**: {len(groups)} groups"
                + (f", batch success {sr:.0%}" if sr is not None else "")
                + ". Pick a group, then open it:")
    # a static table, scrolling beyond 320 px (a data grid would load 1.2 MB more JavaScript into every
    # new tab of this page); a data grid only for an iteration of very many groups
    ranked = runs_ctx.kept("figure", ("runs_ranked", run_key_of[run.label], run.name, iteration, by),
                                 lambda: NS.worst_first(NS.group_rows(groups), by))
    table = V.ranked_groups_table(ranked)
    st.caption(f"The groups worst first by {SORTS[by]}.")
    if len(table) <= 500:
        widgets.table(table, max_height_px=320)
    else:
        widgets.rows_view(table, height=320)
    gids = [g.group for g in groups]
    order = [r["index"] for r in ranked]
    url.check_choice("runs_group", gids, "no group of that id in this iteration")
    if click is not None or st.session_state.get("runs_group") not in gids:
        # set, not only defaulted: the browser keeps a keyed widget's old value when only its options change
        st.session_state["runs_group"] = gids[order[0]]
    # the worst group first, with or without a click: a link without runs_group (Streamlit keeps a
    # default out of the URL) opens on the same group
    gid = st.selectbox("Group", [gids[i] for i in order], key="runs_group", bind="query-params",
                       help="In the order of the table, the worst first.")
    gi = gids.index(gid)
    # the key names the run by its content (an upload: "upload:<hash>", so two sessions' archives
    # of the same file name never share a cache entry, and what is computed from it stays private)
    run_id = run_key_of[run.label]
    source_key = (f"{run_id}#{iteration}" if owned_by_session(run_id)
                  else "run:" + hashlib.sha1(f"{run.source}|{iteration}".encode()).hexdigest()[:16])
    source = state.Source(source_key, f"run {run.name} iteration {iteration}", groups)
    bcols = st.columns(len(open_in))
    for col, (path, title, icon) in zip(bcols, open_in, strict=True):
        if (Path(state.ROOT) / path).exists() and col.button(f"Open in {title}", icon=icon,
                                                              key=f"runs_open_{Path(path).stem}"):
            folder = Path(run.source)
            if run_key_of[run.label].startswith("shipped:") and run_source.resolve(str(folder)) is not None:
                run_source.open_run(folder, iteration, gids[gi])  # a folder: the link carries it
            else:
                run_source.open_groups(source, gi)  # a .zip upload lives in this session only
            url.switch_page(path)
