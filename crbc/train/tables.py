"""The experiment's tables as Markdown: :func:`table_markdown` (one row per estimator of
:func:`crbc.run_analysis.training_stats.summarize`) and :func:`paired_markdown` (the rows of
:func:`crbc.run_analysis.training_stats.paired_table`). Percentages are points of held-out success."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["paired_markdown", "table_markdown"]


def _pct(m: float | None, ci: Sequence[float | None] | None = None, signed: bool = False) -> str:
    if m is None:
        return "—"
    s = f"{100 * m:+.1f}" if signed else f"{100 * m:.1f}"
    if ci and ci[0] is not None and ci[1] is not None:
        return f"{s} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
    return s


def table_markdown(rows: Sequence[dict[str, Any]], final_window: int = 3) -> str:
    """The experiment table: held-out success (%) with 95% t intervals over seeds."""
    thr = rows[0]["threshold"] if rows else 0.5
    lines = [f"| estimator | seeds | iterations | held-out success at start | held-out success at end "
             f"| gain (points) | batch success, last {final_window} it. "
             f"| iterations to {100 * thr:.0f}% held-out (runs reaching it) "
             f"| credit accuracy: Spearman with exact A_t |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        reach = (f"{r['eval_to_threshold']:.1f} ({r['eval_reached']}/{r['seeds']})" if r["eval_reached"]
                 else f"not reached (0/{r['seeds']})")
        lines.append(f"| {r['estimator']} | {r['seeds']} | {r['iterations']} "
                     f"| {_pct(r['eval_start'], r['eval_start_ci'])} | {_pct(r['eval_final'], r['eval_final_ci'])} "
                     f"| {_pct(r['gain'], r['gain_ci'], signed=True)} | {_pct(r['final'], r['final_ci'])} "
                     f"| {reach} | {_num(r.get('truth_spearman'), r.get('truth_spearman_ci'))} |")
    return "\n".join(lines)


def _num(m: float | None, ci: Sequence[float | None] | None = None) -> str:
    if m is None:
        return "—"
    if ci and ci[0] is not None and ci[1] is not None:
        return f"{m:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{m:.2f}"


def _p(p: float) -> str:
    """A p-value to print: four decimals, or two significant digits below 0.0001."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def paired_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The paired comparisons as Markdown (difference in points of held-out success)."""
    lines = ["| comparison | difference (points) [95% CI] | seeds A > B | p (sign flips over seeds) "
             "| p (sign flips over levels; the trained policies held fixed) |", "|---|---|---|---|---|"]
    for r in rows:
        if r["diff"] is None:
            lines.append(f"| {r['a']} - {r['b']} | — | — | — | — |")
            continue
        lines.append(f"| {r['a']} - {r['b']} | {_pct(r['diff'], r['ci'], signed=True)} "
                     f"| {r['wins']}/{r['seeds']} | {_p(r['p_seeds'])} | {_p(r['p_levels'])} |")
    return "\n".join(lines)
