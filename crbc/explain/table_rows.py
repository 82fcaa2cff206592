"""Typed table rows (frozen dataclasses whose fields carry their column titles) and number formatting.

Tables of :mod:`crbc.explain.arithmetic` and :mod:`crbc.explain.disagreements` are lists of such rows: code reads
attributes (``row.disagreement``), and only the display (:func:`cells`, used by
``crbc.viz.lesson.format_rows``) uses the titles (``"mean |Δ|"``). A title may name other fields
of the row in braces (``"best by {x_label}"``); fields declared ``hidden`` are not shown, and
``optional`` ones are left out when they are ``None``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["cells", "col", "depth_name", "fmt", "joined", "MAX_TERMS", "num"]

#: the most terms a written-out sum or list shows (:func:`joined`)
MAX_TERMS = 24

_KEY = "crbc.column"


def col(title: str | None = None, *, hidden: bool = False, optional: bool = False, default: Any = dataclasses.MISSING):
    """A row field shown under ``title`` (default: the field name)."""
    meta = {_KEY: (title, hidden, optional)}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _title_value(x: Any) -> str:
    if isinstance(x, float):
        s = f"{x:.4f}".rstrip("0").rstrip(".")
        return s if s not in ("", "-0") else "0"
    return str(x)


def cells(row: Any, fields: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The row as ``{title: value}`` for a table (values are not formatted): every shown field in
    declaration order, or only the fields named in ``fields`` (attribute names), in that order."""
    if isinstance(row, dict):
        return dict(row) if fields is None else {k: row[k] for k in fields}
    all_fields = {f.name: f for f in dataclasses.fields(row)}
    subs = {name: _title_value(getattr(row, name)) for name in all_fields}
    out: dict[str, Any] = {}
    for name in all_fields if fields is None else fields:
        title, hidden, optional = all_fields[name].metadata.get(_KEY, (None, False, False))
        value = getattr(row, name)
        if fields is None and (hidden or (optional and value is None)):
            continue
        out[(title or name).format(**subs)] = value
    return out


def fmt(x: float, digits: int = 4, signed: bool = False) -> str:
    """A number as the tables show it: ``digits`` decimals, trailing zeros kept; ``∞`` for inf."""
    if x is None:
        return "—"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < 0.5 * 10 ** (-digits):
        x = 0.0
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def joined(items: Sequence[Any], term: Callable[[Any], str], sep: str = " + ", limit: int = MAX_TERMS) -> str:
    """``sep.join(term(x) for x in items)`` with at most ``limit`` terms written: a longer one is
    its first ``limit - 1`` terms, ``… (k more)`` and its last term (an anchor with 20,000 actions
    or successors gives a line a reader can read, and only ``limit`` terms are formatted)."""
    n = len(items)
    if n <= limit:
        return sep.join(term(x) for x in items)
    return sep.join([term(items[i]) for i in range(limit - 1)] + [f"… ({n - limit:,} more)", term(items[n - 1])])


def depth_name(depth: int | None) -> str:
    """``"K = 3"`` or ``"K = ∞ (closure)"``."""
    return "K = ∞ (closure)" if depth is None else f"K = {depth}"


def num(x: float) -> str:
    """A parameter or probability, short: 0.98, 0.25, 0.6667."""
    s = f"{float(x):.4f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"
