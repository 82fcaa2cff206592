"""Caches shared by every session, except for what one session uploaded.

Shipped samples, run folders on the server and generated groups are the same for everybody:
their processes, credits, sweeps and figures are computed once and shared by every session
(``st.cache_resource``), so thirty students opening the Lesson compute its worked example once.
An upload belongs to the session that made it: whatever is computed from it (a key starting with
``upload:``, the prefix of every upload's source key in ``ui/upload.py``) stays in that
session's own memo (``st.session_state["_crbc_memo"]``, at most ``SESSION_ENTRIES`` results, the
least recently used dropped first). A large upload therefore never fills a cache every session
shares, and its results leave with the session.

    @memo(max_entries=64)                    # like st.cache_resource(max_entries=64)
    def cached_process(key: str, _group) -> Process: ...

As with ``st.cache_resource``, parameters whose names start with ``_`` are not part of the
cache key; the function's first parameter (or ``owner_arg``) decides who owns the result.
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

UPLOAD_PREFIX = "upload:"
SESSION_ENTRIES = 48
_STORE = "_crbc_memo"


def owned_by_session(key: Any) -> bool:
    """True for a key derived from an upload (a string, or a tuple whose first item is one)."""
    if isinstance(key, tuple) and key:
        key = key[0]
    return isinstance(key, str) and key.startswith(UPLOAD_PREFIX)


def memo(max_entries: int, show_spinner: bool | str = False, owner_arg: int = 0) -> Callable:
    """Decorator: a shared ``st.cache_resource`` for shared keys, this session's own memo for
    keys owned by an upload (``owned_by_session(args[owner_arg])``)."""

    def wrap(fn: Callable) -> Callable:
        shared = st.cache_resource(show_spinner=show_spinner, max_entries=max_entries)(fn)
        hashed = [not name.startswith("_") for name in inspect.signature(fn).parameters]

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            if not owned_by_session(args[owner_arg]):
                return shared(*args)
            key: Hashable = (fn.__module__, fn.__qualname__,
                             *(a for a, h in zip(args, hashed, strict=False) if h))
            store: OrderedDict = st.session_state.setdefault(_STORE, OrderedDict())
            if key in store:
                store.move_to_end(key)
                return store[key]
            value = fn(*args)
            store[key] = value
            while len(store) > SESSION_ENTRIES:
                store.popitem(last=False)
            return value

        call.clear = shared.clear  # type: ignore[attr-defined]
        return call

    return wrap
