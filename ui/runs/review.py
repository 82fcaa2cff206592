"""The Training runs page's view of a recorded or imported run: its whole history, then an iteration's groups.

The run is the sidebar's (:func:`ui.core.run_source.run_view`: a run folder, or an upload that carries
several iterations). :func:`render` draws

1. **every iteration at once**, from the run's ``crbc.audit/1`` table (``RUN_DIR/audit.parquet``
   or the studio's cache of it, :mod:`crbc.io.audit_reader`, drawn by
   :func:`crbc.viz.audit.audit_grid_svg`): success, sharing, evidence shares and the
   trainer's agreement with each estimator per iteration. The audit whose ``anchor_key`` is the
   sidebar's key is used; one computed under another key is drawn under a warning naming its key,
   with a button that recomputes it. Computing queues :func:`crbc.run_analysis.audit_job.start_audit` on the
   server's one job queue (:mod:`ui.core.jobs`: a bound on audits at once, the place in the queue
   shown, one per person, ended when its page stops polling); the worker writes the audit into
   the studio's cache by run and key, never into the run's folder. A fragment polls it once a
   second, with Cancel, so neither this session nor the server waits; or, for an upload, reviews
   every iteration here
   (:func:`crbc.run_analysis.review.review_iteration`, about a second each), kept for the session;
2. a click on an iteration (a point of the grid, or the sidebar's iteration) and the button under
   the grid list that iteration's groups worth a look, each one click from the other pages;
3. the advantage doctor (:mod:`ui.runs.doctor`): the iterations the recorder's doctor flagged, and
   the chosen iteration's findings, each finding's rows one click from the other pages.

Only rendering here; the numbers come from :mod:`crbc.run_analysis.review`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import streamlit as st

import crbc.run_analysis.review as RR
from crbc.errors import FormatError
from crbc.estimators.bootstrap import DEFAULT_B
from crbc.io.anchor_keys import effective_key, key_to_apply
from crbc.io.audit_reader import audit_key, find_audits, keyed_cache, read_audit
from crbc.io.runs import metric_choice
from crbc.viz.audit import audit_grid_svg
from crbc.viz.trainer_metrics import left_out_text, trainer_metrics_svg
from ui.core import anchor_key, jobs, report_download, run_source, state, url
from ui.core.context import Keyed, server
from ui.core.run_source import RunView
from ui.core.svg_view import svg_view
from ui.runs import compare
from ui.runs import doctor as run_doctor

B = DEFAULT_B  # resamples per iteration: the validated default (docs/MATH.md section 10.1)
ERRORS = (FormatError, OSError, KeyError, ValueError)


def _review(view: RunView, iteration: int, params: tuple, groups: tuple) -> RR.IterationReview:
    """The review of one iteration (:func:`crbc.run_analysis.review.review_iteration`), kept by
    the run's context (an upload's in its session) under the sidebar's anchor key and similarity."""
    regex = effective_key(st.session_state.get(anchor_key.KEY, ""), view.recorded_key)
    return Keyed.of(view.key).kept("review", (iteration, params, regex, anchor_key.similarity()),
                                   lambda: RR.review_iteration(list(groups), n_resamples=B, **dict(params)))


def _audit(path: Path) -> pd.DataFrame:
    """An audit file of a run folder on the server (read again when it changes)."""
    return server().kept("audit", (str(path), path.stat().st_mtime), lambda: read_audit(path))


