"""I/O benchmarks of ``python -m crbc bench``: the ``credit`` path from file to file against ``json.loads``.

Files: a random-walk file shaped like ``devtools/synthetic.py`` (groups of 16 walks of up to
``max_len`` steps on a 5x5 board; 500 groups give ~350k steps, ~8,000 rollouts) and the shipped
Sokoban sample tiled to as many groups as the large batch. Every time is the best of ``repeats``
runs, as wall clock and as this process's CPU time (the machine is shared: CPU time is the
steadier of the two); ``os.getloadavg()`` is reported with them.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from crbc.actions import ACTIONS
from crbc.estimators import registry as estimators
from crbc.io.columns import read_columns
from crbc.io.creditfile import write_credits
from crbc.process import from_columns, merge

__all__ = [
    "best", "compute_ratio", "credit_file_bench", "credit_in_process", "measure_io", "MOVES",
    "write_random_walk_file", "write_tiled_file"
]

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def best(fn, repeats: int) -> dict[str, float]:
    """Best wall-clock and best CPU seconds of ``repeats`` calls of ``fn``."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return {"wall_s": wall, "cpu_s": cpu}


def _board(size: int, pos: tuple[int, int], goal: tuple[int, int]) -> str:
    rows = []
    for r in range(size + 2):
        rows.append("".join("#" if r in (0, size + 1) or c in (0, size + 1) else
                            "P" if (r, c) == pos else "G" if (r, c) == goal else "_" for c in range(size + 2)))
    return "\n".join(rows)


def write_random_walk_file(path: Path, n_groups: int, group_size: int = 16, max_len: int = 50,
                           size: int = 5, seed: int = 0) -> int:
    """Random walks from the top-left corner to a goal at the bottom right (a success when the
    walk reaches it within ``max_len`` steps, else truncated); rewards 1 at the goal, -0.01
    elsewhere; score = their sum. Returns the number of steps written."""
    rng = random.Random(seed)
    goal = (size, size)
    boards = {(r, c): _board(size, (r, c), goal) for r in range(1, size + 1) for c in range(1, size + 1)}
    n_steps = 0
    with open(path, "w", encoding="utf-8") as f:
        for g in range(n_groups):
            for i in range(group_size):
                pos, steps, success, score = (1, 1), [], False, 0.0
                for _ in range(max_len):
                    action = ACTIONS[rng.randrange(4)]
                    nxt = (pos[0] + MOVES[action][0], pos[1] + MOVES[action][1])
                    if not (1 <= nxt[0] <= size and 1 <= nxt[1] <= size):
                        nxt = pos
                    reward = 1.0 if nxt == goal else -0.01
                    steps.append({"anchor": boards[pos], "action": action, "reward": reward})
                    score += reward
                    pos = nxt
                    if pos == goal:
                        success = True
                        break
                n_steps += len(steps)
                f.write(json.dumps({"schema": "crbc.rollout/1", "group": f"synthetic/random-walk-{g}", "rollout": i,
                                    "steps": steps, "success": success, "truncated": not success,
                                    "score": score, "meta": {"env": "synthetic", "seed": g}}) + "\n")
    return n_steps


