"""crbc-studio: the Streamlit entry point (`make run`).

Page config, the shared data-source sidebar (pages/_sidebar.py; state API in pages/common.py) and st.navigation over pages/.
Pages that another part of the project adds later (lesson, inspector, disagreements) join the
navigation as soon as their files exist.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages import _sidebar

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


def main() -> None:
    st.set_page_config(page_title="crbc studio", page_icon="🔁", layout="wide")
    pages = [st.Page(path, title=title, icon=icon, url_path=url, default=(path == DEFAULT_PAGE))
             for path, title, icon, url in PAGES if (HERE / path).exists()]
    nav = st.navigation(pages)
    _sidebar.sidebar(nav.url_path)
    nav.run()


main()
