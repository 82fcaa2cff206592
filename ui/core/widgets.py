"""Small rendering helpers every page uses: user strings as text, static tables, monospace text
blocks, folded parts and the end-of-fragment marker."""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from crbc.explain.markdown import literal
from crbc.viz.core.html import html_table

LONG_TEXT = 300  # characters of a user string drawn inline; the rest behind "show all"


def text(s: object) -> str:
    """A user string (group id, anchor, action, meta value, file name) as Markdown that shows
    exactly its characters: never a link, an image, emphasis, LaTeX (``$..$``), HTML or a
    Streamlit directive. Use it for every user string inside st.markdown, st.caption, st.title,
    headers, alerts and widget labels (tables: :func:`table`). Line breaks become spaces (inline text)."""
    return literal(s)


def code(s: object) -> str:
    """A user string as an inline Markdown code span that shows exactly its characters: the
    delimiter is one backtick longer than the longest run of backticks inside, so none of them
    can close it (CommonMark), and nothing inside is parsed (no link, image, HTML or LaTeX)."""
    out = str(s).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", out)), default=0) + 1)
    pad = " " if out.startswith("`") or out.endswith("`") or not out.strip() else ""
    return f"{fence}{pad}{out}{pad}{fence}"


def short(s: object, limit: int = LONG_TEXT) -> str:
    """:func:`text` of at most ``limit`` characters of ``s`` (with "…" and the full length when
    cut): for long anchors in headings, captions and cells."""
    s = str(s)
    if len(s) <= limit:
        return text(s)
    return text(s[:limit]) + f"… ({len(s):,} characters)"


def long_text(s: str, label: str = "Show all", limit: int = LONG_TEXT, container: Any = None) -> None:
    """A possibly huge user string as a monospace block: the first ``limit`` characters, and the
    whole of it behind an expander (drawn only there, as plain text)."""
    box = container or st
    if len(s) <= limit:
        pre(s, box)
        return
    pre(s[:limit] + "…", box)
    with box.expander(f"{label} ({len(s):,} characters)"):
        st.text(s)


def table(rows: Any, container: Any = None, hide_index: bool = True, max_height_px: int | None = None) -> None:
    """A static table of user data (a list of dicts or a DataFrame) as one HTML element
    (:func:`crbc.viz.core.html.html_table`): every cell shown as its text, never Markdown or
    HTML; ``hide_index=False`` shows a DataFrame's index; ``max_height_px``: a taller table
    scrolls inside a box of that height."""
    (container or st).html(html_table(rows, index=not hide_index, max_height_px=max_height_px))


def value(label: str, text: str, container: Any = None, limit: int = 400) -> None:
    """A labelled value like ``st.metric``'s, for user text (an action): escaped, at most
    ``limit`` characters, large when short and wrapped anywhere when long, so a WebShop-like
    ``search[...]`` action never runs past its column (a metric's value never wraps)."""
    import html

    t = str(text) if len(str(text)) <= limit else str(text)[:limit] + f"… ({len(str(text)):,} characters)"
    size = "2.25rem" if len(t) <= 14 else "1.25rem" if len(t) <= 40 else "1rem"
    (container or st).html(f'<div style="font-size:0.875rem;color:#31333f">{html.escape(label)}</div>'
                           f'<div class="crbc-value" style="font-size:{size};line-height:1.3;overflow-wrap:anywhere;'
                           f'margin-bottom:0.75rem">{html.escape(t)}</div>')


#: the studio's page-wide layout rules: Streamlit's slider keeps a visually hidden range input
#: (about 130 px wide) at its thumb, which at the right end pushed the Inspector's page 120 px wide
LAYOUT_CSS = ("<style>[data-testid=stSlider] input[type=range]{width:1px!important;max-width:1px}"
              "[data-testid=stMetricValue] div{overflow-wrap:anywhere;white-space:normal}</style>")


def layout_css() -> None:
    """Add :data:`LAYOUT_CSS` to the page (a style-only ``st.html`` takes no room)."""
    st.html(LAYOUT_CSS)


def pre(text: str, container: Any = None) -> None:
    """Monospace text that keeps its line breaks and wraps long lines: a board, a response, the
    arithmetic of a backup. Plain HTML, where ``st.code`` would make a fresh browser session load
    and run Streamlit's 1.5 MB syntax highlighter (about 0.5 s of a 2-core laptop) for text that
    has no syntax to highlight."""
    import html

    (container or st).html(f'<pre class="crbc-pre" style="white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 0.5rem; '
                           f'padding: 0.6rem 0.8rem; background: #f6f7f9; border-radius: 0.4rem; '
                           f'font-size: 0.85rem; line-height: 1.35">{html.escape(text)}</pre>')


def fragment_done() -> None:
    """End of a fragment's run: the same hidden ``.crbc-run`` marker app.py writes at the end of a
    script run, numbered from the same session counter, so a browser test or benchmark waiting for
    "a run later than n" (devtools.apprunner.RUN_NO: the largest number on the page) also sees a
    click that reran only a fragment."""
    n = st.session_state["_crbc_run_no"] = st.session_state.get("_crbc_run_no", 0) + 1
    st.html(f'<span hidden class="crbc-run" data-run="{n}"></span>')


GRID_ROWS = 50  #: beyond this many rows a table of user data is a scrolling grid, not HTML


def rows_view(rows: Any, container: Any = None, height: int = 400) -> None:
    """A table of user data that may be long: up to :data:`GRID_ROWS` rows as :func:`table`,
    beyond as ``st.dataframe`` (a scrolling canvas grid: its cells are plain text, never Markdown,
    and a browser does not lay out thousands of HTML rows)."""
    if not hasattr(rows, "columns"):
        rows = list(rows)
        if len(rows) <= GRID_ROWS:  # a short list of dicts goes to HTML as it is (no DataFrame)
            table(rows, container)
            return
    import pandas as pd

    df = rows if hasattr(rows, "columns") else pd.DataFrame(rows)
    if len(df) <= GRID_ROWS:
        table(df, container)
    else:
        (container or st).dataframe(df, hide_index=True, width="stretch", height=height)


def folded(label: str, key: str, expanded: bool = False) -> tuple[Any, bool]:
    """An expander whose content is built only while it is open: ``(container, open)``; it starts
    open when ``expanded``. Opening or closing it reruns the page (or the fragment it is in), so a
    long table or a figure folded away costs neither the server nor the browser anything until
    asked for::

        box, is_open = widgets.folded("All 167 anchors", key="dis_all_anchors")
        if is_open:
            with box:
                widgets.rows_view(rows)
    """
    box = st.expander(label, key=key, expanded=expanded, on_change="rerun")
    return box, bool(box.open)
