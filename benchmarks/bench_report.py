"""Benchmark ``crbc report``: build time, file size and open-to-drawn time in Chromium; prints JSON.

    .venv/bin/python benchmarks/bench_report.py [--opens 3] [--skip-truth]

Cases: the worked example; a shipped Sokoban group (with and without its exact truth); a
16 x 50 group of 167 anchors (devtools.user_like.big_group); a 16 x 50 group whose steps are
distinct 2,000-character pages (:func:`wide_group`); a text game's group with long
observations (alfworld_group); a recorded 80-iteration run; a 150-iteration run (the same run's
iteration files repeated, 64 groups x 8 rollouts each), once with a ``crbc.audit/1`` file beside
it and once computing its summary. ``open_ms``: navigation start to the load event of
``file://`` in headless Chromium (the file's script has run and its drawings are laid out; see
devtools/report_check.py), the median of ``--opens`` fresh contexts. The machine is shared: the
load average is printed with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RUN = ROOT / "sample_rollouts" / "runs" / "sokoban-6x6-n64-80" / "crbc-s0"


def long_run(folder: Path, iterations: int = 150, audit: bool = False) -> Path:
    """A run of ``iterations`` iterations: RUN's metrics and iteration files, repeated (links)."""
    from crbc.io.runs import iteration_files, read_run

    src = read_run(RUN)
    files = iteration_files(RUN / "rollouts")
    out = folder / f"run-{iterations}{'-audit' if audit else ''}"
    (out / "rollouts").mkdir(parents=True)
    (out / "run.json").write_text(json.dumps({**src.meta, "name": f"long-{iterations}"}))
    keys = sorted(files)
    with open(out / "metrics.jsonl", "w") as f:
        for it in range(iterations):
            m = dict(src.metrics[it % len(src.metrics)], iteration=it)
            f.write(json.dumps(m) + "\n")
            p = files[keys[it % len(keys)]]
            os.symlink(p.resolve(), out / "rollouts" / f"iter-{it:04d}{''.join(p.suffixes)}")
    if audit:
        with open(out / "audit.jsonl", "w") as f:
            for it in range(iterations):
                for k, est in enumerate(("crbc", "gigpo")):
                    f.write(json.dumps({"iteration": it, "estimator": est, "groups": 64, "rollouts": 512,
                                        "steps": 6000, "success_rate": 0.3, "shared_step_share": 0.9,
                                        "anchors_per_group": 12.0, "none_share": 0.2 + 0.1 * k, "sure_share": 0.3,
                                        "trainer_spearman": 0.5, "trainer_sign_agreement": 0.7,
                                        "seconds": 1.0}) + "\n")
    return out


def wide_group():
    """16 rollouts x 50 steps whose steps from the fourth on are each a distinct 2,000-character
    page (758 anchors, most visited once): the largest text a 16 x 50 group can carry."""
    import random

    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    rng = random.Random(0)
    words = ["$23.99", "*bold*", "<b>x</b>", "lorem", "ipsum", "_u_"]

    def page(i: int, t: int) -> str:
        return (f"page {i}-{t} " + " ".join(rng.choice(words) for _ in range(400)))[:2000]

    rs = tuple(Rollout("wide/16x50", i, tuple(Step(page(i, t) if t > 2 else f"home {t}",
                                                   rng.choice(["click a", "click b", "search x", "back"]))
                                              for t in range(50)), i % 3 == 0) for i in range(16))
    return RolloutGroup("wide/16x50", rs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opens", type=int, default=3)
    ap.add_argument("--skip-truth", action="store_true")
    args = ap.parse_args(argv)

    import crbc
    from crbc.report import group_report, run_report
    from devtools.user_like import alfworld_group, big_group

    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    weak = crbc.read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")
    cases = [
        ("worked-example", lambda: group_report(crbc.read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")[0],
                                                truth=False)),
        ("sokoban-weak group 1", lambda: group_report(weak[1], truth=False)),
        ("big group 16 x 50", lambda: group_report(big_group(0), truth=False)),
        ("16 x 50, distinct 2,000-character pages", lambda: group_report(wide_group(), truth=False)),
        ("alfworld (long text)", lambda: group_report(alfworld_group(0), truth=False)),
        ("run, 80 iterations (summary computed)", lambda: run_report(RUN)),
        ("run, 150 iterations (audit file)", lambda: run_report(long_run(tmp, 150, audit=True))),
        ("run, 150 iterations (summary computed)", lambda: run_report(long_run(tmp, 150))),
    ]
    if not args.skip_truth:
        cases.insert(2, ("sokoban-weak group 1 + exact truth",
                         lambda: group_report(weak[1], truth=True, policy_root=str(ROOT))))
    from playwright.sync_api import sync_playwright

    from devtools.apprunner import launch
    from devtools.report_check import open_report

    rows = []
    with sync_playwright() as pw:
        browser = launch(pw)
        for name, build in cases:
            t = time.perf_counter()
            html = build()
            built = time.perf_counter() - t
            path = tmp / f"{len(rows)}.html"
            path.write_text(html)
            opens = [open_report(browser, path) for _ in range(max(1, args.opens))]
            clean = all(not o.requests and not o.console_errors and not o.page_errors and o.ready
                        and o.svgs_shown == o.svgs for o in opens)
            rows.append({"case": name, "build_s": round(built, 2), "bytes": len(html.encode()),
                         "MB": round(len(html.encode()) / 1e6, 3),
                         "open_ms_median": round(statistics.median(o.open_ms for o in opens), 1),
                         "open_ms_max": round(max(o.open_ms for o in opens), 1),
                         "svgs": opens[0].svgs, "clean": clean})
        browser.close()
    print(json.dumps({"benchmark": "crbc report", "load_avg": os.getloadavg(), "cpus": os.cpu_count(),
                      "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
