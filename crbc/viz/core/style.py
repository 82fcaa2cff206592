"""One visual language for every page: the V colour scale, the credit scale, board colours.

V (a probability of reaching success, 0..1) always uses :data:`V_SCALE` with the range fixed to
[0, 1], so the same colour means the same value on every page; step credits always use the
diverging :data:`CREDIT_SCALE` centred on 0 (red = worse than the anchor's average, blue = better).
"""

from __future__ import annotations

import numpy as np

from crbc.viz.core.palette import sample

__all__ = [
    "BOARD_COLORS", "BOARD_NAMES", "BOARD_UNKNOWN", "CREDIT_SCALE", "DOORKEY_COLORS", "DOORKEY_NAMES",
    "LAKE_COLORS", "LAKE_NAMES", "EDGE_COLOR", "HIGHLIGHT",
    "NO_VALUE_COLOR", "OUTCOME_COLORS", "signed_color", "TRUTH_COLOR", "v_color", "V_RANGE", "V_SCALE",
    "Z_MINUS_COLOR", "Z_PLUS_COLOR"
]

V_SCALE = "Viridis"  #: a name in crbc.viz.core.palette.SCALES
CREDIT_SCALE = "RdBu"
V_RANGE = (0.0, 1.0)
Z_PLUS_COLOR = "#2e9e44"   # success boundary
Z_MINUS_COLOR = "#c0392b"  # failure boundary
HIGHLIGHT = "#ff7f0e"      # the chosen rollout's path / the current step
EDGE_COLOR = "#9aa3ad"
NO_VALUE_COLOR = "#d5d8dc"  # a node with no value at this depth (K = 0: nothing is backed up)
TRUTH_COLOR = "#111111"  #: the exact truth (a dashed black line, a "truth" mark)
OUTCOME_COLORS = {"success": "#2e9e44", "failure": "#c0392b", "truncated": "#e67e22"}

# board symbols (docs/ARCHITECTURE.md): # wall, _ floor, O target, X box, √ box on target,
# P player, S player on target, G goal
BOARD_COLORS = {
    "#": "#4a4f57",
    "_": "#f3efe4",
    " ": "#f3efe4",
    "O": "#f5b7b1",
    "X": "#b9770e",
    "√": "#27ae60",
    "P": "#2a6fdb",
    "S": "#7d3cff",
    "G": "#58d68d",
}
BOARD_NAMES = {
    "#": "wall", "_": "floor", " ": "floor", "O": "target", "X": "box", "√": "box on target",
    "P": "player", "S": "player on target", "G": "goal",
}
BOARD_UNKNOWN = "#d5d8dc"
#: FrozenLake maps (Gymnasium's letters; ``P`` the player).
LAKE_COLORS = {"S": "#eaf2f8", "F": "#d6eaf8", "H": "#1b2631", "G": "#58d68d", "P": "#2a6fdb"}
LAKE_NAMES = {"S": "start", "F": "frozen ice", "H": "hole", "G": "goal", "P": "player"}
#: DoorKey grids (MiniGrid's DoorKey; the agent drawn by the way it faces).
DOORKEY_COLORS = {"#": "#4a4f57", "_": "#f3efe4", "K": "#f4d03f", "L": "#a04000", "C": "#e67e22",
                  "O": "#fad7a0", "G": "#58d68d", ">": "#2a6fdb", "v": "#2a6fdb", "<": "#2a6fdb",
                  "^": "#2a6fdb"}
DOORKEY_NAMES = {"#": "wall", "_": "floor", "K": "key", "L": "locked door", "C": "closed door",
                 "O": "open door", "G": "goal", ">": "agent facing east", "v": "agent facing south",
                 "<": "agent facing west", "^": "agent facing north"}


def v_color(v: float | np.ndarray) -> list[str]:
    """Colours of values on the V scale (clipped to [0, 1]; NaN drawn as 0)."""
    vals = np.clip(np.atleast_1d(np.asarray(v, dtype=float)), 0.0, 1.0)
    vals = np.where(np.isfinite(vals), vals, 0.0)
    return sample(V_SCALE, vals)


def signed_color(x: float | np.ndarray, zmax: float | None = None) -> list[str]:
    """Colours of signed values (e.g. estimate - truth) on the diverging credit scale centred on 0:
    point ``0.5 + 0.5 * clip(x / zmax, -1, 1)`` of :data:`CREDIT_SCALE` (``zmax`` default: the
    largest |x|); NaN is drawn as 0."""
    vals = np.atleast_1d(np.asarray(x, dtype=float))
    vals = np.where(np.isfinite(vals), vals, 0.0)
    z = zmax if zmax else (float(np.abs(vals).max()) or 1.0)
    return sample(CREDIT_SCALE, 0.5 + 0.5 * np.clip(vals / z, -1, 1))
