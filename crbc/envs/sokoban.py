"""Sokoban: push every box onto a target. Levels, a seeded generator, an exact solver, XSB I/O.

Board symbols (RAGEN / verl-agent): ``#`` wall, ``_`` floor, ``O`` target, ``X`` box,
``√`` box on target, ``P`` player, ``S`` player on target. Cells outside the walls of an XSB
level are drawn as ``#``. Actions ``up``, ``down``, ``left``, ``right``: the player walks one
cell, pushing a box when walking into it if the cell behind the box is free floor; walking into
a wall, or pushing a box into a wall or another box, leaves everything in place (still a valid
action).

Rewards per step (they add up): -0.1 always, +1 for each box pushed onto a target, -1 for each
box pushed off a target, +10 when the step solves the level (which terminates the episode).

Positions are (row, col), 0-based from the top-left. Internally a cell is ``row * width + col``
and a state is the integer ``boxes_mask * n_cells + player`` (bit ``i`` of ``boxes_mask`` set
when cell ``i`` holds a box).

Generator: a random connected room inside the wall border, boxes placed on their targets, then
random reverse play (the player walks and pulls boxes) from the solved state, so every level is
solvable; candidates are kept only if the optimal solution length (in moves) lies in
``[config.min_moves, config.max_moves]``.

Solver: :func:`solve` enumerates every state reachable from a level, then runs one
breadth-first search backwards from the solved states (``scipy.sparse.csgraph``), which gives
the exact fewest-move distance of every state. Boxes pushed onto *dead cells* (non-target cells
from which no sequence of pushes can bring a box to any target, ignoring other boxes) make a
state dead and are not expanded; this pruning keeps the results exact.

XSB (standard Sokoban text): ``#`` wall, ``@`` player, ``+`` player on goal, ``$`` box,
``*`` box on goal, ``.`` goal, space floor (``-`` and ``_`` are accepted as floor too); lines
starting with ``;`` are comments.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from .base import ACTIONS, DEFAULT_MAX_STEPS, DELTAS, TextEnv

Cell = tuple[int, int]

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"
DEFAULT_MAX_STATES = 1_000_000


class SolverLimitError(RuntimeError):
    """The level has more reachable states than the solver was allowed to enumerate."""


# ================================================================================ levels
@dataclass(frozen=True)
class SokobanLevel:
    """A Sokoban position (room + boxes + player). Cells are (row, col), 0-based.

    ``outside`` lists non-wall cells that lie outside the playable area (only XSB levels have
    them); they are drawn as walls on the board and as spaces in XSB.
    """

    height: int
    width: int
    walls: frozenset[Cell]
    targets: frozenset[Cell]
    boxes: frozenset[Cell]
    player: Cell
    outside: frozenset[Cell] = field(default=frozenset())

    def __post_init__(self) -> None:
        blocked = self.walls | self.outside
        if len(self.boxes) != len(self.targets):
            raise ValueError(f"{len(self.boxes)} boxes but {len(self.targets)} targets")
        for name, cells in (("target", self.targets), ("box", self.boxes), ("player", (self.player,))):
            for cell in cells:
                if cell in blocked or not (0 <= cell[0] < self.height and 0 <= cell[1] < self.width):
                    raise ValueError(f"{name} at {cell} is not on a floor cell of the room")
        if self.player in self.boxes:
            raise ValueError(f"player and a box share the cell {self.player}")

    @property
    def solved(self) -> bool:
        """All boxes on targets."""
        return self.boxes == self.targets

    @property
    def boxes_on_target(self) -> int:
        return len(self.boxes & self.targets)

    def with_state(self, player: Cell, boxes: Iterable[Cell]) -> SokobanLevel:
        """Same room, another player/box placement."""
        return replace(self, player=tuple(player), boxes=frozenset(map(tuple, boxes)))

    def render(self) -> str:
        """Board text with the RAGEN symbols, rows joined by ``"\\n"``."""
        return "\n".join("".join(self._char((r, c)) for c in range(self.width)) for r in range(self.height))

    def _char(self, cell: Cell) -> str:
        if cell in self.walls or cell in self.outside:
            return WALL
        on_target = cell in self.targets
        if cell == self.player:
            return PLAYER_ON_TARGET if on_target else PLAYER
        if cell in self.boxes:
            return BOX_ON_TARGET if on_target else BOX
        return TARGET if on_target else FLOOR


@dataclass(frozen=True)
class SokobanConfig:
    """How random Sokoban levels are drawn (sizes include the wall border)."""

    height: int = 6  #: board rows
    width: int = 6  #: board columns
    n_boxes: int = 1  #: boxes (= targets)
    min_floor: int = 10  #: fewest floor cells carved inside the border
    min_moves: int = 2  #: shortest accepted optimal solution (moves)
    max_moves: int = 10  #: longest accepted optimal solution (moves)
    #: each level first draws a wanted minimum uniformly from ``min_moves..prefer_moves`` and
    #: rejects shorter candidates; this evens out the otherwise short-heavy length distribution
    prefer_moves: int = 6
    reverse_steps: tuple[int, int] = (8, 40)  #: range of reverse-play walk lengths
    pull_probability: float = 0.8  #: chance to pull a box that is behind the player
    max_attempts: int = 2000  #: candidates tried before giving up


# ================================================================================ the room
@dataclass(frozen=True, eq=False)
class _Room:
    """Integer view of the static part of a level (walls, targets), shared by solver and env."""

    width: int
    n_cells: int
    floor: tuple[bool, ...]
    dead: tuple[bool, ...]
    target_mask: int
    offsets: tuple[int, ...]  # in ACTIONS order


@lru_cache(maxsize=512)
def _room(
    height: int, width: int, walls: frozenset[Cell], outside: frozenset[Cell], targets: frozenset[Cell]
) -> _Room:
    n = height * width
    blocked = walls | outside
    floor = tuple((i // width, i % width) not in blocked for i in range(n))
    offsets = tuple(DELTAS[a][0] * width + DELTAS[a][1] for a in ACTIONS)
    tmask = sum(1 << (r * width + c) for r, c in targets)
    live = _live_cells(floor, offsets, [r * width + c for r, c in targets])
    dead = tuple(floor[i] and not live[i] for i in range(n))
    return _Room(width, n, floor, dead, tmask, offsets)


def _live_cells(floor: tuple[bool, ...], offsets: tuple[int, ...], targets: list[int]) -> list[bool]:
    """Cells from which pushes (ignoring other boxes) can bring a box to some target."""
    n = len(floor)
    live = [False] * n
    queue = deque(targets)
    for t in targets:
        live[t] = True
    while queue:
        t = queue.popleft()
        for off in offsets:  # a box at c = t - off is pushed to t by a player standing at c - off
            c, stand = t - off, t - 2 * off
            if 0 <= stand < n and 0 <= c < n and floor[c] and floor[stand] and not live[c]:
                live[c] = True
                queue.append(c)
    return live


def _room_of(level: SokobanLevel) -> _Room:
    return _room(level.height, level.width, level.walls, level.outside, level.targets)


def _encode(level: SokobanLevel, room: _Room) -> int:
    mask = sum(1 << (r * room.width + c) for r, c in level.boxes)
    return mask * room.n_cells + level.player[0] * room.width + level.player[1]


def _decode(level: SokobanLevel, room: _Room, key: int) -> SokobanLevel:
    mask, p = divmod(key, room.n_cells)
    boxes = [divmod(i, room.width) for i in range(room.n_cells) if mask >> i & 1]
    return level.with_state(divmod(p, room.width), boxes)


def _push(room: _Room, key: int, k: int) -> tuple[int, int] | None:
    """Successor of state ``key`` under action index ``k``: (new key, box cell change) or None.

    The second item is +1 (box pushed onto a target), -1 (off a target) or 0. Returns None when
    the move is blocked (wall, or box against wall/box).
    """
    mask, p = divmod(key, room.n_cells)
    off = room.offsets[k]
    q = p + off
    if not room.floor[q]:
        return None
    if not mask >> q & 1:
        return mask * room.n_cells + q, 0
    r = q + off
    if not room.floor[r] or mask >> r & 1:
        return None
    tm = room.target_mask
    gain = (tm >> r & 1) - (tm >> q & 1)
    return (mask ^ (1 << q) ^ (1 << r)) * room.n_cells + q, gain


def _successors(room: _Room, key: int) -> Iterator[tuple[int, int]]:
    """(action index, successor key) of every move that changes the state, skipping pushes of a
    box onto a dead cell (such states are dead, and so is everything after them)."""
    n, p = room.n_cells, key % room.n_cells
    for k in range(4):
        nxt = _push(room, key, k)
        if nxt is not None and not (nxt[0] // n != key // n and room.dead[p + 2 * room.offsets[k]]):
            yield k, nxt[0]


def _has_dead_box(room: _Room, key: int) -> bool:
    mask = key // room.n_cells
    while mask:
        low = mask & -mask
        if room.dead[low.bit_length() - 1]:
            return True
        mask ^= low
    return False


def _is_solved_key(room: _Room, key: int) -> bool:
    return key // room.n_cells == room.target_mask


# ================================================================================ solver
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
        room = _room_of(self.level)
        if (state.height, state.width, state.walls, state.targets) != (
            self.level.height,
            self.level.width,
            self.level.walls,
            self.level.targets,
        ):
            raise ValueError("state belongs to another room than the solution's level")
        key = _encode(state, room)
        row = self.index.get(key)
        if row is None:
            if _has_dead_box(room, key):
                return None
            raise ValueError("state is not reachable from the solution's root level; call solve(state)")
        d = int(self.dist[row])
        return None if d < 0 else d

    def optimal_actions(self, state: SokobanLevel) -> list[str]:
        """Actions that start some shortest solution from ``state`` ([] if dead or solved)."""
        here = self.distance(state)
        if not here:
            return []
        room = _room_of(self.level)
        key = _encode(state, room)
        return [ACTIONS[k] for k, nxt in _successors(room, key) if self._dist_key(nxt) == here - 1]

    def is_dead(self, state: SokobanLevel) -> bool:
        return self.distance(state) is None

    def _dist_key(self, key: int) -> int:
        row = self.index.get(key)
        return -1 if row is None else int(self.dist[row])


def _enumerate(
    room: _Room, start: int, max_states: int
) -> tuple[dict[int, int], list[int], list[int], list[int]]:
    """Forward closure from ``start``: (key -> id, keys, edge sources, edge targets)."""
    index, keys, src, dst = {start: 0}, [start], [], []
    i = 0
    while i < len(keys):
        for _, nxt in _successors(room, keys[i]):
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
    room = _room_of(level)
    index, keys, src, dst = _enumerate(room, _encode(level, room), max_states)
    goals = [i for i, key in enumerate(keys) if _is_solved_key(room, key)]
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
    room = _room_of(level)
    start = _encode(level, room)
    if _is_solved_key(room, start):
        return 0
    seen, frontier = {start}, [start]
    for depth in range(1, limit + 1):
        nxt_frontier = []
        for key in frontier:
            for _, nxt in _successors(room, key):
                if nxt in seen:
                    continue
                if _is_solved_key(room, nxt):
                    return depth
                seen.add(nxt)
                nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return None


def apply_action(level: SokobanLevel, action: str) -> tuple[SokobanLevel, int]:
    """Result of one move: (new level, boxes pushed onto targets minus boxes pushed off)."""
    room = _room_of(level)
    nxt = _push(room, _encode(level, room), ACTIONS.index(action))
    if nxt is None:
        return level, 0
    return _decode(level, room, nxt[0]), nxt[1]


# ================================================================================ generator
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
_XSB_FLOOR = (" ", "-", "_")
_XSB_CHARS = "#@+$*." + "".join(_XSB_FLOOR)


def _xsb_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, board line) pairs; comments and surrounding blank lines dropped."""
    lines = [(i + 1, ln.rstrip("\r\n")) for i, ln in enumerate(text.split("\n"))]
    lines = [(n, ln) for n, ln in lines if not ln.lstrip().startswith(";")]
    while lines and not lines[0][1].strip():
        lines.pop(0)
    while lines and not lines[-1][1].strip():
        lines.pop()
    if not lines:
        raise ValueError("empty level text")
    return lines


