"""A Sokoban level and the generator's config: the board, its symbols and its text."""


from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

__all__ = [
    "BOX", "BOX_ON_TARGET", "Cell", "FLOOR", "PLAYER", "PLAYER_ON_TARGET", "SokobanConfig",
    "SokobanLevel", "TARGET", "WALL"
]

Cell = tuple[int, int]  #: (row, column) of a square of the board

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"


WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"


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

