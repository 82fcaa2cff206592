"""The Lesson's "share this state" link and printable handout, drawn into a box at the top of the page.

The link carries the lesson's state in the URL (:mod:`crbc.explain.lesson_share`, written by
:func:`ui.lesson.state.write_url`); the handout is :func:`crbc.viz.handout.handout_html` of
:func:`crbc.explain.handout.lesson_handout`: one HTML file that prints without the sidebar.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from crbc.explain.handout import lesson_handout
from crbc.viz.handout import handout_html
from ui.core import widgets
from ui.core.context import PageContext, group_context
from ui.lesson import backups as lesson_backups
from ui.lesson import luck as lesson_luck
from ui.lesson import parts
from ui.lesson import sections as S
from ui.lesson import state as L


def share_url(share: str) -> str:
    """This page's address with the start, the part (when not the first) and the state (``ls``)
    as its query."""
    try:
        base = str(st.context.url or "").split("?")[0].split("#")[0]
    except Exception:  # noqa: BLE001 (no browser context: AppTest)
        base = ""
    query = {"lesson_start": st.session_state.get("lesson_start", L.WORKED)}
    if st.session_state.get(parts.KEY, parts.PARTS[0].key) != parts.PARTS[0].key:
        query[parts.KEY] = st.session_state[parts.KEY]
    if share:
        query[L.SHARE_PARAM] = share
    return f"{base or '/lesson'}?{urlencode(query)}"


def _later_questions(lctx: PageContext, beta: float, sigma_min: float) -> list:
    """Sections 10 and 11's questions as the page asks them (whichever part is shown); sections 7
    and 8's are built by :func:`crbc.explain.handout.lesson_handout` itself."""
    tgroup, tt, _why = S.truth_sample(beta)
    if tgroup is not None and tt is not None:
        q10 = lesson_backups.question(group_context(tgroup, private=False), beta, sigma_min, tt.anchor_advantage_N,
                                      on=f"the Sokoban group {tgroup.group} of section 9")
    else:
        q10 = lesson_backups.question(lctx, beta, sigma_min, None)
    return [q for q in (q10, lesson_luck.question(beta)) if q is not None]


def share_and_print(box, lctx: PageContext, share: str, beta: float, sigma_min: float) -> None:
    """Fill ``box``: a fold holding the link to this state (edits, K, answers) and the handout's
    download, for the lesson group of ``lctx``. Folded, neither is built (the address bar holds
    the same state all along): the Lesson's first screen draws without them."""
    with box:
        fold, shown = widgets.folded("Share this state, or download the handout with its answer key",
                                     key="lesson_share_open")
    if not shown:
        return
    group = lctx.group
    ss = st.session_state
    doc = handout_html(lesson_handout(group, beta, sigma_min, ss.get("lesson_answers", {}),
                                      ss.get("lesson_edits", []), _later_questions(lctx, beta, sigma_min)))
    with fold:
        c1, c2 = st.columns([3, 1.3], vertical_alignment="center")
        with c1:
            st.markdown("**Share this state** — the group's changes, the depth K and your answers "
                        "are in this link (and in the address bar); opening it restores them:")
            st.code(share_url(share), language=None, wrap_lines=True)
        c2.download_button("Handout with answer key", doc, file_name=f"lesson-{group.group[:40]}.html",
                           mime="text/html", key="lesson_handout", icon=":material/print:",
                           help="One HTML file, nothing fetched: the group, questions to work by hand "
                                "and to predict, and on a new page the answer key. Open it and print.")
