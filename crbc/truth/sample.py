"""Sample rollout groups on a solved level from the exact pi(a|s): ``generate``'s distribution,
without running the model again.

``generate`` samples each reply token by token from softmax(logits / T); the truth reads the
same probabilities exactly, so drawing the semantic action from pi(.|s) and moving on the state
space gives rollouts with the same law (up to float rounding of the sampling CDF), the same
anchors, actions, rewards, success and truncation flags and the same ``meta``. Only ``obs``
(equal to the anchor) and the raw ``response`` text are left out. Per-episode random streams
come from ``SeedSequence([rng_seed, level seed, rollout index])``, so a group of G is the first
G rollouts of a larger group on the same seed, like ``generate``.
"""

from __future__ import annotations

import numpy as np

from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.truth.solve import LevelTruth
from crbc.truth.space import TRUTH_ACTIONS

__all__ = ["sample_group"]


def sample_group(truth: LevelTruth, group_size: int, rng_seed: int = 0) -> RolloutGroup:
    """``group_size`` rollouts of ``truth``'s policy on its level (see the module docstring)."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    sp = truth.space
    if not truth.pi_full and sp.dead_S.any():
        raise ValueError("sampling needs the policy on dead states too: solve the level with "
                         "full_policy=True")
    cdf_SA = np.cumsum(truth.pi_SA, axis=1)
    level_seed = 0 if sp.seed is None else sp.seed
    gid = f"{sp.env_id}/seed-{level_seed}"
    meta = {"env": sp.env_id, "seed": level_seed, "policy": truth.policy,
            "temperature": truth.temperature, "max_steps": sp.horizon}
    rollouts = []
    for i in range(group_size):
        u = np.random.default_rng(np.random.SeedSequence([rng_seed, level_seed, i])).random(sp.horizon)
        s, steps, success = 0, [], False
        for t in range(sp.horizon):
            row = cdf_SA[s]
            a = min(int(np.searchsorted(row, u[t] * row[-1], side="right")), len(TRUTH_ACTIONS) - 1)
            board = sp.boards[s]
            steps.append(Step(board, TRUTH_ACTIONS[a], None, None, float(sp.reward_SA[s, a])))
            s = int(sp.next_SA[s, a])
            if sp.solved_S[s]:
                success = True
                break
        score = float(sum(st.reward for st in steps))  # as generate writes it
        rollouts.append(Rollout(gid, i, tuple(steps), success, not success, score, dict(meta)))
    return RolloutGroup(gid, tuple(rollouts))
