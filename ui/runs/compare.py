"""Training runs, a recorded or imported run beside others: the trainer's metrics of several run
folders overlaid (verl's ``episode/...``, the recorder's ``crbc/...`` credit health), the seeds of
one experiment as a mean with its band or every run alone, each run named by its label
(:attr:`crbc.io.runs.Run.label`), the rows the advantage doctor flagged per iteration
(:func:`ui.runs.doctor.curves`), and what carried no signal. A click on a point opens that run
and iteration in the sidebar, and its groups worth a look below.

The runs are the run folders the sidebar finds (:func:`ui.core.run_source.found`); the choice is in the
link (``runs_cmp=`` once per run, by label). A link that names several runs the sidebar's way
(``run=`` repeated: the sidebar opens the last) opens the comparison on them.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import crbc.io.runs as R
from crbc.errors import FormatError
from crbc.run_analysis import no_signal as NS
from crbc.run_analysis import training_stats as A
from crbc.viz import run_curves as V
from ui.core import run_source, url, widgets
from ui.core.context import Keyed
from ui.core.run_source import RunView
from ui.core.svg_view import svg_view
from ui.runs import doctor as run_doctor

PICK = "runs_cmp"  #: the runs compared (bound: ``runs_cmp=`` once per run, by label)
MAX_RUNS = 12  #: runs overlaid at most


def _runs(paths: list[str]) -> dict[str, R.Run]:
    """value -> the run, for the found run folders that read (others are left out)."""
    out = {}
    for v in paths:
        p = run_source.resolve(v)
        if p is None:
            continue
        try:
            out[v] = run_source.read(str(p), run_source.stamp(p))
        except (FormatError, OSError):
            continue
    return out


def render(view: RunView) -> None:  # noqa: C901
    """The comparison of the sidebar's run (``view``) with other run folders (module docstring)."""
    if view.folder is None:
        return
    linked = list(dict.fromkeys(st.query_params.get_all("run")))
    if len(linked) > 1 and PICK not in st.session_state:  # a link naming several runs (run= repeated)
        st.session_state[PICK] = [v for v in linked if run_source.resolve(v) is not None]
        st.session_state["_runs_cmp_linked"] = True
    title = "Compare with other runs: the trainer's metrics and crbc/ credit health overlaid, what carried no signal"
    if st.session_state.get("_runs_cmp_linked"):
        box, shown = st.container(border=True), True
        box.markdown(f"**{title}** (the runs the link names)")
    else:
        box, shown = widgets.folded(title, key="runs_cmp_open")
    if not shown:
        return
    with box:
        me = run_source.value(view.folder)
        found = run_source.found()
        runs = _runs([me] + [v for v in found if v != me])
        labels = {v: r.label for v, r in runs.items()}
        seen: dict[str, int] = {}
        for v, lab in labels.items():  # unique labels: the link names runs by them
            seen[lab] = seen.get(lab, 0) + 1
            if seen[lab] > 1:
                labels[v] = f"{lab} ({seen[lab]})"
        others = [v for v in runs if v != me]
        if not others:
            st.info(f"No other run folder under {run_source.roots_text()}.")
            return
        picked = st.session_state.get(PICK)
        if picked and any(v not in runs for v in picked):
            st.session_state[PICK] = [v for v in picked if v in runs]
        chosen = st.multiselect("Runs", list(runs), default=None if PICK in st.session_state else [me],
                                key=PICK, bind="query-params", format_func=labels.get, max_selections=MAX_RUNS,
                                help="Named by run.json's name (the recorder's project/experiment) and seed.")
        chosen_runs = [runs[v] for v in chosen]
        if not chosen_runs:
            return
        names = list(dict.fromkeys(m for r in chosen_runs for m in R.trainer_metric_names(r.metric_names())))
        if not names:
            st.caption("None of these runs logged metrics worth a curve.")
            return
        c1, c2 = st.columns([3, 1])
        url.check_choice("runs_cmp_metric", names, "no such metric in these runs")
        metric = c1.selectbox("Metric", names, key="runs_cmp_metric", bind="query-params")
        each = c2.radio("Seeds", ["mean", "each"], key="runs_cmp_seeds", bind="query-params",
                        format_func={"mean": "mean and band", "each": "one by one"}.get) == "each"
        # run folders on the server, each with the time its metrics were last written
        folders = Keyed(repr(tuple((v, run_source.stamp(Path(runs[v].source))) for v in chosen)))
        label_of = {id(runs[v]): labels[v] for v in chosen}
        value_of = {labels[v]: v for v in chosen}

        def name(r: R.Run) -> str:
            return label_of[id(r)]

        by = name if each else (lambda r: r.experiment)
        svg = folders.kept("figure", ("runs_cmp_curves", metric, each), lambda: V.curves_chart_svg(
            A.curves(chosen_runs, metric, by=by, name=name), metric, band="minmax", show_runs=not each))

        def pick(sort: str):
            def on_pick(value: str) -> None:
                hit = V.parse_pick(value)
                if hit is None or hit[1] not in value_of:
                    return
                r = runs[value_of[hit[1]]]
                if hit[0] not in r.iterations_with_rollouts:
                    return
                st.session_state["run"] = value_of[hit[1]]
                st.session_state[view.iter_key] = hit[0]
                st.session_state["_review_open_next"] = sort  # the review opens its groups (ui/runs/review.py)
            return on_pick

        svg_view(svg, key="runs_cmp_curve", on_pick=pick(NS.sort_for(metric)), download=f"runs-{metric}")
        st.caption("Thick: the mean over the seeds of one experiment (run.json's name without its seed) with "
                   "its min–max band; thin: each run. Click a point to open that run's iteration in the "
                   "sidebar and its groups below.")
        st.markdown("**The advantage doctor in these runs**: per iteration, the rows it flagged while training")
        run_doctor.curves(folders, chosen_runs, by=by, name=name, on_pick=pick("success"), key="runs_cmp_doctor",
                          show_runs=not each)
        with_rollouts = [r for r in chosen_runs if r.iterations_with_rollouts]
        if not with_rollouts:
            return
        box2, open2 = widgets.folded("What carried no signal in these runs", key="runs_cmp_ns_open")
        if open2:
            with box2:
                rows = folders.kept("table", ("runs_cmp_ns",), lambda: {
                    name(r): [x.row() for x in NS.run_no_signal(r)] for r in with_rollouts})

                def values(r: R.Run):
                    got = [x for x in rows.get(name(r), []) if x["none_share"] is not None]
                    return [x["iteration"] for x in got], [x["none_share"] for x in got]

                ns = folders.kept("figure", ("runs_cmp_ns_svg", each), lambda: V.curves_chart_svg(
                    A.curves(with_rollouts, "no_signal/none_share", by=by, name=name, values=values),
                    "share of steps with no signal at all", band="minmax", show_runs=not each, percent=True,
                    height=300))
                svg_view(ns, key="runs_cmp_ns_curve", on_pick=pick("no_signal"), download="no-signal")
                for lab, rs in rows.items():
                    with st.expander(f"{lab}: the table ({len(rs)} iterations)"):
                        st.dataframe(V.no_signal_table(rs), hide_index=True, width="stretch")
