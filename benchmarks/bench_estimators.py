"""Steps per second of every registered estimator on the same groups; prints one JSON object.

    python -m benchmarks.bench_estimators [--groups 16] [--group-size 8] [--max-len 50] [--repeats 20]

The groups are ``crbc bench``'s synthetic agent-like random walks (:func:`crbc.cli.bench.synthetic_groups`:
G rollouts over a small per-group state space, cycles, self-loops, invalid actions, 25-50 steps),
by default the paper-sized update 16 groups x 8 rollouts x up to 50 steps (ALFWorld's shape).
The batch is merged once; each estimator is timed on the merged process (``estimator``) and from
the groups, merge included (``end_to_end``), as the best of ``repeats`` calls (wall clock,
``time.perf_counter`` through ``timeit``). ``vs_gigpo`` is the estimator's time over gigpo's
(below 1: faster). No timing is asserted anywhere; docs/results/benchmarks.md records runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import timeit

import numpy as np
import scipy

from crbc.cli.bench import synthetic_groups
from crbc.estimators import registry as estimators
from crbc.process import merge


def _best(fn, repeats: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=max(repeats, 1)))


def measure(n_groups: int = 16, group_size: int = 8, max_len: int = 50, repeats: int = 20,
            seed: int = 0) -> dict:
    """Per estimator: best seconds on the merged process and end to end, steps per second, ratio
    to gigpo. Every estimator runs once first (imports, caches) and is then timed."""
    groups = synthetic_groups(n_groups, group_size, max_len, seed=seed)
    p = merge(groups)
    names = estimators.names()
    for n in names:
        estimators.compute(n, p)
    est = {n: _best(lambda n=n: estimators.compute(n, p), repeats) for n in names}
    e2e = {n: _best(lambda n=n: estimators.compute(n, groups), max(repeats // 4, 1)) for n in names}
    steps = p.n_steps
    return {
        "batch": {"groups": n_groups, "group_size": group_size, "max_len": max_len, "steps": steps,
                  "anchors": p.n_states, "seed": seed},
        "repeats": repeats,
        "estimator": {n: {"ms": 1e3 * est[n], "steps_per_s": steps / est[n],
                          "vs_gigpo": est[n] / est["gigpo"]} for n in names},
        "end_to_end": {n: {"ms": 1e3 * e2e[n], "steps_per_s": steps / e2e[n],
                           "vs_gigpo": e2e[n] / e2e["gigpo"]} for n in names},
        "env": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                "cpus": os.cpu_count(), "loadavg": list(os.getloadavg())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--group-size", dest="group_size", type=int, default=8)
    ap.add_argument("--max-len", dest="max_len", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(json.dumps(measure(a.groups, a.group_size, a.max_len, a.repeats, a.seed), indent=1))


if __name__ == "__main__":
    main()
