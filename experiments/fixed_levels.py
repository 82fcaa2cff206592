"""Does the update learn at all? Train on the *same* levels every iteration (prints JSON).

    .venv/bin/python experiments/fixed_levels.py [--estimator grpo] [--lr 3e-4] [--ppo-epochs 2]
        [--iterations 8] [--groups 16] [--model models/sokoban-tiny-weak]

A sanity check of the PPO step that is free of level difficulty: the levels of iteration 0 of
seed 0 (``train_seeds(0, 0, groups)``) are rolled out and updated on every iteration (fresh
sampling random numbers each time), and the success on exactly those levels with one fixed
sampling seed is measured before the first and after the last update. If the update moves the
policy in the direction the advantages ask for, that success goes up.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from crbc.train.loop import TrainConfig

    d = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=d.model)
    ap.add_argument("--estimator", default="grpo")
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--ppo-epochs", type=int, default=d.ppo_epochs)
    ap.add_argument("--kl-coef", type=float, default=d.kl_coef)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--groups", type=int, default=d.groups)
    ap.add_argument("--group-size", type=int, default=d.group_size)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    import dataclasses

    import numpy as np
    import torch

    from crbc.estimators.registry import compute
    from crbc.policy import load_policy
    from crbc.policy.generate import generate_groups
    from crbc.train.loop import train_seeds
    from crbc.train.ppo import flatten, ppo_update

    torch.set_num_threads(a.threads)
    cfg = dataclasses.replace(d, model=a.model, estimator=a.estimator, lr=a.lr,
                              ppo_epochs=a.ppo_epochs, kl_coef=a.kl_coef)
    policy, ref = load_policy(cfg.model), load_policy(cfg.model)
    for p in ref.model.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    levels = train_seeds(0, 0, a.groups)

    def rollouts(rng):
        return generate_groups(cfg.env, levels, a.group_size, policy, cfg.temperature, cfg.max_steps,
                               rng=rng)

    def success(groups) -> float:
        return float(np.mean([r.success for g in groups for r in g.rollouts]))

    start = success(rollouts(999))
    batch, kl = [], []
    for it in range(a.iterations):
        groups = rollouts(it)
        upd = ppo_update(policy, ref, opt, flatten(groups, compute(cfg.estimator, groups).advantage_N),
                         cfg, torch.Generator().manual_seed(it))
        batch.append(success(groups))
        kl.append(upd["kl"])
    end = success(rollouts(999))
    print(json.dumps({"benchmark": "fixed_levels", "estimator": cfg.estimator, "lr": cfg.lr,
                      "ppo_epochs": cfg.ppo_epochs, "kl_coef": cfg.kl_coef, "groups": a.groups,
                      "group_size": a.group_size, "iterations": a.iterations,
                      "success_fixed_seed_before": start, "success_fixed_seed_after": end,
                      "batch_success": batch, "kl": kl}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
