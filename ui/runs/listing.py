"""What the Training runs page reads of runs, each read or computed once: the shipped run folders
(``crbc.io.runs``), their experiments newest first, a run folder, an iteration's groups and the
paired test against grpo.

Shipped runs are the same for every session (kept in the server's store, :mod:`ui.core.context`);
what is read or drawn from an uploaded run stays in the uploading session.
"""

from __future__ import annotations

import json
from pathlib import Path

import crbc.io.runs as R
import crbc.run_analysis.training_stats as A
from ui.core.context import Keyed, server


def shipped_runs(root: str) -> list[str]:
    """The run folders under ``root``, relative to it (re-listed at most every 30 s)."""
    return server().kept("listing", ("shipped_runs", root),
                         lambda: [str(p.relative_to(root)) for p in R.find_runs(root)])


def metrics_stamp(root: Path, rel: str) -> float:
    """When run ``rel``'s metrics were last written (0 without a metrics file): part of the
    cache keys, so a run that is still being written is re-read."""
    p = root / rel / R.METRICS_FILE
    return p.stat().st_mtime if p.exists() else 0.0


def load_shipped(root: Path, rel: str) -> R.Run:
    """The run folder ``root / rel`` (read again once its metrics change)."""
    return server().kept("run", ("shipped", str(root), rel, metrics_stamp(root, rel)),
                         lambda: R.read_run(Path(root) / rel))


def iteration_groups(run_key: str, run: R.Run, iteration: int):
    """The groups of one iteration of ``run`` (``run_key``: the run's content key; an upload's
    starts with ``upload:`` and stays in its session)."""
    return Keyed.of(run_key).kept("iteration", (iteration,), lambda: run.rollouts(iteration))


def experiments_newest_first(root: str, shipped: tuple[str, ...]) -> list[str]:
    """The experiment folders of the shipped runs, newest first (:func:`_newest_first`)."""
    return server().kept("listing", ("experiments", root, shipped), lambda: _newest_first(root, shipped))


def _newest_first(root: str, shipped: tuple[str, ...]) -> list[str]:
    """The experiment folders of the shipped runs, the most recently created first (the newest
    ``created_at`` of their runs' run.json; an unreadable one counts as oldest), a folder with a
    pre-registered report (``prereg.json``, experiments/prereg_report.py) before all others, so the
    page opens on the pre-registered comparison."""
    newest: dict[str, str] = {}
    for rel in shipped:
        try:
            stamp = str(R.read_meta(Path(root) / rel).get("created_at") or "")
        except R.RunFormatError:
            stamp = ""
        exp = str(Path(rel).parent)
        newest[exp] = max(newest.get(exp, ""), stamp)
    prereg = {e: (Path(root) / e / "prereg.json").is_file() for e in newest}
    return sorted(newest, key=lambda e: (prereg[e], newest[e], e), reverse=True)


def per_experiment(runs: list[R.Run], experiments: dict[str, str]) -> dict[str, list[R.Run]]:
    """The runs by experiment (``experiments``: run label -> experiment, empty for one experiment:
    then one entry ``""`` of every run), first-seen order."""
    out: dict[str, list[R.Run]] = {}
    for r in runs:
        out.setdefault(experiments.get(r.label, ""), []).append(r)
    return out


def _named(exp: str, est: str) -> str:
    """A series of the seeds of estimator ``est`` in experiment ``exp`` ("": the only one)."""
    return f"{exp} · {est}" if exp else est


def paired_against_grpo(runs_ctx: Keyed, runs: list[R.Run], experiments: dict[str, str] | None = None) -> list:
    """The paired test of every estimator against grpo (10,000 bootstrap rounds per comparison:
    0.1-0.4 s), within each experiment (``experiments``, :func:`per_experiment`; the rows name
    it), once per set of runs (keyed by what the test reads of each run: estimator, seed, name
    and final evaluation)."""
    experiments = experiments or {}
    key = tuple((r.estimator, r.seed, r.name, experiments.get(r.label, ""),
                 json.dumps(r.meta.get("final_eval"), sort_keys=True)) for r in runs)

    def build() -> list:
        return [{**row, "a": _named(exp, row["a"]), "b": _named(exp, row["b"])}
                for exp, items in per_experiment(runs, experiments).items()
                for row in A.paired_table(items, reference="grpo")]

    return runs_ctx.kept("paired", key, build)


def ordered(runs: list[R.Run]) -> list[R.Run]:
    """The runs in the order every table and legend uses (estimator, then seed)."""
    return A.order_runs(runs)


