"""Every state of one toy level reachable within the step limit, with its exact transitions.

A :class:`StateSpace` is the finite game tree of one level collapsed onto boards: state ids
``0..S-1`` (id 0 is the level's start), the board text of each (the anchor), and the successor
of every state under each of the five semantic actions ``up, down, left, right, invalid``
(``invalid`` is a no-op step, docs/MATH.md section 1). Built by breadth-first search from the start,
expanding states first reached after at most ``H - 1`` steps (``H = max_steps``), so a state's
``dist`` is the first time layer where it can be; with the always-available no-op it can then be
at every later layer too. Solved states are terminal and not expanded.

Shapes: ``_S`` per state, ``_SA`` per (state, action) with the action axis of length 5
(:data:`TRUTH_ACTIONS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.actions import INVALID_ACTION
from crbc.envs import ACTIONS, SOLVE_BONUS, STEP_PENALTY, make
from crbc.envs.base import Dynamics
from crbc.envs.sokoban import SokobanLevel

__all__ = [
    "action_index", "DEFAULT_MAX_STATES", "enumerate_states", "INVALID_INDEX", "level_env",
    "StateLimitError", "StateSpace", "TRUTH_ACTIONS", "TruthError"
]

#: The action axis of every truth array: the four moves, then ``invalid`` (a no-op step).
TRUTH_ACTIONS: tuple[str, ...] = (*ACTIONS, INVALID_ACTION)
INVALID_INDEX = len(ACTIONS)
#: Default cap on the number of reachable states of one level.
DEFAULT_MAX_STATES = 200_000


class TruthError(ValueError):
    """The truth cannot be computed (unknown env, unscorable policy, too many states, ...)."""


class StateLimitError(TruthError):
    """The level has more reachable states within the step limit than the configured cap."""


@dataclass(frozen=True, eq=False)
class StateSpace:
    """The reachable states of one level within ``horizon`` steps.

    ``boards``: board text (anchor) of each state, shape (S,). ``next_SA``: successor id of each
    state under each of :data:`TRUTH_ACTIONS`, shape (S, 5) (a state first reached at layer
    ``horizon`` is never acted from; its row points to itself). ``solved_S``: terminal success.
    ``dead_S``: success is impossible from the state (a Sokoban box stuck on a dead cell), so every
    value there is 0 exactly. ``dist_S``: fewest steps from the start (BFS layer).
    ``reward_SA``: the env's reward of each transition (step penalty, box on/off target, solve
    bonus), so rollouts sampled on the space carry the rewards ``generate`` would record.
    """

    env_id: str  #: registered env id ("sokoban-xsb" for a fixed level)
    seed: int | None  #: level seed (None for a fixed level)
    horizon: int  #: H = max_steps
    boards: tuple[str, ...]
    next_SA: np.ndarray
    solved_S: np.ndarray
    dead_S: np.ndarray
    dist_S: np.ndarray
    reward_SA: np.ndarray

    @property
    def n_states(self) -> int:
        return len(self.boards)

    @property
    def label(self) -> str:
        return f"{self.env_id}/seed-{self.seed}" if self.seed is not None else self.env_id

    def index(self) -> dict[str, int]:
        """Board text -> state id."""
        return {b: i for i, b in enumerate(self.boards)}


def _dynamics(env: Any) -> Dynamics:
    """The env's own exact dynamics (:meth:`crbc.envs.base.TextEnv.dynamics`)."""
    dyn = env.dynamics()
    if dyn is None:
        raise TruthError(f"{env.env_id}: no exact dynamics for this environment type "
                         f"({type(env).__name__}); its dynamics() returns None")
    return dyn


# --------------------------------------------------------------------------------------------
# enumeration


def level_env(env_id: str, seed: int | None = None, max_steps: int | None = None,
              level: SokobanLevel | str | None = None):
    """The env of one level, reset: ``(env_id, seed)`` of a seeded family, or an XSB ``level``."""
    from crbc.envs import DEFAULT_MAX_STEPS, spec

    try:
        s = spec(env_id)
    except ValueError as e:
        raise TruthError(str(e)) from None
    kwargs: dict[str, Any] = {"level": level} if level is not None else {}
    if s.needs_level and level is None:
        raise TruthError(f"{env_id} needs a level (XSB text)")
    if not s.needs_level and seed is None:
        raise TruthError(f"{env_id} needs a level seed")
    env = make(env_id, max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps, **kwargs)
    env.reset(seed=0 if seed is None else int(seed))
    return env


def enumerate_states(env_id: str, seed: int | None = None, max_steps: int | None = None,
                     level: SokobanLevel | str | None = None,
                     max_states: int = DEFAULT_MAX_STATES) -> StateSpace:
    """Breadth-first enumeration of the states reachable within ``max_steps`` steps.

    Raises :class:`StateLimitError` as soon as more than ``max_states`` states are found (never a
    hang or an out-of-memory), :class:`TruthError` for an unknown env or a bad level.
    """
    env = level_env(env_id, seed, max_steps, level)
    horizon = env.max_steps
    dyn = _dynamics(env)
    keys, index, dist = [dyn.start], {dyn.start: 0}, [0]
    solved = [dyn.solved(dyn.start)]
    rows: list[list[int]] = []
    gains: list[list[float]] = []
    i = 0
    while i < len(keys):
        key = keys[i]
        row, gain = [i] * len(TRUTH_ACTIONS), [0.0] * len(TRUTH_ACTIONS)
        if dist[i] < horizon and not solved[i]:
            for k in range(len(ACTIONS)):
                nxt, gain[k] = dyn.step(key, k)
                j = index.get(nxt)
                if j is None:
                    if len(keys) >= max_states:
                        raise StateLimitError(
                            f"{env_id}{'' if seed is None else f'/seed-{seed}'}: more than "
                            f"{max_states} states reachable within {horizon} steps; raise "
                            "max_states (--max-states) or use a shorter step limit")
                    j = index[nxt] = len(keys)
                    keys.append(nxt)
                    dist.append(dist[i] + 1)
                    solved.append(dyn.solved(nxt))
                row[k] = j
        rows.append(row)
        gains.append(gain)
        i += 1
    next_SA = np.asarray(rows, dtype=np.int64).reshape(len(keys), len(TRUTH_ACTIONS))
    solved_S = np.asarray(solved, dtype=bool)
    reward_SA = (np.asarray(gains, dtype=float).reshape(next_SA.shape) + STEP_PENALTY
                 + SOLVE_BONUS * solved_S[next_SA])
    return StateSpace(
        env_id=env_id, seed=None if seed is None else int(seed), horizon=horizon,
        boards=tuple(dyn.render(k) for k in keys),
        next_SA=next_SA, solved_S=solved_S,
        dead_S=np.asarray([dyn.dead(k) for k in keys], dtype=bool),
        dist_S=np.asarray(dist, dtype=np.int64), reward_SA=np.round(reward_SA, 6))


def action_index(actions: Sequence[str]) -> np.ndarray:
    """Indices into :data:`TRUTH_ACTIONS`; an unknown action string raises KeyError."""
    lookup = {a: i for i, a in enumerate(TRUTH_ACTIONS)}
    return np.asarray([lookup[a] for a in actions], dtype=np.int64)
