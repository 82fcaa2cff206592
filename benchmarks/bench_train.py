"""Seconds per training iteration, split into rollout, advantage, update (prints JSON).

    .venv/bin/python benchmarks/bench_train.py [--model models/sokoban-tiny-weak] [--iterations 3]
        [--groups 16] [--group-size 8] [--estimator crbc] [--threads 1]

Runs a short ``crbc train`` into a temporary folder (no evaluation) and reports the mean over
iterations of each phase as the trainer measured it: ``rollout`` (batched generation of
groups x group-size episodes), ``advantage`` (the estimator on the merged batch),
``diagnostics`` (crbc.diagnostics on the batch), ``update`` (old/reference log-probabilities and
the PPO-clip epochs), ``write`` (the rollout file and the metrics line) and ``total`` (the
checkpoint save after the metrics line is not included). Timings on a shared machine vary; the
JSON records the thread count, the batch size and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "models" / "sokoban-tiny-weak"))
    ap.add_argument("--env", default="sokoban-6x6-v0")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--estimator", default="crbc")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    from crbc.runs import read_run
    from crbc.train import TrainConfig, train

    cfg = TrainConfig(env=args.env, model=args.model, estimator=args.estimator, iterations=args.iterations,
                      groups=args.groups, group_size=args.group_size, eval_every=0, eval_seeds=0,
                      threads=args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        train(cfg, Path(tmp) / "run")
        wall = time.perf_counter() - t0
        metrics = read_run(Path(tmp) / "run").metrics

    def mean(key: str) -> float:
        return round(sum(m[key] for m in metrics) / len(metrics), 4)

    phases = {"rollout": mean("seconds_rollout"), "advantage": mean("seconds_advantage"),
              "diagnostics": mean("seconds_diagnostics"), "update": mean("seconds_update")}
    total = mean("seconds")
    out = {
        "benchmark": "train_iteration", "estimator": args.estimator, "env": args.env,
        "model": os.path.relpath(args.model, ROOT) if args.model.startswith(str(ROOT)) else args.model,
        "groups": args.groups, "group_size": args.group_size, "iterations": len(metrics),
        "threads": args.threads, "steps_per_iteration": mean("steps"),
        "distinct_pairs_per_iteration": mean("distinct_pairs"),
        "seconds_per_iteration": {**phases, "write": round(total - sum(phases.values()), 4), "total": total},
        "wall_seconds_incl_model_load": round(wall, 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
