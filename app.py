"""crbc-studio: the Streamlit entry point (`make run`).

Page config, the shared data-source sidebar (ui/core/sidebar.py; state API in ui/core/state.py) and st.navigation over pages/.
Pages that another part of the project adds later (lesson, inspector, disagreements) join the
navigation as soon as their files exist.
"""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from ui.core import bounded, nav_pages, routing, sidebar, url

HERE = Path(__file__).resolve().parent

# (file, title, icon, url path); a page is listed only when its file exists
PAGES = [
    ("pages/lesson.py", "Lesson", ":material/school:", "lesson"),
    ("pages/rollouts.py", "Rollouts", ":material/route:", "rollouts"),
    ("pages/graph.py", "Anchor graph", ":material/hub:", "graph"),
    ("pages/backups.py", "Bellman backups", ":material/replay:", "backups"),
    ("pages/credits.py", "Step credits", ":material/bar_chart:", "credits"),
    ("pages/inspector.py", "Inspector", ":material/search:", "inspector"),
    ("pages/disagreements.py", "Disagreements", ":material/compare_arrows:", "disagreements"),
    ("pages/runs.py", "Training runs", ":material/monitoring:", "runs"),
    ("pages/accuracy.py", "Estimator accuracy", ":material/verified:", "accuracy"),
]
DEFAULT_PAGE = "pages/rollouts.py"


def _mark_run(t0: float) -> None:
    """A hidden marker at the end of the page: the run's number in this session and the script's
    time on the server (the browser benchmark reads both to split server and browser time)."""
    n = st.session_state["_crbc_run_no"] = st.session_state.get("_crbc_run_no", 0) + 1
    ms = (time.perf_counter() - t0) * 1000
    st.html(f'<span hidden class="crbc-run" data-run="{n}" data-script-ms="{ms:.0f}"></span>')


def main() -> None:
    t0 = time.perf_counter()
    bounded.start_run()  # the page's bounded computations share their time from here
    st.set_page_config(page_title="crbc studio", page_icon="🔁", layout="wide")
    nav = st.navigation(nav_pages.pages(HERE, PAGES, DEFAULT_PAGE))  # built once, copied per run
    with routing.app_running():
        url.notice_box(st.container())  # notices about ignored URL parameters go on top
        url.not_found_notice(next(t for p, t, *_ in PAGES if p == DEFAULT_PAGE))
        sidebar.sidebar(nav.url_path)
        nav.run()
        _mark_run(t0)


main()
