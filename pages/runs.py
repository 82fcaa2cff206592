"""Training runs: learning curves per estimator, the estimator's diagnostics per iteration, and a
drill-down from an iteration to a group that opens in the other pages.

Shipped runs live in ``sample_rollouts/runs/`` (crbc.run/1 folders); a run can also be uploaded
as a .zip of its folder. Everything shown is computed by :mod:`crbc.io.runs` and drawn by
:mod:`crbc.viz.run_curves`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

import crbc.io.runs as R
import crbc.train.tables as T
from crbc.io.rollouts import RolloutFormatError, showcase_group
from crbc.train.diagnostics import DIAGNOSTICS
from crbc.viz import run_curves as V
from ui import figure_cache, report_download, run_listing, run_review, run_source, state, url, widgets
from ui.run_upload import uploaded_run
from ui.svg_view import svg_view

MAX_ZIP_MB = 50
OPEN_IN = [("pages/graph.py", "Anchor graph", ":material/hub:"),
           ("pages/backups.py", "Bellman backups", ":material/replay:"),
           ("pages/credits.py", "Step credits", ":material/bar_chart:")]
KINDS = {"ours": "Runs of crbc train", "any": "Any recorded or imported run"}
SHORT = {"step_credit_share": "non-zero A_S", "multi_action_anchors": "anchors, ≥ 2 actions",
         "mean_abs_step_adv": "mean |A_S|", "rank_crbc_gigpo": "ρ crbc ~ gigpo",
         "rank_crbc_visit_local": "ρ crbc ~ visit_local", "rare_route_disagreements": "rare-route disagr."}
METRICS = ["eval_success_rate", "success_rate", "mean_return", "mean_length", "loss", "kl",
           "clip_frac", "step_credit_share", "seconds"]  # the first one the runs have is the default
BANDS = {"ci": "95% CI of the mean", "minmax": "min–max", "std": "± 1 sd"}


st.title("Training runs")
st.caption("Runs of `python -m crbc train` / `experiment` (format `crbc.run/1`): success against "
           "iterations per estimator, the estimator's diagnostics on each iteration's batch, and any "
           "iteration's groups, which open in the Anchor graph, Bellman backups and Step credits pages.")

# the bound control writes its label into the URL: a link may carry the label or the name (any)
url.check_choice("runs_kind", list(KINDS), "runs are ours or any", KINDS.get)
if st.segmented_control("Which runs", list(KINDS), format_func=KINDS.get, key="runs_kind",
                        default="any" if run_source.run_view() is not None else "ours", required=True,
                        bind="query-params") == "any":
    run_review.render(OPEN_IN + [("pages/inspector.py", "Inspector", ":material/search:")])
    widgets.fragment_done()  # the end-of-run marker app.py cannot write after st.stop()
    st.stop()

# ---------------------------------------------------------------------------------- choose runs
RUNS_DIR = state.SAMPLES_DIR / "runs"
shipped = run_listing.shipped_runs(str(RUNS_DIR))
# An experiment is a folder of runs (what `crbc experiment --out` writes); run names repeat across
# experiments (grpo-s0 in each), and seeds of different experiments must not be averaged together.
experiments = run_listing.experiments_newest_first(str(RUNS_DIR), tuple(shipped))
TOP = "."
c0, c1, c2 = st.columns([2, 3, 2])
with c0:
    if experiments:
        url.check_choice("runs_exp", experiments, "no such experiment folder in sample_rollouts/runs/",
                         lambda e: "(top level)" if e == TOP else e)
        url.drop_invalid("runs_exp", experiments)
        experiment = st.selectbox("Experiment (sample_rollouts/runs/)", experiments, key="runs_exp",
                                  bind="query-params",
                                  format_func=lambda e: "(top level)" if e == TOP else e,
                                  help="A folder of runs, one per estimator and seed; the newest first.")
    else:
        experiment = None
        st.caption("No shipped runs in `sample_rollouts/runs/`.")
in_experiment = [rel for rel in shipped if str(Path(rel).parent) == experiment]
with c1:
    chosen = st.multiselect("Runs", in_experiment, default=in_experiment, key=f"runs_pick_{experiment}",
                            format_func=lambda rel: Path(rel).name,
                            help="Pick several seeds of each estimator to see the spread.")
with c2:
    uploads = st.file_uploader(f"…or upload runs (.zip of a run folder, at most {MAX_ZIP_MB} MB each)",
                               type=["zip"], accept_multiple_files=True, key="runs_upload",
                               max_upload_size=MAX_ZIP_MB)

loaded: dict[str, R.Run] = {}
errors = []
for rel in chosen:
    try:
        loaded[f"shipped:{rel}"] = run_listing.load_shipped(RUNS_DIR, rel)
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

runs = run_listing.ordered(list(loaded.values()))
run_key_of = {r.name: k for k, r in loaded.items()}
# what the figures and tables below read of the runs: which runs (a shipped one with the time its
# metrics were last written, an upload by its content hash), so they are built once per choice;
# as one short digest, which the caches hash on every rerun in a fraction of the tuple's time
runs_key = hashlib.sha1(repr(tuple((k, run_listing.metrics_stamp(RUNS_DIR, k.split(":", 1)[1]) if k.startswith("shipped:") else 0.0)
                                   for k in loaded)).encode()).hexdigest()[:20]
if not runs:
    st.info("No run selected. Shipped runs are in `sample_rollouts/runs/`; make your own with "
            "`python -m crbc train --out runs/NAME` or `python -m crbc experiment`, or upload a "
            ".zip of a run folder.")
    st.stop()

# ---------------------------------------------------------------------------------- curves
st.subheader("Learning curves")
names = figure_cache.figure("runs_metric_names", (runs_key,),
                            lambda: list(dict.fromkeys(m for r in runs for m in r.metric_names())))
metrics = [m for m in METRICS if m in names] + [m for m in names if m not in METRICS
                                                 and not m.startswith(("diag.", "seconds_"))]
k1, k2, k3, k4 = st.columns([2, 1, 1, 1])
url.check_choice("runs_metric", metrics, "no such metric in the selected runs", V.metric_label)
metric = k1.selectbox("Metric", metrics, key="runs_metric", bind="query-params",
                      format_func=V.metric_label)
smooth = k2.slider("Smoothing (iterations)", 1, 5, 1, key="runs_smooth",
                   help="Trailing average over this many iterations, per run, before averaging seeds.")
band = k3.radio("Band over seeds", list(BANDS), key="runs_band", format_func=BANDS.get,
                help="95% CI: the t interval of the mean over seeds (the experiment's statistics); "
                     "min–max and ± 1 sd show the spread of the seeds themselves.")
threshold = k4.slider("Success threshold", 0.05, 1.0, 0.4, 0.05, key="runs_threshold")
# held-out success: also the evaluation after the last update (drawn one iteration later)
curves_svg = run_listing.curves_svg(runs_key, runs, metric, smooth, band, threshold)


def _on_curve_click(value: str) -> None:
    """A click on a curve's point picks that point's run (a mean curve: its estimator's first
    run) and iteration; a callback, so it runs before the Run and Iteration pickers are drawn."""
    hit = V.parse_pick(value)
    if hit is not None:
        st.session_state["_runs_click"] = hit


svg_view(curves_svg, key="runs_curve", on_pick=_on_curve_click, download=f"curves-{metric}")
st.caption(f"Thick lines: the mean over seeds, with the band ({BANDS[band]}); thin lines: single seeds "
           "(hover one to see it alone). Click a point to open that run's iteration below (a point "
           "of a mean curve opens the estimator's first seed).")

rows = run_listing.summary(runs_key, runs, threshold, smooth)
if any(r.get("eval_final") is not None for r in rows):
    st.markdown("**The comparison** (held-out success in %, mean over seeds with its 95% t interval; "
                "gain = each seed's final held-out success minus its start; the same held-out levels "
                "and sampling seeds for every run):")
    st.markdown(T.table_markdown(rows))
    paired = run_listing.paired_against_grpo(runs)
    if paired and any(r.get("diff") is not None for r in paired):
        st.markdown("**Paired by seed and held-out level** (final evaluation; the interval is a "
                    "two-way bootstrap over seeds and levels, p from sign flips):")
        st.markdown(T.paired_markdown(paired))
box, shown = widgets.folded("Per estimator on the training batches (mean ± sd over seeds)", key="runs_summary_open")
if shown:
    with box:
        st.caption(f"final = mean of the last 3 iterations' batch success; iterations to {threshold:.0%} "
                   f"use the {max(smooth, 1)}-iteration average. Training levels are fresh every "
                   "iteration, so batch success moves with their difficulty.")
        st.dataframe(V.summary_table(rows), hide_index=True, width="stretch")
box, shown = widgets.folded(f"Runs ({len(runs)})", key="runs_table_open")
if shown:
    with box:
        st.dataframe(V.runs_table(runs), hide_index=True, width="stretch")

accuracy = run_listing.truth_accuracy_curves(runs_key, runs)
if accuracy:  # folded: its chart is built and drawn only when asked for
    box, shown = widgets.folded("Credit accuracy during training: does the better credit come before "
                                "the faster learning?", key="runs_accuracy_open")
    if shown:
        with box:
            st.markdown("Each estimator's Spearman correlation with the exact advantage A_t of the "
                        "current policy on its own runs' batches (a few mixed groups every few "
                        "iterations, docs/MATH.md section 9), mean over seeds with its 95% CI "
                        "(a click on a point opens the estimator's first seed at that iteration below).")
            svg_view(figure_cache.figure(
                "runs_accuracy", (runs_key,),
                lambda: V.curves_chart_svg(accuracy, "Spearman with the exact A_t", band="ci", show_runs=False,
                                           percent=False, height=320)),
                key="runs_truth", on_pick=_on_curve_click, download="credit-accuracy")

# ---------------------------------------------------------------------------------- drill down
st.subheader("Drill into an iteration")
with_rollouts = [r for r in runs if r.iterations_with_rollouts]
if not with_rollouts:
    st.info("None of the selected runs ships its rollouts.")
    st.stop()
labels = [r.name for r in with_rollouts]
click = st.session_state.pop("_runs_click", None)
if click is not None and click[1] in labels:
    st.session_state["runs_run"] = click[1]
    st.session_state["runs_iter"] = click[0]
url.check_choice("runs_run", labels, "no run of that name is selected")
url.drop_invalid("runs_run", labels)
d1, d2 = st.columns([2, 1])
run_name = d1.selectbox("Run", labels, key="runs_run", bind="query-params")
run = with_rollouts[labels.index(run_name)]
its = list(run.iterations_with_rollouts)
if st.session_state.get("runs_iter") not in its:
    st.session_state.pop("runs_iter", None)
iteration = d2.selectbox("Iteration", its, key="runs_iter",
                         help="Or click a point of the curves above.")
if Path(run.source).is_dir():  # a folder (an uploaded .zip has none to read the report from)
    report_download.run_button(run.source, run.name, iteration, "runs_dl_report")

st.markdown("**Estimator diagnostics per iteration** (computed on each iteration's batch; the "
            "dotted line is the chosen iteration)")
diag_svg = figure_cache.figure("runs_diagnostics", (runs_key, iteration),
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
                   help=f"{label} (iteration {iteration} of {run.name})")

try:
    groups = run_listing.iteration_groups(f"{run_key_of[run.name]}#{run.name}", run, iteration)
except (RolloutFormatError, KeyError, OSError) as e:
    st.error(f"The rollouts of iteration {iteration} could not be read: {widgets.text(e)}")
    st.stop()
sr = rec.get("success_rate")
st.markdown(f"**{widgets.text(run.name)}, iteration {iteration}**: {len(groups)} groups"
            + (f", batch success {sr:.0%}" if sr is not None else "")
            + ". Pick a group, then open it:")
# a static table, scrolling beyond 320 px (a data grid would load 1.2 MB more JavaScript into every
# new tab of this page); a data grid only for an iteration of very many groups
table = V.groups_table(groups)
if len(table) <= 500:
    widgets.table(table, max_height_px=320)
else:
    widgets.rows_view(table, height=320)
gids = [g.group for g in groups]
url.drop_invalid("runs_group_pick", list(range(len(gids))))
gi = st.selectbox("Group", range(len(gids)), index=showcase_group(groups),
                  format_func=lambda i: f"{gids[i]} ({groups[i].success_rate:.0%} succeeded)",
                  key="runs_group_pick", help="The first group where some rollouts succeeded and some "
                  "failed is chosen first: there the estimators have something to compare.")
# the key names the run by its content (an upload: "upload:<hash>", so two sessions' archives
# of the same file name never share a cache entry, and what is computed from it stays private)
run_id = run_key_of[run.name]
source_key = (f"{run_id}#{iteration}" if run_id.startswith("upload:")
              else "run:" + hashlib.sha1(f"{run.source}|{iteration}".encode()).hexdigest()[:16])
source = state.Source(source_key, f"run {run.name} iteration {iteration}", groups)
bcols = st.columns(len(OPEN_IN))
for col, (path, title, icon) in zip(bcols, OPEN_IN, strict=True):
    if (Path(state.ROOT) / path).exists() and col.button(f"Open in {title}", icon=icon,
                                                          key=f"runs_open_{Path(path).stem}"):
        folder = Path(run.source)
        if run_key_of[run.name].startswith("shipped:") and run_source.resolve(str(folder)) is not None:
            run_source.open_run(folder, iteration, gids[gi])  # a folder: the link carries it
        else:
            run_source.open_groups(source, gi)  # a .zip upload lives in this session only
        url.switch_page(path)
