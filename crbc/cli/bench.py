"""``python -m crbc bench``: estimator benchmark on one core; prints one JSON object.

Groups are synthetic but shaped like agent rollouts: G rollouts random-walk over a small
per-group state space (so anchors repeat across rollouts, with cycles and self-loops), lengths
up to ``max_len``, mixed outcomes. Timings are the best of ``repeats`` runs (wall clock,
``time.perf_counter``), on one core: the command re-executes itself pinned to CPU 0 with BLAS
threads set to 1 (`--cpu N` picks the core). The I/O section is in :mod:`crbc.cli.bench_io`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import timeit
import tracemalloc
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse.linalg as spla

import crbc.estimators.closure as C
from crbc.actions import ACTIONS, INVALID_ACTION
from crbc.cli.bench_io import compute_ratio, measure_io
from crbc.estimators import registry as estimators
from crbc.io.rollouts import Rollout, RolloutGroup, Step, read_rollouts, write_rollouts
from crbc.process import merge

__all__ = ["add_arguments", "measure", "run", "synthetic_groups"]

_CHILD = "CRBC_BENCH_CHILD"


def synthetic_groups(n_groups: int, group_size: int = 8, max_len: int = 50, n_states: int = 40,
                     seed: int = 0) -> list[RolloutGroup]:
    """Random-walk groups: anchors shared across rollouts of a group, mixed outcomes."""
    rng = np.random.default_rng(seed)
    acts = (*ACTIONS, INVALID_ACTION)
    groups = []
    for g in range(n_groups):
        boards = [f"g{g}|board-{k:03d}|" + "#" * 24 for k in range(n_states)]  # anchor-like strings
        goal = int(rng.integers(1, n_states))
        rollouts = []
        for i in range(group_size):
            s, steps, success = 0, [], False
            length = int(rng.integers(max_len // 2, max_len + 1))
            for _ in range(length):
                a = int(rng.integers(len(acts)))
                steps.append(Step(boards[s], acts[a], reward=-0.1))
                s = s if a == 4 else (s + (1, -1, 7, -7)[a]) % n_states
                if s == goal and rng.random() < 0.5:
                    success = True
                    break
            rollouts.append(Rollout(f"task-{g}", i, tuple(steps), success, truncated=not success,
                                    score=10.0 * success - 0.1 * len(steps)))
        groups.append(RolloutGroup(f"task-{g}", tuple(rollouts)))
    return groups


def _best(fn, repeats: int) -> float:
    """The fastest of ``repeats`` single calls of ``fn``, in seconds (``timeit.repeat``)."""
    return min(timeit.repeat(fn, number=1, repeat=max(repeats, 1)))


def _value_iteration(p, beta: float, tol: float = 1e-10) -> tuple[np.ndarray, int]:
    v, _ = C.visit_local(p, beta)
    for it in range(1, 1_000_000):
        nv = C.backup_v(p, v, beta)
        if np.abs(nv - v).max(initial=0.0) < tol:
            return nv, it
        v = nv
    raise RuntimeError("value iteration did not converge")


def _dense_by_group(p, beta: float) -> np.ndarray:
    a, b = C.system(p, beta)
    a = a.tocsr()
    out = np.empty(p.n_states)
    for sl in p.group_slices():
        out[sl] = np.linalg.solve(a[sl, sl].toarray(), b[sl])
    return out


def measure(paper_groups: int = 16, large_groups: int = 1000, group_size: int = 8, max_len: int = 50,
            repeats: int = 5, beta: float = 0.98) -> dict:
    names = estimators.names()
    out: dict = {"machine": {"python": platform.python_version(), "numpy": np.__version__,
                             "scipy": scipy.__version__, "cpu": platform.processor() or platform.machine(),
                             "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}}

    paper = synthetic_groups(paper_groups, group_size, max_len, seed=1)
    pp = merge(paper)
    out["paper_update"] = {
        "groups": paper_groups, "rollouts": paper_groups * group_size, "steps": pp.n_steps,
        "target_ms": 2.85, "paper_reported_ms": 57.0,
        "merge_ms": 1e3 * _best(lambda: merge(paper), repeats * 4),
        "estimator_ms": {n: 1e3 * _best(lambda n=n: estimators.compute(n, pp), repeats * 4) for n in names},
        "end_to_end_ms": {n: 1e3 * _best(lambda n=n: estimators.compute(n, paper), repeats * 4) for n in names},
    }

    large = synthetic_groups(large_groups, group_size, max_len, seed=2)
    t_merge = _best(lambda: merge(large), max(2, repeats // 2))
    lp = merge(large)
    n = lp.n_steps
    est_s = {k: _best(lambda k=k: estimators.compute(k, lp), repeats) for k in names}
    out["large_batch"] = {
        "groups": large_groups, "rollouts": large_groups * group_size, "steps": n, "anchors": lp.n_states,
        "target_steps_per_s": 1_000_000,
        "merge_s": t_merge,
        "estimator_s": est_s,
        "steps_per_s_estimator_only": {k: n / t for k, t in est_s.items()},
        "steps_per_s_end_to_end": {k: n / (t + t_merge) for k, t in est_s.items()},
    }

    # json parsing, reported separately
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "large.jsonl")
        write_rollouts(path, large)
        out["large_batch"]["file_mb"] = os.path.getsize(path) / 2**20
        out["large_batch"]["json_read_s"] = _best(lambda: read_rollouts(path), 1)

    # the closure's single sparse solve vs dense group-by-group vs value iteration
    a, b = C.system(lp, beta)
    v_sparse = spla.spsolve(a, b)
    v_dense = _dense_by_group(lp, beta)
    v_vi, iters = _value_iteration(lp, beta)
    out["solvers"] = {
        "closure_solve_blocks_s": _best(lambda: C.solve_values(lp, beta, "blocks"), repeats),
        "closure_solve_sparse_s": _best(lambda: C.solve_values(lp, beta, "sparse"), repeats),
        "dense_group_by_group_s": _best(lambda: _dense_by_group(lp, beta), 2),
        "value_iteration_1e-10_s": _best(lambda: _value_iteration(lp, beta), 1),
        "value_iteration_sweeps": iters,
        "max_abs_diff_dense": float(np.abs(v_sparse - v_dense).max()),
        "max_abs_diff_value_iteration": float(np.abs(v_sparse - v_vi).max()),
    }

    # the same comparison on real agent groups: a shipped Sokoban sample, tiled to the large size
    sample = Path(__file__).resolve().parents[1] / "sample_rollouts" / "sokoban-weak.jsonl"
    if sample.exists():
        base = read_rollouts(sample)
        tiled = [RolloutGroup(f"{g.group}#{k}", tuple(dataclasses.replace(r, group=f"{g.group}#{k}")
                                                      for r in g.rollouts))
                 for k in range(-(-large_groups // len(base))) for g in base][:large_groups]
        tp = merge(tiled)
        t_est = {k: _best(lambda k=k: estimators.compute(k, tp), repeats) for k in names}
        out["sokoban_sample_tiled"] = {
            "source": sample.name, "groups": len(tiled), "steps": tp.n_steps, "anchors": tp.n_states,
            "estimator_s": t_est,
            "steps_per_s_estimator_only": {k: tp.n_steps / t for k, t in t_est.items()},
        }

    # the columnar I/O path: credit from file to file against json.loads, and crbc vs gigpo through
    # crbc.compute on in-memory groups (both pay the same merge)
    with tempfile.TemporaryDirectory() as d:
        out["io"] = measure_io(Path(d), max(1, large_groups // 2), large_groups, max_len, repeats, paper,
                               sample if sample.exists() else None)
    out["compute_crbc_vs_gigpo"] = {"random_walk_large_batch": compute_ratio(large, repeats)}
    if sample.exists():
        out["compute_crbc_vs_gigpo"]["sokoban_sample_tiled"] = compute_ratio(tiled, repeats)

    # linear growth: four batch sizes, least-squares slope of seconds against steps
    sizes = [large_groups // 8, large_groups // 4, large_groups // 2, large_groups]
    scaling = []
    for k in sizes:
        sub = merge(large[:k])
        scaling.append({"groups": k, "steps": sub.n_steps,
                        "crbc_s": _best(lambda sub=sub: estimators.compute("crbc", sub), repeats),
                        "gigpo_s": _best(lambda sub=sub: estimators.compute("gigpo", sub), repeats)})
    steps = np.array([r["steps"] for r in scaling], dtype=float)
    fit = {}
    for key in ("crbc_s", "gigpo_s"):
        secs = np.array([r[key] for r in scaling])
        slope, intercept = np.polyfit(steps, secs, 1)
        resid = secs - (slope * steps + intercept)
        fit[key.removesuffix("_s")] = {"ns_per_step": slope * 1e9, "intercept_ms": intercept * 1e3,
                                       "r2": float(1 - resid.var() / secs.var())}
    out["scaling"] = {"points": scaling, "fit": fit}

    # peak memory of the large batch (python + numpy allocations, from merged rollouts to credits)
    tracemalloc.start()
    p2 = merge(large)
    estimators.compute("crbc", p2)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["memory"] = {"large_batch_peak_traced_mb": peak / 2**20,
                     "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    pu, lb = out["paper_update"], out["large_batch"]
    out["targets"] = {
        "paper_update_under_2.85ms": pu["end_to_end_ms"]["crbc"] < 2.85,
        "large_batch_1M_steps_per_s_end_to_end": lb["steps_per_s_end_to_end"]["crbc"] >= 1e6,
        "crbc_not_slower_than_gigpo": lb["estimator_s"]["crbc"] <= lb["estimator_s"]["gigpo"],
        "credit_at_most_1.5x_json_loads_cpu": {
            k: v["ratio_credit_to_json_loads_cpu"] <= 1.5 for k, v in out["io"].items() if k.endswith("_file")},
        "compute_crbc_at_most_gigpo_cpu": {
            k: v["ratio_crbc_to_gigpo_cpu"] <= 1.0 for k, v in out["compute_crbc_vs_gigpo"].items()},
    }
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--large-groups", type=int, default=1000, help="groups in the large batch (default 1000)")
    p.add_argument("--paper-groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-len", type=int, default=50)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--all-cores", action="store_true", help="do not pin to one core")
    p.add_argument("--cpu", type=int, default=0, help="the core to pin to (default 0)")
    p.add_argument("-o", "--output", help="also write the JSON here")


def run(args: argparse.Namespace) -> int:
    if args.large_groups < 8 or args.paper_groups < 1 or args.group_size < 1 or args.max_len < 2:
        raise ValueError("sizes too small (need --large-groups >= 8, --max-len >= 2)")
    if not args.all_cores and os.environ.get(_CHILD) != "1":
        env = dict(os.environ, **{_CHILD: "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                  "MKL_NUM_THREADS": "1"})
        cmd = [sys.executable, "-m", "crbc", "bench", *sys.argv[2:]]
        pin = ["taskset", "-c", str(args.cpu)] if _has_taskset() else []
        return subprocess.call(pin + cmd, env=env)
    res = measure(args.paper_groups, args.large_groups, args.group_size, args.max_len, args.repeats)
    text = json.dumps(res, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return 0


def _has_taskset() -> bool:
    from shutil import which
    return which("taskset") is not None
