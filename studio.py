"""Start the studio (``make run``): ``streamlit run app.py`` with the heavy imports begun at once.

    .venv/bin/python studio.py --server.address 127.0.0.1 --server.port 8501 [other streamlit flags]

Streamlit runs ``app.py`` only when the first browser session arrives, and that session then
waited about 7.5 s (of an 8 s first page on a 2-core machine) for ``import torch`` and
``import transformers`` (the exact truth's policy needs them). Here a background thread starts
those imports while the server comes up, so a session that arrives later finds them done, and
one that arrives early waits only for the rest (Python's import lock makes it share the work,
never repeat it). Everything else is ``streamlit run``: the same flags, the same process.

It also turns off Streamlit's old "pages/ folder" mode. Streamlit decides per process, from the
mere existence of ``pages/`` beside the main script, to run the *first* script run in that mode
(until some session's ``app.py`` has called ``st.navigation``): a deep link such as
``/runs?runs_exp=...`` opened on a freshly started server ran ``pages/runs.py`` alone, without
the sidebar, and listed every module of ``pages/`` (``common``, ``sidebar``) as a page. And it
lets a nested address (``/lesson/foo``) load the app and its "page not found" notice
(:mod:`ui.nested_urls`) instead of a blank page.
"""

from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().with_name("app.py")


def main() -> None:
    from ui import warm_imports

    warm_imports.start()  # torch and transformers load while the server comes up (ui/warm_imports.py)
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    from ui import nested_urls

    PagesManager.uses_pages_directory = False  # app.py declares its pages with st.navigation
    nested_urls.install()  # /lesson/foo shows "page not found", not a blank page

    sys.argv = ["streamlit", "run", str(APP), *sys.argv[1:]]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
