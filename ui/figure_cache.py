"""Figures built once per input and shared by every run, page and session of the server (those
of an upload stay in its session: ui/session_memo.py).

A page rerun for one widget, or a revisit of a page, draws the same figures again; building a
16 x 50 heatmap grid costs several hundred milliseconds, an SVG drawing of a big graph a few. :func:`figure` keeps what a builder
returned under a key that names everything the figure depends on::

    fig = figure_cache.figure("backup_conv", (ctx.key, beta, k_max, k), lambda: convergence_chart_svg(sw, k))

The key is the caller's promise: two calls with the same ``(kind, key)`` must build the same
figure (use ``ctx.key``, the content hash of the group, and every parameter the builder reads).
A cached figure is shared, so nobody may change it after it is returned; build a variant under
its own key instead.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ui.session_memo import memo


@memo(max_entries=512, owner_arg=1)
def _memo(kind: str, key: Hashable, _build: Callable[[], Any]) -> Any:
    return _build()


def figure(kind: str, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()`` the first time ``(kind, key)`` is asked for, the same object after that (an
    SVG or HTML string, or anything else, such as the rows of a table beside a figure)."""
    return _memo(kind, key, build)
