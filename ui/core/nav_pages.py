"""The studio's ``st.Page`` objects, built once per server and copied for every script run.

``st.Page(path)`` resolves its file on every call: ``Path.resolve`` (one ``lstat`` per component
of the path) and ``Path.is_file`` (a ``stat``), about six system calls per page and 55 for the
studio's nine pages on every run of ``app.py``, the sidebar's existence checks besides. Each call
is a point where the script's thread lets go of the GIL and then waits to take it back behind
every other session's thread; on a shared studio under load a probe found a quarter of the
students' script time spent at those points (docs/results/benchmarks/shared-studio.md, session 46).

:func:`pages` builds each page once (on the first run, inside a script run, where ``st.Page``
can find the main script's folder; kept by the server's context, ``ui.core.context``, as a
listing) and hands each run a shallow copy: a fresh object with the
same path, title, icon and URL, so what ``st.navigation`` sets on a page during one run
(``_can_be_called``) never reaches another session's. A run costs one ``stat`` of each folder
holding a page: a page file added or removed changes its folder's modification time, and the
pages are built again (and at the latest when the listing's 30 s have passed).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from ui.core.context import server

__all__ = ["pages"]

Spec = tuple[str, str, str, str]  # (file relative to the app's folder, title, icon, url path)


def _build(folder: Path, specs: Sequence[Spec], default: str) -> list:
    return [st.Page(path, title=title, icon=icon, url_path=url, default=(path == default))
            for path, title, icon, url in specs if (folder / path).exists()]


def _folders_state(folder: Path, specs: Sequence[Spec]) -> tuple:
    """The modification time of each folder that holds a page file (None where it is missing)."""
    out = []
    for d in sorted({(folder / path).parent for path, *_ in specs}):
        try:
            out.append(d.stat().st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def pages(folder: Path, specs: Sequence[Spec], default: str) -> list:
    """``st.Page`` objects of the ``specs`` whose file exists under ``folder`` (``default``: the
    file of the default page), as copies of pages built once while their folders do not change;
    call it inside a script run."""
    parts = ("nav_pages", str(folder), tuple(specs), default, _folders_state(folder, specs))
    built = server().kept("listing", parts, lambda: _build(folder, specs, default))
    return [copy.copy(p) for p in built]
