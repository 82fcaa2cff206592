"""A nested address (``/lesson/foo``) opens the studio with a "no such page" notice, never blank.

Why this exists. Streamlit answers an unknown address with its single-page ``index.html``. Its
scripts are linked relatively (``./static/js/index.….js``), so at ``/lesson/foo`` the browser asks
for ``/lesson/static/…``, gets ``index.html`` again instead of JavaScript, and shows a blank white
page; and even with the scripts found, the page looks for the server only at ``/lesson/foo`` and
``/lesson`` and reports "Connection failed with status 404". One-part addresses (``/nosuch``)
work: Streamlit says "Page not found" and runs the default page.

:func:`install` makes the static file server answer a GET for an address of two or more parts
that names no file with a redirect to the app's root, keeping the query string and adding
``not_found=<the address>``; ``app.py`` then shows a notice naming that address
(:func:`ui.core.url.not_found_notice`) above the default page, with the shared view of the rest of
the link. Addresses under ``_stcore`` (the server's own routes and probes) are left alone.

Every page load also probed the server twice at the page's own address first: the browser
asks ``/runs/_stcore/health`` and ``/runs/_stcore/host-config`` (Streamlit's frontend tries the
page's path as the server's base before its parent), both 404, then the root. :func:`install`
also puts into the served ``index.html`` a small script that sets
``window.__streamlit.BACKEND_BASE_URL`` (Streamlit's own setting for where its server is) to the
address without its last part when that part names a page (:data:`PAGE_NAMES`: the stems of
``pages/*.py``, which are the pages' url paths), so the browser asks the root alone. Behind a
proxy with a path prefix the prefix stays (only a page name is taken off).

It touches one Streamlit internal (checked against 1.67):
``streamlit.web.server.starlette.starlette_static_routes.create_streamlit_static_handler``;
:func:`install` fails loudly if it moved, and ``tests/browser/test_text_and_play.py`` opens a
nested address in a browser.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["base_url_script", "NOT_FOUND_PARAM", "install", "PAGE_NAMES", "redirect_target", "with_base_url"]

NOT_FOUND_PARAM = "not_found"
#: the default page's own name: Streamlit serves the default page only at the root, so a link to
#: ``/rollouts`` showed "Page not found"; it is redirected to the root with its query string
DEFAULT_ALIASES = frozenset({"rollouts"})


#: the pages' url paths: app.py gives each page its file's stem (tests/app checks it)
PAGE_NAMES = tuple(sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "pages").glob("*.py")
                          if not p.stem.startswith("_")))


def base_url_script(pages: tuple[str, ...] = PAGE_NAMES) -> str:
    """The ``<script>`` that points Streamlit's frontend at the server's root: the address
    without a last part that names one of ``pages``."""
    import json

    return ("<script>(function(){var s=location.pathname.replace(/\\/+$/,'').split('/');"
            f"if({json.dumps(list(pages))}.indexOf(s[s.length-1])>=0)s.pop();"
            "window.__streamlit=Object.assign({},window.__streamlit||{},"
            "{BACKEND_BASE_URL:location.origin+s.join('/')+'/'});})();</script>")


def with_base_url(html: str, script: str | None = None) -> str:
    """``index.html``'s text with :func:`base_url_script` first in its ``<head>`` (before the
    frontend's own scripts, which read the setting once when they load)."""
    script = script or base_url_script()
    return html.replace("<head>", "<head>" + script, 1) if "<head>" in html else script + html


def redirect_target(directory: str, path: str, root_path: str, query_string: bytes) -> str | None:
    """Where a GET for ``path`` (relative to the static folder ``directory``) is redirected, or
    None to serve it as Streamlit would: ``{root_path}/?{query}&not_found=/{path}`` when ``path``
    has two or more parts, names no file and is not under ``_stcore``; ``{root_path}/?{query}``
    for the default page's own name (DEFAULT_ALIASES)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if len(parts) == 1 and parts[0] in DEFAULT_ALIASES:
        qs = query_string.decode("latin-1")
        return f"{root_path.rstrip('/')}/" + (f"?{qs}" if qs else "")
    if len(parts) < 2 or "_stcore" in parts or os.path.isfile(os.path.join(directory, *parts)):
        return None
    query = [(k, v) for k, v in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
             if k != NOT_FOUND_PARAM]
    query.append((NOT_FOUND_PARAM, "/" + "/".join(parts)))
    return f"{root_path.rstrip('/')}/?{urlencode(query)}"


def install() -> None:
    """Wrap Streamlit's static file handler with :func:`redirect_target`. Idempotent; call before
    the server builds its routes (``studio.py`` does, before ``streamlit run``)."""
    from starlette.responses import FileResponse, HTMLResponse, RedirectResponse
    from streamlit.web.server.starlette import starlette_static_routes as routes

    original = routes.create_streamlit_static_handler
    if getattr(original, "_crbc_nested_urls", False):
        return

    page_html: dict[str, str] = {}

    def handler(directory: str, base_url: str | None) -> Any:
        files = original(directory=directory, base_url=base_url)
        serve = files.get_response

        async def get_response(path: str, scope: Any) -> Any:
            if scope.get("method") in {"GET", "HEAD"}:
                target = redirect_target(directory, path, scope.get("root_path", ""),
                                         scope.get("query_string", b""))
                if target is not None:
                    return RedirectResponse(target, status_code=302, headers={"Cache-Control": "no-cache"})
            response = await serve(path, scope)
            if isinstance(response, FileResponse) and os.path.basename(str(response.path)) == "index.html" \
                    and response.status_code == 200:
                if "index" not in page_html:
                    with open(response.path, encoding="utf-8") as f:
                        page_html["index"] = with_base_url(f.read())
                headers = {k: v for k, v in response.headers.items()
                           if k.lower() not in ("content-length", "content-type", "etag", "last-modified")}
                return HTMLResponse(page_html["index"], headers=headers)
            return response

        files.get_response = get_response  # StaticFiles.__call__ looks it up on the instance
        return files

    handler._crbc_nested_urls = True  # type: ignore[attr-defined]
    routes.create_streamlit_static_handler = handler
