"""The Lesson's "share this state" link and printable handout, drawn into a box at the top of the page.

The link carries the lesson's state in the URL (:mod:`crbc.explain.lesson_share`, written by
:func:`ui.lesson.state.write_url`); the handout is :func:`crbc.viz.handout.handout_html` of
:func:`crbc.explain.handout.lesson_handout`: one HTML file that prints without the sidebar.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from crbc.explain.handout import lesson_handout
from crbc.io.rollouts import RolloutGroup
from crbc.viz.handout import handout_html
from ui.lesson import state as L


def share_url(share: str) -> str:
    """This page's address with the start and the state (``ls``) as its query."""
    try:
        base = str(st.context.url or "").split("?")[0].split("#")[0]
    except Exception:  # noqa: BLE001 (no browser context: AppTest)
        base = ""
    query = {"lesson_start": st.session_state.get("lesson_start", L.WORKED)}
    if share:
        query[L.SHARE_PARAM] = share
    return f"{base or '/lesson'}?{urlencode(query)}"


def share_and_print(box, group: RolloutGroup, share: str, beta: float, sigma_min: float) -> None:
    """Fill ``box``: the link to this state (edits, K, answers) and the handout's download."""
    ss = st.session_state
    asked = ss.get("lesson_asked", {})
    extra = [q for qid, q in asked.items() if qid not in ("k", "foil")]
    doc = handout_html(lesson_handout(group, beta, sigma_min, ss.get("lesson_answers", {}),
                                      ss.get("lesson_edits", []), extra))
    with box.container(border=True):
        c1, c2 = st.columns([3, 1.3], vertical_alignment="center")
        with c1:
            st.markdown("**Share this state** — the group's changes, the depth K and your answers "
                        "are in this link (and in the address bar); opening it restores them:")
            st.code(share_url(share), language=None, wrap_lines=True)
        c2.download_button("Handout with answer key", doc, file_name=f"lesson-{group.group[:40]}.html",
                           mime="text/html", key="lesson_handout", icon=":material/print:",
                           help="One HTML file, nothing fetched: the group, questions to work by hand "
                                "and to predict, and on a new page the answer key. Open it and print.")
