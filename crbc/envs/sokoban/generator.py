"""The seeded level generator: a random connected room, boxes on targets, reverse play."""


from __future__ import annotations

import numpy as np

from crbc.envs.base import ACTIONS, DELTAS
from crbc.envs.sokoban.level import Cell, SokobanConfig, SokobanLevel
from crbc.envs.sokoban.solver import shortest_distance

__all__ = ["generate_level"]


def _border(height: int, width: int) -> set[Cell]:
    return {
        (r, c) for r in range(height) for c in range(width) if r in (0, height - 1) or c in (0, width - 1)
    }


def _random_floor(config: SokobanConfig, rng: np.random.Generator) -> list[Cell]:
    """Connected floor cells carved by a random walk inside the border (sorted, deterministic)."""
    h, w = config.height, config.width
    n_inner = (h - 2) * (w - 2)
    want = int(rng.integers(min(config.min_floor, n_inner), n_inner + 1))
    pos = (int(rng.integers(1, h - 1)), int(rng.integers(1, w - 1)))
    floor, direction = {pos}, int(rng.integers(4))
    for _ in range(50 * n_inner):
        if len(floor) >= want:
            break
        if rng.random() < 0.35:
            direction = int(rng.integers(4))
        dr, dc = DELTAS[ACTIONS[direction]]
        nxt = (pos[0] + dr, pos[1] + dc)
        if 1 <= nxt[0] < h - 1 and 1 <= nxt[1] < w - 1:
            pos = nxt
            floor.add(pos)
    return sorted(floor)


def _reverse_play(floor: list[Cell], config: SokobanConfig, rng: np.random.Generator) -> tuple:
    """Targets, then boxes and player after random reverse moves (walk, sometimes pulling)."""
    picks = rng.choice(len(floor), size=config.n_boxes + 1, replace=False)
    targets = frozenset(floor[i] for i in picks[:-1])
    boxes, player, cells = set(targets), floor[picks[-1]], set(floor)
    for _ in range(int(rng.integers(*config.reverse_steps))):
        dr, dc = DELTAS[ACTIONS[int(rng.integers(4))]]
        ahead, behind = (player[0] + dr, player[1] + dc), (player[0] - dr, player[1] - dc)
        if ahead not in cells or ahead in boxes:
            continue
        if behind in boxes and rng.random() < config.pull_probability:
            boxes.remove(behind)
            boxes.add(player)
        player = ahead
    return targets, frozenset(boxes), player


def generate_level(config: SokobanConfig, rng: np.random.Generator) -> SokobanLevel:
    """Draw a solvable level whose optimal solution takes ``min_moves..max_moves`` moves."""
    h, w = config.height, config.width
    border = _border(h, w)
    wanted = int(rng.integers(config.min_moves, max(config.min_moves, config.prefer_moves) + 1))
    for _ in range(config.max_attempts):
        floor = _random_floor(config, rng)
        if len(floor) < config.n_boxes + 3:
            continue
        targets, boxes, player = _reverse_play(floor, config, rng)
        walls = frozenset(border | ({(r, c) for r in range(h) for c in range(w)} - set(floor)))
        level = SokobanLevel(h, w, walls, targets, boxes, player)
        if level.solved:
            continue
        d = shortest_distance(level, config.max_moves)
        if d is not None and d >= wanted:
            return level
    raise RuntimeError(f"no level found in {config.max_attempts} attempts for {config}")


# ================================================================================ XSB