def _pct(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def _key_text(regex: str) -> str:
    return anchor_key.quoted(regex) if regex else "the exact text (no anchor key)"


def _audits(view: RunView, regex: str) -> list[tuple[Path, pd.DataFrame]]:
    """Every readable audit file of the run folder: the studio's under the sidebar's key, then
    the run's own (beside it, then in its cache folder)."""
    out = []
    if view.folder is None:
        return out
    mine = keyed_cache(view.folder, regex)
    for path in ([mine] if mine.is_file() else []) + find_audits(view.folder):
        try:
            out.append((path, _audit(path)))
        except (FormatError, OSError) as e:
            st.error(f"The run's audit could not be read: {e}")
    return out


def _where(view: RunView, path: Path) -> str:
    if path.parent.parent.name == "keyed":
        return "the studio's cache of this run's audits (by its files and the anchor key)"
    return (f"`{path.name}` beside the run" if path.parent == Path(view.folder)
            else f"`{path.name}` in the studio's cache for this run (its folder is not writable)")


def _history(view: RunView, params: tuple, regex: str) -> tuple[pd.DataFrame | None, str, bool, str | None]:
    """The run's per-iteration table, where it came from, whether it covers every iteration
    under the sidebar's anchor key, and the key of an audit computed with another one (None
    when it matches): the audit computed with the sidebar's key, else the iterations reviewed in
    this session when they are all there, else an audit under another key (shown with a
    warning), else the iterations reviewed so far."""
    done = st.session_state.get("_review_done", {}).get((view.key, params, regex), {})
    reviewed = None
    if done:
        rows = [row for i in sorted(done) for row in done[i].audit_rows(i)]
        reviewed = (pd.DataFrame(rows), f"reviewed here ({len(done)} of {len(view.iterations)} iterations)",
                    len(done) == len(view.iterations), None)
    audits = _audits(view, regex)
    for path, frame in audits:
        if effective_key(audit_key(frame), view.recorded_key) == regex:  # "" on a keyed run: its key
            return frame, _where(view, path), True, None
    if reviewed is not None and reviewed[2]:
        return reviewed
    if audits:
        path, frame = audits[0]
        return frame, _where(view, path), False, effective_key(audit_key(frame), view.recorded_key)
    return reviewed or (None, "", False, None)


@st.fragment(run_every=1.0)
def _audit_progress(view: RunView, regex: str) -> None:
    """The audit's place in the queue or its progress, and Cancel, polled once a second (only
    this fragment reruns; each poll is the heartbeat that keeps the job); its end reruns the
    page, which then reads the file."""
    ticket = jobs.held(view.key, regex)
    if ticket is None:
        return
    jobs.waiting(ticket)
    if ticket.live:
        if ticket.state == "waiting":
            ahead = jobs.queue().position(ticket)
            st.progress(0.0, text=f"Queued: {ahead} audit(s) ahead of yours on this server (it runs "
                        f"{jobs.queue().max_running} at a time); yours starts when a place frees.")
        else:
            k, n = int(ticket.progress.get("iterations", 0)), int(ticket.progress.get("total", 0))
            st.progress(k / n if n else 0.0, text=f"Auditing every iteration with the key {_key_text(regex)}: "
                        f"{k} of {n or len(view.iterations)} iterations ({ticket.job.elapsed:.0f} s)")
        if st.button("Cancel the audit", key="runs_audit_cancel", icon=":material/cancel:"):
            st.session_state["_audit_note"] = jobs.cancel(ticket)
            st.rerun()
        return
    jobs.forget()
    if "error" in ticket.outcome:
        st.session_state["_audit_note"] = f"The audit failed: {ticket.outcome['error']}"
    st.rerun()


def _compute(view: RunView, params: tuple, regex: str, other_key: str | None) -> None:
    """Offer the audit of every iteration with the sidebar's anchor key (``crbc audit`` in a
    worker process) on a folder, else a review here."""
    note = st.session_state.pop("_audit_note", None)
    if note:
        (st.error if note.startswith("The audit failed") else st.warning)(note)
    if jobs.held(view.key, regex) is not None:
        _audit_progress(view, regex)
        return
    left = [i for i in view.iterations
            if i not in st.session_state.get("_review_done", {}).get((view.key, params, regex), {})]
    c1, c2 = st.columns([1, 2], vertical_alignment="center")
    label = (f"Recompute the audit with the key {anchor_key.quoted(regex)}" if other_key is not None and regex
             else "Recompute the audit on the exact text" if other_key is not None
             else f"Compute the audit ({len(view.iterations)} iterations)")
    if view.folder is not None and c1.button(label, key="runs_audit_go", type="primary",
                                             icon=":material/query_stats:"):
        why = jobs.ask_audit(view.key, view.folder, regex, B,  # one per person: another run or key replaces it
                             apply=key_to_apply(regex, view.recorded_key))
        if why:
            st.session_state["_audit_note"] = why
        st.rerun()
    c2.caption("The audit (`python -m crbc audit RUN_DIR --anchor REGEX`) computes every iteration once, "
               "in a worker process queued with the server's other audits (this page and every other "
               "session stay free; Cancel stops it, and so does closing the page), and keeps it in the "
               "studio's cache by run and anchor key, never in the run's folder; the page then draws "
               "the whole history at once.")
    if left and st.button(f"Review the {len(left)} iteration(s) here (about a second each; kept for this "
                          "session)", key="review_all"):
        bar = st.progress(0.0)
        done = st.session_state.setdefault("_review_done", {}).setdefault((view.key, params, regex), {})
        for k, i in enumerate(left):
            try:
                done[i] = _review(view, i, params, view.groups(i))
            except ERRORS as e:
                st.error(f"Iteration {i} could not be reviewed: {e}")
            bar.progress((k + 1) / len(left), text=f"iteration {i}")
        st.rerun()


def _agreement_table(rv: RR.IterationReview) -> pd.DataFrame:
    return pd.DataFrame([{"estimator": n, "Spearman ρ with the trainer": a["spearman"],
                          "sign agreement": a["sign"]} for n, a in rv.agreement.items()])


def _iteration(view: RunView, iteration: int, params: tuple, open_in: list[tuple[str, str, str]]) -> None:
    """One iteration: its numbers and its groups worth a look, each one click from the other pages."""
    try:
        groups = view.groups(iteration)
        rv = _review(view, iteration, params, groups)
    except ERRORS as e:
        st.error(f"Iteration {iteration} could not be read: {e}")
        return
    regex = effective_key(st.session_state.get(anchor_key.KEY, ""), view.recorded_key)
    st.session_state.setdefault("_review_done", {}).setdefault((view.key, params, regex), {})[iteration] = rv
    rec = view.metrics.get(iteration, {})
    cols = st.columns(5)
    cols[0].metric("success", _pct(rec.get("success_rate", rv.success)),
                   help="The trainer's success_rate metric, else the share of rollouts that succeeded.")
    cols[1].metric("steps at shared anchors", _pct(rv.shared_share),
                   help=f"Share of the {rv.n_steps} steps at anchors that ≥ 2 rollouts of their group "
                        f"visit ({rv.n_anchors} anchors). Near 0: the anchor key merges nothing.")
    cols[2].metric("evidence coverage", _pct(rv.coverage),
                   help="Share of steps whose crbc credit is not 0 by construction (evidence not "
                        "'none': ≥ 2 actions at the anchor and success reachable from it).")
    cols[3].metric("sure steps", _pct(rv.sure_share),
                   help=f"Share of steps whose {0.9:.0%} calibrated interval excludes 0 ({B} posterior "
                        "draws of each group; calibrated on toy tasks, see the Estimator accuracy "
                        "page). Few sure steps: a larger group would pay.")
    cols[4].metric("groups", f"{rv.n_groups}", help=f"{rv.n_rollouts} rollouts, {rv.n_steps} steps")
    if rv.trainer_steps:
        st.markdown(f"**The trainer's advantage against each estimator's A_final** ({rv.trainer_steps} steps)")
        st.dataframe(_agreement_table(rv), hide_index=True, column_config={
            "Spearman ρ with the trainer": st.column_config.NumberColumn(format="%.3f"),
            "sign agreement": st.column_config.NumberColumn(format="%.2f")})
    else:
        st.info("This run records no trainer advantage per step (trainer_advantage), so only "
                "sharing, evidence and sure steps are shown.")
    run_doctor.iteration(view, iteration, groups, regex, open_in)
    st.markdown(f"**{view.label}, iteration {iteration}: groups worth a look**")
    by = st.segmented_control("Sort by", list(RR.SORTS), key="review_sort", default="disagreement",
                              required=True, help="; ".join(f"{k}: {v}" for k, v in RR.SORTS.items())
                              + f". Float noise is agreement: advantages equal to {RR.AGREE_DECIMALS} decimals "
                              "are equal, so a trainer that used crbc shows ρ = 1, not 0.999999.")
    rows = RR.sort_rows(rv.rows, by or "disagreement")
    table = pd.DataFrame([r.as_dict() for r in rows])
    sel = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row",
                       key=f"review_groups_{by}", width="stretch", height=min(38 + 35 * len(table), 360))
    row = rows[sel.selection.rows[0] if sel and sel.selection.rows else 0]
    st.caption(f"Click a row to choose the group; then open it: {row.group} ({row.rollouts} rollouts, "
               f"{row.success:.0%} succeeded).")
    bcols = st.columns(len(open_in))
    for col, (path, title, icon) in zip(bcols, open_in, strict=True):
        if (Path(state.ROOT) / path).exists() and col.button(
                f"Open in {title}", icon=icon, key=f"review_open_{Path(path).stem}"):
            st.session_state["_crbc_open_request"] = {view.iter_key: iteration, "group": row.group, "rollout": 0,
                                                      **open_comparison(path, by, rv.trainer_steps)}
            url.switch_page(path)