def _xsb_cells(lines: list[tuple[int, str]]) -> dict[str, Any]:
    """Classify every character; raise on unknown ones and on a second player."""
    walls, targets, boxes, players, floor = set(), set(), [], [], set()
    for r, (line_no, line) in enumerate(lines):
        for c, ch in enumerate(line.rstrip()):
            where = f"line {line_no}, column {c + 1}"
            if ch not in _XSB_CHARS:
                raise ValueError(f"{where}: unknown character {ch!r} (expected one of '#@+$*. -_')")
            if ch == "#":
                walls.add((r, c))
                continue
            floor.add((r, c))
            if ch in "+*.":
                targets.add((r, c))
            if ch in "$*":
                boxes.append((r, c))
            if ch in "@+":
                if players:
                    raise ValueError(
                        f"{where}: a second player (the first is at {_where(lines, players[0])})"
                    )
                players.append((r, c))
    return {"walls": walls, "targets": targets, "boxes": boxes, "players": players, "floor": floor}


def _where(lines: list[tuple[int, str]], cell: Cell) -> str:
    return f"line {lines[cell[0]][0]}, column {cell[1] + 1}"


def _player_area(lines: list[tuple[int, str]], player: Cell, walls: set[Cell], height: int) -> set[Cell]:
    """Non-wall cells the player could ever walk on; raise when they reach the board's edge."""
    area, queue = {player}, deque([player])
    while queue:
        r, c = queue.popleft()
        if r in (0, height - 1) or c in (0, len(lines[r][1].rstrip()) - 1) or c >= len(lines[r][1].rstrip()):
            raise ValueError(f"{_where(lines, (r, c))}: the level is not enclosed by walls")
        for dr, dc in DELTAS.values():
            nxt = (r + dr, c + dc)
            if nxt not in walls and nxt not in area:
                area.add(nxt)
                queue.append(nxt)
    return area


