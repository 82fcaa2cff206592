"""Time similarity anchors (``--anchor-similarity``) against verl-agent's own grouping. Prints JSON.

    PYTHONPATH=. python benchmarks/bench_similarity.py [--groups 16] [--rollouts 8] [--steps 50]
           [--tau 0.95 0.9 0.8] [--seed 0] [--repeat 3] [--out FILE]

One ALFWorld-sized iteration: ``--groups`` task groups x ``--rollouts`` rollouts x ``--steps``
steps. Each group is one household (its locations, their objects) and one task; a rollout walks
it with a random policy (go to a location, open or close it, take an object, look, or an action
that fails), so rollouts of a group revisit the same states, as ALFWorld's do. The observation
is ALFWorld's text after the action (feedback, what the location holds, what the agent carries)
followed by the admissible actions, 300-800 characters; one state always reads the same, and
states at the same location differ by small edits (an object taken, a receptacle opened, the
inventory), so many observations are near-duplicates of others.

Timed on the same texts (best of ``--repeat``, wall and CPU seconds, each TAU):
``upstream``: tests/support/upstream_similarity.py, the faithful re-implementation of
verl-agent's ``build_step_group(..., enable_similarity=True)`` (one ``SequenceMatcher`` per
comparison, every cluster in order); ``fast``: :func:`crbc.io.similarity.cluster_texts` per
group, with the compiled block search when it is built (``block_search`` in the output says
which; ``CRBC_PURE_PYTHON_SIMILARITY=1`` times the pure-Python one). Both give the same clusters
(checked here on every run against the timed upstream run's own output; the parity tests check
it on other texts). Also reported: distinct texts, clusters, and the ``ratio()`` calls the fast
path still made.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crbc.io.similarity import _Clusters, cluster_texts, compiled_block_search  # noqa: E402
from tests.support.upstream_similarity import build_step_group_similar, clusters_from_uids  # noqa: E402

RECEPTACLES = ("cabinet", "countertop", "drawer", "shelf", "fridge", "microwave", "sinkbasin",
               "stoveburner", "diningtable", "garbagecan", "coffeemachine", "toaster")
OPENABLE = {"cabinet", "drawer", "fridge", "microwave"}
OBJECTS = ("apple", "bread", "butterknife", "cellphone", "cup", "dishsponge", "egg", "fork", "kettle",
           "knife", "lettuce", "mug", "pan", "peppershaker", "plate", "pot", "potato", "saltshaker",
           "soapbottle", "spatula", "spoon", "tomato")
TASKS = ("put a clean {o} in {r}", "heat some {o} and put it in {r}", "cool some {o} and put it in {r}",
         "find two {o} and put them in {r}", "put a {o} in {r}")


def household(rng: random.Random) -> tuple[list[str], dict[str, list[str]], str]:
    """Locations, the objects at each, and the task of one group."""
    locs = []
    for r in rng.sample(RECEPTACLES, 8):
        locs += [f"{r} {k}" for k in range(1, rng.randint(1, 3) + 1)]
    things = {loc: [f"{o} {rng.randint(1, 3)}" for o in rng.sample(OBJECTS, rng.randint(0, 4))] for loc in locs}
    task = rng.choice(TASKS).format(o=rng.choice(OBJECTS), r=rng.choice(locs).split()[0])
    return locs, things, task


def observation(feedback: str, at: str | None, state: dict, locs: list[str], task: str) -> str:
    """ALFWorld's text: the feedback, the location's contents, the inventory, the actions."""
    held, opened, things = state["held"], state["opened"], state["things"]
    parts = [feedback]
    if at is not None:
        kind = at.split()[0]
        if kind in OPENABLE and at not in opened:
            parts.append(f"The {at} is closed.")
        else:
            inside = things[at]
            parts.append(f"On the {at}, you see " + (", ".join(f"a {x}" for x in inside) if inside else "nothing") + ".")
    parts.append(f"You are carrying: {held or 'nothing'}. Your task is to: {task}.")
    acts = [f"go to {x}" for x in locs if x != at][:14]
    if at is not None:
        if at.split()[0] in OPENABLE:
            acts.append(f"{'close' if at in opened else 'open'} {at}")
        acts += [f"take {x} from {at}" for x in things[at]][:3]
    acts += ["inventory", "look"]
    return " ".join(parts) + "\nYour admissible actions of the current situation are: [" + ", ".join(
        f"'{a}'" for a in acts) + "]."


def rollout_texts(rng: random.Random, locs: list[str], things0: dict, task: str, steps: int) -> list[str]:
    """The observations one rollout sees (before each of its steps)."""
    state = {"held": None, "opened": set(), "things": {k: list(v) for k, v in things0.items()}}
    at, feedback = None, ("You are in the middle of a room. Looking quickly around you, you see "
                          + ", ".join(f"a {x}" for x in locs) + ".")
    out = []
    for _ in range(steps):
        out.append(observation(feedback, at, state, locs, task))
        u = rng.random()
        if u < 0.45:
            at = rng.choice(locs)
            feedback = f"You arrive at {at}."
        elif u < 0.6 and at is not None and at.split()[0] in OPENABLE:
            if at in state["opened"]:
                state["opened"].discard(at)
                feedback = f"You close the {at}."
            else:
                state["opened"].add(at)
                feedback = f"You open the {at}."
        elif u < 0.75 and at is not None and state["things"][at] and state["held"] is None:
            state["held"] = state["things"][at].pop(0)
            feedback = f"You pick up the {state['held']} from the {at}."
        elif u < 0.85:
            feedback = "Nothing happens."
        else:
            feedback = f"You are facing the {at}." if at else "You look around."
    return out


def iteration(seed: int, groups: int, rollouts: int, steps: int) -> list[list[str]]:
    """Each group's observations in verl-agent's row order (rollout after rollout)."""
    out = []
    for g in range(groups):
        rng = random.Random(f"{seed}-{g}")
        locs, things, task = household(rng)
        out.append([t for i in range(rollouts) for t in rollout_texts(random.Random(f"{seed}-{g}-{i}"), locs,
                                                                       things, task, steps)])
    return out


def best(fn, repeat: int) -> tuple[float, float, object]:
    wall = cpu = float("inf")
    res = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu, res


def count_ratios(groups: list[list[str]], tau: float) -> int:
    """The ``ratio()`` calls the fast path makes (a counting copy of its matcher)."""
    n = [0]
    orig = _Clusters.similar

    def counted(self, c, text, t):
        n[0] += 1
        return orig(self, c, text, t)

    _Clusters.similar = counted
    try:
        for g in groups:
            cluster_texts(g, tau)
    finally:
        _Clusters.similar = orig
    return n[0]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--tau", type=float, nargs="+", default=[0.95, 0.9, 0.8])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--upstream-repeat", type=int, default=1, help="repeats of the (slow) upstream timing")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    groups = iteration(args.seed, args.groups, args.rollouts, args.steps)
    lens = [len(t) for g in groups for t in g]
    obs = np.empty(sum(map(len, groups)), dtype=object)
    obs[:] = [t for g in groups for t in g]
    index = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    result: dict = {
        "what": "similarity clusters of one ALFWorld-sized iteration: verl-agent's build_step_group "
                "(faithful copy) vs crbc.io.similarity.cluster_texts",
        "groups": args.groups, "rollouts": args.rollouts, "steps": args.steps, "rows": len(obs),
        "seed": args.seed, "chars": {"min": min(lens), "median": int(np.median(lens)), "max": max(lens)},
        "distinct_texts": sum(len(set(g)) for g in groups),
        "python": platform.python_version(),
        "block_search": "compiled (crbc.io.blockmatch)" if compiled_block_search() else "pure Python",
        "loadavg_before": os.getloadavg(), "by_tau": {},
    }
    for tau in args.tau:
        up_wall, up_cpu, uids = best(lambda t=tau: build_step_group_similar(obs, index, t), args.upstream_repeat)
        fast_wall, fast_cpu, fast = best(lambda t=tau: [cluster_texts(g, t) for g in groups], args.repeat)
        same = all(f == clusters_from_uids(g, uids[index == k]) for k, (f, g) in enumerate(zip(fast, groups, strict=True)))
        result["by_tau"][str(tau)] = {
            "upstream_s": {"wall": round(up_wall, 4), "cpu": round(up_cpu, 4)},
            "fast_s": {"wall": round(fast_wall, 4), "cpu": round(fast_cpu, 4)},
            "speedup_cpu": round(up_cpu / fast_cpu, 1), "speedup_wall": round(up_wall / fast_wall, 1),
            "clusters": sum(len(r) for _, r in fast), "fast_ratio_calls": count_ratios(groups, tau),
            "same_clusters": same,
        }
    result["loadavg_after"] = os.getloadavg()
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
