"""XSB, the standard Sokoban text format: reading (with line-numbered errors) and writing."""


from __future__ import annotations

from collections import deque
from typing import Any

from crbc.envs.base import DELTAS
from crbc.envs.sokoban.level import Cell, SokobanLevel

__all__ = ["from_xsb", "to_xsb"]

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
