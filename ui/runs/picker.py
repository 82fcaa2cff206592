"""Training runs' choice of runs: an experiment folder of the shipped runs, some of its runs (and
any runs of other experiments added beside them), and runs uploaded as .zip archives (read in a
worker, kept in the uploading session)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

import crbc.io.runs as R
from ui.core import state, url, widgets
from ui.core.context import Keyed, owned_by_session
from ui.runs import listing
from ui.runs.upload import uploaded_run

MAX_ZIP_MB = 50  #: the largest run archive the page takes
PICK = "runs"  #: the runs chosen (bound: ``runs=`` once per run in a link)


UPLOADS = "uploads"  #: the experiment of an uploaded run, beside shipped runs of other experiments


def experiment_of(rel: str) -> str:
    """A shipped run's experiment: its folder under sample_rollouts/runs/ (``.``: the top level)."""
    return str(Path(rel).parent)


def _exp_text(e: str) -> str:
    return "(top level)" if e == "." else e


def _experiment_changed(by_experiment: dict[str, list[str]]) -> None:
    """Choosing an experiment shows its runs (a callback: before the Runs picker is drawn)."""
    st.session_state[PICK] = list(by_experiment.get(st.session_state.get("runs_exp"), []))


def _follow_link(labels: dict[str, str]) -> None:
    """A link that names runs (``runs=``) but no experiment opens the experiment of its first run,
    so the experiment picker does not replace the runs the link names."""
    if "runs_exp" in st.session_state or "runs_exp" in st.query_params:
        return
    rel_of = {lab: rel for rel, lab in labels.items()}
    linked = [rel_of.get(v, v) for v in st.query_params.get_all(PICK)]
    first = next((rel for rel in linked if rel in labels), None)
    if first is not None:
        st.session_state["runs_exp"] = experiment_of(first)


def chosen_runs() -> tuple[list[R.Run], dict[str, str], Keyed, dict[str, str]]:  # noqa: C901
    """The pickers and the uploader; returns the chosen runs in table order, run label -> content
    key (``shipped:<rel>`` or ``upload:<hash>``), and one digest of the choice (a shipped run
    with the time its metrics were last written, an upload by its content) that keys the figures.

    Runs of several experiments may be chosen: the fourth value is then run label -> experiment
    (:func:`experiment_of`, :data:`UPLOADS` for an upload), which :func:`ui.runs.listing.grouping`
    uses so seeds are averaged per (experiment, estimator); it is empty while every chosen run
    belongs to one experiment (uploads then join their estimator's seeds, as before)."""
    RUNS_DIR = state.SAMPLES_DIR / "runs"
    shipped = listing.shipped_runs(str(RUNS_DIR))
    # An experiment is a folder of runs (what `crbc experiment --out` writes); run names repeat across
    # experiments (grpo-s0 in each), and seeds of different experiments must not be averaged together.
    experiments = listing.experiments_newest_first(str(RUNS_DIR), tuple(shipped))
    labels = listing.shipped_labels(str(RUNS_DIR), tuple(shipped))
    by_experiment = {e: [rel for rel in shipped if experiment_of(rel) == e] for e in experiments}
    _follow_link(labels)
    c0, c1, c2 = st.columns([2, 3, 2])
    with c0:
        if experiments:
            url.check_choice("runs_exp", experiments, "no such experiment folder in sample_rollouts/runs/",
                             _exp_text)
            url.drop_invalid("runs_exp", experiments)
            experiment = st.selectbox("Experiment (sample_rollouts/runs/)", experiments, key="runs_exp",
                                      bind="query-params", format_func=_exp_text,
                                      on_change=_experiment_changed, args=(by_experiment,),
                                      help="A folder of runs, one per estimator and seed; the newest first. "
                                           "Choosing one shows its runs.")
        else:
            experiment = None
            st.caption("No shipped runs in `sample_rollouts/runs/`.")
    in_experiment = by_experiment.get(experiment, [])
    # the chosen experiment's runs first, then every other experiment's, newest experiment first
    options = in_experiment + [rel for e in experiments if e != experiment for rel in by_experiment[e]]
    with c1:
        # one key for every experiment, bound: the link names its runs (``runs=`` repeated, each by its
        # label), of one experiment or several; runs no longer shipped go
        picked = st.session_state.get(PICK)
        if picked and any(rel not in options for rel in picked):
            st.session_state[PICK] = [rel for rel in picked if rel in options] or list(in_experiment)
        chosen = st.multiselect("Runs (add runs of other experiments to compare them)", options,
                                default=None if PICK in st.session_state else in_experiment,
                                key=PICK, bind="query-params", format_func=lambda rel: labels.get(rel, rel),
                                help="Pick several seeds of each estimator to see the spread; each run is "
                                     "named by its experiment folder, its run.json name and its seed. Runs "
                                     "of other experiments can be added: the seeds of one estimator are "
                                     "averaged within their experiment, never across experiments (the "
                                     "experiment is then part of each curve's name).")
    with c2:
        uploads = st.file_uploader(f"…or upload runs (.zip of a run folder, at most {MAX_ZIP_MB} MB each)",
                                   type=["zip"], accept_multiple_files=True, key="runs_upload",
                                   max_upload_size=MAX_ZIP_MB)

    loaded: dict[str, R.Run] = {}
    errors = []
    for rel in chosen:
        try:
            loaded[f"shipped:{rel}"] = listing.load_shipped(RUNS_DIR, rel)
        except R.RunFormatError as e:
            errors.append(str(e))
    for up in uploads or []:
        data = up.getvalue()
        if len(data) > MAX_ZIP_MB * 2**20:
            errors.append(f"{up.name}: larger than {MAX_ZIP_MB} MB")
            continue
        upload_key, run, err = uploaded_run(up.name, data)  # read in a worker, kept in this session
        if err:
            errors.append(err)
            continue
        taken = {r.name for r in loaded.values()}
        if run.name in taken:  # an upload named like a shown run: name it after its file
            run = R.renamed(run, f"{run.name} ({up.name})")
        if run.name in taken:
            errors.append(f"{up.name}: the same run is already shown")
            continue
        loaded[upload_key] = run
    for e in errors:
        st.error(f"A run was refused: {widgets.text(e)}")
    for run in loaded.values():
        if run.partial_tail is not None:
            st.warning(f"{widgets.text(run.name)}: the last line of metrics.jsonl was half-written (the run was "
                       "interrupted while writing it); it is ignored.")

    runs = listing.ordered(list(loaded.values()))
    run_key_of = {r.label: k for k, r in loaded.items()}
    kinds = {r.label: experiment_of(k.split(":", 1)[1]) if k.startswith("shipped:") else UPLOADS
             for k, r in loaded.items()}
    mixed = kinds if len(set(kinds.values()) - {UPLOADS}) > 1 else {}  # shipped runs of several experiments
    # what the figures and tables below read of the runs: which runs (a shipped one with the time its
    # metrics were last written, an upload by its content hash), so they are built once per choice;
    # as one short digest, which the caches hash on every rerun in a fraction of the tuple's time
    digest = hashlib.sha1(repr(tuple((k, listing.metrics_stamp(RUNS_DIR, k.split(":", 1)[1]) if k.startswith("shipped:") else 0.0)
                                       for k in loaded)).encode()).hexdigest()[:20]
    return runs, run_key_of, Keyed(digest, private=any(owned_by_session(k) for k in loaded)), mixed
