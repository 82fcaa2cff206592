"""Caches shared by every session, except for what one session uploaded.

Shipped samples, run folders on the server and generated groups are the same for everybody:
their processes, credits, sweeps and figures are computed once and shared by every session
(``st.cache_resource``), so thirty students opening the Lesson compute its worked example once.
An upload belongs to the session that made it: whatever is computed from it (a key starting with
``upload:``, the prefix of every upload's source key in ``ui/upload.py``) goes to Streamlit's
session-scoped cache of the same function (``st.cache_resource(scope="session")``), at most
``min(max_entries, SESSION_ENTRIES)`` results per function and session, the least recently used
dropped first, all of them released when the session disconnects. A large upload therefore never
fills a cache every session shares, and its results leave with the session.

    @memo(max_entries=64)                    # like st.cache_resource(max_entries=64)
    def cached_process(key: str, _group) -> Process: ...

As with ``st.cache_resource``, parameters whose names start with ``_`` are not part of the
cache key; the function's first parameter (or ``owner_arg``) decides who owns the result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

__all__ = ["SESSION_ENTRIES", "UPLOAD_PREFIX", "memo", "owned_by_session"]

UPLOAD_PREFIX = "upload:"
#: a session's results of one function for its uploads, at most
SESSION_ENTRIES = 16


def owned_by_session(key: Any) -> bool:
    """True for a key derived from an upload (a string, or a tuple whose first item is one)."""
    if isinstance(key, tuple) and key:
        key = key[0]
    return isinstance(key, str) and key.startswith(UPLOAD_PREFIX)


def memo(max_entries: int, show_spinner: bool | str = False, owner_arg: int = 0) -> Callable:
    """Decorator: a shared ``st.cache_resource`` for shared keys, the session-scoped one for keys
    owned by an upload (``owned_by_session(args[owner_arg])``)."""

    def wrap(fn: Callable) -> Callable:
        shared = st.cache_resource(show_spinner=show_spinner, max_entries=max_entries)(fn)
        own = st.cache_resource(show_spinner=show_spinner, scope="session",
                                max_entries=min(max_entries, SESSION_ENTRIES))(fn)

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            return (own if owned_by_session(args[owner_arg]) else shared)(*args)

        return call

    return wrap
