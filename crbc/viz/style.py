"""One visual language for every page: the V colour scale, the credit scale, board colours.

V (a probability of reaching success, 0..1) always uses :data:`V_SCALE` with the range fixed to
[0, 1], so the same colour means the same value on every page; step credits always use the
diverging :data:`CREDIT_SCALE` centred on 0 (red = worse than the anchor's average, blue = better).
"""

from __future__ import annotations

import html

import numpy as np

from crbc.viz.palette import sample

V_SCALE = "Viridis"  #: a name in crbc.viz.palette.SCALES
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


def cut(text: str, limit: int = 2000) -> str:
    """A long user string's beginning, with "…" and its length (tooltips and labels stay small)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def esc(text: object) -> str:
    """A user string for server-built HTML or SVG (text or an attribute's value): ``<``, ``>``,
    ``&`` and both quotes as entities."""
    return html.escape(str(text), quote=True)


def v_color(v: float | np.ndarray) -> list[str]:
    """Colours of values on the V scale (clipped to [0, 1])."""
    vals = np.clip(np.atleast_1d(np.asarray(v, dtype=float)), 0.0, 1.0)
    vals = np.where(np.isfinite(vals), vals, 0.0)
    return sample(V_SCALE, vals.tolist())


def symmetric_range(*arrays: np.ndarray | None) -> float:
    """Half-width of a colour (or axis) range centred on 0 for signed quantities:
    ``max(max_i |x_i|, 1e-3)`` over the finite values of all ``arrays`` (None skipped), so noise
    below 1e-3 stays near the centre; 1 when no array has a finite non-zero value."""
    finite = [a[np.isfinite(a)] for a in (np.asarray(x, dtype=float) for x in arrays if x is not None)]
    vals = [float(np.abs(a).max()) for a in finite if a.size]
    top = max(vals) if vals else 0.0
    return max(top, 1e-3) if top > 0 else 1.0


def signed_color(x: float | np.ndarray, zmax: float | None = None) -> list[str]:
    """Colours of signed values (e.g. estimate - truth) on the diverging credit scale centred on 0
    (range +-``zmax``, default the largest |x|); NaN is drawn as 0."""
    vals = np.where(np.isfinite(np.atleast_1d(np.asarray(x, dtype=float))),
                    np.atleast_1d(np.asarray(x, dtype=float)), 0.0)
    z = zmax if zmax else (float(np.abs(vals).max()) or 1.0)
    return sample(CREDIT_SCALE, (0.5 + 0.5 * np.clip(vals / z, -1, 1)).tolist())


def is_board(text: str) -> bool:
    """A board anchor: at least two rows of equal length made only of board symbols."""
    rows = text.split("\n")
    if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return False
    return all(ch in BOARD_COLORS for r in rows for ch in r)


def board_rows(text: str) -> list[str]:
    return text.split("\n")


def board_html(text: str, cell: int = 16) -> str:
    """A small self-contained HTML table of a board (escaped), or the text in <pre> otherwise."""
    if not is_board(text):
        return f"<pre style='margin:0'>{html.escape(text)}</pre>"
    out = ["<table style='border-collapse:collapse;line-height:0'>"]
    for row in board_rows(text):
        out.append("<tr>")
        for ch in row:
            color = BOARD_COLORS.get(ch, BOARD_UNKNOWN)
            out.append(f"<td title='{html.escape(BOARD_NAMES.get(ch, ch))}' style='width:{cell}px;"
                       f"height:{cell}px;padding:0;background:{color};border:1px solid #fff'></td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def board_legend_html() -> str:
    """A one-line colour legend of the board symbols."""
    seen, items = set(), []
    for ch, name in BOARD_NAMES.items():
        if name in seen or ch == " ":
            continue
        seen.add(name)
        items.append(f"<span style='display:inline-block;width:11px;height:11px;background:"
                     f"{BOARD_COLORS[ch]};border:1px solid #999;margin:0 3px 0 8px;"
                     f"vertical-align:middle'></span>{html.escape(name)} <code>{html.escape(ch)}</code>")
    return "<div style='font-size:12px;color:#555;line-height:1.8'>" + "".join(items) + "</div>"
