"""Groups and anchor-level truths for the interval calibration (issue 36), cached on disk.

    python -m experiments.calibration_data --cache /work/calib-cache [--fit 300] [--validate 60] [--report 100]

Per setting (sokoban-weak, sokoban-strong, gridworld) and split (``fit``: level seeds from
2_000_000; ``validate``: from 1_000_000, the first held-out levels of crbc/policy/heldout.py, the
first round's report split, looked at while designing and so only a validation split now;
``report``: from 3_000_000, fresh levels for the final report; all disjoint), one group of 32 rollouts per level drawn from the exact pi(a|s) of the tiny model at T = 1
(``crbc.truth.sample.sample_group``, the accuracy experiment's "table" sampler), and the
anchor-level truth A(s_t, a_t) of every step (docs/MATH.md section 9). Smaller G are prefixes.
Written as ``<cache>/<setting>-<split>-<first seed>-<levels>.jsonl`` (the groups, ``crbc.rollout/1``) beside
``.npz`` (``advantage``: every step's A(s_t, a_t), groups one after another; ``steps``: each
group's number of steps), skipped when present, so reruns are cheap. Nothing is pickled.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SETTINGS = {
    "sokoban-weak": ("sokoban-6x6-v0", "models/sokoban-tiny-weak"),
    "sokoban-strong": ("sokoban-6x6-v0", "models/sokoban-tiny-strong"),
    "gridworld": ("gridworld-6x6-v0", "models/gridworld-tiny"),
}
SPLITS = {"fit": 2_000_000, "validate": 1_000_000, "report": 3_000_000}  #: split -> first level seed
G_MAX, BETA, RNG = 32, 0.98, 0


def build(setting: str, split: str, n_levels: int, cache: Path) -> Path:
    from crbc.envs import DEFAULT_MAX_STEPS
    from crbc.io.rollouts import RolloutGroup
    from crbc.truth import LevelKey, TruthCache, rollouts_truth, scorable_policy
    from crbc.truth.policies import load_tiny_checked
    from crbc.truth.sample import sample_group

    out = path(setting, split, n_levels, cache)
    if out.exists():
        return out
    env, model = SETTINGS[setting]
    pol = load_tiny_checked(model)
    scored = scorable_policy(pol, 1.0, name=pol.name)
    tc = TruthCache(resolver=lambda name, t: scored, max_states=200_000, full_policy=True)
    rows = []
    t0 = time.perf_counter()
    for seed in range(SPLITS[split], SPLITS[split] + n_levels):
        key = LevelKey(env, seed, DEFAULT_MAX_STEPS, pol.name, 1.0, BETA)
        g = sample_group(tc.level(key), G_MAX, RNG)
        tr = rollouts_truth(g.rollouts, BETA, tc, source=g.group)
        rows.append((RolloutGroup(g.group, g.rollouts), np.concatenate([st.anchor_advantage for st in tr])))
    save(rows, out)
    print(f"{out.name}: {n_levels} levels in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def path(setting: str, split: str, n_levels: int, cache: Path) -> Path:
    """The cached groups of a (setting, split, number of levels); the name holds the first seed."""
    return cache / f"{setting}-{split}-{SPLITS[split]}-{n_levels}.jsonl"


def save(rows: list, out: Path) -> None:
    """``rows`` of (RolloutGroup, advantage_N) as ``out`` (.jsonl) and its ``.npz``; the .jsonl,
    which :func:`build` checks for, is renamed into place last."""
    from crbc.io.rollouts import write_rollouts

    adv = [np.asarray(a, dtype=float) for _, a in rows]
    tmp_npz = out.with_name(out.stem + ".tmp.npz")
    np.savez(tmp_npz, advantage=np.concatenate(adv), steps=np.array([len(a) for a in adv]))
    tmp_npz.replace(out.with_suffix(".npz"))
    write_rollouts(out, [g for g, _ in rows])  # atomic


def load(setting: str, split: str, n_levels: int, cache: Path) -> list:
    """The list of (RolloutGroup, anchor_advantage_N) that :func:`build` wrote."""
    from crbc.io.rollouts import read_rollouts

    out = path(setting, split, n_levels, cache)
    groups = read_rollouts(out)
    with np.load(out.with_suffix(".npz"), allow_pickle=False) as z:
        adv, steps = z["advantage"], z["steps"]
    parts = np.split(adv, np.cumsum(steps)[:-1])
    if len(parts) != len(groups) or any(len(p) != sum(len(r) for r in g)
                                        for p, g in zip(parts, groups, strict=True)):
        raise ValueError(f"{out}: the truths do not fit the groups; delete both files and rebuild")
    return list(zip(groups, parts, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/work/calib-cache"))
    ap.add_argument("--fit", type=int, default=300)
    ap.add_argument("--validate", type=int, default=60)
    ap.add_argument("--report", type=int, default=100)
    ap.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--splits", nargs="*", default=list(SPLITS), choices=list(SPLITS))
    a = ap.parse_args()
    a.cache.mkdir(parents=True, exist_ok=True)
    sizes = {"fit": a.fit, "validate": a.validate, "report": a.report}
    for split in a.splits:
        for setting in a.settings:
            build(setting, split, sizes[split], a.cache)


if __name__ == "__main__":
    main()