def _trainer_metrics(view: RunView, iteration: int) -> None:
    """The trainer's own metrics (metrics.jsonl: verl's ``episode/...``, ``critic/...``, the
    recorder's ``crbc/...``, the CPU trainer's names), the sidebar's iteration marked."""
    lines = [view.metrics[i] for i in sorted(view.metrics)]
    drawn, capped, zero = metric_choice(lines)
    svg = Keyed.of(view.key).kept("figure", ("runs_trainer_metrics", len(lines), iteration),
                                  lambda: trainer_metrics_svg(lines, iteration, drawn))
    if svg is None:
        return
    st.markdown("**The trainer's metrics** (metrics.jsonl)")
    svg_view(svg, key="runs_trainer_metrics", download="trainer-metrics")
    st.caption("What the trainer logged each iteration (verl's episode/, critic/, actor/ names first, then "
               "the recorder's crbc/ credit health and doctor counts; extremes and timings left out); the "
               "orange line is the sidebar's iteration. " + left_out_text(capped, zero))


def open_comparison(path: str, sort: str | None, trainer_steps: int) -> dict[str, str]:
    """What else a group opened from the list asks of its page: Disagreements opens on the
    comparison the list was ranked by ("trainer vs crbc" when ranked by the trainer's
    disagreement with crbc and the run records the trainer's advantage), else nothing."""
    if Path(path).name == "disagreements.py" and (sort or "disagreement") == "disagreement" and trainer_steps:
        return {"dis_cmp": RR.TRAINER_COMPARISON}
    return {}


