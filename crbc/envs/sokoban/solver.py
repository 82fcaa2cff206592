"""Exact Sokoban solving: every reachable state, one backward breadth-first search from the
solved states, the fewest-move distance of each; dead-cell pruning keeps it exact."""


from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from crbc.envs.base import ACTIONS
from crbc.envs.sokoban.encoding import Room, encode, has_dead_box, is_solved_key, room_of, successors
from crbc.envs.sokoban.level import SokobanLevel

__all__ = [
    "DEFAULT_MAX_STATES", "is_dead", "optimal_actions", "optimal_distance", "shortest_distance",
    "SokobanSolution", "solve", "SolverLimitError"
]

DEFAULT_MAX_STATES = 1_000_000


class SolverLimitError(RuntimeError):
    """The level has more reachable states than the solver was allowed to enumerate."""


@dataclass(frozen=True, eq=False)
class SokobanSolution:
    """Exact fewest-move distances to a solved state for every state reachable from ``level``.

    Query with any level of the same room whose state is reachable from ``level`` (e.g. the
    positions an env visits from its start). ``distance`` is None for a dead state.
    """

    level: SokobanLevel
    index: dict[int, int]  #: state key -> row of ``dist``
    dist: np.ndarray  #: shape (n_states,), int64 moves to solved, -1 when dead

    @property
    def n_states(self) -> int:
        """Number of live-or-dead states enumerated (boxes on dead cells excluded)."""
        return len(self.index)

    def distance(self, state: SokobanLevel) -> int | None:
        """Fewest moves from ``state`` to solved; None when no solution exists."""
        room = room_of(self.level)
        if (state.height, state.width, state.walls, state.targets) != (
            self.level.height,
            self.level.width,
            self.level.walls,
            self.level.targets,
        ):
            raise ValueError("state belongs to another room than the solution's level")
        key = encode(state, room)
        row = self.index.get(key)
        if row is None:
            if has_dead_box(room, key):
                return None
            raise ValueError("state is not reachable from the solution's root level; call solve(state)")
        d = int(self.dist[row])
        return None if d < 0 else d

    def optimal_actions(self, state: SokobanLevel) -> list[str]:
        """Actions that start some shortest solution from ``state`` ([] if dead or solved)."""
        here = self.distance(state)
        if not here:
            return []
        room = room_of(self.level)
        key = encode(state, room)
        return [ACTIONS[k] for k, nxt in successors(room, key) if self._dist_key(nxt) == here - 1]

    def is_dead(self, state: SokobanLevel) -> bool:
        return self.distance(state) is None

    def _dist_key(self, key: int) -> int:
        row = self.index.get(key)
        return -1 if row is None else int(self.dist[row])


def _enumerate(
    room: Room, start: int, max_states: int
) -> tuple[dict[int, int], list[int], list[int], list[int]]:
    """Forward closure from ``start``: (key -> id, keys, edge sources, edge targets)."""
    index, keys, src, dst = {start: 0}, [start], [], []
    i = 0
    while i < len(keys):
        for _, nxt in successors(room, keys[i]):
            j = index.get(nxt)
            if j is None:
                if len(keys) >= max_states:
                    raise SolverLimitError(f"more than {max_states} reachable states; raise max_states")
                j = index[nxt] = len(keys)
                keys.append(nxt)
            src.append(i)
            dst.append(j)
        i += 1
    return index, keys, src, dst


def _backward_distances(n: int, src: list[int], dst: list[int], goals: list[int]) -> np.ndarray:
    """Unweighted multi-source BFS distances to ``goals`` along edges src -> dst (-1 if none)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    if not goals:
        return np.full(n, -1, dtype=np.int64)
    ones = np.ones(len(src), dtype=np.float64)
    reverse = csr_matrix(
        (ones, (np.asarray(dst, dtype=np.int64), np.asarray(src, dtype=np.int64))), shape=(n, n)
    )
    d = dijkstra(reverse, directed=True, indices=goals, unweighted=True, min_only=True)
    return np.where(np.isfinite(d), d, -1).astype(np.int64)


@lru_cache(maxsize=64)
def _solve_cached(level: SokobanLevel, max_states: int) -> SokobanSolution:
    room = room_of(level)
    index, keys, src, dst = _enumerate(room, encode(level, room), max_states)
    goals = [i for i, key in enumerate(keys) if is_solved_key(room, key)]
    return SokobanSolution(level, index, _backward_distances(len(keys), src, dst, goals))


def solve(level: SokobanLevel, max_states: int = DEFAULT_MAX_STATES) -> SokobanSolution:
    """Exact solution of every state reachable from ``level`` (cached per level).

    Raises :class:`SolverLimitError` when more than ``max_states`` states are reachable.
    """
    return _solve_cached(level, int(max_states))


def optimal_distance(level: SokobanLevel) -> int | None:
    """Fewest moves to solve ``level`` (0 when solved); None when it cannot be solved."""
    return solve(level).distance(level)


def optimal_actions(level: SokobanLevel) -> list[str]:
    """Actions that start some shortest solution of ``level`` ([] if dead or solved)."""
    return solve(level).optimal_actions(level)


def is_dead(level: SokobanLevel) -> bool:
    """True when no sequence of moves solves ``level``."""
    return optimal_distance(level) is None


def shortest_distance(level: SokobanLevel, limit: int) -> int | None:
    """Fewest moves to solve ``level`` by forward BFS, or None if more than ``limit`` are needed.

    Cheaper than :func:`solve` for short solutions (it stops at the first solved state); the
    generator uses it to check candidate levels.
    """
    room = room_of(level)
    start = encode(level, room)
    if is_solved_key(room, start):
        return 0
    seen, frontier = {start}, [start]
    for depth in range(1, limit + 1):
        nxt_frontier = []
        for key in frontier:
            for _, nxt in successors(room, key):
                if nxt in seen:
                    continue
                if is_solved_key(room, nxt):
                    return depth
                seen.add(nxt)
                nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return None