def curves_svg(runs_ctx: Keyed, runs: list[R.Run], metric: str, smooth: int, band: str, threshold: float,
               each: bool = False, experiments: dict[str, str] | None = None) -> str:
    """The learning curves of ``metric`` (mean over seeds with its band, single seeds thin; ``each``:
    every run its own curve; ``experiments``: see :func:`grouping`), once per (runs, metric,
    smoothing, band, threshold, each); held-out success includes the evaluation after the last
    update. Runs are named by their labels."""
    from crbc.viz import run_curves as V

    return runs_ctx.kept("figure",
        ("runs_curves", metric, smooth, band, threshold, each),
        lambda: V.curves_chart_svg(A.curves(runs, metric, smooth=smooth, with_final=metric == A.EVAL, by=grouping(each, experiments),
                                            name=label), metric, band=band, show_runs=not each,
                                   threshold=threshold if "success" in metric else None))


def label(run: R.Run) -> str:
    """A run's name on the page: :attr:`crbc.io.runs.Run.label` (an upload's own name when renamed)."""
    return run.label


def grouping(each: bool, experiments: dict[str, str] | None = None):
    """What makes one curve: every run alone (``each``), else the seeds of one estimator, within
    one experiment: with runs of several experiments (``experiments``: run label -> experiment,
    :func:`ui.runs.picker.chosen_runs`) the seeds of one (experiment, estimator), named
    ``"<experiment> · <estimator>"``; seeds of different experiments are never averaged."""
    if each:
        return label
    if experiments:
        return lambda r: _named(experiments.get(r.label, ""), r.estimator)
    return None


def shipped_labels(root: str, shipped: tuple[str, ...]) -> dict[str, str]:
    """Each shipped run's label (:func:`crbc.io.runs.run_label` of its run.json; its path when
    unreadable), made unique (re-read at most every 30 s)."""
    return server().kept("listing", ("labels", root, shipped), lambda: _labels(root, shipped))


def _labels(root: str, shipped: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for rel in shipped:
        try:
            lab = R.run_label(R.read_meta(Path(root) / rel), str(Path(root) / rel))
        except R.RunFormatError:
            lab = rel
        k, base = 2, lab
        while lab in out.values():
            lab, k = f"{base} ({k})", k + 1
        out[rel] = lab
    return out


def no_signal(runs_ctx: Keyed, runs: list[R.Run]) -> dict[str, list[dict]]:
    """Per run with saved rollouts (by label), :func:`crbc.run_analysis.no_signal.run_no_signal`'s
    rows of every iteration, once per choice of runs (read from the iteration files: about
    0.1 s an iteration)."""
    from crbc.run_analysis import no_signal as NS

    def build() -> dict[str, list[dict]]:
        return {label(r): [x.row() for x in NS.run_no_signal(r)] for r in runs if r.iterations_with_rollouts}

    return runs_ctx.kept("table", ("runs_no_signal",), build)


def no_signal_svg(runs_ctx: Keyed, runs: list[R.Run], field: str, band: str, each: bool,
                  experiments: dict[str, str] | None = None) -> str | None:
    """The curve of one no-signal share (``field``: ``none_share``, ``<reason>_share``, ``any_share``)
    of the runs with rollouts, as the learning curves draw them; None when no run saved rollouts."""
    from crbc.viz import run_curves as V

    table = no_signal(runs_ctx, runs)

    def values(r: R.Run):
        rows = [x for x in table.get(label(r), []) if x[field] is not None]
        return [x["iteration"] for x in rows], [x[field] for x in rows]

    def build():
        cs = A.curves([r for r in runs if label(r) in table], f"no_signal/{field}", by=grouping(each, experiments), name=label,
                      values=values)
        return V.curves_chart_svg(cs, f"share of steps: {field.removesuffix('_share').replace('_', ' ')}",
                                  band=band, show_runs=not each, percent=True, height=320) if cs else None

    return runs_ctx.kept("figure", ("runs_no_signal_svg", field, band, each), build)


def summary(runs_ctx: Keyed, runs: list[R.Run], threshold: float, smooth: int,
            experiments: dict[str, str] | None = None) -> list[dict]:
    """Per estimator: final success, iterations to ``threshold``, held-out gain (:func:`A.summarize`),
    per experiment (``experiments``, :func:`per_experiment`: each row's estimator names it)."""
    def build() -> list[dict]:
        return [{**row, "estimator": _named(exp, row["estimator"])}
                for exp, items in per_experiment(runs, experiments or {}).items()
                for row in A.summarize(items, threshold=threshold, smooth=max(smooth, 1))]

    return runs_ctx.kept("table", ("runs_summary", threshold, smooth), build)


def truth_accuracy_curves(runs_ctx: Keyed, runs: list[R.Run], experiments: dict[str, str] | None = None) -> dict:
    """Each estimator's Spearman with the exact advantage over the iterations of its own runs
    (the ``diag.truth_spearman.<estimator>`` metric), as curves, per experiment (``experiments``,
    :func:`grouping`); empty when no run records it."""
    def build() -> dict:
        out: dict = {}
        for est, items in A.by_estimator(runs).items():
            out.update(A.curves(items, f"diag.truth_spearman.{est}", by=grouping(False, experiments), name=label))
        return out

    return runs_ctx.kept("table", ("runs_accuracy_curves",), build)
