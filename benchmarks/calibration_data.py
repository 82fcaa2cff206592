"""Groups and anchor-level truths for the interval calibration (issue 36), cached on disk.

    python -m benchmarks.calibration_data --cache /work/calib-cache [--fit 100] [--report 60]

Per setting (sokoban-weak, sokoban-strong, gridworld) and split (``fit``: level seeds from
2_000_000, ``report``: from 1_000_000, the held-out levels of crbc/policy/heldout.py; disjoint),
one group of 32 rollouts per level drawn from the exact pi(a|s) of the tiny model at T = 1
(``crbc.truth.sample.sample_group``, the accuracy experiment's "table" sampler), and the
anchor-level truth A(s_t, a_t) of every step (docs/MATH.md section 9). Smaller G are prefixes.
Written as ``<cache>/<setting>-<split>.pkl`` (a list of (RolloutGroup, anchor_advantage_N)),
skipped when present, so reruns are cheap.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np

SETTINGS = {
    "sokoban-weak": ("sokoban-6x6-v0", "models/sokoban-tiny-weak"),
    "sokoban-strong": ("sokoban-6x6-v0", "models/sokoban-tiny-strong"),
    "gridworld": ("gridworld-6x6-v0", "models/gridworld-tiny"),
}
SPLITS = {"fit": 2_000_000, "report": 1_000_000}
G_MAX, BETA, RNG = 32, 0.98, 0


def build(setting: str, split: str, n_levels: int, cache: Path) -> Path:
    from crbc.envs import DEFAULT_MAX_STEPS
    from crbc.io.rollouts import RolloutGroup
    from crbc.truth import LevelKey, TruthCache, rollouts_truth, scorable_policy
    from crbc.truth.policies import load_tiny_checked
    from crbc.truth.sample import sample_group

    out = cache / f"{setting}-{split}-{n_levels}.pkl"
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
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(rows))
    tmp.replace(out)
    print(f"{out.name}: {n_levels} levels in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def load(setting: str, split: str, n_levels: int, cache: Path) -> list:
    return pickle.loads((cache / f"{setting}-{split}-{n_levels}.pkl").read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/work/calib-cache"))
    ap.add_argument("--fit", type=int, default=100)
    ap.add_argument("--report", type=int, default=60)
    a = ap.parse_args()
    a.cache.mkdir(parents=True, exist_ok=True)
    for split, n in (("fit", a.fit), ("report", a.report)):
        for setting in SETTINGS:
            build(setting, split, n, a.cache)


if __name__ == "__main__":
    main()
