"""Browser benchmark (not a test) of Training runs' overview of a whole recorded run. Prints JSON.

Runs: every shipped 80-iteration run folder named by ``--shipped`` (default one of
``sample_rollouts/runs/sokoban-6x6-n64-80``), and a generated ALFWorld-sized run of
``--iterations`` (150) iterations x ``--groups`` (16) groups x 8 rollouts
(devtools.textworld.alfworld_like_run), each with an audit table beside it in the
``crbc.audit/1`` columns (one row per iteration and estimator). ``crbc.audit`` is another
branch's work: until it merges, the table is built here from each iteration's success rate and
seeded placeholder numbers for the other columns; the page's cost does not depend on them.
The runs are copied to a temporary folder given to the studio as ``CRBC_RUNS_DIRS`` (the shipped
folder stays untouched).

Measured in headless Chromium (devtools.apprunner):

- ``in_session``: from a click on *Training runs* in the sidebar (the session came from the
  Rollouts page of the same run) to the page ready; median of ``--repeats``;
- ``deep_link``: ``/runs?source=run&run=...`` in a new browser session (a new tab) to ready;
  median of ``--repeats``;
- ``lightest``: the same for the lightest page (the fastest median of the deep links to ``/``,
  ``/accuracy`` and ``/lesson`` on the shipped sample), and the ratio deep_link / lightest.

Usage: .venv/bin/python -m benchmarks.bench_run_overview [--repeats 5] [--iterations 150]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.bench_app import navigate, visit
from devtools.apprunner import READY, launch, running_app

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "sample_rollouts" / "runs" / "sokoban-6x6-n64-80" / "crbc-s0"
ESTIMATORS = ("crbc", "gigpo")


def audit_table(run_dir: Path, seed: int = 0) -> pd.DataFrame:
    """A crbc.audit/1-shaped table for ``run_dir``: success_rate from its metrics, the rest seeded."""
    import crbc

    run = crbc.read_run(run_dir)
    rng = np.random.default_rng(seed)
    rows = []
    for m in run.metrics:
        for est in ESTIMATORS:
            rows.append({"iteration": m["iteration"], "estimator": est, "groups": 16, "rollouts": 128, "steps": 4000,
                         "success_rate": float(m.get("success_rate", 0.0)), "shared_step_share": rng.uniform(0.5, 0.9),
                         "anchors_per_group": rng.uniform(5, 40), "none_share": rng.uniform(0.3, 0.7),
                         "sure_share": rng.uniform(0.0, 0.3), "trainer_spearman": rng.uniform(-0.2, 0.9),
                         "trainer_sign_agreement": rng.uniform(0.4, 1.0), "seconds": rng.uniform(0.5, 2.0)})
    return pd.DataFrame(rows)


def prepare(root: Path, iterations: int, groups: int, shipped: Path) -> dict[str, Path]:
    from devtools.textworld import alfworld_like_run

    out = {"shipped-80": root / "shipped-80"}
    shutil.copytree(shipped, out["shipped-80"])
    out[f"alfworld-{iterations}"] = alfworld_like_run(root / f"alfworld-{iterations}", iterations=iterations,
                                                      groups=groups, n_rollouts=8)
    for p in out.values():
        audit_table(p).to_parquet(p / "audit.parquet")
    return out


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--shipped", type=Path, default=SHIPPED)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="crbc-bench-runs-"))
    t0 = time.perf_counter()
    runs = prepare(root, args.iterations, args.groups, args.shipped)
    out: dict = {"prepare_s": round(time.perf_counter() - t0, 1), "loadavg_before": os.getloadavg(), "runs": {}}
    with running_app(extra_env={"CRBC_RUNS_DIRS": str(root)}) as base, sync_playwright() as pw:
        browser = launch(pw)
        light = {}
        for slug, title in (("", "Rollouts"), ("accuracy", "Estimator accuracy"), ("lesson", "Lesson")):
            visit(browser, base, slug, title)  # once to warm the server's caches
            light[slug or "rollouts"] = _median([visit(browser, base, slug, title)[0] for _ in range(args.repeats)])
        lightest = min(light.values())
        out["lightest_deep_links"] = light
        for name, path in runs.items():
            q = urllib.parse.urlencode({"source": "run", "run": str(path)})
            visit(browser, base, f"runs?{q}", "Training runs")  # the audit read, the figure built once
            deep = _median([visit(browser, base, f"runs?{q}", "Training runs")[0] for _ in range(args.repeats)])
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            pg.goto(f"{base}/?{q}")
            pg.wait_for_function(READY, arg="Rollouts", timeout=120_000)
            times = []
            for _ in range(args.repeats):
                times.append(navigate(pg, "runs", "Training runs")[0])
                navigate(pg, "", "Rollouts")
            ctx.close()
            out["runs"][name] = {"iterations": len(pd.read_parquet(path / "audit.parquet")["iteration"].unique()),
                                 "in_session_s": _median(times), "deep_link_s": deep,
                                 "deep_link_over_lightest": round(deep / lightest, 2)}
        browser.close()
    out["loadavg_after"] = os.getloadavg()
    shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
