"""Seconds per training iteration, split into rollout, advantage and update (prints JSON).

    .venv/bin/python benchmarks/bench_train.py [--model models/sokoban-tiny-weak] [--iterations 3]
        [--groups 16] [--group-size 8] [--estimator crbc] [--threads 1 [2 ...]] [--slow]

Runs the trainer's pieces on ``--iterations`` batches (the same calls as ``crbc.train.loop``, no
evaluation or file writes): ``rollout`` (batched generation of groups x group-size episodes),
``advantage`` (the estimator on the batch), ``update`` (the TrainConfig defaults: old
log-probabilities and one epoch of whole-group minibatches, crbc.train.ppo). Each phase is reported as
wall seconds and as CPU seconds of this process (``cpu_*``; on a machine shared with other jobs
the wall time grows with the load, the CPU time less). ``--slow`` also times, on the same
batches and from the same weights, the first trainer's settings (2 epochs of 256-step random
minibatches, KL 0.05 so a reference pass) twice: ``update_slow`` with its per-pair scoring
(tests/support/ppo_reference.py) and ``update_fast_same_settings`` with crbc.train.ppo's by-board scoring.
The JSON records the thread count, the batch size and the load average before and after;
with several ``--threads`` each count is run from the starting weights and reported under
``by_threads`` (the top-level numbers are the first count's). The rollout keeps its
``NextTokenMemo`` for the update's old log-probabilities, as ``crbc.train.loop`` does.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Clock:
    """Wall and CPU seconds of a block, stored into ``row[name]`` and ``row["cpu_" + name]``."""

    def __init__(self, row: dict, name: str):
        self.row, self.name = row, name

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()

    def __exit__(self, *exc):
        self.row[self.name] = time.perf_counter() - self.w
        self.row["cpu_" + self.name] = time.process_time() - self.c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "models" / "sokoban-tiny-weak"))
    ap.add_argument("--env", default="sokoban-6x6-v0")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--estimator", default="crbc")
    ap.add_argument("--threads", type=int, nargs="+", default=[1],
                    help="torch threads; several (e.g. 1 2) run one after the other from the same weights")
    ap.add_argument("--slow", action="store_true", help="also time the first trainer's update")
    args = ap.parse_args()

    import numpy as np
    import torch

    from crbc.estimators.registry import compute
    from crbc.policy import load_policy
    from crbc.policy.base import NextTokenMemo
    from crbc.policy.generate import generate_groups
    from crbc.train.loop import TrainConfig, _derived, train_seeds
    from crbc.train.ppo import flatten, ppo_update
    from tests.support.ppo_reference import slow_ppo_update

    def measure(threads: int) -> list[dict]:
        """``--iterations`` iterations from the starting weights with ``threads`` torch threads."""
        torch.set_num_threads(threads)
        cfg = TrainConfig(env=args.env, model=args.model, estimator=args.estimator, groups=args.groups,
                          group_size=args.group_size, threads=threads)
        policy, ref = load_policy(cfg.model), load_policy(cfg.model)
        opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr)
        rows = []
        for it in range(args.iterations):
            row: dict = {}
            memo = NextTokenMemo()  # as crbc.train.loop: kept for the update's old log-probabilities
            with _Clock(row, "rollout"):
                groups = generate_groups(cfg.env, train_seeds(0, it, cfg.groups), cfg.group_size, policy,
                                         cfg.temperature, cfg.max_steps, rng=_derived(0, 2, it), memo=memo)
            with _Clock(row, "advantage"):
                credits = compute(cfg.estimator, groups)
            batch = flatten(groups, credits.advantage_N)
            row.update(steps=batch.n_steps, pairs=len(batch.pair_obs), boards=len(batch.boards()[0]))
            if args.slow:
                old = dataclasses.replace(cfg, ppo_epochs=2, kl_coef=0.05, loss_agg="step",
                                          minibatches=max(1, round(batch.n_steps / 256)))
                for name, fn in (("update_slow", slow_ppo_update), ("update_fast_same_settings", ppo_update)):
                    p2 = copy.deepcopy(policy)
                    o2 = torch.optim.AdamW(p2.model.parameters(), lr=cfg.lr)
                    o2.load_state_dict(opt.state_dict())
                    with _Clock(row, name):
                        fn(p2, ref, o2, batch, old, torch.Generator().manual_seed(it))
            with _Clock(row, "update"):
                ppo_update(policy, ref, opt, batch, cfg, torch.Generator().manual_seed(it), rollout_memo=memo)
            row["total"] = row["rollout"] + row["advantage"] + row["update"]
            row["cpu_total"] = row["cpu_rollout"] + row["cpu_advantage"] + row["cpu_update"]
            rows.append(row)
        return rows

    def summary(rows: list[dict]) -> tuple[dict, dict]:
        mean = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}
        per_it = {k: [round(float(r[k]), 3) for r in rows] for k in ("total", "cpu_total", "cpu_rollout", "cpu_update")}
        return mean, per_it

    load0 = os.getloadavg()[0]
    by_threads = {}
    for t in args.threads:
        mean, per_it = summary(measure(t))
        by_threads[str(t)] = {"mean_per_iteration": mean, "per_iteration": per_it,
                              "load_average_1min_after": round(os.getloadavg()[0], 2)}
    first = by_threads[str(args.threads[0])]
    cfg = TrainConfig()
    out = {
        "benchmark": "train_iteration", "estimator": args.estimator, "env": args.env,
        "model": os.path.relpath(args.model, ROOT) if args.model.startswith(str(ROOT)) else args.model,
        "groups": args.groups, "group_size": args.group_size, "iterations": args.iterations,
        "threads": args.threads[0], "ppo_epochs": cfg.ppo_epochs, "minibatches": cfg.minibatches,
        "kl_coef": cfg.kl_coef,
        "mean_per_iteration": first["mean_per_iteration"],
        "per_iteration": first["per_iteration"],
        "load_average_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }
    if len(args.threads) > 1:
        out["by_threads"] = by_threads
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
