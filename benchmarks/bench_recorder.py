"""Time the run recorder on an ALFWorld-sized batch, and JSON Lines (gzip) against Parquet storage.

    PYTHONPATH=. python benchmarks/bench_recorder.py [--groups 128] [--group-size 8] [--steps 50]
           [--store-rows 6400] [--store-iterations 3] [--repeat 3]

recorder: one DataProto of G groups x n rollouts x T steps (observations of 300-800 characters
drawn from a pool of 60 per group, so rollouts of a group share states, as ALFWorld's do;
advantages (B, 256) over a response mask), put through ``add_step_index``, copies and a
reorder, then ``RunRecorder.record`` timed per format (best of ``--repeat``; it includes the
credit health it returns for the trainer's logger: ``crbc.run_analysis.health.iteration_health`` with crbc
and gigpo, and ``--bootstrap`` resamples for ``sure_share``), the health alone on the same batch,
and the time to open that iteration again (``read_run(...).rollouts``). Wall and CPU seconds
(``time.process_time``: on a shared machine, CPU time says what the work costs, wall time what
the load made of it).
storage: a few iterations of ``--store-rows`` step rows with 500-character observations,
written as ``iter-NNNN.jsonl.gz`` (the gzip of the JSON Lines file, level 6) and as
``iter-NNNN.parquet``: bytes, write time, time to open one iteration (``Run.rollouts``),
and the size extrapolated to 150 iterations. Prints one JSON object (and os.getloadavg()).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import string
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from verl import DataProto

from benchmarks.batch_args import batch_parser
from crbc.integrations import verl as V
from crbc.integrations.recorder import batch_steps
from crbc.integrations.trainer_metrics import steps_process
from crbc.io.rollouts import Rollout, RolloutGroup, Step, dumps_rollout
from crbc.io.runs import read_run
from crbc.run_analysis.health import iteration_health

WORDS = ["You", "are", "in", "the", "middle", "of", "a", "room.", "Looking", "quickly", "around",
         "you,", "see", "cabinet", "drawer", "countertop", "fridge", "microwave", "sinkbasin",
         "toaster", "garbagecan", "coffeemachine", "stoveburner", "shelf", "1,", "2,", "3,", "and"]


def observation(rng: np.random.Generator, n_chars: int) -> str:
    words = []
    while sum(map(len, words)) + len(words) < n_chars:
        words.append(str(rng.choice(WORDS)))
    return " ".join(words)[:n_chars] + "".join(rng.choice(list(string.ascii_lowercase), 4))


def trajectories(groups: int, size: int, steps: int, rng, chars=(300, 800), pool=60):
    """[(group, traj, [(obs, action)], won, score)]: walks through a per-group pool of states."""
    out = []
    for g in range(groups):
        obs = [observation(rng, int(rng.integers(*chars))) for _ in range(pool)]
        for i in range(size):
            s, rows = 0, []
            for _ in range(steps):
                a = f"go to {rng.choice(['cabinet', 'drawer', 'fridge'])} {rng.integers(1, 4)}"
                rows.append((obs[s], a))
                s = int(min(pool - 1, max(0, s + rng.integers(-2, 4))))
            won = bool(rng.random() < 0.4)
            out.append((f"task-{g}", f"traj-{g}-{i}", rows, won, 10.0 * won))
    return out


def data_proto(trajs, rng, resp_len: int = 256) -> DataProto:
    uid, traj, anc, act, rew, ep, ok = [], [], [], [], [], [], []
    for g, t, rows, won, score in trajs:
        for o, a in rows:
            uid.append(g), traj.append(t), anc.append(o), act.append(a)
            rew.append(0.0), ep.append(np.float32(score)), ok.append(won)
    b = len(uid)
    n_tok = rng.integers(8, resp_len + 1, size=b)
    mask = torch.arange(resp_len)[None, :] < torch.as_tensor(n_tok)[:, None]
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    d = {"responses": torch.ones((b, resp_len), dtype=torch.long),
         "response_mask": mask.long(),
         "advantages": torch.randn(b, 1) * mask,
         "uid": obj(uid), "traj_uid": obj(traj), "anchor_obs": obj(anc), "action": obj(act),
         "rewards": obj(rew), "episode_rewards": obj(ep), "success": np.array(ok, dtype=bool),
         "is_action_valid": np.ones(b, dtype=bool)}
    data = DataProto.from_single_dict(d)
    V.add_step_index(data)
    dup = rng.choice(b, size=16, replace=False)
    data = DataProto.concat([data, data.select_idxs(dup)])
    data.reorder(torch.as_tensor(rng.permutation(len(data))))
    return data


def bench_recorder(args, rng) -> dict:
    data = data_proto(trajectories(args.groups, args.group_size, args.steps, rng), rng)
    out = {"rows": len(data)}
    for fmt in ("jsonl", "parquet"):
        times, cpus, opens = [], [], []
        for _ in range(args.repeat):
            tmp = Path(tempfile.mkdtemp())
            rec = V.RunRecorder(tmp / "run", {"env": "alfworld-like"}, format=fmt, bootstrap=args.bootstrap)
            t0, c0 = time.perf_counter(), time.process_time()
            health = rec.record(data, 0, {"actor/loss": np.float32(0.1)})
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            size = rec.last_path.stat().st_size
            t0 = time.perf_counter()
            groups = read_run(tmp / "run").rollouts(0)
            opens.append(time.perf_counter() - t0)
            shutil.rmtree(tmp)
        assert sum(len(g) for g in groups) == args.groups * args.group_size
        out[fmt] = {"record_seconds": round(min(times), 3), "record_cpu_seconds": round(min(cpus), 3),
                    "file_bytes": size,
                    "open_iteration_seconds": round(min(opens), 3)}
    out["health"] = {k: round(v, 4) for k, v in health.items()}
    st = batch_steps(data)
    times, cpus = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        iteration_health(steps_process(st), st.advantage, bootstrap=args.bootstrap)
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    out["health_alone_seconds"] = round(min(times), 3)
    out["health_alone_cpu_seconds"] = round(min(cpus), 3)
    return out


def bench_storage(args, rng) -> dict:
    per_group = 8 * 50
    n_groups = max(1, args.store_rows // per_group)
    out = {"rows_per_iteration": n_groups * per_group, "iterations_measured": args.store_iterations}
    iters = []
    for it in range(args.store_iterations):
        groups = {}
        for g, t, rows, won, score in trajectories(n_groups, 8, 50, rng, chars=(500, 501)):
            steps = tuple(Step(o, a, reward=0.0, trainer_advantage=float(rng.normal())) for o, a in rows)
            rs = groups.setdefault(g, [])
            rs.append(Rollout(g, len(rs), steps, won, False, score, {"iteration": it, "traj_uid": t}))
        iters.append([RolloutGroup(g, tuple(rs)) for g, rs in groups.items()])
    for fmt in ("jsonl.gz", "parquet"):
        tmp = Path(tempfile.mkdtemp())
        w = V.RunRecorder(tmp / "run").writer
        t0 = time.perf_counter()
        for it, groups in enumerate(iters):
            if fmt == "parquet":
                w.write_rollouts(it, groups, format="parquet")
            else:
                text = "".join(dumps_rollout(r) + "\n" for g in groups for r in g.rollouts).encode()
                (tmp / "run" / "rollouts" / f"iter-{it:04d}.jsonl.gz").write_bytes(
                    gzip.compress(text, compresslevel=6, mtime=0))
            w.append_metrics({"iteration": it})
        write = (time.perf_counter() - t0) / len(iters)
        size = sum(p.stat().st_size for p in (tmp / "run" / "rollouts").iterdir()) / len(iters)
        opens = []
        for _ in range(args.repeat):
            run = read_run(tmp / "run")
            t0 = time.perf_counter()
            run.rollouts(0)
            opens.append(time.perf_counter() - t0)
        out[fmt] = {"bytes_per_iteration": int(size), "write_seconds_per_iteration": round(write, 3),
                    "open_iteration_seconds": round(min(opens), 3),
                    "mb_for_150_iterations": round(150 * size / 2**20, 1)}
        shutil.rmtree(tmp)
    return out


def main() -> None:
    p = batch_parser(__doc__, groups=128)
    p.add_argument("--store-rows", type=int, default=6400)
    p.add_argument("--store-iterations", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--bootstrap", type=int, default=0, help="resamples for crbc/sure_share (0: none)")
    p.add_argument("--only", choices=("recorder", "storage"))
    args = p.parse_args()
    rng = np.random.default_rng(0)
    res = {}
    if args.only != "storage":
        res["recorder"] = bench_recorder(args, rng)
    if args.only != "recorder":
        res["storage"] = bench_storage(args, rng)
    res["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
