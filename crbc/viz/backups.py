"""The Bellman backups' figures: convergence and evidence coverage over the depth K, the
truth's gap, and the sweep's table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crbc.estimators.closure import DepthSweep
from crbc.estimators.coverage import Coverage
from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg
from crbc.viz.core.series import Mark, Series
from crbc.viz.core.style import HIGHLIGHT, TRUTH_COLOR

__all__ = ["convergence_chart_svg", "coverage_chart_svg", "LOG_FLOOR", "sweep_table", "truth_gap_chart_svg"]

LOG_FLOOR = 1e-16  # zero errors are drawn at this floor on log axes


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
    level = Mark(tol, f"tolerance {tol:g}", "#999", "2 3", label_x=_free_spot(tol, [err_v, err_a, bound]), axis="y")
    return chart_svg(series, x=Axis("depth K (rounds of backup)"), y=Axis("sup-norm error (log)", log=True),
                     marks=[*marks, level], size=(width, 280))


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
    return chart_svg(series, x=Axis("depth K"), y=Axis("share", range=(0.0, 1.05), percent=True), marks=marks,
                     size=(width, 230))


def sweep_table(p: Process, sw: DepthSweep, k: int, rows: int | None = None) -> pd.DataFrame:
    """Per observed (anchor, action): visits, mu, Q^(K), A^(K) and the closure's Q, A_inf, and the
    gap |A^(K) - A_inf|; sorted by the gap, then the visits N(s,a), both descending (ties in the
    order of ``p``'s pairs, a NaN gap last, as pandas sorts). With ``rows``, only the first
    ``rows`` rows of that order, built without the others (a 20,000-anchor group has 48,754)."""
    gap = np.abs(sw.a_KSA[k] - sw.a_SA)
    order = np.lexsort((-np.asarray(p.n_sa), np.where(np.isnan(gap), np.inf, -gap)))
    if rows is not None:
        order = order[:max(int(rows), 0)]
    labels = anchor_labels(p)
    return pd.DataFrame({
        "anchor": [labels[s] for s in p.sa_state[order]],
        "action": [p.action_names[a] for a in p.sa_action[order]],
        "N(s,a)": p.n_sa[order],
        "mu(a|s)": np.round(p.mu[order], 3),
        f"Q^({k})": np.round(sw.q_KSA[k][order], 4),
        f"A^({k})": np.round(sw.a_KSA[k][order], 4),
        "Q closure": np.round(sw.q_SA[order], 4),
        "A∞ closure": np.round(sw.a_SA[order], 4),
        "|A^(K) − A∞|": gap[order],
    })


def truth_gap_chart_svg(gap_K: np.ndarray, gap_closure: float, to_closure_K: np.ndarray,
                        k: int | None = None) -> str:
    """||V^(K) - V_true|| against K, the closure's own distance from the truth (a dashed
    level), and ||V^(K) - V_closure|| (dotted): the backups close the second gap, never the
    first."""
    ks = np.arange(len(gap_K))
    series = [Series("V^(K) vs truth", ks, gap_K, TRUTH_COLOR, markers=False),
              Series("V^(K) vs closure", ks, to_closure_K, "#2a6fdb", dash="2 3", markers=False)]
    top = max(float(np.nanmax(gap_K)), float(np.nanmax(to_closure_K)), gap_closure) * 1.08 or 1.0
    marks = [Mark(k, f"K = {k}", HIGHLIGHT, dash=None)] if k is not None else []
    marks.append(Mark(gap_closure, f"closure vs truth {gap_closure:.3f}", "#c0392b", "6 4", label_x=float(ks[-1]),
                      axis="y"))
    return chart_svg(series, x=Axis("depth K"), y=Axis("mean |V − V_true|", range=(0.0, top)), marks=marks,
                     size=(420, 260))
