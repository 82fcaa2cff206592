"""Texts the similarity tests share (tests/io/test_similarity*.py)."""

from __future__ import annotations

import random


def sokoban_texts(seed: int, rollouts: int = 8, steps: int = 15) -> list[str]:
    """The boards ``rollouts`` random walks of ``steps`` moves see on level ``seed`` of the 6 x 6
    Sokoban (41 characters each), in rollout order."""
    from crbc.envs import make

    out = []
    for i in range(rollouts):
        env = make("sokoban-6x6-v0", max_steps=steps)
        obs, _ = env.reset(seed=seed)
        rng = random.Random(1000 * seed + i)
        for _ in range(steps):
            out.append(obs)
            obs, _, terminated, truncated, _ = env.step(rng.choice(["up", "down", "left", "right"]))
            if terminated or truncated:
                break
    return out
