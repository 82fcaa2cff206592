"""The reliability figure of the credit intervals: nominal level against measured coverage.

Input: the report of ``python -m experiments.calibrate_intervals report``
(``sample_rollouts/interval-calibration.json``, schema ``crbc.interval-calibration-report/1``):
rows with ``setting``, ``G``, ``method`` and ``coverage_<L>`` for L in 0.8, 0.9, 0.95. One panel
per setting (small multiples, :func:`crbc.viz.core.chart.grid_svg`): a line per (method, G)
through (L, coverage at L), the diagonal coverage = L with a band of +-6 points (the target).
"""

from __future__ import annotations

from typing import Any

from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, grid_svg
from crbc.viz.core.series import Series

__all__ = [
    "calibration_rows", "COLORS", "coverage_range", "interval_note", "LEVELS", "load_report", "NAMES",
    "reliability_svg", "REPORT_NAME"
]

LEVELS = (0.8, 0.9, 0.95)
COLORS = {8: "#2a6fdb", 16: "#e07b39", 32: "#3a9a5b"}
NAMES = {"calibrated": "calibrated", "range": "resampling range"}


def reliability_svg(report: dict[str, Any]) -> str:
    """The figure (module docstring) as one SVG string."""
    rows = report["rows"]
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    panels = []
    legend: list[Series] = []
    for k, setting in enumerate(settings):
        series = [Series("nominal (target +-6 points)", LEVELS, LEVELS, "#888888", dash="4 3", markers=False,
                         band=([x - 0.06 for x in LEVELS], [x + 0.06 for x in LEVELS]), band_label="+-6 points")]
        for r in rows:
            if r["setting"] != setting:
                continue
            y = [r.get(f"coverage_{x:g}") for x in LEVELS]
            y = [float("nan") if v is None else v for v in y]
            tips = [f"{NAMES.get(r['method'], r['method'])}, G = {r['G']}: nominal {x:.0%}, measured {v:.1%}"
                    for x, v in zip(LEVELS, y, strict=True)]
            series.append(Series(f"{NAMES.get(r['method'], r['method'])}, G = {r['G']}", LEVELS, y,
                                 COLORS.get(r["G"], "#555555"), dash=None if r["method"] == "calibrated" else "2 3",
                                 tips=tips))
        panels.append(chart_svg(series, x=Axis("nominal level", ticks=[(x, f"{x:.0%}") for x in LEVELS]),
                                y=Axis("measured coverage", range=(0.3, 1.0), percent=True), size=(300, 260),
                                legend=False))
        if k == 0:
            legend = series
    return grid_svg(panels, settings, cols=3, legend=legend)


REPORT_NAME = "interval-calibration.json"  #: in sample_rollouts/ (experiments/calibrate_intervals.py)


def load_report(samples_dir) -> dict[str, Any] | None:
    """The shipped calibration report in ``samples_dir``, or None when absent or unreadable."""
    import json
    from pathlib import Path

    path = Path(samples_dir) / REPORT_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def coverage_range(report: dict[str, Any] | None, level: float = 0.9, method: str = "calibrated"
                   ) -> tuple[float, float] | None:
    """(lowest, highest) measured coverage at ``level`` over the report's settings and G."""
    if not report:
        return None
    vals = [r.get(f"coverage_{level:g}") for r in report.get("rows", []) if r.get("method") == method]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return (min(vals), max(vals)) if vals else None


def interval_note(report: dict[str, Any] | None, level: float = 0.9) -> str:
    """One sentence for the pages: what the calibrated interval at ``level`` is and how well it
    was measured to hold (from the shipped report; says so when there is none)."""
    cr = coverage_range(report, level)
    if cr is None or abs(level - 0.9) > 1e-9 and abs(level - 0.8) > 1e-9 and abs(level - 0.95) > 1e-9:
        return (f"The {level:.0%} interval's coverage was not measured at this level: read it as a "
                "spread, not a guarantee.")
    rr = coverage_range(report, level, "range")
    tail = "" if rr is None else (f" (the plain resampling range, `--interval range`: "
                                  f"{rr[0]:.0%}-{rr[1]:.0%})")
    return (f"Calibrated on toy tasks: on held-out levels of sokoban (weak and strong policy) and "
            f"gridworld, G = 8, 16, 32, the {level:.0%} interval held the exact anchor-level truth "
            f"{cr[0]:.0%}-{cr[1]:.0%} of the time{tail}. On your own task it is an estimate: the "
            "calibration transfers only to similar tasks and policies.")


def calibration_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report as table rows (percent, one decimal): setting, G, method, coverage at each
    level, sure share and sure-sign agreement at 90%."""
    def pct(v):
        return None if v is None else round(100 * v, 1)

    return [{"setting": r["setting"], "G": r["G"], "interval": NAMES.get(r["method"], r["method"]),
             **{f"coverage at {x:.0%}": pct(r.get(f"coverage_{x:g}")) for x in LEVELS},
             "sure share": pct(r.get("sure_share")), "sure sign agreement": pct(r.get("sure_sign"))}
            for r in report["rows"]]
