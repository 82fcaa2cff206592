"""URL parameters from a shared link: a value that does not fit falls back to the default with a
notice on top of the page; changing page while widgets are bound to the URL."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ui.core import routing
from ui.core.nested_urls import NOT_FOUND_PARAM
from ui.core.widgets import code


def drop_invalid(key: str, options: list) -> None:
    """Forget a remembered widget value that is not among the current options."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def notice_box(box: Any) -> None:
    """Give the container (app.py makes it, at the top of the page) that notices go into, and
    show there the notices of the previous run again: a notice outlives one rerun (the routing
    rerun of a deep link, or the user's first click). Called at the start of every run."""
    st.session_state["_crbc_notice_box"] = box
    prev = st.session_state["_crbc_notes_shown"] = st.session_state.pop("_crbc_notes", [])
    for msg in prev:
        box.warning(msg, icon=":material/link_off:")


def _notice_target() -> Any:
    """app.py's notice container of this run; the page itself when a page file runs without
    app.py (the container of an earlier run is gone)."""
    box = st.session_state.get("_crbc_notice_box")
    return box if box is not None and routing.app_is_running() else st


def url_notice(key: str, value: Any, why: str) -> None:
    """Say at the top of the page that URL parameter ``key=value`` was ignored, and why."""
    shown = str(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    _post(f"Ignored URL parameter {code(f'{key}={shown}')}: {why}; using the default instead.")


def _post(msg: str) -> None:
    """Show ``msg`` at the top of the page once (a notice already shown or queued is skipped)."""
    notes = st.session_state.setdefault("_crbc_notes", [])
    if msg in notes or msg in st.session_state.get("_crbc_notes_shown", []):
        return
    notes.append(msg)
    _notice_target().warning(msg, icon=":material/link_off:")


def not_found_notice(default_title: str) -> None:
    """If the server redirected a nested address here (:mod:`ui.core.nested_urls` adds
    ``not_found=/lesson/foo``): a notice naming it, and the parameter leaves the URL."""
    where = st.query_params.get(NOT_FOUND_PARAM)
    if where is None:
        return
    with contextlib.suppress(KeyError, StreamlitAPIException):
        del st.query_params[NOT_FOUND_PARAM]
    shown = where if len(where) <= 80 else where[:80] + "…"
    _post(f"There is no page at {code(shown)}: the studio's pages have one-part addresses such "
          f"as /lesson or /graph. Showing {default_title} instead.")


def _from_link(key: str) -> str | None:
    """The URL's value of ``key`` unless this session already accepted it (so a later change of
    options, e.g. another sample making the old group unknown, is not reported as a bad link)."""
    v = st.query_params.get(key)
    if v is None or (key, v) in st.session_state.get("_crbc_url_ok", set()):
        return None
    return v


def check_url(key: str, valid: Callable[[str], bool], why: str) -> None:
    """If the link's ``key`` fails ``valid`` (or makes it raise): a notice, and the parameter is
    dropped from the session and the URL."""
    v = _from_link(key)
    if v is None:
        return
    try:
        good = bool(valid(v))
    except (TypeError, ValueError, OverflowError):
        good = False
    if good:
        st.session_state.setdefault("_crbc_url_ok", set()).add((key, v))
        return
    url_notice(key, v, why)
    st.session_state.pop(key, None)
    # a widget bound to the parameter clears it itself (Streamlit drops a URL value its widget
    # cannot take); an unbound one is removed here
    with contextlib.suppress(KeyError, StreamlitAPIException):
        del st.query_params[key]


def int_in(lo: int, hi: int) -> Callable[[str], bool]:
    """A validator: the text is an integer in [lo, hi]."""
    def ok(v: str) -> bool:
        x = float(v)
        return math.isfinite(x) and x == int(x) and lo <= int(x) <= hi
    return ok


def float_in(lo: float, hi: float) -> Callable[[str], bool]:
    """A validator: the text is a finite number in [lo, hi]."""
    def ok(v: str) -> bool:
        x = float(v)
        return math.isfinite(x) and lo <= x <= hi
    return ok


def one_of(options: Sequence[Any]) -> Callable[[str], bool]:
    """A validator: the text is one of ``options`` (compared as text)."""
    names = {str(o) for o in options}
    return lambda v: v in names


def check_choice(key: str, options: Sequence[Any], what: str,
                 format_func: Callable[[Any], Any] | None = None) -> None:
    """:func:`check_url` for a choice: ``what`` names the kind of thing (e.g. "no such group").

    A widget bound to the URL with a ``format_func`` writes the option's *label* there (Streamlit
    matches URL values against the labels): pass the same ``format_func`` so that a shared link
    carrying a label is accepted, and a hand-written link carrying the option's own name
    (``?backups_colour=error``) chooses that option (the widget then writes its label back)."""
    if format_func is not None:
        v = _from_link(key)
        if v is None:
            return
        labels = {str(format_func(o)) for o in options}
        by_name = {str(o): o for o in options}
        if v in labels or v in by_name:
            if v not in labels:  # the option's name: choose it; the widget writes its label
                st.session_state[key] = by_name[v]
            st.session_state.setdefault("_crbc_url_ok", set()).add((key, v))
            return
    check_url(key, one_of(options), what)


def switch_page(path: str) -> None:
    """``st.switch_page`` that works while widgets are bound to URL parameters.

    Plain ``st.switch_page(path)`` clears every query parameter, which Streamlit refuses while a
    widget is bound to one ("Cannot clear query parameters - the following are bound to widgets":
    the Training runs defect of issue 12). An empty mapping replaces them without that check;
    the sidebar's bound widgets then write the shared view back into the address bar, and a page
    that should open on something (an anchor, a step) is told through the session."""
    st.switch_page(path, query_params={})
