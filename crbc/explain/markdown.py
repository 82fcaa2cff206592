"""A user's string (a group id, an anchor, an action) placed inside Markdown that the studio
renders: :func:`literal` makes it show exactly its characters, never a link, an image, emphasis,
LaTeX, HTML or a list marker. The explaining texts (:mod:`crbc.explain.lesson_questions`) and the
studio's widgets (:func:`ui.core.widgets.text`) share it."""

from __future__ import annotations

import re

__all__ = ["literal"]

# characters that mean something anywhere in a line of Markdown as Streamlit renders it (emphasis,
# code, links and images, HTML and entities, LaTeX, tables, strike-through, autolinks' "http:");
# CommonMark lets a backslash make any of them literal
_SPECIAL = re.compile(r"([\\`*_{}\[\]<!$~&])")
# GFM turns bare addresses in text into links after parsing, so a backslash cannot stop it: an
# invisible word joiner (U+2060) inside "://", "www." and before "@" does
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9+.-])(:)(?=//)|\b(www)(?=\.)|(?<=\w)(@)(?=\w)")
# what means something only at the start of a line: a list item, a heading, a numbered item
_LEADING = re.compile(r"^(\s*)(?:(>)|([-+#])(?=\s|$)|(\d{1,9})(?=[.)](?:\s|$)))")


def literal(s: object) -> str:
    """``s`` as Markdown that shows exactly its characters (line breaks become spaces)."""
    out = str(s).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    out = _AUTOLINK.sub(lambda m: m.group(0) + "\u2060", _SPECIAL.sub(r"\\\1", out))
    m = _LEADING.match(out)
    if m and (m.group(2) or m.group(3)):  # "> x", "- x", "# x": escape the marker
        out = m.group(1) + "\\" + out[len(m.group(1)):]
    elif m:  # "1. x": escape the dot
        k = m.end()
        out = out[:k] + "\\" + out[k:]
    return out