def from_xsb(text: str) -> SokobanLevel:
    """Parse one level in XSB text. Bad text raises ValueError naming the line and column."""
    lines = _xsb_lines(text)
    cells = _xsb_cells(lines)
    if not cells["players"]:
        raise ValueError("no player ('@' or '+') in the level")
    height, width = len(lines), max(len(ln.rstrip()) for _, ln in lines)
    area = _player_area(lines, cells["players"][0], cells["walls"], height)
    for name, what in (("boxes", "box"), ("targets", "goal")):
        for cell in sorted(cells[name]):
            if cell not in area:
                raise ValueError(f"{_where(lines, cell)}: {what} outside the area the player can reach")
    if not cells["boxes"]:
        raise ValueError("the level has no boxes ('$' or '*')")
    if len(cells["boxes"]) != len(cells["targets"]):
        last = _where(lines, max(cells["boxes"] + sorted(cells["targets"])))
        raise ValueError(
            f"box count ({len(cells['boxes'])}: '$', '*') differs from goal count "
            f"({len(cells['targets'])}: '.', '+', '*') "
            f"(last one at {last})"
        )
    everything = {(r, c) for r in range(height) for c in range(width)}
    outside = frozenset(everything - area - cells["walls"])
    return SokobanLevel(
        height,
        width,
        frozenset(cells["walls"]),
        frozenset(cells["targets"]),
        frozenset(cells["boxes"]),
        cells["players"][0],
        outside,
    )


def to_xsb(level: SokobanLevel, floor: str = " ") -> str:
    """XSB text of ``level`` (rows right-stripped, outside cells as spaces, no final newline)."""
    if floor not in _XSB_FLOOR:
        raise ValueError(f"floor must be one of {_XSB_FLOOR!r}")
    rows = []
    for r in range(level.height):
        row = "".join(_xsb_char(level, (r, c), floor) for c in range(level.width))
        rows.append(row.rstrip(" "))
    return "\n".join(rows)


def _xsb_char(level: SokobanLevel, cell: Cell, floor: str) -> str:
    if cell in level.walls:
        return "#"
    if cell in level.outside:
        return " "
    goal = cell in level.targets
    if cell == level.player:
        return "+" if goal else "@"
    if cell in level.boxes:
        return "*" if goal else "$"
    return "." if goal else floor


# ================================================================================ the env
class SokobanEnv(TextEnv):
    """Sokoban env (see the module docstring for symbols, rewards and the generator).

    With ``level`` (a :class:`SokobanLevel` or XSB text) every reset plays that fixed level;
    otherwise each reset draws a level from ``config`` with the episode's generator.
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

    def optimal_actions(self) -> list[str]:
        return self.solution().optimal_actions(self.level)
