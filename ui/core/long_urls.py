"""Long addresses reach the studio, which answers them with a notice, not an HTTP error page.

A link can carry a long URL parameter (a Lesson share state, a run path, or a hostile one): the
HTTP server (uvicorn with h11, under Streamlit) refuses a request line past its buffer with a bare
"400 Bad Request". :func:`install` gives h11 a buffer of :data:`MAX_REQUEST_BYTES` instead, so a
URL up to that size loads the app, whose URL checks (:mod:`ui.core.url`) name the parameter that
is too long and ignore it; a longer one still gets the server's 400. One request's buffer is the
bound, so the server's memory stays bounded. Call it before the server starts (``studio.py``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["install", "MAX_REQUEST_BYTES"]

#: the longest request head the server reads (a browser's address bar holds about 2 MB)
MAX_REQUEST_BYTES = 1 << 20


def install() -> bool:
    """Wrap Streamlit's uvicorn settings so h11 reads request heads of up to
    :data:`MAX_REQUEST_BYTES`. Idempotent; False when this Streamlit has no such settings hook
    (the server then keeps its own limit)."""
    try:
        from streamlit.web.server.starlette import starlette_server as server
    except ImportError:
        return False
    original = getattr(server, "_get_uvicorn_config_kwargs", None)
    if original is None:
        return False
    if getattr(original, "_crbc_long_urls", False):
        return True

    def settings() -> dict[str, Any]:
        return {**original(), "http": "h11", "h11_max_incomplete_event_size": MAX_REQUEST_BYTES}

    settings._crbc_long_urls = True  # type: ignore[attr-defined]
    server._get_uvicorn_config_kwargs = settings
    return True
