"""Time crbc.integrations.verl.compute_advantage on a verl-agent-sized DataProto (needs verl).

    PYTHONPATH=. python benchmarks/bench_verl.py [--groups 16] [--group-size 8] [--steps 50] [--anchors text|image]

Builds G groups x n rollouts of up to T steps (random walks on a 10 x 10 grid, so anchors recur),
lays them out as verl-agent's rollout loop does, appends copies and reorders the rows like
adjust_batch and _balance_batch, then times compute_advantage per estimator (best of 3).
Prints one JSON object with the timings and os.getloadavg().
"""

from __future__ import annotations

import json
import os
import timeit

import numpy as np
import torch
from verl import DataProto

from benchmarks.batch_args import batch_parser
from crbc.integrations import verl as V


def batch(groups: int, size: int, steps: int, anchors: str, rng: np.random.Generator) -> DataProto:
    uid, traj, anc, act, valid, rew, ep, succ = [], [], [], [], [], [], [], []
    moves = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
    for g in range(groups):
        for i in range(size):
            x = y = 0
            rows = []
            for _ in range(int(rng.integers(steps // 2, steps + 1))):
                a = str(rng.choice(["up", "down", "left", "right", "invalid"]))
                rows.append(((x, y), a))
                if a != "invalid":
                    x = min(9, max(0, x + moves[a][0]))
                    y = min(9, max(0, y + moves[a][1]))
                if (x, y) == (4, 4):
                    break
            won = (x, y) == (4, 4)
            for t, ((cx, cy), a) in enumerate(rows):
                uid.append(f"g{g}")
                traj.append(f"g{g}-{i}")
                if anchors == "image":
                    img = np.zeros((10, 10, 3), dtype=np.uint8)
                    img[cy, cx] = 255
                    anc.append(img)
                else:
                    anc.append(f"at {cx},{cy}")
                act.append(a)
                valid.append(a != "invalid")
                rew.append(10.0 if won and t == len(rows) - 1 else 0.0)
                ep.append(10.0 * won)
                succ.append(won)
    b = len(uid)
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    return DataProto.from_single_dict({
        "responses": torch.ones((b, 32), dtype=torch.long),
        "attention_mask": torch.ones((b, 64), dtype=torch.long),
        "token_level_rewards": torch.zeros((b, 32)),
        "uid": obj(uid), "traj_uid": obj(traj),
        "anchor_obs": np.array(anc, dtype=object) if anchors == "image" else obj(anc),
        "action": obj(act), "is_action_valid": np.array(valid), "rewards": obj(rew),
        "episode_rewards": obj(ep), "success": np.array(succ)})


def main() -> None:
    ap = batch_parser(__doc__)
    ap.add_argument("--anchors", choices=["text", "image"], default="text")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = batch(args.groups, args.group_size, args.steps, args.anchors, rng)
    V.add_step_index(data)
    data = DataProto.concat([data, data.select_idxs(rng.choice(len(data), 8, replace=False))])
    data.reorder(torch.as_tensor(rng.permutation(len(data))))
    out = {"rows": len(data), "anchors": args.anchors, "seconds": {}}
    for name in ("crbc", "gigpo", "grpo"):
        best = min(timeit.repeat(lambda name=name: V.compute_advantage(data, name), number=1, repeat=3))
        out["seconds"][name] = round(best, 4)
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
