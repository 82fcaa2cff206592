"""A board anchor (a grid of symbols such as Sokoban's) as a small HTML table, and its legend."""

from __future__ import annotations

import html

from crbc.viz.core.style import BOARD_COLORS, BOARD_NAMES, BOARD_UNKNOWN

__all__ = ["board_html", "board_legend_html", "board_rows", "is_board"]


def is_board(text: str) -> bool:
    """A board anchor: at least two rows of equal length (2 or more) made only of board symbols."""
    rows = text.split("\n")
    if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return False
    return all(ch in BOARD_COLORS for r in rows for ch in r)


def board_rows(text: str) -> list[str]:
    """The rows of a board anchor, top first."""
    return text.split("\n")


def board_html(text: str, cell: int = 16) -> str:
    """A small self-contained HTML table of a board, a ``cell`` px square per symbol titled with
    its name; any other text escaped in a ``<pre>``."""
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
    """A one-line colour legend of the board symbols (each name once)."""
    seen, items = set(), []
    for ch, name in BOARD_NAMES.items():
        if name in seen or ch == " ":
            continue
        seen.add(name)
        items.append(f"<span style='display:inline-block;width:11px;height:11px;background:"
                     f"{BOARD_COLORS[ch]};border:1px solid #999;margin:0 3px 0 8px;"
                     f"vertical-align:middle'></span>{html.escape(name)} <code>{html.escape(ch)}</code>")
    return "<div style='font-size:12px;color:#555;line-height:1.8'>" + "".join(items) + "</div>"
