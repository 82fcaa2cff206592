"""Writing SVG text: the chart element, point lists, unbroken runs of a line."""

from __future__ import annotations

import numpy as np

__all__ = ["chart_open", "dash_attr", "FONT_FAMILY", "points", "stretches"]

FONT_FAMILY = "font-family:'Source Sans',sans-serif"  #: Streamlit's font, in every drawing


def chart_open(width: float, height: float) -> str:
    """The opening ``<svg class="crbc-line-chart">`` of a chart ``width`` x ``height`` user
    units, drawn at the column's width (at most 1.4 units per pixel)."""
    return (f'<svg class="crbc-line-chart" viewBox="0 0 {width:g} {height:g}" width="100%" font-size="12" '
            f'fill="#31333f" role="img" style="max-width:{width * 1.4:.0f}px;{FONT_FAMILY}">')


def points(xs: np.ndarray, ys: np.ndarray) -> str:
    """``"x,y x,y ..."`` with one decimal (formatted in one go: many thousand points per chart)."""
    return " ".join(["%.1f,%.1f"] * len(xs)) % tuple(np.column_stack([xs, ys]).ravel().tolist())


def stretches(mask: np.ndarray) -> list[np.ndarray]:
    """Indices of the unbroken runs of True in ``mask`` (a False point breaks a line)."""
    idx = np.flatnonzero(mask)
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if len(idx) else []


def dash_attr(dash: str | None) -> str:
    """`` stroke-dasharray="..."`` for a dash pattern, "" for a solid line."""
    return f' stroke-dasharray="{dash}"' if dash else ""
