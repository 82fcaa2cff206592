"""User text inside server-built SVG and HTML: escaped, cut short, kept on one line, numbers printed."""

from __future__ import annotations

import html
import math

import numpy as np

__all__ = ["cut", "esc", "fmt_value", "missing", "one_line"]


def esc(text: object) -> str:
    """A user string for server-built HTML or SVG (text or an attribute's value): ``<``, ``>``,
    ``&`` and both quotes as entities."""
    return html.escape(str(text), quote=True)


def cut(text: str, limit: int = 2000) -> str:
    """A long user string's beginning, with "…" and its length (tooltips and labels stay small)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def one_line(text: object, n: int) -> str:
    """A user string on one line (runs of whitespace as one space), cut to ``n`` characters
    (the last one "…" when cut)."""
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def fmt_value(v: float | None) -> str:
    """A value as the drawings print it: three decimals, ``n/a`` for None or a non-finite one."""
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.3f}"


def missing(x: object) -> bool:
    """None or a float NaN: a value a drawing shows as a dash or leaves out."""
    return x is None or (isinstance(x, float) and math.isnan(x))
