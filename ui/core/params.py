"""The shared estimator parameters (the registry's ``shared`` ones: beta, depth, sigma_min,
w_group, w_step): one value per session, kept in the address by the studio, and the sidebar's
fold of widgets that changes them.

The widgets are drawn only while their fold is open, so a closed fold costs neither the server
nor the browser anything on a page's visit. The values therefore live apart from the widgets, in
the session's ``_crbc_params``: name -> the widget's form of the value (a float, or the depth's
text, ``"inf"`` or ``"3"``). One run of the sidebar does, in order::

    check_link()   a value in the address that no widget could take: a notice, the default
    adopt_link()   a value in the address this session did not write (a shared link, the
                   browser's Back) becomes the session's value
    fold(...)      the widgets while the fold is open (a change is the session's value at once);
                   closed, one caption lists the values that differ from their defaults
    write_link()   the address carries every value that differs from its default, and no other

Streamlit's own binding (``bind="query-params"``) cannot serve a folded widget: a bound widget
that is not drawn never receives its link's value, a run without it drops the parameter from the
address, and the page may not write a bound parameter itself.
"""

from __future__ import annotations

import contextlib
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from crbc.estimators import registry as estimators
from crbc.estimators.params import Param
from ui.core import url

VALUES = "_crbc_params"  # session: name -> the widget's form of the value
WRITTEN = "_crbc_params_written"  # session: name -> the text this session last put in the address
FOLD_KEY = "params_open"  # the fold's open state
TOUCHED = "_crbc_params_fold_touched"  # the reader has opened or closed the fold


def specs() -> dict[str, tuple[Param, Any]]:
    """name -> (Param, default) of every shared parameter, in the registry's order."""
    return estimators.shared_param_specs()


def depth_options() -> list[str]:
    """The depth choices every page offers: the closure's text ("inf"), then K = lo..ui_max."""
    return _options(specs()["depth"][0])


def _form(meta: Param, default: Any) -> Any:
    """``default`` in the widget's form (the depth's None is its text)."""
    if meta.none is not None and default is None:
        return meta.none
    return default


def _options(meta: Param) -> list[str] | None:
    """A choice widget's options (texts), or None for a number or a checkbox."""
    if meta.choices is not None:
        return [str(c) for c in meta.choices]
    if meta.kind is int and meta.none is not None:  # the None text, then lo..ui_max
        return [meta.none] + [str(k) for k in range(int(meta.lo or 0), int(meta.ui_max or 64) + 1)]
    return None


def _valid(meta: Param):
    """A validator of a parameter's address text, from its registry metadata."""
    options = _options(meta)
    if options is not None:
        return url.one_of(options)
    if meta.kind is bool:
        return url.one_of(["true", "false", "True", "False"])
    lo = meta.ui_min if meta.ui_min is not None else meta.lo
    hi = meta.ui_max if meta.ui_max is not None else meta.hi
    return url.float_in(-1e12 if lo is None else lo, 1e12 if hi is None else hi)


def _parse(meta: Param, text: str) -> Any:
    """A valid address text in the widget's form."""
    if _options(meta) is not None:
        return text
    if meta.kind is bool:
        return text.lower() == "true"
    return int(float(text)) if meta.kind is int else float(text)


def _text(value: Any) -> str:
    """The address text of a widget-form value (0.9 -> "0.9", True -> "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def values() -> dict[str, Any]:
    """name -> this session's value of every shared parameter, in the widget's form."""
    vals = st.session_state.get(VALUES, {})
    return {name: vals.get(name, _form(meta, default)) for name, (meta, default) in specs().items()}


def _set(name: str, value: Any) -> None:
    st.session_state.setdefault(VALUES, {})[name] = value


def check_link() -> None:
    """A parameter in the address that no widget could take: a notice on top of the page, and it
    leaves the address and the session (the default is used)."""
    for name, (meta, _default) in specs().items():
        v = st.query_params.get(name)
        url.check_url(name, _valid(meta), f"not a valid value of {meta.label or name}")
        if v is not None and st.query_params.get(name) is None:  # refused
            st.session_state.get(VALUES, {}).pop(name, None)
            st.session_state.get(WRITTEN, {}).pop(name, None)


def adopt_link() -> None:
    """Make a value in the address that this session did not write itself the session's value."""
    written = st.session_state.setdefault(WRITTEN, {})
    for name, (meta, _default) in specs().items():
        v = st.query_params.get(name)
        if v is None or v == written.get(name):
            continue
        _set(name, _parse(meta, v))
        written[name] = v
        st.session_state.pop(name, None)  # an open fold's widget starts from the link's value


def write_link() -> None:
    """Put every value that differs from its default in the address; take the others out."""
    written = st.session_state.setdefault(WRITTEN, {})
    vals = values()
    for name, (meta, default) in specs().items():
        want = None if vals[name] == _form(meta, default) else _text(vals[name])
        if st.query_params.get(name) != want:
            with contextlib.suppress(KeyError, StreamlitAPIException):
                if want is None:
                    del st.query_params[name]
                else:
                    st.query_params[name] = want
        written[name] = want


def _touched() -> None:
    st.session_state[TOUCHED] = True


def fold(box: Any, expanded: bool) -> None:
    """The Parameters fold in ``box``: its widgets while open, else a caption of the values that
    differ from their defaults. Opening or closing it reruns the page. Its state is the
    session's on every page; ``expanded`` opens it on this page until the reader has opened or
    closed it once."""
    if expanded and not st.session_state.get(TOUCHED):
        st.session_state[FOLD_KEY] = True
    fold_box = box.expander("Parameters", key=FOLD_KEY, on_change=_touched)
    current = values()
    if not fold_box.open:
        changed = [f"{meta.label or name} = {current[name]}" for name, (meta, default) in specs().items()
                   if current[name] != _form(meta, default)]
        box.caption(("Changed: " + "; ".join(changed)) if changed else "All at their defaults.")
        return
    with fold_box:
        for name, (meta, default) in specs().items():
            _set(name, _widget(name, meta, default, current[name]))


def _widget(name: str, meta: Param, default: Any, value: Any) -> Any:
    """The widget of one shared parameter, starting from ``value``; returns what it holds."""
    kw = dict(key=name, help=meta.help)
    label = meta.label or name
    options = _options(meta)
    if options is not None:
        url.drop_invalid(name, options)
        return st.selectbox(label, options, index=options.index(value if value in options
                                                                else _form(meta, default)), **kw)
    if meta.kind is bool:
        return st.checkbox(label, value=bool(value), **kw)
    lo = meta.ui_min if meta.ui_min is not None else (None if meta.lo_open else meta.lo)
    hi = meta.ui_max if meta.ui_max is not None else (None if meta.hi_open else meta.hi)
    step = meta.step if meta.step is not None else (1 if meta.kind is int else 0.1)
    make = st.slider if meta.slider else st.number_input
    return make(label, lo, hi, meta.kind(value), step, format=meta.fmt, **kw)
