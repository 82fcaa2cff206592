"""Random rollout groups on a chain, for twins and trainer batches: small, seeded, with shared
anchors, truncations and (in chain_groups) invalid actions and step rewards."""

from __future__ import annotations

import numpy as np

from crbc.io.rollouts import Rollout, RolloutGroup, Step


def random_groups(seed: int, n_groups: int = 4, size: int = 6) -> list[RolloutGroup]:
    """Walks on a chain 0..4 (goal 4), a few actions, some rollouts truncated."""
    rng = np.random.default_rng(seed)
    groups = []
    for g in range(n_groups):
        rs = []
        for i in range(size):
            pos, steps, won = 0, [], False
            for _ in range(int(rng.integers(1, 8))):
                a = str(rng.choice(["left", "right", "right", "stay"]))
                nxt = max(0, pos + (a == "right") - (a == "left"))
                steps.append(Step(f"c{pos}", a))
                pos, won = nxt, nxt >= 4
                if won:
                    break
            rs.append(Rollout(f"g{g}", i, tuple(steps), won, truncated=not won))
        groups.append(RolloutGroup(f"g{g}", tuple(rs)))
    return groups


def chain_groups(seed: int, n_groups: int = 3, group_size: int = 5, max_steps: int = 7) -> list[RolloutGroup]:
    """Random walks on a chain (goal at cell 3), invalid outputs included; each rollout carries
    its step rewards (10 on reaching the goal) and their sum as its score, as verl-agent's
    ``episode_rewards``."""
    rng = np.random.default_rng(seed)
    groups = []
    for g in range(n_groups):
        rs = []
        for i in range(int(rng.integers(1, group_size + 1)) if g == 0 else group_size):
            pos, steps, won = 0, [], False
            for _ in range(int(rng.integers(1, max_steps + 1))):
                a = str(rng.choice(["left", "right", "right", "stay", "invalid"]))
                nxt = max(0, pos + (a == "right") - (a == "left"))
                won = nxt >= 3
                steps.append(Step(f"cell-{pos}", a, reward=10.0 if won else 0.0))
                pos = nxt
                if won:
                    break
            rs.append(Rollout(f"task-{g}", i, tuple(steps), won, truncated=not won,
                              score=sum(s.reward for s in steps)))
        groups.append(RolloutGroup(f"task-{g}", tuple(rs)))
    return groups
