"""Browser benchmark of the studio (not a test): prints JSON.

Measures in headless Debian Chromium:
- ``first_page_ready_s``: from navigation to the first page (Rollouts, default shipped sample)
  completely drawn (table, metrics, board, credit bars), on a cold server (first session) and
  warm (second session);
- ``slider_to_graph_ms``: from releasing the depth slider to the re-rendered graph (the anchor
  colours changed) on the Bellman backups page for a 16-rollout x 50-step group.

Targets (issue 4): first page under 3 s, slider to graph under 300 ms.
Usage: .venv/bin/python -m benchmarks.bench_app [--repeats 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.apprunner import (
    GRAPH_COLORS,
    RequestLog,
    drag_slider,
    launch,
    running_app,
    wait_idle,
    wait_plotly,
)
from benchmarks.synthetic import random_walk_group
from crbc.rollouts import dumps_rollout


def first_page(browser, base: str) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    t = time.perf_counter()
    pg.goto(base + "/")
    # the landing page (Rollouts) is complete when its last parts are drawn: the rollouts table,
    # the step metrics, the board and the per-step credit bars (plain HTML)
    for sel in ("h1", "[data-testid=stTable]", "[data-testid=stMetric]", ".crbc-step-bars"):
        pg.wait_for_selector(sel, timeout=60000)
    dt = time.perf_counter() - t
    ctx.close()
    return dt


def slider_latency(browser, base: str, repeats: int) -> tuple[list[float], dict, list[str]]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    log = RequestLog(pg)
    g = random_walk_group(16, 50, size=6, seed=0)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "random-walk-16x50.jsonl"
        f.write_text("".join(dumps_rollout(r) + "\n" for r in g.rollouts))
        pg.goto(base + "/backups?source=upload")
        wait_idle(pg)
        pg.set_input_files("[data-testid=stFileUploaderDropzoneInput]", str(f))
        pg.wait_for_selector(".st-key-backup_graph .js-plotly-plot", timeout=60000)
    wait_idle(pg)
    wait_plotly(pg)
    fractions = [0.5, 0.2, 0.8, 0.35, 0.65, 0.1, 0.9, 0.45, 0.25, 0.75]
    times = []
    for i in range(repeats):
        before = pg.evaluate(GRAPH_COLORS)
        drag_slider(pg, ".st-key-K", fractions[i % len(fractions)])
        t = time.perf_counter()
        pg.wait_for_function(f"(b) => {{ const c = ({GRAPH_COLORS})(); return c && c !== b; }}",
                             arg=before, polling="raf", timeout=30000)
        times.append((time.perf_counter() - t) * 1000)
        wait_idle(pg)
        pg.wait_for_timeout(300)
    info = {"rollouts": len(g), "steps": g.n_steps, "max_len": max(len(r) for r in g.rollouts)}
    ctx.close()
    return times, info, log.outside


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=8)
    a = ap.parse_args()
    if not Path("/usr/bin/chromium").exists():
        print(json.dumps({"error": "/usr/bin/chromium not found (apt-get install -y chromium)"}))
        return 2
    from playwright.sync_api import sync_playwright

    with running_app() as base, sync_playwright() as pw:
        b = launch(pw)
        cold = first_page(b, base)
        warm = first_page(b, base)
        times, info, outside = slider_latency(b, base, a.repeats)
        b.close()
    out = {
        "first_page_ready_s": {"cold": round(cold, 3), "warm": round(warm, 3), "target": 3.0},
        "slider_to_graph_ms": {"median": round(statistics.median(times), 1),
                               "min": round(min(times), 1), "max": round(max(times), 1),
                               "all": [round(x, 1) for x in times], "target": 300.0, "group": info},
        "requests_outside_127.0.0.1": outside,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
