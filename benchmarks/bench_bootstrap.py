"""Benchmark credit intervals (docs/MATH.md section 10) on a paper-sized batch; prints one JSON object.

    .venv/bin/python benchmarks/bench_bootstrap.py [--groups 16] [--rollouts 8] [--steps 50]
        [--size 5] [--resamples 200] [--estimator crbc] [--method default] [--repeat 5] [-o OUT.json]

The batch: ``groups`` synthetic random-walk groups (``devtools/synthetic.py``, bias 0.3 so
that groups mix successes and failures) of ``rollouts`` rollouts of at most ``steps`` steps.
Timed: :func:`crbc.estimators.bootstrap.credit_intervals` on the merged process (point credits,
B resamples as one batch, intervals, evidence), best and median of ``repeat`` runs, wall and
CPU seconds. BLAS threads are pinned to one before numpy loads (one core); the machine's load
average is reported since the machine is shared. Target (issue 22): B = 200 under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--size", type=int, default=5, help="grid side of the random walks (5: 25 cells)")
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--estimator", default="crbc")
    ap.add_argument("--method", default="default", help="calibrated, range, bayes or default (the estimator's)")
    ap.add_argument("-o", "--output", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import numpy as np

    from crbc.estimators.bootstrap import credit_intervals
    from crbc.process import merge
    from devtools.synthetic import random_walk_group

    groups = [random_walk_group(args.rollouts, args.steps, args.size, seed=s, group=f"g{s}", bias=0.3)
              for s in range(args.groups)]
    p = merge(groups)
    walls, cpus = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        ci = credit_intervals(p, args.estimator, args.resamples, 0.9, seed=0,
                              method=None if args.method == "default" else args.method)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    sizes = np.bincount(p.state_group)
    out = json.dumps({
        "benchmark": "credit_intervals", "estimator": args.estimator, "method": ci.method,
        "groups": args.groups, "rollouts": args.rollouts, "max_steps": args.steps,
        "resamples": args.resamples, "steps": p.n_steps, "anchors": p.n_states,
        "anchors_per_group": {"mean": float(sizes.mean()), "max": int(sizes.max())},
        "success_rate": float(p.rollout_success.mean()), "sure_share": round(ci.sure_share(), 4),
        "seconds": {"best": round(min(walls), 4), "median": round(float(np.median(walls)), 4),
                    "cpu_best": round(min(cpus), 4)},
        "target_seconds": 0.5, "meets_target": min(walls) < 0.5,
        "threads": os.environ.get("OMP_NUM_THREADS"), "loadavg": [round(x, 2) for x in os.getloadavg()],
    })
    print(out)
    if args.output is not None:
        args.output.write_text(out + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
