"""Start the studio (``make run``): ``streamlit run app.py`` with the heavy imports begun at once.

    .venv/bin/python studio.py [--runs-dir DIR ...] --server.address 127.0.0.1 --server.port 8501 [other streamlit flags]

``--runs-dir DIR`` (repeatable) adds DIR to the folders whose run folders the sidebar lists and a
link may open (beside ``sample_rollouts/runs`` and ``./runs``): it is added to the environment
variable ``CRBC_RUNS_DIRS`` (``ui/core/run_source.py``). No other path on the machine is ever opened
from a link.

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
(:mod:`ui.core.nested_urls`) instead of a blank page, and a long address (up to 1 MB) load the
app and its notice about the parameter (:mod:`ui.core.long_urls`) instead of an HTTP 400.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().with_name("app.py")


def runs_dirs(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(run folders given by --runs-dir DIR / --runs-dir=DIR, the other arguments)``."""
    dirs, rest, it = [], [], iter(argv)
    for a in it:
        if a == "--runs-dir":
            d = next(it, None)
            if d is None:
                sys.exit("studio.py: error: --runs-dir needs a folder")
            dirs.append(d)
        elif a.startswith("--runs-dir="):
            dirs.append(a.split("=", 1)[1])
        else:
            rest.append(a)
    return dirs, rest


def main() -> None:
    from ui.core import memory

    memory.tune_allocator()  # before any thread: large blocks unmapped when freed, two heaps
    dirs, args = runs_dirs(sys.argv[1:])
    if dirs:
        old = [p for p in os.environ.get("CRBC_RUNS_DIRS", "").split(os.pathsep) if p]
        os.environ["CRBC_RUNS_DIRS"] = os.pathsep.join(old + [str(Path(d).resolve()) for d in dirs])
    from ui.core import warm_imports

    warm_imports.start()  # torch and transformers load while the server comes up (ui/core/warm_imports.py)
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    from ui.core import long_urls, nested_urls, session_reaper

    PagesManager.uses_pages_directory = False  # app.py declares its pages with st.navigation
    nested_urls.install()  # /lesson/foo shows "page not found", not a blank page
    long_urls.install()  # a URL of up to 1 MB reaches the app (a notice), not a bare HTTP 400
    session_reaper.install()  # a closed tab's session goes when its TTL has passed, not at the next visit
    # every 30 s (CRBC_MEMORY_INTERVAL_S): expired sessions dropped, unreachable cycles collected,
    # freed memory back to the machine
    memory.start(float(os.environ.get("CRBC_MEMORY_INTERVAL_S", memory.INTERVAL_S)))

    sys.argv = ["streamlit", "run", str(APP), *args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