def write_tiled_file(sample: Path, path: Path, n_groups: int) -> None:
    """The sample's groups repeated under new names (``<group>#k``) until ``n_groups`` groups."""
    recs = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = list(dict.fromkeys(r["group"] for r in recs))
    with open(path, "w", encoding="utf-8") as f:
        for k in range(-(-n_groups // len(names))):
            for name in names[:n_groups - k * len(names)]:
                for r in recs:
                    if r["group"] == name:
                        f.write(json.dumps(r | {"group": f"{name}#{k}"}) + "\n")


def _json_loads_all(path: Path) -> list:
    with open(path, "rb") as f:
        return [json.loads(line) for line in f]


def credit_in_process(path: Path, out: Path, name: str = "crbc") -> None:
    """What ``python -m crbc credit PATH -o OUT`` does after its imports."""
    write_credits(estimators.compute(name, from_columns(read_columns(path, keep_text=False))), out)


def _reference_credit(path: Path, out: Path) -> None:
    """The former path: line-by-line reader, Rollout objects, merge, json.dumps per record."""
    from crbc.io.rollouts import atomic_write_lines, reference_read_rollouts
    credits = estimators.compute("crbc", reference_read_rollouts(path))
    atomic_write_lines(out, (json.dumps(rec, allow_nan=False) for rec in credits.records()))


def _child_rss_mb(code: str) -> float:
    """Peak resident memory (MB, ``VmHWM``) of a fresh ``python -c code`` (``ru_maxrss`` would
    carry this process's peak across the exec)."""
    probe = code + "\nprint([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    return float(r.stdout.split()[-1]) / 1024


def credit_file_bench(path: Path, repeats: int, reference: bool = True) -> dict:
    """``credit`` end to end on ``path`` against ``json.loads`` of its lines, phases, memory."""
    out = path.with_suffix(".credits.jsonl")
    res: dict = {"file_mb": path.stat().st_size / 2**20}
    res["json_loads"] = best(lambda: _json_loads_all(path), repeats)
    res["credit_in_process"] = best(lambda: credit_in_process(path, out), repeats)
    cols = read_columns(path, keep_text=False)
    p = from_columns(cols)
    credits = estimators.compute("crbc", p)
    res["steps"], res["rollouts"], res["anchors"] = p.n_steps, cols.n_rollouts, p.n_states
    res["phases"] = {
        "read_columns": best(lambda: read_columns(path, keep_text=False), repeats),
        "from_columns": best(lambda: from_columns(cols), repeats),
        "estimator_crbc": best(lambda: estimators.compute("crbc", p), repeats),
        "write_credits": best(lambda: write_credits(credits, out), repeats),
    }
    cmd = [sys.executable, "-m", "crbc", "credit", str(path), "-o", str(out)]
    res["credit_subprocess_wall_s"] = best(lambda: subprocess.run(cmd, check=True), max(1, repeats // 2))["wall_s"]
    res["python_start_and_imports_wall_s"] = best(lambda: subprocess.run(
        [sys.executable, "-c", "import crbc.cli.credit"], check=True), max(1, repeats // 2))["wall_s"]
    for key in ("wall_s", "cpu_s"):
        res[f"ratio_credit_to_json_loads_{key[:-2]}"] = res["credit_in_process"][key] / res["json_loads"][key]
    if reference:
        res["former_path_in_process"] = best(lambda: _reference_credit(path, out), 1)
        res["ratio_former_to_json_loads_cpu"] = res["former_path_in_process"]["cpu_s"] / res["json_loads"]["cpu_s"]
    res["peak_rss_mb"] = {
        "credit": _child_rss_mb(f"from crbc.cli.main import main; main(['credit', {str(path)!r}, '-o', {str(out)!r}])"),
        "imports_only": _child_rss_mb("import crbc.cli.credit"),
        "json_loads_all_lines": _child_rss_mb(f"from crbc.cli.bench_io import _json_loads_all; "
                                              f"x = _json_loads_all(__import__('pathlib').Path({str(path)!r}))"),
    }
    out.unlink(missing_ok=True)
    return res


def measure_io(workdir: Path, io_groups: int, tiled_groups: int, max_len: int, repeats: int,
               paper_groups: list, sample: Path | None) -> dict:
    """The I/O section of the benchmark (see the module docstring)."""
    out: dict = {"loadavg_before": os.getloadavg()}
    rw = workdir / "random-walk.jsonl"
    write_random_walk_file(rw, io_groups, max_len=max_len)
    out["random_walk_file"] = credit_file_bench(rw, repeats)
    if sample is not None and sample.exists():
        tiled = workdir / "sokoban-tiled.jsonl"
        write_tiled_file(sample, tiled, tiled_groups)
        out["sokoban_tiled_file"] = credit_file_bench(tiled, repeats)
    # a paper-sized update end to end from its file (read, build, estimate, write)
    from crbc.io.rollouts import write_rollouts
    paper = workdir / "paper.jsonl"
    write_rollouts(paper, paper_groups)
    credits_out = workdir / "paper.credits.jsonl"
    t = best(lambda: credit_in_process(paper, credits_out), repeats * 4)
    j = best(lambda: _json_loads_all(paper), repeats * 4)
    out["paper_update_from_file_ms"] = {"wall_ms": 1e3 * t["wall_s"], "cpu_ms": 1e3 * t["cpu_s"],
                                        "json_loads_wall_ms": 1e3 * j["wall_s"], "json_loads_cpu_ms": 1e3 * j["cpu_s"]}
    out["loadavg_after"] = os.getloadavg()
    return out


def compute_ratio(groups: list, repeats: int) -> dict:
    """crbc and gigpo through ``crbc.compute`` on the same in-memory groups (merge included)."""
    t = {n: best(lambda n=n: estimators.compute(n, groups), repeats) for n in ("gigpo", "crbc")}
    return {"steps": int(sum(g.n_steps for g in groups)), "gigpo": t["gigpo"], "crbc": t["crbc"],
            "ratio_crbc_to_gigpo_wall": t["crbc"]["wall_s"] / t["gigpo"]["wall_s"],
            "ratio_crbc_to_gigpo_cpu": t["crbc"]["cpu_s"] / t["gigpo"]["cpu_s"],
            "merge": best(lambda: merge(groups), repeats),
            "loadavg": os.getloadavg()}
