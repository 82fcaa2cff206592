"""The experiment's figure as a PNG: held-out success and batch success per estimator, 95% bands.

    .venv/bin/python benchmarks/training_figure.py sample_rollouts/runs/sokoban-6x6 docs/training-curves.png

Left: held-out success (the evaluations during training and the final one after the last
update) with the 95% t interval over seeds; right: batch success on the fresh training levels
(3-iteration trailing average), same band. Drawn with plotly (crbc.viz.runs) and rendered by
the local chromium through playwright, with the same flags as the browser benchmark
(benchmarks/apprunner.py); nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.apprunner import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def figure(run_dir: Path, estimators=("grpo", "gigpo", "crbc", "visit_local")):
    from plotly.subplots import make_subplots

    from crbc.analysis import curves, order_runs
    from crbc.runs import find_runs, read_run
    from crbc.viz.runs import curves_figure

    runs = order_runs([read_run(p) for p in find_runs(run_dir)], estimators)
    left = curves_figure(curves(runs, "eval_success_rate", with_final=True), "eval_success_rate", band="ci",
                         show_runs=False)
    right = curves_figure(curves(runs, "success_rate", smooth=3), "success_rate", band="ci", show_runs=False)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=[
        "held-out success (64 fresh levels x 4), mean and 95% CI over seeds",
        "batch success (fresh training levels, 3-it. average), 95% CI"])
    for col, sub in ((1, left), (2, right)):
        for tr in sub.data:
            tr.showlegend = col == 1 and tr.showlegend is not False
            fig.add_trace(tr, row=1, col=col)
    fig.update_layout(width=1200, height=480, plot_bgcolor="white", margin=dict(l=10, r=10, t=40, b=40),
                      legend=dict(orientation="h", y=-0.15))
    fig.update_xaxes(title="iteration", gridcolor="#eee")
    fig.update_yaxes(title="success (%)", gridcolor="#eee", rangemode="tozero")
    return fig


def render_png(fig, path: str | Path, width: int = 1220, height: int = 500) -> None:
    """Render a plotly figure to a PNG with the local chromium (plotly.js inline, no network)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "fig.html"
        fig.write_html(str(html), include_plotlyjs=True, full_html=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(html.as_uri())
            page.wait_for_selector(".main-svg")
            page.screenshot(path=str(path), full_page=True)
            browser.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", help="folder holding the run folders")
    ap.add_argument("png", help="PNG to write")
    args = ap.parse_args()
    render_png(figure(Path(args.runs)), args.png)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
