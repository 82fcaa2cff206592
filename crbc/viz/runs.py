"""Figures of saved training runs: learning curves per estimator and per-iteration diagnostics.

Pure builders: they take :class:`crbc.train.analysis.Curve` / :class:`crbc.io.runs.Run` objects (computed by
:mod:`crbc.train.analysis`) and return plotly figures or pandas tables; no estimates are computed here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from crbc.io.runs import Run
from crbc.train.analysis import Curve
from crbc.viz.charts import est_color

_FALLBACK = ["#2ca02c", "#d62728", "#8c564b", "#e377c2", "#bcbd22"]

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
    spelled out)."""
    if metric in METRIC_LABELS:
        return METRIC_LABELS[metric]
    for key, label, _pct in DIAG_PANELS:
        if key == metric:
            return f"diagnostic: {label}"
    words = metric.removeprefix("diag.").replace("_", " ").replace(".", " ")
    return ("diagnostic: " + words) if metric.startswith("diag.") else words


def color(estimator: str, i: int = 0) -> str:
    return est_color(estimator, _FALLBACK[i % len(_FALLBACK)])


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[k:k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _joined(lines: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several runs' lines ``(name, x, y)`` as one line trace: x and y joined with a NaN between
    runs (plotly breaks the line there), and per point ``customdata`` = [iteration, run name]
    (``[None, None]`` at a break). One trace per estimator instead of one per run: a browser pays
    for every trace (32 runs x 6 panels were 192 traces on the Training runs page)."""
    xs, ys, cd = [], [], []
    for name, x, y in lines:
        if xs:
            xs.append(np.array([np.nan]))
            ys.append(np.array([np.nan]))
            cd.append([[None, None]])
        xs.append(np.asarray(x, dtype=float))
        ys.append(np.asarray(y, dtype=float))
        cd.append([[int(i), name] for i in x])
    out = np.empty((sum(len(c) for c in cd), 2), dtype=object)
    out[:] = [row for c in cd for row in c] or np.empty((0, 2), dtype=object)
    return np.concatenate(xs) if xs else np.array([]), np.concatenate(ys) if ys else np.array([]), out


def curves_figure(curves: Mapping[str, Curve], metric: str = "success_rate", band: str = "minmax",
                  threshold: float | None = None, show_runs: bool = True, height: int = 420,
                  title: str | None = None, percent: bool | None = None) -> go.Figure:
    """Mean curve per estimator with a shaded band over seeds (``band``: "minmax", "std" or "ci",
    the 95% t interval of the mean),
    thin per-seed lines (``show_runs``), and an optional dashed threshold line.

    Each point's ``customdata`` is ``[iteration, run name]`` (a mean curve names its estimator's
    first run), so a click can select that run and iteration.
    """
    if percent is None:
        percent = "success" in metric or "share" in metric
    k = 100.0 if percent else 1.0
    fig = go.Figure()
    for i, (est, c) in enumerate(curves.items()):
        col = color(est, i)
        lo, hi = {"minmax": (c.lo, c.hi), "ci": (np.nan_to_num(c.ci_lo, nan=c.mean[0] if len(c.mean) else 0),
                                                  np.nan_to_num(c.ci_hi, nan=c.mean[0] if len(c.mean) else 0))
                  }.get(band, (c.mean - c.std, c.mean + c.std))
        if band == "ci":
            lo, hi = np.where(c.n >= 2, lo, c.mean), np.where(c.n >= 2, hi, c.mean)
        x = c.iterations
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=k * np.r_[hi, lo[::-1]], fill="toself", mode="lines",
                                 fillcolor=_rgba(col, 0.15), line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=est, name=f"{est} spread"))
        if show_runs and c.runs:
            xs, ys, cd = _joined([(name, its, k * vals) for name, (its, vals) in zip(c.runs, c.per_run, strict=True)])
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", legendgroup=est,
                                     line=dict(color=_rgba(col, 0.45), width=1), showlegend=False,
                                     name=f"{est} seeds", customdata=cd,
                                     hovertemplate="%{customdata[1]}<br>iteration %{x}: %{y:.1f}<extra></extra>"
                                     if percent else "%{customdata[1]}<br>iteration %{x}: %{y:.3g}<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=x, y=k * c.mean, mode="lines+markers", name=f"{est} (n={int(c.n.max())})", legendgroup=est,
            line=dict(color=col, width=3), marker=dict(size=6),
            customdata=[[int(i), c.runs[0] if c.runs else ""] for i in x],
            hovertemplate=(f"{est}<br>iteration %{{x}}<br>mean %{{y:.1f}}" + ("%" if percent else "")
                           + "<extra></extra>")))
    if threshold is not None:
        fig.add_hline(y=k * threshold, line=dict(color="#555", dash="dash", width=1),
                      annotation_text=f"threshold {k * threshold:g}{'%' if percent else ''}",
                      annotation_position="top left")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 20, b=40),
                      plot_bgcolor="white", title=title, legend=dict(orientation="h", y=-0.18),
                      hovermode="closest")
    fig.update_xaxes(title="iteration", gridcolor="#eee", dtick=None)
    fig.update_yaxes(title=metric_label(metric) + (" (%)" if percent else ""),
                     gridcolor="#eee", rangemode="tozero")
    return fig


DIAG_PANELS = [
    ("diag.step_credit_share", "steps with non-zero step credit", True),
    ("diag.multi_action_anchors", "anchors with ≥ 2 actions", False),
    ("diag.mean_abs_step_adv", "mean |A_S| (crbc)", False),
    ("diag.rank_crbc_gigpo", "rank agreement crbc vs gigpo", False),
    ("diag.rank_crbc_visit_local", "rank agreement crbc vs visit_local", False),
    ("diag.rare_route_disagreements", "rare-route disagreements (shortest_path)", False),
]


@functools.lru_cache(maxsize=4)
def _diag_layout(height: int) -> str:
    """The six-panel grid's layout as JSON (make_subplots validates it: 0.2 s, so once)."""
    fig = make_subplots(rows=2, cols=3, subplot_titles=[t for _, t, _ in DIAG_PANELS],
                        horizontal_spacing=0.07, vertical_spacing=0.16)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=40), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.1))
    fig.update_xaxes(gridcolor="#eee")
    fig.update_yaxes(gridcolor="#eee")
    fig.update_annotations(font_size=12)
    return fig.layout.to_json()


