"""Gridworld: walk the player ``P`` to the goal ``G`` through a small random maze.

Board symbols: ``#`` wall, ``_`` floor, ``G`` goal, ``P`` player. The board has a wall border
and a few random inner walls; the floor is always connected, so the goal is always reachable.
When the player stands on the goal only ``P`` is drawn (that state ends the episode).

Actions ``up``, ``down``, ``left``, ``right``; walking into a wall leaves the player in place
(still a valid action). Rewards: -0.1 per step, +10 on reaching the goal (which terminates).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from crbc.envs.base import ACTIONS, DEFAULT_MAX_STEPS, DELTAS, Dynamics, TextEnv

__all__ = [
    "Cell", "FLOOR", "generate_level", "GOAL", "goal_distances", "GridConfig", "GridLevel",
    "GridWorldEnv", "PLAYER", "WALL"
]

Cell = tuple[int, int]

WALL, FLOOR, GOAL, PLAYER = "#", "_", "G", "P"


@dataclass(frozen=True)
class GridConfig:
    """How random gridworld levels are drawn."""

    height: int = 6  #: board rows, border included
    width: int = 6  #: board columns, border included
    min_walls: int = 2  #: fewest inner walls
    max_walls: int = 5  #: most inner walls
    min_distance: int = 2  #: fewest moves from player to goal


@dataclass(frozen=True)
class GridLevel:
    """A gridworld position; cells are (row, col), 0-based from the top-left corner."""

    height: int
    width: int
    walls: frozenset[Cell]
    goal: Cell
    player: Cell

    def __post_init__(self) -> None:
        for name, cell in (("goal", self.goal), ("player", self.player)):
            if cell in self.walls or not _inside(cell, self.height, self.width):
                raise ValueError(f"{name} {cell} must be a floor cell inside the board")

    def render(self) -> str:
        """Board text, rows joined by ``"\\n"``."""
        rows = []
        for r in range(self.height):
            rows.append("".join(self._char((r, c)) for c in range(self.width)))
        return "\n".join(rows)

    def _char(self, cell: Cell) -> str:
        if cell in self.walls:
            return WALL
        if cell == self.player:
            return PLAYER
        return GOAL if cell == self.goal else FLOOR


def _inside(cell: Cell, height: int, width: int) -> bool:
    return 0 <= cell[0] < height and 0 <= cell[1] < width


def _shift(cell: Cell, action: str) -> Cell:
    dr, dc = DELTAS[action]
    return cell[0] + dr, cell[1] + dc


def _border(height: int, width: int) -> set[Cell]:
    return {
        (r, c) for r in range(height) for c in range(width) if r in (0, height - 1) or c in (0, width - 1)
    }


def _reachable(start: Cell, walls: frozenset[Cell] | set[Cell]) -> dict[Cell, int]:
    """BFS move distances from ``start`` over non-wall cells (the border must be walls)."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for action in ACTIONS:
            nxt = _shift(cell, action)
            if nxt not in walls and nxt not in dist:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return dist


@lru_cache(maxsize=256)
def goal_distances(height: int, width: int, walls: frozenset[Cell], goal: Cell) -> dict[Cell, int]:
    """Fewest moves from every reachable cell to ``goal`` (cached per maze)."""
    return _reachable(goal, walls)


def generate_level(config: GridConfig, rng: np.random.Generator) -> GridLevel:
    """Draw a maze with connected floor and player/goal at least ``min_distance`` apart."""
    h, w = config.height, config.width
    interior = [(r, c) for r in range(1, h - 1) for c in range(1, w - 1)]
    for _ in range(1000):
        n_walls = int(rng.integers(config.min_walls, config.max_walls + 1))
        picks = rng.choice(len(interior), size=n_walls + 2, replace=False)
        inner = {interior[i] for i in picks[:n_walls]}
        player, goal = interior[picks[-2]], interior[picks[-1]]
        walls = frozenset(_border(h, w) | inner)
        dist = _reachable(goal, walls)
        if len(dist) == len(interior) - n_walls and dist[player] >= config.min_distance:
            return GridLevel(h, w, walls, goal, player)
    raise RuntimeError(f"could not draw a gridworld level for {config}")


