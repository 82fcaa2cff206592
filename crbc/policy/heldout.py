"""Held-out evaluation: the one split between training and evaluation levels, and ``evaluate``.

Level seeds below ``HELD_OUT_SEED`` are for pretraining and training; evaluation uses the
seeds ``HELD_OUT_SEED, HELD_OUT_SEED + 1, ...``, so the two never meet. ``evaluate`` rolls a
policy out on the first ``n_seeds`` of them with a fixed sampling seed, so two policies evaluated
with the same arguments see the same levels and the same random numbers (common random numbers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crbc.actions import INVALID_ACTION

__all__ = ["evaluate", "HELD_OUT_SEED", "held_out_seeds"]

HELD_OUT_SEED = 1_000_000  #: held-out evaluation levels use seeds >= this; training levels stay below


def held_out_seeds(n: int, first: int = HELD_OUT_SEED) -> list[int]:
    """The first ``n`` held-out level seeds."""
    return list(range(first, first + n))


def evaluate(policy, env_id: str, n_seeds: int = 128, group_size: int = 8, max_steps: int | None = 15,
             temperature: float = 1.0, rng: int = 0, first_seed: int = HELD_OUT_SEED,
             return_groups: bool = False) -> dict[str, Any]:
    """Success rate and group statistics of ``policy`` on held-out levels.

    Keys: ``seeds`` ("first-last"), ``group_size``, ``temperature``, ``max_steps``,
    ``success_rate``, ``mean_return``, ``mean_length`` (steps per episode), ``mixed_group_share``,
    ``all_success_share``, ``all_failure_share``, ``invalid_action_share``, and
    ``level_success`` (the success rate of each level, shape (n_seeds,), for paired tests);
    with ``return_groups`` also ``groups`` (the rollouts).
    """
    from crbc.policy.generate import generate_groups

    seeds = held_out_seeds(n_seeds, first_seed)
    groups = generate_groups(env_id, seeds, group_size, policy, temperature, max_steps, rng=rng)
    rates = np.array([g.success_rate for g in groups])
    rollouts = [r for g in groups for r in g.rollouts]
    steps = [s for r in rollouts for s in r.steps]
    out: dict[str, Any] = {
        "seeds": f"{seeds[0]}-{seeds[-1]}", "group_size": group_size, "temperature": temperature,
        "max_steps": max_steps, "success_rate": round(float(rates.mean()), 4),
        "mean_return": float(np.mean([r.effective_score for r in rollouts])),
        "mean_length": len(steps) / max(len(rollouts), 1),
        "mixed_group_share": round(float(np.mean((rates > 0) & (rates < 1))), 4),
        "all_success_share": round(float(np.mean(rates == 1)), 4),
        "all_failure_share": round(float(np.mean(rates == 0)), 4),
        "invalid_action_share": round(sum(s.action == INVALID_ACTION for s in steps) / max(len(steps), 1), 4),
        "level_success": [round(float(x), 6) for x in rates],
    }
    if return_groups:
        out["groups"] = groups
    return out
