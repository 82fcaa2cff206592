"""Figures of saved training runs: learning curves per estimator and per-iteration diagnostics.

Pure builders: they take :class:`crbc.run_analysis.training_stats.Curve` / :class:`crbc.io.runs.Run` objects (computed by
:mod:`crbc.run_analysis.training_stats`) and return SVG strings (:mod:`crbc.viz.core.chart`, shown by
:func:`ui.core.svg_view.svg_view`) or pandas tables; no estimates are
computed here. A point that opens a run's iteration carries ``data-pick`` = :func:`pick_value`
(read back with :func:`parse_pick`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crbc.io.runs import Run
from crbc.run_analysis.training_stats import Curve
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, grid_svg
from crbc.viz.core.credits import est_color_at
from crbc.viz.core.series import Mark, Series
from crbc.viz.core.style import HIGHLIGHT

__all__ = [
    "BAND_LABELS", "curves_chart_svg", "DIAG_PANELS", "diagnostics_svg", "groups_table",
    "iteration_panel", "legend_series", "metric_label", "METRIC_LABELS", "no_signal_table", "parse_pick",
    "pick_value", "ranked_groups_table", "runs_table", "SEED_TIPS_MAX", "summary_table"
]

BAND_LABELS = {"ci": "95% CI of the mean", "minmax": "min–max over seeds", "std": "± 1 sd over seeds"}
SEED_TIPS_MAX = 1500  # seed points with a tooltip each; beyond, a seed's line names only its run

METRIC_LABELS = {
    "success_rate": "success rate (training batch, fresh levels)",
    "eval_success_rate": "held-out success rate",
    "mean_return": "mean return",
    "mean_length": "mean episode length",
    "loss": "loss",
    "kl": "KL to the start policy (k3)",
    "clip_frac": "clip fraction",
    "step_credit_share": "share of steps with non-zero step credit",
    "seconds": "seconds per iteration",
}


def metric_label(metric: str) -> str:
    """A metric's name for people: the label above, else its key in words (``diag.`` prefix
    spelled out); a name that already has spaces (a label) as it is."""
    if metric in METRIC_LABELS:
        return METRIC_LABELS[metric]
    if " " in metric:
        return metric
    for key, label, _pct in DIAG_PANELS:
        if key == metric:
            return f"diagnostic: {label}"
    words = metric.removeprefix("diag.").replace("_", " ").replace(".", " ")
    return ("diagnostic: " + words) if metric.startswith("diag.") else words


def pick_value(iteration: int, run: str) -> str:
    """The click value of a curve point: ``"<iteration>|<run name>"`` (the name may hold "|")."""
    return f"{int(iteration)}|{run}"


def parse_pick(value: str) -> tuple[int, str] | None:
    """``(iteration, run name)`` of a :func:`pick_value`, or None for anything else."""
    it, sep, run = str(value).partition("|")
    try:
        return (int(it), run) if sep and run else None
    except ValueError:
        return None


def _fmt(v: float, percent: bool) -> str:
    return f"{v:.1%}" if percent else f"{v:.3g}"


def _band(c: Curve, band: str) -> tuple[np.ndarray, np.ndarray]:
    """The band's ends per iteration: min-max, +-1 sd, or the 95% t interval (the mean itself
    where fewer than 2 seeds have a value)."""
    if band == "minmax":
        return c.lo, c.hi
    if band == "ci":
        return np.where(c.n >= 2, c.ci_lo, c.mean), np.where(c.n >= 2, c.ci_hi, c.mean)
    return c.mean - c.std, c.mean + c.std


def legend_series(estimators: Sequence[str]) -> list[Series]:
    """One legend entry per estimator in its colour (for a grid's shared legend)."""
    return [Series(e, [], [], est_color_at(e, i)) for i, e in enumerate(estimators)]


def curves_chart_svg(curves: Mapping[str, Curve], metric: str = "success_rate", band: str = "minmax",
                     threshold: float | None = None, show_runs: bool = True, percent: bool | None = None,
                     width: int = 900, height: int = 380, y_range: tuple[float, float] | None = None,
                     show_legend: bool = True) -> str:
    """Mean curve per estimator (thick, with markers) over a shaded band over seeds (``band``:
    "minmax": min to max; "std": mean +- sd (ddof 0); "ci": the 95% t interval of the mean,
    mean +- t_{0.975, n-1} sd / sqrt(n), the mean itself where n < 2), thin per-seed lines (``show_runs``;
    hovering one shows it at full strength), and an optional dashed ``threshold`` level.
    ``percent`` (default: a success or share metric): the y axis in percent. The y axis spans
    0 and the data (padded 5 %) unless ``y_range`` is given.

    Every point can be clicked: its ``data-pick`` is :func:`pick_value` of its iteration and run
    (a mean curve's point names its estimator's first run). A mean point's tooltip gives the
    mean, the band and the number of seeds; a seed point's its run, iteration and value (up to
    :data:`SEED_TIPS_MAX` seed points; beyond, the line's tooltip names its run).
    """
    if percent is None:
        percent = "success" in metric or "share" in metric
    seeds, means, vals = [], [], []
    n_seed_pts = sum(len(its) for c in curves.values() for its, _ in c.per_run) if show_runs else 0
    for i, (est, c) in enumerate(curves.items()):
        col = est_color_at(est, i)
        lo, hi = _band(c, band)
        x = [int(v) for v in c.iterations]
        first = c.runs[0] if c.runs else ""
        if show_runs:
            for name, (its, ys) in zip(c.runs, c.per_run, strict=True):
                tips = n_seed_pts <= SEED_TIPS_MAX
                seeds.append(Series(
                    name, its, ys, col, markers=False, legend=False, width=1, opacity=0.45,
                    picks=[pick_value(it, name) for it in its], point_tips=tips,
                    tips=[f"{name}, iteration {int(it)}: {_fmt(v, percent)}" for it, v in zip(its, ys, strict=True)]
                    if tips else None))
                vals += [v for v in ys if np.isfinite(v)]
        tips = [f"{est}, iteration {it}: mean {_fmt(m, percent)}, {BAND_LABELS.get(band, band)} "
                f"{_fmt(a, percent)} to {_fmt(b, percent)}, {int(n)} seed{'s' if n != 1 else ''} (click: {first})"
                for it, m, a, b, n in zip(x, c.mean, lo, hi, c.n, strict=True)]
        means.append(Series(f"{est} (n={int(c.n.max()) if len(c.n) else 0})", x, c.mean, col, width=3,
                            band=(lo, hi), band_label=BAND_LABELS.get(band, band),
                            picks=[pick_value(it, first) for it in x], tips=tips))
        vals += [v for arr in (c.mean, lo, hi) for v in arr if np.isfinite(v)]
    if threshold is not None:
        vals.append(threshold)
    if y_range is None and vals:
        lo_, hi_ = min(0.0, min(vals)), max(0.0, max(vals))
        pad = 0.05 * (hi_ - lo_) or 0.5
        y_range = (lo_ - (pad if lo_ < 0 else 0.0), hi_ + pad)
    marks = [Mark(threshold, f"threshold {_fmt(threshold, percent).replace('.0%', '%')}", "#555", "6 4", axis="y")] \
        if threshold is not None else []
    return chart_svg(seeds + means, x=Axis("iteration"), y=Axis(metric_label(metric), range=y_range, percent=percent),
                     marks=marks, size=(width, height), zero_line=bool(y_range and y_range[0] < 0 < y_range[1]),
                     legend=show_legend)


def iteration_panel(series: Sequence[Series], *, last_row: bool, percent: bool,
                    y_range: tuple[float, float] | None, selected: int | None, size: tuple[float, float],
                    zero_line: bool = False) -> str:
    """One small panel over training iterations for :func:`~crbc.viz.core.chart.grid_svg`: no
    legend, "iteration" under the panels of the ``last_row``, a dotted line in the highlight
    colour at the ``selected`` iteration."""
    marks = [Mark(selected, "", HIGHLIGHT, "2 3")] if selected is not None else []
    return chart_svg(series, x=Axis("iteration" if last_row else ""), y=Axis(range=y_range, percent=percent),
                     marks=marks, size=size, zero_line=zero_line, legend=False)


DIAG_PANELS = [
    ("diag.step_credit_share", "steps with non-zero step credit", True),
    ("diag.multi_action_anchors", "anchors with ≥ 2 actions", False),
    ("diag.mean_abs_step_adv", "mean |A_S| (crbc)", False),
    ("diag.rank_crbc_gigpo", "rank agreement crbc vs gigpo", False),
    ("diag.rank_crbc_visit_local", "rank agreement crbc vs visit_local", False),
    ("diag.rare_route_disagreements", "rare-route disagreements (shortest_path)", False),
]


def diagnostics_svg(runs: Sequence[Run], selected: int | None = None, cols: int = 3,
                    panel_width: int = 300, panel_height: int = 210) -> str:
    """Six small panels (:data:`DIAG_PANELS`) in a grid of ``cols``, one thin line per run
    coloured by its estimator (hovering a line names its run and draws it at full strength),
    a dotted orange line at the ``selected`` iteration in every panel, one legend of the
    estimators under the grid. A share is drawn in percent from 0. "" when no run has any of
    the diagnostics."""
    ests = list(dict.fromkeys(r.estimator for r in runs))
    panels, any_data = [], False
    for j, (key, _, pct) in enumerate(DIAG_PANELS):
        series = []
        for run in runs:
            its, vals = run.series(key)
            if len(its):
                series.append(Series(run.name, its, vals, est_color_at(run.estimator, ests.index(run.estimator)),
                                     markers=False, legend=False, width=1.5, opacity=0.7))
        any_data = any_data or bool(series)
        top = max((float(np.nanmax(s.y)) for s in series if np.isfinite(s.y).any()), default=1.0)
        panels.append(iteration_panel(series, last_row=j >= len(DIAG_PANELS) - cols, percent=pct,
                                      y_range=(0.0, top * 1.05 or 1.0) if pct else None, selected=selected,
                                      size=(panel_width, panel_height)))
    if not any_data:
        return ""
    return grid_svg(panels, [t for _, t, _ in DIAG_PANELS], cols=cols, legend=legend_series(ests))


def summary_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The experiment table (crbc.run_analysis.training_stats.summarize rows) formatted for display."""

    def pm(m, s, pct=True):
        if m is None:
            return "—"
        return f"{100 * m:.1f} ± {100 * (s or 0):.1f}" if pct else f"{m:.1f} ± {s or 0:.1f}"

    out = []
    for r in rows:
        out.append({
            "estimator": r["estimator"], "seeds": r["seeds"], "iterations": r["iterations"],
            "start success %": "—" if r["start"] is None else f"{100 * r['start']:.1f}",
            "final success % (mean ± sd)": pm(r["final"], r["final_std"]),
            "held-out success % (start)": pm(r.get("eval_start"), r.get("eval_start_std")),
            "held-out success % (last eval)": pm(r["eval_final"], r["eval_final_std"]),
            f"iterations to {100 * r['threshold']:.0f}%": (
                f"{pm(r['to_threshold'], r['to_threshold_std'], pct=False)} ({r['reached']}/{r['seeds']})"
                if r["reached"] else f"not reached (0/{r['seeds']})"),
        })
    return pd.DataFrame(out)


def runs_table(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per run: name, estimator, seed, iterations done, first and last batch success."""
    rows = []
    for r in runs:
        _, s = r.series("success_rate")
        fe = (r.meta.get("final_eval") or {}).get("eval_success_rate")
        rows.append({"run": r.label, "estimator": r.estimator, "seed": r.seed,
                     "iterations": r.last_iteration + 1,
                     "first success %": round(100 * s[0], 1) if len(s) else None,
                     "last success %": round(100 * s[-1], 1) if len(s) else None,
                     "final held-out %": None if fe is None else round(100 * fe, 1),
                     "rollouts saved": len(r.iterations_with_rollouts),
                     "model": r.meta.get("model")})
    return pd.DataFrame(rows)


def groups_table(groups: Sequence[Any]) -> pd.DataFrame:
    """One row per group of an iteration: id, rollouts, successes, success % (whole percent),
    steps, mean length (one decimal, as text)."""
    rows = []
    for g in groups:
        rows.append({"group": g.group, "rollouts": len(g), "successes": sum(r.success for r in g),
                     "success %": int(round(100 * g.success_rate)), "steps": g.n_steps,
                     "mean length": f"{g.n_steps / max(len(g), 1):.1f}"})
    return pd.DataFrame(rows)


def no_signal_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per iteration of :meth:`crbc.run_analysis.no_signal.IterationNoSignal.row`: steps,
    groups, then per reason its count and share (as "count (share %)")."""
    from crbc.run_analysis.no_signal import SHORT

    out = []
    for r in rows:
        row = {"iteration": r["iteration"], "steps": r["steps"], "groups": r["groups"]}
        for k, name in (("none", "no signal"), *SHORT.items(), ("any", "any reason")):
            sh = r[f"{k}_share"]
            row[name] = "—" if sh is None else f"{r[k]:,} ({sh:.0%})"
        out.append(row)
    return pd.DataFrame(out)


def ranked_groups_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """An iteration's groups as :func:`crbc.run_analysis.no_signal.group_rows` gives them (ranked
    by the caller): rank, group, steps, success and the no-signal shares, in whole percent."""
    from crbc.run_analysis.no_signal import SHORT

    def pct(v):
        return "—" if v is None else f"{v:.0%}"

    return pd.DataFrame([{"#": k, "group": r["group"], "steps": r["steps"],
                          "success": pct(r["success"]), "no signal": pct(r["no_signal"]),
                          **{name: pct(r[key]) for key, name in SHORT.items()}}
                         for k, r in enumerate(rows, start=1)])
