"""The Sokoban text environment (Gymnasium contract): a generated or fixed level per reset."""


from __future__ import annotations

from typing import Any

import numpy as np

from crbc.envs.base import DEFAULT_MAX_STEPS, Dynamics, TextEnv
from crbc.envs.sokoban.encoding import apply_action, decode, encode, has_dead_box, push, room_of
from crbc.envs.sokoban.generator import generate_level
from crbc.envs.sokoban.level import SokobanConfig, SokobanLevel
from crbc.envs.sokoban.solver import SokobanSolution, solve
from crbc.envs.sokoban.xsb import from_xsb

__all__ = ["SokobanEnv"]


class SokobanEnv(TextEnv):
    """Push every box onto a target.

    ## Description
    With ``level`` (a :class:`SokobanLevel` or XSB text) every reset plays that fixed level;
    otherwise each reset draws a solvable level from ``config`` with the episode's generator
    (reverse play from the solved state, kept when its optimal solution has
    ``config.min_moves`` to ``config.max_moves`` moves).

    ## Action Space
    The words ``up``, ``down``, ``left``, ``right`` (:data:`crbc.actions.ACTIONS`). The player walks
    one cell and pushes a box if the cell behind it is free floor; a blocked move leaves everything
    in place and is still valid. Any other value is an invalid no-op (``info["action_valid"] = False``).

    ## Observation Space
    The board as text, one row per line (RAGEN / verl-agent symbols): ``#`` wall, ``_`` floor,
    ``O`` target, ``X`` box, ``√`` box on target, ``P`` player, ``S`` player on target. It is also
    the anchor (:meth:`anchor`): no history, no step counter.

    ## Rewards
    Per step, added up: -0.1 always, +1 for each box pushed onto a target, -1 for each box pushed
    off one, +10 when the step solves the level.

    ## Starting State
    The generated (or given) level's boxes and player.

    ## Episode End
    Terminated when every box is on a target; truncated after ``max_steps`` steps.

    ## Arguments
    ``env_id`` (the registry id), ``max_steps`` (default 15), ``config``
    (:class:`~crbc.envs.sokoban.level.SokobanConfig`: size, boxes, solution length), ``level``
    (a fixed level). ``make("sokoban-6x6-v0")`` or ``make("sokoban-xsb", level=xsb_text)``.
    The exact dynamics (:meth:`dynamics`) give the truth of :mod:`crbc.truth`.
    """

    def __init__(
        self,
        env_id: str = "sokoban-6x6-v0",
        max_steps: int = DEFAULT_MAX_STEPS,
        config: SokobanConfig | None = None,
        level: SokobanLevel | str | None = None,
    ) -> None:
        super().__init__(env_id, max_steps)
        self.config = config or SokobanConfig()
        self.fixed_level = from_xsb(level) if isinstance(level, str) else level
        self.initial_level: SokobanLevel | None = None
        self.level: SokobanLevel | None = None

    def _new_task(self, rng: np.random.Generator, options: dict[str, Any]) -> None:
        self.initial_level = self.fixed_level or generate_level(self.config, rng)
        self.level = self.initial_level

    def _move(self, action: str) -> tuple[float, dict[str, Any]]:
        before = self.level
        self.level, gain = apply_action(before, action)
        moved = self.level is not before
        pushed = moved and self.level.boxes != before.boxes
        return float(gain), {"moved": moved, "pushed": pushed, "boxes_on_target": self.level.boxes_on_target}

    def _solved(self) -> bool:
        return self.level is not None and self.level.solved

    def legend(self) -> str:
        return (
            "Sokoban: you are the player P (S when standing on a target) in a room seen from above. "
            "Push every box X onto a target O; a box on a target is shown as √. # is a wall and _ is "
            "empty floor. Each turn choose one action: up, down, left or right moves you one cell; "
            "walking into a box pushes it one cell if the cell behind it is free. You cannot pull "
            "boxes, so a box pushed into a corner is stuck. Every step costs -0.1, pushing a box onto "
            "a target gives +1 (off a target -1), and solving gives +10."
        )

    def solution(self) -> SokobanSolution:
        """The cached exact solution of the episode's level (covers every reachable state)."""
        self._require_level()
        return solve(self.initial_level)

    def optimal_distance(self) -> int | None:
        return self.solution().distance(self.level)

    def dynamics(self) -> Dynamics:
        """Keys of the packed boards of :mod:`crbc.envs.sokoban.encoding`: a push's gain is its
        change of boxes on targets; a box stuck on a dead cell makes the state dead."""
        self._require_level()
        level = self.initial_level
        room = room_of(level)

        def step(key: int, k: int) -> tuple[int, float]:
            nxt = push(room, key, k)
            return (key, 0.0) if nxt is None else (nxt[0], float(nxt[1]))

        return Dynamics(
            start=encode(level, room), step=step,
            render=lambda key: decode(level, room, key).render(),
            solved=lambda key: key // room.n_cells == room.target_mask,
            dead=lambda key: has_dead_box(room, key))

    def optimal_actions(self) -> list[str]:
        return self.solution().optimal_actions(self.level)
