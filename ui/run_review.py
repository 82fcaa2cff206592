"""The Training runs page's review of a run that is not ours (a recorded or imported run).

Such a run has no held-out evaluation, only the trainer's metrics and the trainer's advantage of
each step. :func:`render` draws, for the chosen iteration: success, the share of steps at shared
anchors, evidence coverage, the share of sure steps, how far the trainer's advantage is from each
estimator's (all from :func:`crbc.explain.run_review.review_iteration`, cached per run and
iteration), the iterations reviewed so far, and the iteration's groups sorted by what is worth a
look, each one click from the other pages. Only rendering here.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pandas as pd
import streamlit as st

import crbc.explain.run_review as RR
import crbc.io.runs as R
from crbc.errors import FormatError
from crbc.estimators.bootstrap import DEFAULT_B
from ui import report_download, state, url

B = DEFAULT_B  # resamples per iteration: the validated default (docs/MATH.md section 10.1)
UPLOAD = "(the sidebar's upload)"
DIR = "(a run folder on this machine)"


@st.cache_resource(show_spinner=False, max_entries=16)
def _read(path: str, stamp: float) -> R.Run:
    del stamp  # part of the key: a run still being written is re-read
    return R.read_run(path)


@st.cache_resource(show_spinner=False, max_entries=8)
def _groups(run_key: str, iteration: int, _run: R.Run) -> tuple:
    return tuple(_run.rollouts(iteration))


@st.cache_data(show_spinner=False, max_entries=512)
def _review(run_key: str, iteration, params: tuple, _groups: tuple) -> RR.IterationReview:
    return RR.review_iteration(list(_groups), n_resamples=B, **dict(params))


def _stamp(path: Path) -> float:
    p = path / R.METRICS_FILE
    return p.stat().st_mtime if p.exists() else 0.0


def _pct(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def _choose() -> tuple[str, str, dict, dict | None] | None:
    """(run key, label, {iteration: loader}, trainer metrics by iteration) of the chosen run."""
    shipped = [str(p.relative_to(state.SAMPLES_DIR / "runs")) for p in R.find_runs(state.SAMPLES_DIR / "runs")] \
        if (state.SAMPLES_DIR / "runs").is_dir() else []
    imported = st.session_state.get("_crbc_imported")
    options = ([UPLOAD] if imported else []) + shipped + [DIR]
    url.drop_invalid("review_run", options)
    pick = st.selectbox("Run", options, key="review_run",
                        help="A run recorded by crbc.integrations.verl.RunRecorder or written by "
                             "`python -m crbc import --out FOLDER`; an upload with several "
                             "iterations (sidebar, Upload files) is reviewed here too.")
    if pick == UPLOAD:
        key, label, by_it = imported
        return key, label, {i: (lambda g=g: tuple(g)) for i, g in by_it.items()}, None
    if pick == DIR:
        folder = st.text_input("Run folder (crbc.run/1)", key="review_dir",
                               placeholder="/path/to/runs/alfworld-gigpo").strip()
        if not folder:
            st.info("Give the path of a run folder (it holds run.json, metrics.jsonl, rollouts/).")
            return None
        path = Path(folder).expanduser()
    else:
        path = state.SAMPLES_DIR / "runs" / pick
    try:
        run = _read(str(path), _stamp(path))
    except (FormatError, OSError) as e:
        st.error("This run could not be read:")
        st.text(str(e))
        return None
    key = f"run:{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]}"
    loaders = {i: (lambda i=i: _groups(key, i, run)) for i in run.iterations_with_rollouts}
    st.session_state["_review_run_dir"] = (key, str(path), run.name)  # for the report's download
    return key, f"run {run.name}", loaders, {m["iteration"]: m for m in run.metrics}


def _agreement_table(rv: RR.IterationReview) -> pd.DataFrame:
    return pd.DataFrame([{"estimator": n, "Spearman ρ with the trainer": a["spearman"],
                          "sign agreement": a["sign"]} for n, a in rv.agreement.items()])


def render(open_in: list[tuple[str, str, str]]) -> None:
    """The review section (see the module docstring); ``open_in``: (page file, title, icon)."""
    st.caption("For runs of other trainers (verl-agent, verl, rLLM, ART, your own loop): no held-out "
               "evaluation, only the trainer's metrics and the advantage it gave each step. Per "
               "iteration: how much the anchors merge, how much of the credit rests on evidence, "
               "and how far the trainer's advantage is from each estimator's.")
    chosen = _choose()
    if chosen is None:
        return
    run_key, label, loaders, metrics = chosen
    its = list(loaders)
    if not its:
        st.info("This run ships no rollouts (rollouts/ is empty).")
        return
    if st.session_state.get("review_iter") not in its:
        st.session_state.pop("review_iter", None)
    iteration = st.selectbox("Iteration", its, key="review_iter")
    folder = st.session_state.get("_review_run_dir")
    if folder is not None and folder[0] == run_key:  # a run folder (not the sidebar's upload)
        report_download.run_button(folder[1], folder[2], iteration, "review_dl_report")
    params = tuple(sorted(state.shared_params().items()))
    try:
        groups = loaders[iteration]()
        rv = _review(run_key, iteration, params, groups)
    except (FormatError, OSError, KeyError, ValueError) as e:
        st.error(f"Iteration {iteration} could not be read:")
        st.text(str(e))
        return
    done = st.session_state.setdefault("_review_done", {}).setdefault((run_key, params), {})
    done[iteration] = rv.summary()

    rec = (metrics or {}).get(iteration, {})
    cols = st.columns(5)
    sr = rec.get("success_rate", rv.success)
    cols[0].metric("success", _pct(sr), help="The trainer's success_rate metric, else the share of "
                                             "rollouts that succeeded.")
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
        st.markdown(f"**The trainer's advantage against each estimator's A_final** "
                    f"({rv.trainer_steps} steps that carry one)")
        st.dataframe(_agreement_table(rv), hide_index=True, column_config={
            "Spearman ρ with the trainer": st.column_config.NumberColumn(format="%.3f"),
            "sign agreement": st.column_config.NumberColumn(format="%.2f")})
        st.caption("Spearman ρ: rank correlation over the batch's steps; sign agreement: share of "
                   "steps with a non-zero trainer advantage where the estimator has the same sign "
                   "(0 counts as a miss).")
    else:
        st.info("This run records no trainer advantage per step (trainer_advantage), so only "
                "sharing, evidence and sure steps are shown.")

    st.markdown("**Iterations reviewed so far** (each is computed once, when opened)")
    left = [i for i in its if i not in done]
    if left and st.button(f"Review the other {len(left)} iteration(s)", key="review_all"):
        bar = st.progress(0.0)
        for k, i in enumerate(left):
            try:
                done[i] = _review(run_key, i, params, loaders[i]()).summary()
            except (FormatError, OSError, KeyError, ValueError) as e:
                st.text(f"iteration {i}: {e}")
            bar.progress((k + 1) / len(left), text=f"iteration {i}")
        st.rerun()  # redraw without the button
    if len(done) > 1:
        frame = pd.DataFrame.from_dict(done, orient="index").sort_index()
        c1, c2 = st.columns(2)
        shares = [c for c in ("success", "shared_share", "coverage", "sure_share") if c in frame.columns]
        c1.line_chart(frame[shares], height=240, x_label="iteration")
        c1.caption("Shares of rollouts (success) and of steps (shared anchors, evidence, sure).")
        rhos = [c for c in frame.columns if c.startswith("rho.")]
        if rhos:
            c2.line_chart(frame[rhos], height=240, x_label="iteration")
            c2.caption("rho.NAME: Spearman of the trainer's advantage with NAME's A_final.")

    st.markdown(f"**{label}, iteration {iteration}: groups worth a look**")
    by = st.segmented_control("Sort by", list(RR.SORTS), key="review_sort", default="disagreement",
                              required=True, help="; ".join(f"{k}: {v}" for k, v in RR.SORTS.items()))
    rows = RR.sort_rows(rv.rows, by or "disagreement")
    table = pd.DataFrame([r.as_dict() for r in rows])
    sel = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row",
                       key=f"review_groups_{by}", width="stretch", height=min(38 + 35 * len(table), 360))
    picked = sel.selection.rows[0] if sel and sel.selection.rows else 0
    row = rows[picked]
    st.caption("Click a row to choose the group; then open it:")
    st.text(f"{row.group} ({row.rollouts} rollouts, {row.success:.0%} succeeded)")
    source = state.Source(f"{run_key}|{iteration}", f"{label} iteration {iteration}", groups)
    bcols = st.columns(len(open_in))
    for col, (path, title, icon) in zip(bcols, open_in, strict=True):
        if (Path(state.ROOT) / path).exists() and col.button(
                f"Open in {title}", icon=icon, key=f"review_open_{Path(path).stem}"):
            state.open_groups(source, row.index)
            url.switch_page(path)