class GridWorldEnv(TextEnv):
    """Walk the player ``P`` to the goal ``G`` through a small random maze.

    ## Description
    Each reset draws a maze from ``config`` with the episode's generator: a wall border, a few
    inner walls, a connected floor, so the goal is always reachable.

    ## Action Space
    The words ``up``, ``down``, ``left``, ``right`` (:data:`crbc.actions.ACTIONS`). Walking into
    a wall leaves the player in place and is still valid; any other value is an invalid no-op
    (``info["action_valid"] = False``).

    ## Observation Space
    The board as text, one row per line: ``#`` wall, ``_`` floor, ``G`` goal, ``P`` player (on
    the goal only ``P`` is drawn). It is also the anchor (:meth:`anchor`): no history, no counter.

    ## Rewards
    -0.1 every step (:data:`~crbc.envs.base.STEP_PENALTY`); +10 on reaching the goal
    (:data:`~crbc.envs.base.SOLVE_BONUS`).

    ## Starting State
    The player on a random floor cell at least ``config.min_distance`` steps from the goal.

    ## Episode End
    Terminated when the player reaches the goal; truncated after ``max_steps`` steps.

    ## Arguments
    ``env_id`` (the registry id), ``max_steps`` (default 15), ``config``
    (:class:`GridConfig`: size and inner walls). ``make("gridworld-6x6-v0")`` builds it.
    """

    def __init__(
        self,
        env_id: str = "gridworld-6x6-v0",
        max_steps: int = DEFAULT_MAX_STEPS,
        config: GridConfig | None = None,
    ) -> None:
        super().__init__(env_id, max_steps)
        self.config = config or GridConfig()
        self.level: GridLevel | None = None

    def _new_task(self, rng: np.random.Generator, options: dict[str, Any]) -> None:
        self.level = generate_level(self.config, rng)

    def _move(self, action: str) -> tuple[float, dict[str, Any]]:
        nxt = _shift(self.level.player, action)
        moved = nxt not in self.level.walls
        if moved:
            self.level = GridLevel(
                self.level.height, self.level.width, self.level.walls, self.level.goal, nxt
            )
        return 0.0, {"moved": moved}

    def _solved(self) -> bool:
        return self.level is not None and self.level.player == self.level.goal

    def legend(self) -> str:
        return (
            "Gridworld: you are the player P on a grid seen from above. Reach the goal G. "
            "# is a wall and _ is open floor. Each turn choose one action: up, down, left or right "
            "moves you one cell in that direction; walking into a wall leaves you where you are. "
            "Every step costs -0.1 and reaching the goal gives +10."
        )

    def _distances(self) -> dict[Cell, int]:
        lv = self._require_level()
        return goal_distances(lv.height, lv.width, lv.walls, lv.goal)

    def optimal_distance(self) -> int | None:
        return self._distances().get(self.level.player)

    def dynamics(self) -> Dynamics:
        """Keys ``row * width + column`` of the player; a move into a wall stays; no gain beyond
        the step penalty and the solve bonus; never dead."""
        level = self._require_level()
        w = level.width
        goal = level.goal[0] * w + level.goal[1]
        offsets = [DELTAS[a] for a in ACTIONS]

        def step(key: int, k: int) -> tuple[int, float]:
            r, c = divmod(key, w)
            cell = (r + offsets[k][0], c + offsets[k][1])
            return (key if cell in level.walls else cell[0] * w + cell[1]), 0.0

        def render(key: int) -> str:
            return GridLevel(level.height, w, level.walls, level.goal, divmod(key, w)).render()

        return Dynamics(start=level.player[0] * w + level.player[1], step=step, render=render,
                        solved=lambda key: key == goal, dead=lambda key: False)

    def optimal_actions(self) -> list[str]:
        dist = self._distances()
        here = dist.get(self.level.player)
        if not here:  # dead (None) or already solved (0)
            return []
        return [a for a in ACTIONS if dist.get(_shift(self.level.player, a), -2) == here - 1]