def diagnostics_figure(runs: Sequence[Run], height: int = 560, selected: int | None = None) -> go.Figure:
    """Six panels, one per diagnostic, one line per run (coloured by its estimator; the runs of
    one estimator are one trace per panel, broken between runs).

    Built from plain trace dicts without plotly's per-property validation (``_validate=False``)
    on a cached grid layout: with 20 runs the validated build (120 ``add_trace(row=, col=)`` and
    6 ``add_vline``) took 0.9 s, most of the Training runs page's server time. The dicts use only
    standard scatter properties; tests/test_viz.py checks the figure against a validated copy.
    """
    seen: set[str] = set()
    ests = list(dict.fromkeys(r.estimator for r in runs))
    traces = []
    for est in ests:
        col = color(est, ests.index(est))
        for j, (key, _, pct) in enumerate(DIAG_PANELS):
            lines = [(run.name, its, 100 * vals if pct else vals)
                     for run in runs if run.estimator == est for its, vals in [run.series(key)] if len(its)]
            if not lines:
                continue
            ax = "" if j == 0 else str(j + 1)
            xs, ys, cd = _joined(lines)  # one trace per estimator and panel, a break between runs
            traces.append(dict(
                type="scatter", x=xs, y=ys, mode="lines", name=est,
                legendgroup=est, showlegend=est not in seen, line=dict(color=col, width=1.5),
                customdata=cd, xaxis="x" + ax, yaxis="y" + ax,
                hovertemplate="%{customdata[1]}<br>iteration %{x}: %{y:.3g}<extra></extra>"))
            seen.add(est)
    layout = json.loads(_diag_layout(height))
    if selected is not None:
        layout["shapes"] = [
            dict(type="line", xref="x" + ax, yref=f"y{ax} domain", x0=selected, x1=selected, y0=0, y1=1,
                 line=dict(color="#ff7f0e", dash="dot", width=1))
            for ax in ("" if j == 0 else str(j + 1) for j in range(len(DIAG_PANELS)))]
    return go.Figure(data=traces, layout=layout, _validate=False)


def summary_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The experiment table (crbc.train.analysis.summarize rows) formatted for display."""

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
        rows.append({"run": r.name, "estimator": r.estimator, "seed": r.seed,
                     "iterations": r.last_iteration + 1,
                     "first success %": round(100 * s[0], 1) if len(s) else None,
                     "last success %": round(100 * s[-1], 1) if len(s) else None,
                     "final held-out %": None if fe is None else round(100 * fe, 1),
                     "rollouts saved": len(r.iterations_with_rollouts),
                     "model": r.meta.get("model")})
    return pd.DataFrame(rows)


def groups_table(groups: Sequence[Any]) -> pd.DataFrame:
    """One row per group of an iteration: id, rollouts, successes, steps, mean length."""
    rows = []
    for g in groups:
        rows.append({"group": g.group, "rollouts": len(g), "successes": sum(r.success for r in g),
                     "success %": round(100 * g.success_rate, 1), "steps": g.n_steps,
                     "mean length": round(g.n_steps / max(len(g), 1), 1)})
    return pd.DataFrame(rows)