def render(open_in: list[tuple[str, str, str]]) -> None:  # noqa: C901
    """The review (module docstring); ``open_in``: (page file, title, icon) of the pages to open a group in."""
    view = run_source.run_view()
    if view is None:
        st.info("Open a run in the sidebar: **Source → Run folder**, then pick the run (runs under "
                f"{run_source.roots_text()}) or type its folder's path. An upload with several "
                "iterations (a step table, a dump) is reviewed here too.")
        return
    st.caption("For runs of other trainers (verl-agent, verl, rLLM, ART, your own loop): no held-out "
               "evaluation, only the trainer's metrics and the advantage it gave each step.")
    params = tuple(sorted(state.shared_params().items()))
    iteration = st.session_state.get(view.iter_key)
    iteration = iteration if iteration in view.iterations else view.iterations[-1]
    st.subheader(f"{view.label}: every iteration")
    if view.folder is not None:  # a run folder (not an upload): its report, built on the click
        report_download.run_button(view.folder, view.label.removeprefix("run "), iteration, "review_dl_report",
                                   anchor=effective_key(st.session_state.get(anchor_key.KEY), view.recorded_key))
    regex = effective_key(st.session_state.get(anchor_key.KEY), view.recorded_key)  # run.json's when empty
    compare.render(view)
    run_doctor.iterations(view)
    frame, where, complete, other_key = _history(view, params, regex)
    if other_key is not None:
        st.warning(f"This overview was computed with the anchor key {_key_text(other_key)}, not the "
                   f"sidebar's {_key_text(regex)}: its sharing, evidence and agreement numbers belong "
                   "to that key. Recompute it with the sidebar's key (below), or set the sidebar's key "
                   "back.", icon=":material/key:")
    if frame is not None and not frame.empty:
        svg = Keyed.of(view.key).kept("figure", ("audit_grid", where, other_key, len(frame), iteration),
                                      lambda: audit_grid_svg(frame, selected=iteration))

        def pick(value: str) -> None:
            if value.isdigit() and int(value) in view.iterations:
                st.session_state[view.iter_key] = int(value)
                st.session_state["_review_shown"] = (view.key, int(value))

        svg_view(svg, key="runs_audit", on_pick=pick, download="audit")
        key_note = ("" if where.startswith("reviewed") else ", computed with the anchor key "
                    + _key_text(effective_key(audit_key(frame), view.recorded_key)))
        st.caption(f"From {where}{key_note}. Click a point to list that iteration's groups worth a "
                   "look; the dotted line is the sidebar's iteration.")
    if not complete:
        _compute(view, params, regex, other_key)
    _trainer_metrics(view, iteration)
    if st.session_state.pop("_review_open_next", None) is not None:  # a click in the comparison (ui/runs/compare.py)
        st.session_state["_review_shown"] = (view.key, iteration)
    shown = st.session_state.get("_review_shown") == (view.key, iteration)
    if not shown and st.button(f"Groups worth a look in iteration {iteration}", key="review_open_iter",
                               icon=":material/manage_search:"):
        st.session_state["_review_shown"] = (view.key, iteration)
        shown = True
    if shown:
        _iteration(view, iteration, params, open_in)
