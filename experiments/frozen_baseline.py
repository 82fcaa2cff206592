"""Batch success of the *frozen* starting policy on a training run's levels (prints JSON).

    .venv/bin/python experiments/frozen_baseline.py --seeds 0 1 2 --iterations 12 \\
        [--model models/sokoban-tiny-weak] [--groups 16] [--group-size 8] [-o baseline.json]

Every iteration of ``crbc train`` draws fresh training levels (``train_seeds(seed, iteration)``)
and fresh sampling random numbers; how hard those levels are varies far more from one iteration
to the next than a few iterations of learning change the policy. This replays exactly those
levels and random numbers with the unchanged starting policy, so a run's batch success curve can
be read against the curve it would have had without any update (same seed, same iteration).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def frozen_curve(model: str, env: str, seed: int, iterations: int, groups: int, group_size: int,
                 temperature: float, max_steps: int) -> list[float]:
    import numpy as np

    from crbc.policy import load_policy
    from crbc.policy.generate import generate_groups
    from crbc.train.loop import _derived, train_seeds

    policy = load_policy(model)
    out = []
    for it in range(iterations):
        gs = generate_groups(env, train_seeds(seed, it, groups), group_size, policy, temperature,
                             max_steps, rng=_derived(seed, 2, it))
        out.append(float(np.mean([r.success for g in gs for r in g.rollouts])))
    return out


def main() -> int:
    from crbc.train.loop import TrainConfig

    d = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=d.model)
    ap.add_argument("--env", default=d.env)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--iterations", type=int, default=d.iterations)
    ap.add_argument("--groups", type=int, default=d.groups)
    ap.add_argument("--group-size", type=int, default=d.group_size)
    ap.add_argument("--temperature", type=float, default=d.temperature)
    ap.add_argument("--max-steps", type=int, default=d.max_steps)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("-o", "--output", default=None, help="also write the JSON here")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    res = {"benchmark": "frozen_baseline", "model": a.model, "env": a.env, "groups": a.groups,
           "group_size": a.group_size, "temperature": a.temperature, "max_steps": a.max_steps,
           "success_rate": {str(s): frozen_curve(a.model, a.env, s, a.iterations, a.groups,
                                                  a.group_size, a.temperature, a.max_steps)
                            for s in a.seeds}}
    text = json.dumps(res, indent=2)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
