"""The experiment's figure as a PNG: held-out success and batch success per estimator, 95% bands.

    .venv/bin/python experiments/training_figure.py sample_rollouts/runs/sokoban-6x6 docs/training-curves.png

Left: held-out success (the evaluations during training and the final one after the last
update) with the 95% t interval over seeds; middle: batch success on the fresh training levels
(3-iteration trailing average), same band; right: credit accuracy during training, the Spearman
correlation of each estimator's step signal with the exact advantage on its own runs' batches
(``diag.truth_spearman.<estimator>``, every 2nd iteration). Drawn as one SVG (crbc.viz.run_curves,
crbc.viz.core.chart: three panels, one legend) and rendered by the local chromium through
playwright, with the same flags as the browser benchmark (devtools/apprunner.py); nothing leaves
the machine. An output path ending in ``.svg`` writes the standalone SVG instead of a PNG.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devtools.apprunner import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

TITLES = ["held-out success, 64 fresh levels x 4", "batch success, fresh levels, 3-it. avg",
          "credit accuracy: Spearman with exact A_t"]


def figure(run_dir: Path, estimators=("grpo", "gigpo", "crbc", "visit_local")) -> str:
    """The three panels as one SVG (no plotly): the 95% band of each estimator's mean."""
    from crbc.io.runs import find_runs, read_run
    from crbc.run_analysis.training_stats import curves, order_runs
    from crbc.viz.core.chart import grid_svg
    from crbc.viz.run_curves import curves_chart_svg, legend_series

    runs = order_runs([read_run(p) for p in find_runs(run_dir)], estimators)
    size = dict(width=430, height=340, show_legend=False)
    held = curves_chart_svg(curves(runs, "eval_success_rate", with_final=True), "eval_success_rate", band="ci",
                            show_runs=False, y_range=(0, 0.6), **size)
    batch = curves_chart_svg(curves(runs, "success_rate", smooth=3), "success_rate", band="ci", show_runs=False,
                             y_range=(0, 0.6), **size)
    acc: dict = {}
    for est in dict.fromkeys(r.estimator for r in runs):
        acc.update(curves([r for r in runs if r.estimator == est], f"diag.truth_spearman.{est}"))
    truth = curves_chart_svg(acc, "spearman", band="ci", show_runs=False, percent=False, y_range=(-0.2, 1), **size)
    return grid_svg([held, batch, truth], TITLES, cols=3,
                    legend=legend_series(list(dict.fromkeys(r.estimator for r in runs))))


def standalone(svg: str) -> str:
    """An SVG string as a file of its own (the namespace an embedded drawing does without)."""
    return svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)


def render_png(svg: str, path: str | Path, width: int = 1320) -> None:
    """Render an SVG to a PNG with the local chromium (no network)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "fig.html"
        html.write_text(f"<!doctype html><meta charset=utf-8><body style='margin:10px;width:{width - 20}px'>{svg}",
                        encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": width, "height": 400})
            page.goto(html.as_uri(), timeout=60_000)
            page.wait_for_selector("svg", timeout=60_000)
            page.screenshot(path=str(path), full_page=True)
            browser.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", help="folder holding the run folders")
    ap.add_argument("png", help="PNG to write (or .svg: the drawing itself)")
    args = ap.parse_args()
    svg = figure(Path(args.runs))
    if args.png.endswith(".svg"):
        Path(args.png).write_text(standalone(svg), encoding="utf-8")
    else:
        render_png(svg, args.png)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
