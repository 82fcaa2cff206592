"""User text in a report: escaped, long strings cut with the rest behind ``<details>``.

Long observations (a text game's room, a web page) read as they do in the studio: the first
``limit`` characters in a monospace block, the whole string on demand (a ``<details>`` element,
no script). Boards (Sokoban, gridworld anchors) are drawn as coloured grids.
"""

from __future__ import annotations

from crbc.viz.board import board_html, is_board
from crbc.viz.core.text import esc

__all__ = ["anchor_html", "facts", "KEEP", "LIMIT", "long_text", "pre"]

LIMIT = 300  #: characters of a user string shown before "show all"
KEEP = 20_000  #: characters of one string kept in the file at most (the rest is named, not kept)


def pre(text: str) -> str:
    """``text`` in a monospace block that keeps its line breaks (escaped)."""
    return f'<pre class="crbc-pre">{esc(text)}</pre>'


def long_text(text: str, limit: int = LIMIT, keep: int = KEEP) -> str:
    """The first ``limit`` characters of ``text`` and, when it is longer, the text up to ``keep``
    characters behind a ``<details>`` "show all" (a longer one says how much was left out)."""
    text = str(text)
    if len(text) <= limit:
        return pre(text)
    rest = text[:keep]
    more = "" if len(text) <= keep else f"\n… ({len(text) - keep:,} more characters not kept in this file)"
    return (pre(text[:limit] + "…")
            + f"<details><summary>show all ({len(text):,} characters)</summary>{pre(rest + more)}</details>")


def anchor_html(text: str, limit: int = LIMIT) -> str:
    """An anchor's text: a board as a coloured grid (with its text), anything else as
    :func:`long_text`."""
    if is_board(text):
        return f'<div style="display:flex;gap:1rem;align-items:center">{board_html(text, 14)}{pre(text)}</div>'
    return long_text(text, limit)


def facts(items: dict[str, object]) -> str:
    """A row of ``name: value`` facts (both escaped)."""
    return '<div class="facts">' + "".join(f"<span>{esc(k)}: <b>{esc(v)}</b></span>" for k, v in items.items()) + "</div>"
