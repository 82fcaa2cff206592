"""Sokoban states as integers (``boxes_mask * n_cells + player``) and their moves: the solver's
and the exact truth's shared state space. A *room* holds what does not change during a level
(floor, targets, neighbour offsets, dead cells)."""


from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from crbc.envs.base import ACTIONS, DELTAS
from crbc.envs.sokoban.level import Cell, SokobanLevel

__all__ = [
    "apply_action", "decode", "encode", "has_dead_box", "is_solved_key", "live_cells", "make_room",
    "push", "Room", "room_of", "successors"
]


@dataclass(frozen=True, eq=False)
class Room:
    """Integer view of the static part of a level (walls, targets), shared by solver and env."""

    width: int
    n_cells: int
    floor: tuple[bool, ...]
    dead: tuple[bool, ...]
    target_mask: int
    offsets: tuple[int, ...]  # in ACTIONS order


@lru_cache(maxsize=512)
def make_room(
    height: int, width: int, walls: frozenset[Cell], outside: frozenset[Cell], targets: frozenset[Cell]
) -> Room:
    n = height * width
    blocked = walls | outside
    floor = tuple((i // width, i % width) not in blocked for i in range(n))
    offsets = tuple(DELTAS[a][0] * width + DELTAS[a][1] for a in ACTIONS)
    tmask = sum(1 << (r * width + c) for r, c in targets)
    live = live_cells(floor, offsets, [r * width + c for r, c in targets])
    dead = tuple(floor[i] and not live[i] for i in range(n))
    return Room(width, n, floor, dead, tmask, offsets)


def live_cells(floor: tuple[bool, ...], offsets: tuple[int, ...], targets: list[int]) -> list[bool]:
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


def room_of(level: SokobanLevel) -> Room:
    return make_room(level.height, level.width, level.walls, level.outside, level.targets)


def encode(level: SokobanLevel, room: Room) -> int:
    mask = sum(1 << (r * room.width + c) for r, c in level.boxes)
    return mask * room.n_cells + level.player[0] * room.width + level.player[1]


def decode(level: SokobanLevel, room: Room, key: int) -> SokobanLevel:
    mask, p = divmod(key, room.n_cells)
    boxes = [divmod(i, room.width) for i in range(room.n_cells) if mask >> i & 1]
    return level.with_state(divmod(p, room.width), boxes)


def push(room: Room, key: int, k: int) -> tuple[int, int] | None:
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


def successors(room: Room, key: int) -> Iterator[tuple[int, int]]:
    """(action index, successor key) of every move that changes the state, skipping pushes of a
    box onto a dead cell (such states are dead, and so is everything after them)."""
    n, p = room.n_cells, key % room.n_cells
    for k in range(4):
        nxt = push(room, key, k)
        if nxt is not None and not (nxt[0] // n != key // n and room.dead[p + 2 * room.offsets[k]]):
            yield k, nxt[0]


def has_dead_box(room: Room, key: int) -> bool:
    mask = key // room.n_cells
    while mask:
        low = mask & -mask
        if room.dead[low.bit_length() - 1]:
            return True
        mask ^= low
    return False


def is_solved_key(room: Room, key: int) -> bool:
    return key // room.n_cells == room.target_mask


def apply_action(level: SokobanLevel, action: str) -> tuple[SokobanLevel, int]:
    """Result of one move: (new level, boxes pushed onto targets minus boxes pushed off)."""
    room = room_of(level)
    nxt = push(room, encode(level, room), ACTIONS.index(action))
    if nxt is None:
        return level, 0
    return decode(level, room, nxt[0]), nxt[1]
