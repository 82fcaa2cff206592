"""Training runs: learning curves per estimator, the estimator's diagnostics per iteration, the
rows the recorder's advantage doctor flagged per iteration, and a drill-down from an iteration to
a group that opens in the other pages.

Shipped runs live in ``sample_rollouts/runs/`` (crbc.run/1 folders); a run can also be uploaded
as a .zip of its folder. Everything shown is computed by :mod:`crbc.io.runs` and drawn by
:mod:`crbc.viz.run_curves`.
"""

from __future__ import annotations

import streamlit as st

import crbc.train.tables as T
from crbc.run_analysis import no_signal as NS
from crbc.viz import run_curves as V
from ui.core import run_source, url, widgets
from ui.core.svg_view import svg_view
from ui.runs import doctor as run_doctor
from ui.runs import drilldown, listing, picker, review

OPEN_IN = [("pages/graph.py", "Anchor graph", ":material/hub:"),
           ("pages/backups.py", "Bellman backups", ":material/replay:"),
           ("pages/credits.py", "Step credits", ":material/bar_chart:")]
KINDS = {"ours": "Runs of crbc train", "any": "Any recorded or imported run"}
METRICS = ["eval_success_rate", "success_rate", "mean_return", "mean_length", "loss", "kl",
           "clip_frac", "step_credit_share", "seconds"]  # the first one the runs have is the default
BANDS = {"ci": "95% CI of the mean", "minmax": "min–max", "std": "± 1 sd"}
SEEDS = {"mean": "mean and band", "each": "one by one"}
# choices, not sliders: a slider loads its own script bundle (about 0.06 s of a new tab's drawing)
SMOOTHING = [1, 2, 3, 4, 5]
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 21)]


st.title("Training runs")
st.caption("Runs of `python -m crbc train` / `experiment` (format `crbc.run/1`): success against "
           "iterations per estimator, the estimator's diagnostics on each iteration's batch, and any "
           "iteration's groups, which open in the Anchor graph, Bellman backups and Step credits pages.")

# the bound control writes its label into the URL: a link may carry the label or the name (any)
url.check_choice("runs_kind", list(KINDS), "runs are ours or any", KINDS.get)
if st.segmented_control("Which runs", list(KINDS), format_func=KINDS.get, key="runs_kind",
                        default="any" if run_source.run_view() is not None else "ours", required=True,
                        bind="query-params") == "any":
    review.render(OPEN_IN + [("pages/inspector.py", "Inspector", ":material/search:"),
                                 ("pages/disagreements.py", "Disagreements", ":material/compare_arrows:")])
    widgets.fragment_done()  # the end-of-run marker app.py cannot write after st.stop()
    st.stop()

runs, run_key_of, runs_ctx, experiments = picker.chosen_runs()
if not runs:
    st.info("No run selected. Shipped runs are in `sample_rollouts/runs/`; make your own with "
            "`python -m crbc train --out runs/NAME` or `python -m crbc experiment`, or upload a "
            ".zip of a run folder.")
    st.stop()

# ---------------------------------------------------------------------------------- curves
st.subheader("Learning curves")
names = runs_ctx.kept("table", ("runs_metric_names",),
                            lambda: list(dict.fromkeys(m for r in runs for m in r.metric_names())))
metrics = [m for m in METRICS if m in names] + [m for m in names if m not in METRICS
                                                 and not m.startswith(("diag.", "seconds_"))]
k1, k2, k3, k4, k5 = st.columns([2, 1, 1, 1, 1])
url.check_choice("runs_metric", metrics, "no such metric in the selected runs", V.metric_label)
metric = k1.selectbox("Metric", metrics, key="runs_metric", bind="query-params",
                      format_func=V.metric_label)
smooth = k2.selectbox("Smoothing", SMOOTHING, key="runs_smooth",
                     format_func=lambda k: "none" if k == 1 else f"last {k} iterations",
                     help="A trailing average over the last k iterations, per run, before averaging seeds.")
band = k3.radio("Band over seeds", list(BANDS), key="runs_band", format_func=BANDS.get,
                help="95% CI: the t interval of the mean over seeds (the experiment's statistics); "
                     "min–max and ± 1 sd show the spread of the seeds themselves.")
threshold = k4.selectbox("Success threshold", THRESHOLDS, index=THRESHOLDS.index(0.4), key="runs_threshold",
                         format_func="{:.0%}".format,
                         help="A success level: drawn dashed on success curves; the per-estimator table counts the "
                              "iterations each estimator took to reach it.")
url.check_choice("runs_seeds", list(SEEDS), "seeds are averaged or shown one by one", SEEDS.get)
each = k5.radio("Seeds", list(SEEDS), key="runs_seeds", format_func=SEEDS.get, bind="query-params",
                help="The seeds of each estimator as one mean curve with its band, or every run as its "
                     "own curve (named by its run).") == "each"
