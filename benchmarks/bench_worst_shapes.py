"""Time and peak memory of every estimator on worst-shape groups, against size; prints one JSON object.

    python benchmarks/bench_worst_shapes.py [--cases ring,hub,random,deep,actions,small]
        [--fractions 0.1,0.3,1] [--estimators all] [--intervals 200] [--budget 60] [--mem-mb 3000]
        [--ring 3000] [--hub 100000] [--random 20000] [--deep 100000] [--actions 2000]
        [--small 250000] [--seed 0] [-o OUT.json]
    python benchmarks/bench_worst_shapes.py --table AFTER.json [BEFORE.json]   # Markdown table

The shapes (issue 57), each one ``crbc.rollout/1`` file written once per size:

* ``ring``: one group whose anchors form a ring of ``--ring`` anchors (1 hop forward, back or
  stay); 2 * ring / 3 rollouts of 30 steps start anywhere on it: long cycles, one big strongly
  connected block (the closure's sparse LU fills the ring's band);
* ``hub``: one group of 200 rollouts that sit at one hub anchor, repeating an ``invalid``
  self-loop (``--hub`` visits in all), with short excursions to 200 spokes and back;
* ``random``: one group of ``--random`` / 5 rollouts of 25 steps whose anchors are drawn
  uniformly from ``--random`` anchors (a random sparse graph with cycles, the 3.5 MB upload of
  issue 57 at the default);
* ``deep``: one group of 2,001 rollouts over 400 anchors, one of them ``--deep`` steps long and
  the others 20 steps (deep histories: a rollouts x steps padded array is 2,001 x ``--deep``);
* ``actions``: one group whose 50 anchors each see ``--actions`` distinct actions;
* ``small``: ``--small`` groups of two one- or two-step rollouts (many tiny blocks).

Each (shape, size, estimator) runs in a child process of its own (``--budget`` seconds of wall
clock, an address-space limit of ``--mem-mb``): it reads the file with the ``credit`` command's
reader (``read_columns`` + ``from_columns``), then computes the estimator on the process once.
Reported: ``load_s`` (read and merge), ``s`` (the estimator alone, wall clock; ``cpu_s`` its CPU
time, which a shared machine's load moves far less), ``rss_mb`` (the
child's peak resident set, ``ru_maxrss``, imports and data included) and ``rss_load_mb`` (the
peak before the estimator ran), or ``error`` ("timeout", "memory" or the exception). The
``intervals`` row is :func:`crbc.estimators.bootstrap.credit_intervals` of crbc with
``--intervals`` draws, what the studio's Step credits page computes; a ``side_by_side`` row (asked
for in ``--estimators``) is the Bellman backups page's comparison of every method at the most
visited anchor with two or more actions; a ``similarity`` row is ``--anchor-similarity 0.9`` on the
file's columns (:func:`crbc.io.similarity.similar_columns`). BLAS threads are pinned to
one. No timing is asserted anywhere; docs/results/scaling.md records runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("ring", "hub", "random", "deep", "actions", "small")
DEFAULT_SIZE = {"ring": 3000, "hub": 100000, "random": 20000, "deep": 100000, "actions": 2000,
                "small": 250000}
MOVES = ("left", "right", "up")


def _line(group: str, rollout: int, anchors, actions, success: bool) -> str:
    steps = [{"anchor": a, "action": x} for a, x in zip(anchors, actions, strict=True)]
    return json.dumps({"group": group, "rollout": rollout, "steps": steps, "success": bool(success)},
                      separators=(",", ":"))


def rollout_lines(case: str, size: int, seed: int = 0):  # noqa: C901
    """The ``crbc.rollout/1`` lines of one worst shape of the given size (module docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if case == "ring":
        for i in range(max(2 * size // 3, 2)):
            s = int(rng.integers(size))
            anchors, acts = [], []
            for _ in range(30):
                a = int(rng.integers(3))
                anchors.append(f"r{s}")
                acts.append(MOVES[a])
                s = (s + (1, -1, 0)[a]) % size
            yield _line("ring", i, anchors, acts, s < size // 10)
    elif case == "hub":
        n_roll, per = 200, max(size // 200, 1)
        for i in range(n_roll):
            anchors, acts = [], []
            for _ in range(per):
                if rng.random() < 0.1:
                    k = int(rng.integers(200))
                    anchors += ["hub", f"spoke{k}"]
                    acts += [f"go{k}", "back"]
                else:
                    anchors.append("hub")
                    acts.append("invalid")
            yield _line("hub", i, anchors, acts, rng.random() < 0.3)
    elif case == "random":
        for i in range(max(size // 5, 2)):
            anchors = [f"a{int(x)}" for x in rng.integers(size, size=25)]
            acts = [MOVES[int(x)] for x in rng.integers(3, size=25)]
            yield _line("random", i, anchors, acts, rng.random() < 0.3)
    elif case == "deep":
        for i in range(2001):
            n = size if i == 0 else 20
            anchors = [f"d{int(x)}" for x in rng.integers(400, size=n)]
            acts = [MOVES[int(x)] for x in rng.integers(3, size=n)]
            yield _line("deep", i, anchors, acts, i % 2 == 0)
    elif case == "actions":
        per_anchor = 50
        for i in range(max(size * per_anchor // 10, 2)):
            anchors = [f"x{int(x)}" for x in rng.integers(per_anchor, size=10)]
            acts = [f"act{int(x)}" for x in rng.integers(size, size=10)]
            yield _line("actions", i, anchors, acts, rng.random() < 0.3)
    elif case == "small":
        for g in range(size):
            for i in range(2):
                n = int(rng.integers(1, 3))
                anchors = [f"s{int(x)}" for x in rng.integers(3, size=n)]
                yield _line(f"g{g}", i, anchors, ["up"] * n, rng.random() < 0.5)
    else:
        raise ValueError(f"unknown case {case!r}; one of {', '.join(CASES)}")


def write_case(folder: Path, case: str, size: int, seed: int) -> Path:
    path = folder / f"{case}-{size}.jsonl"
    if not path.exists():
        with open(path, "w", encoding="utf-8") as f:
            for line in rollout_lines(case, size, seed):
                f.write(line + "\n")
    return path


def _child(path: str, name: str, n_draws: int) -> dict:
    """Runs in the child: read and merge, then one estimator (or crbc's intervals, or the backups
    side by side at the most visited anchor with two or more actions, or the most visited one; or the
    anchors merged at similarity 0.9), measured."""
    from crbc.estimators import registry
    from crbc.io.rollout_files import read_columns
    from crbc.process import from_columns

    t0 = time.perf_counter()
    cols = read_columns(path, keep_text=False)
    p = from_columns(cols)
    load = time.perf_counter() - t0
    rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    if name == "intervals":
        from crbc.estimators.bootstrap import credit_intervals

        credit_intervals(p, "crbc", n_resamples=n_draws, seed=0)
    elif name == "similarity":  # --anchor-similarity 0.9 on the file's columns (each group's texts clustered)
        from crbc.io.similarity import similar_columns

        similar_columns(cols, 0.9)
    elif name == "side_by_side":  # the Bellman backups page's comparison at the busiest choosable anchor
        from crbc.explain.backups_side import choosable_anchors, side_by_side

        side_by_side(p, (choosable_anchors(p) or [int(p.n_s.argmax())])[0])  # small: no anchor has 2 actions
    else:
        registry.compute(name, p)
    return {"load_s": round(load, 3), "s": round(time.perf_counter() - t0, 3),
            "cpu_s": round(time.process_time() - c0, 3),
            "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "rss_load_mb": round(rss_load, 1),
            "steps": int(p.n_steps), "anchors": int(p.n_states), "pairs": int(len(p.n_sa)),
            "groups": len(p.group_ids)}


def run_one(path: Path, name: str, n_draws: int, budget: float, mem_mb: int) -> dict:
    """One child process; its JSON line, or the reason it gave none."""
    def limit() -> None:
        cap = mem_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    cmd = [sys.executable, __file__, "--child", str(path), name, str(n_draws)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=budget, preexec_fn=limit,
                             env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {budget:g} s"}
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        return {"error": "memory" if "MemoryError" in tail[0] else tail[0][:300]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(r: dict | None) -> str:
    if r is None:
        return ""
    if "error" in r:
        return r["error"]
    return f"{r['cpu_s']:.2f} s / {r['rss_mb']:.0f} MB"


def table(after: dict, before: dict | None = None) -> str:
    """The Markdown table of docs/results/scaling.md: per case, size and estimator, CPU time and
    peak RSS of the estimator's child (and the same from ``before``, matched by case, size and
    estimator)."""
    old = {(r["case"], r["size"], r["estimator"]): r for r in (before or {}).get("rows", [])}
    head = "| shape | size | steps / anchors / pairs | estimator | now: CPU / peak RSS | before |"
    lines = [head, "|---|---|---|---|---|---|"]
    for r in after["rows"]:
        shape = (f"{r['steps']:,} / {r['anchors']:,} / {r['pairs']:,}" if "steps" in r else "")
        prev = old.get((r["case"], r["size"], r["estimator"]))
        lines.append(f"| {r['case']} | {r['size']:,} | {shape} | {r['estimator']} | {_cell(r)} | "
                     f"{_cell(prev) if prev else '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return 0
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--table":
        docs = [json.loads(Path(f).read_text()) for f in sys.argv[2:4]]
        print(table(*docs))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--fractions", default="0.1,0.3,1", help="sizes as fractions of each case's size")
    ap.add_argument("--estimators", default="all",
                    help="comma-separated names, 'all', plus 'intervals'; 'side_by_side': the backups side by "
                         "side; 'similarity': --anchor-similarity 0.9")
    ap.add_argument("--intervals", type=int, default=200, help="draws B of the intervals row (0: no row)")
    ap.add_argument("--budget", type=float, default=60.0, help="wall-clock seconds per child")
    ap.add_argument("--mem-mb", type=int, default=3000, help="address-space limit per child")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="write the case files here (kept)")
    ap.add_argument("-o", "--output", type=Path, default=None, help="also write the JSON here")
    for case in CASES:
        ap.add_argument(f"--{case}", type=int, default=DEFAULT_SIZE[case], help=f"full size of {case}")
    args = ap.parse_args(argv)

    import numpy as np
    import scipy

    from crbc.estimators import registry

    names = registry.names() if args.estimators == "all" else args.estimators.split(",")
    if args.intervals > 0 and "intervals" not in names:
        names = [*names, "intervals"]
    fractions = [float(f) for f in args.fractions.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for case in args.cases.split(","):
            for frac in fractions:
                size = max(int(round(getattr(args, case) * frac)), 2)
                path = write_case(folder, case, size, args.seed)
                for name in names:
                    r = run_one(path, name, args.intervals, args.budget, args.mem_mb)
                    rows.append({"case": case, "size": size, "mb": round(path.stat().st_size / 1e6, 2),
                                 "estimator": name, **r})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = json.dumps({"benchmark": "worst_shapes", "budget_s": args.budget, "mem_mb": args.mem_mb,
                      "intervals_B": args.intervals, "rows": rows,
                      "env": {"python": platform.python_version(), "numpy": np.__version__,
                              "scipy": scipy.__version__, "cpus": os.cpu_count(),
                              "loadavg": [round(x, 2) for x in os.getloadavg()]}}, indent=1)
    print(out)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
