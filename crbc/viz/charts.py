"""Tables and charts of computed credits and depth sweeps (no estimator math here): HTML for
the per-step credit views, SVG (:mod:`crbc.viz.svg_charts`) for the curves over the depth K."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crbc.estimators.closure import DepthSweep
from crbc.estimators.coverage import Coverage
from crbc.estimators.registry import Credits, UnknownEstimatorError, get
from crbc.explain.anchor_names import anchor_labels
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process
from crbc.viz.style import HIGHLIGHT, OUTCOME_COLORS, TRUTH_COLOR, symmetric_range
from crbc.viz.svg_charts import Mark, Series, line_chart_svg

TRAINER_COLOR = "#6b6f76"  #: the trainer's own advantage beside the estimators

FIELDS = {
    "step_advantage": "A_S (normalised step credit)",
    "advantage": "A_final = w_G·A_G + w_S·A_S",
    "credit": "Q − V (raw step credit)",
}
LOG_FLOOR = 1e-16  # zero errors are drawn at this floor on log axes


def est_color(name: str, fallback: str | None = None) -> str | None:
    """The registry's colour of estimator ``name`` (``fallback`` for a name it does not know)."""
    try:
        return get(name).color
    except UnknownEstimatorError:
        return fallback


def est_label(name: str) -> str:
    """The registry's display label of estimator ``name`` (the name itself if it is unknown)."""
    try:
        return get(name).label
    except UnknownEstimatorError:
        return name


def outcome(r) -> str:
    if r.truncated:
        return "truncated"
    return "success" if r.success else "failure"


def field_N(c: Credits, field: str) -> np.ndarray | None:
    """Per-step values of ``field`` (``step_advantage``, ``advantage`` or ``credit``)."""
    return {"step_advantage": c.step_advantage_N, "advantage": c.advantage_N,
            "credit": c.credit_N}[field]


def rollouts_table(group: RolloutGroup, c: Credits) -> pd.DataFrame:
    """One row per rollout: index, length, outcome, score, A_G."""
    return pd.DataFrame({
        "rollout": [r.rollout for r in group.rollouts],
        "length": [len(r.steps) for r in group.rollouts],
        "outcome": [outcome(r) for r in group.rollouts],
        "score": [r.effective_score for r in group.rollouts],
        "A_G": np.round(c.group_advantage_R, 4),
    })


def steps_table(group: RolloutGroup, r: int, c: Credits) -> pd.DataFrame:
    """One row per step of rollout ``r``: ``t`` (0-based, as the files number steps), anchor,
    action, reward, V, Q, Q - V, A_S, A_final."""
    p = c.process
    sl = c.rollout_slice(r)
    labels = anchor_labels(p)
    steps = group.rollouts[r].steps

    def col(x):
        return np.round(x[sl], 4) if x is not None else [None] * len(steps)

    return pd.DataFrame({
        "t": np.arange(len(steps)),
        "anchor": [labels[s] for s in p.step_state[sl]],
        "action": [s.action for s in steps],
        "reward": [s.reward for s in steps],
        "V(s)": col(c.value_N), "Q(s,a)": col(c.q_N), "Q−V": col(c.credit_N),
        "A_S": col(c.step_advantage_N), "A_final": col(c.advantage_N),
    })