# held-out success: also the evaluation after the last update (drawn one iteration later)
curves_svg = listing.curves_svg(runs_ctx, runs, metric, smooth, band, threshold, each, experiments)


def _on_click(sort: str):
    """A click on a curve's point picks that point's run (a mean curve: its estimator's first
    run) and iteration, and ranks its groups by what the curve measures (``sort``); a callback,
    so it runs before the Run and Iteration pickers are drawn."""
    def pick(value: str) -> None:
        hit = V.parse_pick(value)
        if hit is not None:
            st.session_state["_runs_click"] = (*hit, sort)
    return pick


_on_curve_click = _on_click(NS.sort_for(metric))
svg_view(curves_svg, key="runs_curve", on_pick=_on_curve_click, download=f"curves-{metric}")
st.caption(f"Thick lines: the mean over seeds, with the band ({BANDS[band]}); thin lines: single seeds "
           "(hover one to see it alone). Click a point to open that run's iteration below (a point "
           "of a mean curve opens the estimator's first seed)."
           + (f" Runs of {len(set(experiments.values()))} experiments: each mean curve is the seeds of one "
              "estimator within one experiment (named *experiment · estimator*), never across experiments."
              if experiments else ""))

rows = listing.summary(runs_ctx, runs, threshold, smooth, experiments)
if any(r.get("eval_final") is not None for r in rows):
    st.markdown("**The comparison** (held-out success in %, mean over seeds with its 95% t interval; "
                "gain = each seed's final held-out success minus its start; the same held-out levels "
                "and sampling seeds for every run):")
    st.markdown(T.table_markdown(rows))
    paired = listing.paired_against_grpo(runs_ctx, runs, experiments)
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

accuracy = listing.truth_accuracy_curves(runs_ctx, runs, experiments)
if accuracy:  # folded: its chart is built and drawn only when asked for
    box, shown = widgets.folded("Credit accuracy during training: does the better credit come before "
                                "the faster learning?", key="runs_accuracy_open")
    if shown:
        with box:
            st.markdown("Each estimator's Spearman correlation with the exact advantage A_t of the "
                        "current policy on its own runs' batches (a few mixed groups every few "
                        "iterations, docs/MATH.md section 9), mean over seeds with its 95% CI "
                        "(a click on a point opens the estimator's first seed at that iteration below).")
            svg_view(runs_ctx.kept("figure",
                ("runs_accuracy", ),
                lambda: V.curves_chart_svg(accuracy, "Spearman with the exact A_t", band="ci", show_runs=False,
                                           percent=False, height=320)),
                key="runs_truth", on_pick=_on_curve_click, download="credit-accuracy")

if any(r.iterations_with_rollouts for r in runs):  # folded: read from every iteration's file once opened
    box, shown = widgets.folded("What carried no signal: per iteration, the steps that could not teach "
                                "anything, and why", key="runs_nosignal_open")
    if shown:
        with box:
            st.markdown("Per iteration, the share of steps (of the runs that saved their rollouts) by reason; "
                        "a step can have several. " + "; ".join(f"**{NS.SHORT[k]}**: {v}" for k, v in NS.REASONS.items())
                        + " (|A| ≤ 1e-9, over the steps that record one). **No signal at all**: one outcome "
                        "or an advantage of 0. Click a point to rank that iteration's groups by it below.")
            fields = {"none_share": "no signal at all", **{f"{k}_share": v for k, v in NS.SHORT.items()},
                      "any_share": "any reason"}
            url.check_choice("runs_nosignal", list(fields), "no such reason", fields.get)
            field = st.segmented_control("Reason", list(fields), format_func=fields.get, key="runs_nosignal",
                                         default="none_share", required=True, bind="query-params")
            with st.spinner("Counting every iteration's steps (about 0.1 s an iteration, once)…"):
                ns_svg = listing.no_signal_svg(runs_ctx, runs, field, band, each, experiments)
            if ns_svg:
                svg_view(ns_svg, key="runs_nosignal_curve", on_pick=_on_click(NS.sort_for(field)),
                         download=f"no-signal-{field}")
            for name, rows in listing.no_signal(runs_ctx, runs).items():
                with st.expander(f"{name}: the table ({len(rows)} iterations)"):
                    st.dataframe(V.no_signal_table(rows), hide_index=True, width="stretch")

box, shown = widgets.folded("The advantage doctor: per iteration, the rows it flagged while training",
                            key="runs_doctor_open")
if shown:
    with box:
        run_doctor.curves(runs_ctx, runs, by=listing.grouping(each, experiments), name=listing.label,
                          on_pick=_on_click("success"), key="runs_doctor", band=band, show_runs=not each)

drilldown.render(runs, run_key_of, runs_ctx, OPEN_IN, NS.sort_for(metric))
