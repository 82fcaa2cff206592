"""A report of several runs in one file (``crbc report RUN RUN ... -o REPORT.html``).

The runs, each named by :attr:`crbc.io.runs.Run.label` (run.json's name, its experiment
folder, its seed); their trainer metrics overlaid, one chart per metric (the CPU trainer's
names and verl's ``episode/``, ``critic/``, ``crbc/`` credit health:
:func:`crbc.io.runs.trainer_metric_names`), the seeds of one experiment
(:attr:`~crbc.io.runs.Run.experiment`) as a mean curve with its band, or every run alone
(``aggregate=False``); what carried no signal per iteration
(:mod:`crbc.run_analysis.no_signal`) as curves and as a table per run; the rows the recorder's
advantage doctor flagged per iteration (:mod:`crbc.run_analysis.doctor_curves`), overlaid the
same way, with a sentence naming the runs that never recorded them; and every iteration's
groups, ranked worst first by what the clicked curve measures: a click on a point (or a link
``#it-<run>-<iteration>``) shows that run's iteration (the file's own script; the numbers are in
the file as JSON, nothing is fetched).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from crbc.doctor.recorded import METRIC_PREFIX
from crbc.errors import UsageError
from crbc.io.runs import Run, read_run, trainer_metric_names
from crbc.report.page import Section, json_for_script, page
from crbc.run_analysis import doctor_curves as D
from crbc.run_analysis import no_signal as NS
from crbc.run_analysis import training_stats as A
from crbc.viz.core.html import STYLE
from crbc.viz.core.text import esc
from crbc.viz.run_curves import metric_label

__all__ = ["NO_SIGNAL_CURVES", "runs_report"]

#: the no-signal curves: (curve name, row field, title)
NO_SIGNAL_CURVES = (("no_signal/none_share", "none_share", "no signal at all (one outcome or a zero advantage)"),
                    *((f"no_signal/{r}_share", f"{r}_share", f"no signal: {t}") for r, t in NS.REASONS.items()),
                    ("no_signal/any_share", "any_share", "any reason"))
METRICS_MAX = 16  #: trainer metrics drawn at most


def _chart(curves: dict, metric: str, title: str, sort: str, band: str, show_runs: bool,
           percent: bool | None = None) -> str:
    from crbc.viz.run_curves import curves_chart_svg

    svg = curves_chart_svg(curves, metric, band=band, show_runs=show_runs, width=560, height=300,
                           percent=True if metric.endswith("_share") else percent)
    return (f'<figure class="crbc-runs-chart" data-sort="{esc(sort)}"><figcaption>{esc(title)}</figcaption>'
            f"{svg}</figure>")


def _labels(runs: Sequence[Run]) -> list[str]:
    """Each run's label, made unique (a run given twice, or two folders of one name, get ``(2)``)."""
    out: list[str] = []
    for r in runs:
        lab, k = r.label, 2
        while lab in out:
            lab, k = f"{r.label} ({k})", k + 1
        out.append(lab)
    return out