def step_credit_bars_html(c: Credits, r: int, step: int | None = None, field: str = "step_advantage",
                          height: int = 160) -> str:
    """One rollout's per-step credit as plain HTML bars (no script, nothing that an
    HTML sanitiser strips): blue above zero, red below, the current step outlined; each bar's
    tooltip names the step's action and value."""
    import html as _html

    vals = field_N(c, field)
    sl = c.rollout_slice(r)
    y = vals[sl] if vals is not None else np.zeros(sl.stop - sl.start)
    z = symmetric_range(vals)
    acts = [c.process.action_names[a] for a in c.process.sa_action[c.process.step_sa[sl]]]
    every = max(1, len(y) // 20)
    bars, ticks = [], []
    for i, v in enumerate(y):
        pct = min(abs(float(v)) / z * 50.0, 50.0)
        side = "bottom" if v > 0 else "top"
        color = "#2166ac" if v > 0 else "#b2182b"
        edge = f"outline:3px solid {HIGHLIGHT};" if step is not None and i == step else ""
        tip = _html.escape(f"step {i}: {acts[i]}  {FIELDS[field]} = {float(v):+.3f}")
        bars.append(f'<div class="crbc-bar" title="{tip}" style="flex:1;position:relative">'
                    f'<div style="position:absolute;left:10%;right:10%;{side}:50%;height:{pct:.2f}%;'
                    f'min-height:1px;background:{color};{edge}"></div></div>')
        label = str(i) if i % every == 0 else ""  # 0-based, as the tooltips and files
        ticks.append(f'<div style="flex:1;text-align:center">{label}</div>')
    axis = (f'<div style="width:44px;display:flex;flex-direction:column;justify-content:space-between;'
            f'text-align:right;padding-right:6px;color:#666">'
            f'<span>{z:+.2g}</span><span>0</span><span>{-z:+.2g}</span></div>')
    plot = (f'<div style="flex:1;display:flex;gap:2px;position:relative;height:{height}px">'
            f'<div style="position:absolute;left:0;right:0;top:50%;border-top:1px solid #888"></div>'
            + "".join(bars) + "</div>")
    return (f'<div class="crbc-step-bars" style="font:12px sans-serif">'
            f'<div style="display:flex">{axis}{plot}</div>'
            f'<div style="display:flex;margin-left:44px;gap:2px;color:#666">{"".join(ticks)}</div></div>')


def timeline_chart_svg(all_credits: Mapping[str, Credits], r: int, field: str = "step_advantage",
                       truth_R: np.ndarray | None = None, width: int = 880, height: int = 300,
                       trainer_R: np.ndarray | None = None) -> str:
    """One rollout's per-step ``field`` under every estimator (a line each, in the registry's
    colour and label; an estimator without the field is left out) as SVG, steps numbered from 0.
    With ``trainer_R`` (the trainer's own advantage of the rollout's steps, NaN where none), a
    dashed grey line "trainer" on the left axis (an advantage: compare it with A_final). With ``truth_R``, the
    exact A_t of the same steps as a dashed black line on a right axis (return units, where the
    estimators' signals may be normalised); both axes are then symmetric about 0, so the two
    zero lines coincide."""
    series = []
    for name, c in all_credits.items():
        vals = field_N(c, field)
        if vals is None:
            continue
        sl = c.rollout_slice(r)
        series.append(Series(est_label(name), np.arange(0, sl.stop - sl.start), vals[sl],
                             est_color(name) or "#555"))
    if trainer_R is not None and np.isfinite(trainer_R).any():
        series.append(Series("trainer (its advantage)", np.arange(0, len(trainer_R)), trainer_R, TRAINER_COLOR,
                             dash="2 3"))
    if truth_R is not None:
        series.append(Series("truth (A_t, right axis)", np.arange(0, len(truth_R)), truth_R, TRUTH_COLOR,
                             dash="6 4", right_axis=True))
    return line_chart_svg(series, x_title="step (0-based)", y_title=FIELDS[field].split(" (")[0],
                          y2_title="true A_t" if truth_R is not None else "",
                          y_symmetric=truth_R is not None, zero_line=True, width=width, height=height)


def scatter_chart_svg(cx: Credits, cy: Credits, field: str = "step_advantage", width: int = 520,
                      height: int = 420) -> str:
    """Per-step ``field`` of estimator ``cx`` (x) against ``cy`` (y) as an SVG scatter, a dot per
    step coloured by its rollout's outcome (a time-out counts as a failure), both axes on
    +-(the largest |value|) x 1.05 with the dotted diagonal y = x; a dot's tooltip names its
    rollout, step and both values. An estimator without the field counts as all zero."""
    p = cx.process
    x, y = field_N(cx, field), field_N(cy, field)
    x = np.zeros(p.n_steps) if x is None else x
    y = np.zeros(p.n_steps) if y is None else y
    succ = p.rollout_success[p.step_rollout]
    xl, yl = est_label(cx.estimator), est_label(cy.estimator)
    lim = symmetric_range(x, y) * 1.05
    series = [Series("y = x", [-lim, lim], [-lim, lim], "#bbb", dash="2 3", markers=False, legend=False, width=1)]
    for label, mask in (("success", succ), ("failure", ~succ)):
        idx = np.flatnonzero(mask)
        tips = [f"rollout r{int(p.rollout_index[p.step_rollout[n]])}, step {int(p.step_t[n]) - 1}: "
                f"{xl} {x[n]:+.3f}, {yl} {y[n]:+.3f}" for n in idx]
        series.append(Series(f"step of a {label}", x[idx], y[idx], OUTCOME_COLORS[label], lines=False,
                             marker_r=3.0, tips=tips))
    return line_chart_svg(series, x_title=f"{xl} ({FIELDS[field].split(' (')[0]})",
                          y_title=f"{yl} ({FIELDS[field].split(' (')[0]})", y_range=(-lim, lim),
                          zero_line=True, x_marks=[Mark(0.0, "", "#888", dash=None)], width=width, height=height)


def convergence_chart_svg(sw: DepthSweep, k: int | None = None, tol: float = 1e-6, width: int = 420) -> str:
    """||V^(K) - V||, ||A^(K) - A_inf|| and the Cor. 3 bound against K on a log axis (zero errors
    drawn at :data:`LOG_FLOOR`); the tolerance as a dotted level labelled where it is farthest
    from every curve; a green line where the advantages converge, an orange one at ``k``."""
    ks = np.arange(sw.k_max + 1)
    err_v, err_a = np.maximum(sw.err_v_K, LOG_FLOOR), np.maximum(sw.err_a_K, LOG_FLOOR)
    series = [Series("‖V^(K) − V‖∞", ks, err_v, "#2a6fdb"), Series("‖A^(K) − A∞‖∞", ks, err_a, "#d62728")]
    bound = np.where(np.isfinite(sw.bound_K), sw.bound_K, np.nan)
    if np.isfinite(bound).any():
        series.append(Series("Cor. 3 bound on ‖A^(K) − A∞‖∞", ks, bound, "#555", dash="6 4", markers=False))
    marks = []
    conv = sw.converged_at(tol)
    if conv is not None:
        marks.append(Mark(conv, f"converged at K = {conv}", "#2e9e44", dash=None))
    if k is not None:
        marks.append(Mark(k, f"K = {k}", HIGHLIGHT))
    level = Mark(tol, f"tolerance {tol:g}", "#999", "2 3", label_x=_free_spot(tol, [err_v, err_a, bound]))
    return line_chart_svg(series, x_title="depth K (rounds of backup)",
                          y_title="sup-norm error (log)", log_y=True, x_marks=marks, y_marks=[level],
                          width=width, height=280)


def _free_spot(level: float, curves: list[np.ndarray]) -> int:
    """The K at which a label on the horizontal line y = ``level`` (log axis) is farthest, in
    decades, from every curve drawn there (NaN or non-positive points are not drawn); ties go
    to the smallest K."""
    gaps = []
    for k in range(len(curves[0])):
        d = [abs(np.log10(c[k]) - np.log10(level)) for c in curves if np.isfinite(c[k]) and c[k] > 0]
        gaps.append(min(d) if d else np.inf)
    return int(np.argmax(np.minimum(gaps, 1e9)))


def coverage_chart_svg(cov: Coverage, k: int | None = None, width: int = 420) -> str:
    """Evidence coverage against K (the paper's Fig. 5): the mean over anchors of the share of
    the group's outcomes V^(K)(s) has heard of, its least-covered anchor, and the share of
    anchors whose evidence is already complete (all they can ever hear); a line at ``k``."""
    ks = np.arange(cov.k_max + 1)
    frac = cov.fraction_KS
    least = frac.min(axis=1) if frac.shape[1] else np.zeros(len(ks))
    done = (cov.count_KS == cov.saturated_S[None, :]).mean(axis=1) if frac.shape[1] else np.ones(len(ks))
    series = [Series("mean share of outcomes heard", ks, cov.mean_fraction_K, "#2a6fdb"),
              Series("least-covered anchor", ks, least, "#9467bd", dash="2 3", markers=False),
              Series("anchors with complete evidence", ks, done, "#2e9e44", markers=False)]
    marks = [Mark(k, f"K = {k}", HIGHLIGHT)] if k is not None else []
    return line_chart_svg(series, x_title="depth K", y_title="share", y_range=(0.0, 1.05), percent_y=True,
                          x_marks=marks, width=width, height=230)


def sweep_table(p: Process, sw: DepthSweep, k: int) -> pd.DataFrame:
    """Per observed (anchor, action): visits, mu, Q^(K), A^(K) and the closure's Q, A_inf."""
    labels = anchor_labels(p)
    df = pd.DataFrame({
        "anchor": [labels[s] for s in p.sa_state],
        "action": [p.action_names[a] for a in p.sa_action],
        "N(s,a)": p.n_sa,
        "mu(a|s)": np.round(p.mu, 3),
        f"Q^({k})": np.round(sw.q_KSA[k], 4),
        f"A^({k})": np.round(sw.a_KSA[k], 4),
        "Q closure": np.round(sw.q_SA, 4),
        "A∞ closure": np.round(sw.a_SA, 4),
        "|A^(K) − A∞|": np.abs(sw.a_KSA[k] - sw.a_SA),
    })
    return df.sort_values(["|A^(K) − A∞|", "N(s,a)"], ascending=[False, False]).reset_index(drop=True)


def credits_frame(all_credits: Mapping[str, Credits], intervals: Mapping[str, Any] | None = None,
                  trainer_N: np.ndarray | None = None) -> pd.DataFrame:
    """Long table, one row per (estimator, step), for CSV export: :func:`crbc.viz.credit_table.credit_table`
    (steps numbered from 0, the evidence, the interval and the trainer's advantage of each step)."""
    from crbc.viz.credit_table import credit_table

    return credit_table(all_credits, intervals, trainer_N)


def credits_jsonl(c: Credits, intervals: Any = None) -> str:
    """``crbc.credit/1`` JSON Lines of one estimator (one line per rollout); with ``intervals``
    (its :class:`crbc.estimators.bootstrap.CreditIntervals` on the same process) each line also
    carries ``credit_interval`` and ``evidence`` per step (docs/FORMATS.md)."""
    import json

    if intervals is not None:
        from crbc.io.creditfile import encoded_chunks

        return b"".join(encoded_chunks(c, intervals)).decode()
    return "".join(json.dumps(rec) + "\n" for rec in c.records())
