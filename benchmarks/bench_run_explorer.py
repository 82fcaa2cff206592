"""Benchmark (not a test) of the run explorer on big runs: several runs at once, a click from a
chart to an iteration's groups, what carried no signal. Prints JSON.

Makes one experiment folder of ``--runs`` (5) runs of ``--iterations`` (200) iterations x
``--groups`` (64) groups x 8 rollouts x ``--steps`` (12.5 on average) steps = 6,400 rows an
iteration, crbc.rollout/1 files gzip-compressed as the shipped runs are (the runs share their
rollout files through hard links: the same bytes, read as five runs), with a metrics line per
iteration of 40 numbers. Then measures:

- ``library``: ``read_run`` of the five runs, their curves of one metric (mean and band over
  seeds), the chart's SVG, and the groups of one iteration ranked worst first
  (``crbc.run_analysis.no_signal``), and one run's no-signal counts over every iteration;
- ``page``: the Training runs page in Streamlit's AppTest (the server's script time, which is
  what a rerun costs; the browser adds its drawing): ``cold`` (first run, nothing cached),
  ``warm`` (median of ``--repeats`` reruns), and ``click`` (a click on a curve's point, as the
  chart's callback stores it, to that iteration's groups ranked worst first: median over
  ``--repeats`` different iterations, each read for the first time).

Usage: PYTHONPATH=. .venv/bin/python -m benchmarks.bench_run_explorer [--iterations 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def make_runs(root: Path, runs: int, iterations: int, groups: int, steps: float, seed: int = 0) -> list[Path]:
    """``runs`` run folders of one experiment under ``root`` (module docstring)."""
    rng = np.random.default_rng(seed)
    first = root / "crbc-s0"
    (first / "rollouts").mkdir(parents=True)
    actions = ("up", "down", "left", "right")
    for it in range(iterations):
        lines = []
        for g in range(groups):
            p = rng.uniform(0.05, 0.95)
            for k in range(8):
                n = max(1, int(rng.poisson(steps)))
                ok = bool(rng.random() < p)
                st = [{"anchor": f"board-{g}-{int(rng.integers(0, 2 * n))}", "action": actions[int(rng.integers(0, 4))],
                       "reward": -0.1} for _ in range(n)]
                lines.append(json.dumps({"schema": "crbc.rollout/1", "group": f"bench/seed-{it * groups + g}",
                                         "rollout": k, "steps": st, "success": ok,
                                         "truncated": not ok and n >= 15, "meta": {"iteration": it}}))
        with gzip.open(first / "rollouts" / f"iter-{it:04d}.jsonl.gz", "wt", compresslevel=1) as f:
            f.write("\n".join(lines) + "\n")
    out = []
    for s in range(runs):
        d = root / f"crbc-s{s}"
        if s:
            (d / "rollouts").mkdir(parents=True)
            for p in sorted((first / "rollouts").iterdir()):
                os.link(p, d / "rollouts" / p.name)
        (d / "run.json").write_text(json.dumps({"schema": "crbc.run/1", "name": f"crbc-s{s}",
                                                "config": {"estimator": "crbc", "seed": s}}))
        with open(d / "metrics.jsonl", "w") as f:
            for it in range(iterations):
                rec = {"iteration": it, "success_rate": float(rng.uniform(0.2, 0.6)), "loss": float(rng.normal()),
                       "kl": float(rng.uniform(0, 0.1)), **{f"diag.m{k}": float(rng.random()) for k in range(37)}}
                f.write(json.dumps(rec) + "\n")
        out.append(d)
    return out


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def library(folders: list[Path]) -> dict:
    import scipy.stats  # noqa: F401 - imported once by every process that draws a curve; not the runs' cost

    import crbc.io.runs as R
    from crbc.run_analysis import no_signal as NS
    from crbc.run_analysis import training_stats as A
    from crbc.viz.run_curves import curves_chart_svg
    t_read, runs = _time(lambda: [R.read_run(f) for f in folders])
    t_curves, cs = _time(lambda: A.curves(runs, "success_rate", name=lambda r: r.label))
    t_svg, _ = _time(lambda: curves_chart_svg(cs, "success_rate", band="ci"))
    mid = runs[0].iterations_with_rollouts[len(runs[0].iterations_with_rollouts) // 2]
    t_read_it, groups = _time(lambda: runs[0].rollouts(mid))
    t_rank, _ = _time(lambda: NS.worst_first(NS.group_rows(groups), "success"))
    t_ns, rows = _time(lambda: NS.run_no_signal(runs[0]))
    return {"read_runs_s": round(t_read, 3), "curves_s": round(t_curves, 3), "chart_svg_s": round(t_svg, 3),
            "overview_s": round(t_read + t_curves + t_svg, 3),
            "iteration_rows": sum(g.n_steps for g in groups), "read_iteration_s": round(t_read_it, 3),
            "rank_groups_s": round(t_rank, 3), "click_s": round(t_read_it + t_rank, 3),
            "no_signal_one_run_s": round(t_ns, 2), "no_signal_iterations": len(rows)}


def page(samples: Path, folders: list[Path], repeats: int) -> dict:
    from streamlit.testing.v1 import AppTest

    from ui.core import state

    state.SAMPLES_DIR = samples
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=600)
    at.run()
    t0 = time.perf_counter()
    at.switch_page("pages/runs.py").run()
    cold = time.perf_counter() - t0
    assert not at.exception, [e.message for e in at.exception]
    warm = []
    for _ in range(repeats):
        t = time.perf_counter()
        at.run()
        warm.append(time.perf_counter() - t)
    label = at.selectbox(key="runs_run").value
    clicks = []
    n = len(list(Path(folders[0], "rollouts").iterdir()))
    for k in range(repeats):
        it = (17 + 31 * k) % n
        at.session_state["_runs_click"] = (it, label, "success")
        t = time.perf_counter()
        at.run()
        clicks.append(time.perf_counter() - t)
        assert not at.exception, [e.message for e in at.exception]
        assert at.selectbox(key="runs_iter").value == it
    return {"cold_s": round(cold, 2), "warm_s": round(statistics.median(warm), 3),
            "warm_all_s": [round(x, 3) for x in warm], "click_s": round(statistics.median(clicks), 3),
            "click_all_s": [round(x, 3) for x in clicks], "runs": len(folders)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--groups", type=int, default=64)
    ap.add_argument("--steps", type=float, default=12.5)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        samples = Path(tmp)
        t_make, folders = _time(lambda: make_runs(samples / "runs" / "big", a.runs, a.iterations, a.groups, a.steps))
        out = {"runs": a.runs, "iterations": a.iterations, "groups": a.groups, "rollouts_per_group": 8,
               "make_s": round(t_make, 1), "load_before": [round(x, 2) for x in os.getloadavg()]}
        out["library"] = library(folders)
        out["page"] = page(samples, folders, a.repeats)
        out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