def _table(rows: list[dict]) -> str:
    head = ["iteration", "steps", "groups", "no signal", *NS.SHORT.values(), "any reason"]
    out = ['<div class="crbc-table-wrap" style="max-height:360px;overflow-y:auto"><table class="crbc-table">'
           '<thead style="position:sticky;top:0;background:#fff"><tr>'
           + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        cells = [str(r["iteration"]), f"{r['steps']:,}", str(r["groups"])]
        for k in ("none", *NS.REASONS, "any"):
            s = r[f"{k}_share"]
            cells.append(f"{r[k]:,} ({s:.0%})" if s is not None else "—")
        out.append("<tr>" + "".join(f'<td class="num">{c}</td>' for c in cells) + "</tr>")
    return "".join(out) + "</tbody></table></div>"


def _doctor_html(runs: Sequence[Run], *, by: Callable[[Run], str], name: Callable[[Run], str], band: str,
                 aggregate: bool) -> str:
    """The doctor's section: per iteration the rows each check flagged in the runs that recorded
    the counts (:mod:`crbc.run_analysis.doctor_curves`: first every warning and error check
    summed, then each check that flagged rows somewhere), a note naming the checks silent in
    every run, and a sentence naming the runs that never recorded the counts."""
    missing = D.unrecorded(runs)
    who = ("None of these runs" if len(missing) == len(runs)
           else esc(", ".join(name(r)[:120] for r in missing)) + (" never" if len(missing) == 1 else ": none of them"))
    never = "" if not missing else (
        f'<p class="note">{who} recorded the doctor\'s counts (no <code>crbc/doctor/...</code> metrics: not '
        "recorded with <code>RunRecorder</code>), so there is no doctor curve of "
        + ("them" if len(missing) > 1 else "it") + "; <code>crbc doctor RUN</code> examines saved rollouts.</p>")
    gone = {id(r) for r in missing}
    recorded = [r for r in runs if id(r) not in gone]
    if not recorded:
        return never
    flagging, silent = D.recorded_checks(recorded)
    charts = []
    for check in [D.ALL, *flagging]:
        cs = D.doctor_curves(recorded, check, by=by, name=name)
        if cs:
            charts.append(_chart(cs, METRIC_PREFIX + check, D.check_title(check), "success", band, aggregate,
                                 percent=False))
    quiet = ("" if not silent else '<p class="note">Silent on every iteration of every run: '
             + esc(", ".join(silent)) + ".</p>")
    return ('<p class="note">Per iteration, the rows the recorder\'s doctor flagged while training '
            "(<code>crbc/doctor/&lt;check&gt;</code> in metrics.jsonl; the trainer's log names the rows). "
            "Click a point to list that run's iteration's groups below.</p>"
            '<div class="crbc-runs-charts">' + "".join(charts) + "</div>" + quiet + never)


def _group_json(groups_rows: list[dict]) -> list[list]:
    """An iteration's groups, compact: [group, rollouts, steps, success, no signal, reasons...]."""
    def r3(v):
        return None if v is None else round(float(v), 3)

    return [[g["group"][:160], g["rollouts"], g["steps"], r3(g["success"]), r3(g["no_signal"]),
             *(r3(g[k]) for k in NS.REASONS), r3(g["any_reason"])] for g in groups_rows]


def runs_report(run_dirs: Sequence[str | os.PathLike], *, aggregate: bool = True, band: str = "minmax",  # noqa: C901
                progress: Callable[[int, int], None] | None = None, metrics: Sequence[str] | None = None) -> str:
    """The HTML file of several run folders (module docstring). ``aggregate``: the seeds of one
    experiment as a mean curve with its ``band`` ("minmax", "std", "ci"), else every run alone;
    ``metrics``: the trainer metrics to draw (default: those of :func:`trainer_metric_names`
    that any run has, at most :data:`METRICS_MAX`); ``progress(i, n)`` after each iteration read."""
    if not run_dirs:
        raise UsageError("no run folder given")
    runs = [read_run(d) for d in run_dirs]
    labels = _labels(runs)
    by_label = dict(zip(labels, runs, strict=True))
    label_of = {id(r): lab for lab, r in by_label.items()}
    group: Callable[[Run], str] = (lambda r: r.experiment) if aggregate else (lambda r: label_of[id(r)])

    def name(r: Run) -> str:
        return label_of[id(r)]

    # every iteration's rows once: the no-signal counts and the groups ranked later in the browser
    total = sum(len(r.iterations_with_rollouts) for r in runs)
    done = 0
    per_run: dict[str, list[dict]] = {}
    groups_data: dict[str, dict[str, list]] = {}
    for lab, r in by_label.items():
        rows, gd = [], {}
        for i in r.iterations_with_rollouts:
            gs = r.rollouts(i)
            rows.append(NS.iteration_no_signal(gs, i).row())
            gd[str(i)] = _group_json(NS.group_rows(gs))
            done += 1
            if progress is not None:
                progress(done, total)
        per_run[lab], groups_data[lab] = rows, gd

    def ns_values(field: str):
        def values(r: Run):
            rows = [x for x in per_run[label_of[id(r)]] if x[field] is not None]
            return np.array([x["iteration"] for x in rows], dtype=int), np.array([x[field] for x in rows], float)
        return values

    names: list[str] = list(metrics or [])
    if not names:
        for r in runs:  # the doctor's counts have their own section
            names += [m for m in trainer_metric_names(r.metric_names())
                      if m not in names and not m.startswith(METRIC_PREFIX)]
        names = names[:METRICS_MAX]
    charts = []
    for m in names:
        cs = A.curves(runs, m, with_final=m == A.EVAL, by=group, name=name)
        if cs:
            charts.append(_chart(cs, m, metric_label(m), NS.sort_for(m), band, aggregate))
    ns_charts = []
    for metric, fld, title in NO_SIGNAL_CURVES:
        cs = A.curves([r for r in runs if per_run[label_of[id(r)]]], metric, by=group, name=name,
                      values=ns_values(fld))
        if cs:
            ns_charts.append(_chart(cs, metric, title, NS.sort_for(metric), band, aggregate))

    run_rows = "".join(
        f"<tr><td>{esc(lab[:160])}</td><td>{esc(r.experiment[:160])}</td><td>{esc(r.estimator)}</td>"
        f'<td class="num">{"—" if r.seed is None else r.seed}</td><td class="num">{len(r.metrics)}</td>'
        f'<td class="num">{len(r.iterations_with_rollouts)}</td><td>{esc(Path(r.source).name[:80])}</td></tr>'
        for lab, r in by_label.items())
    how = ("the seeds of each experiment as one mean curve with its band (" + esc(band) + "), each seed thin"
           if aggregate else "every run as its own curve")
    secs = [
        Section("runs", f"The runs ({len(runs)})",
                STYLE + '<table class="crbc-table"><thead><tr><th>run</th><th>experiment</th><th>estimator</th><th>seed</th>'
                "<th>iterations</th><th>with rollouts</th><th>folder</th></tr></thead><tbody>" + run_rows
                + "</tbody></table>"),
        Section("curves", "The trainer's metrics, overlaid",
                f'<p class="note">Curves: {how}. Click a point to list that run\'s iteration\'s groups '
                "below, worst first by what the curve measures (a mean curve's point opens its first run).</p>"
                + ('<div class="crbc-runs-charts">' + "".join(charts) + "</div>" if charts
                   else '<p class="note">No run logged metrics worth a curve.</p>')),
        Section("no-signal", "What carried no signal",
                '<p class="note">Per iteration, the share of steps that could not teach anything, by reason '
                "(a step can have several): its group's rollouts all had one outcome; its anchor is seen once in "
                "its group; the trainer's advantage is 0 (|A| ≤ 1e-9, over the steps that record one); its rollout "
                "was truncated; its action is invalid. <i>No signal at all</i>: one outcome or a zero advantage. "
                "Recounted from the iteration files.</p>"
                + ('<div class="crbc-runs-charts">' + "".join(ns_charts) + "</div>" if ns_charts
                   else '<p class="note">None of the runs saved its rollouts.</p>')
                + "".join(f"<details><summary>{esc(lab[:160])}: the table ({len(rows)} iterations)</summary>"
                          + _table(rows) + "</details>" for lab, rows in per_run.items() if rows)),
        Section("doctor", "The advantage doctor, per iteration",
                _doctor_html(runs, by=group, name=name, band=band, aggregate=aggregate)),
        Section("groups", "An iteration's groups",
                '<p class="note crbc-groups-hint">Click a point of a curve above (or open a link ending in '
                "<code>#it-RUN-ITERATION</code>, RUN the run's number in the table above) to list that "
                "iteration's groups here.</p>"
                '<div class="crbc-groups-out"></div>'
                '<script type="application/json" class="crbc-groups-data">'
                + json_for_script({"runs": labels, "reasons": list(NS.SHORT.values()), "keys": list(NS.REASONS),
                                   "groups": [groups_data[lab] for lab in labels]})
                + "</script>"),
    ]
    title = f"crbc report: {len(runs)} runs"
    sub = "A report of the runs " + ", ".join(f"<b>{esc(lab[:120])}</b>" for lab in labels[:12]) \
        + (f" and {len(labels) - 12} more" if len(labels) > 12 else "") + "."
    return page(title, secs, subtitle=sub)
