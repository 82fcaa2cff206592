"""The studio's static tables (ui.core.widgets.table: one st.html element each) read back from an
AppTest tree as DataFrames of the cell texts, as a reader sees them."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import pandas as pd


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.in_table = False

    def handle_starttag(self, tag, attrs):
        if tag == "table" and "crbc-table" in (dict(attrs).get("class") or ""):
            self.in_table = True
        elif self.in_table and tag == "tr":
            self.rows.append([])
        elif self.in_table and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            self.in_table = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


@dataclass
class Table:
    element: Any  # the AppTest html element
    value: pd.DataFrame  # cell texts; a first header cell left empty means an index column


def parse(body: str) -> pd.DataFrame | None:
    """The first crbc table in ``body`` as a DataFrame of strings, or None."""
    p = _Cells()
    p.feed(body)
    if not p.rows:
        return None
    head, rows = p.rows[0], p.rows[1:]
    if head and head[0] == "":
        return pd.DataFrame([r[1:] for r in rows], columns=head[1:], index=[r[0] for r in rows])
    return pd.DataFrame(rows, columns=head)


def tables(node) -> list[Table]:
    """Every static table under ``node`` (an AppTest, ``at.main``, an expander), in page order."""
    out = []
    for h in node.get("html"):
        df = parse(h.value)
        if df is not None:
            out.append(Table(h, df))
    return out


def numeric(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``df`` with ``columns`` as floats (blank cells NaN)."""
    df = df.copy()
    for c in columns:
        df[c] = pd.to_numeric(df[c].replace("", None))
    return df


def grid_rows(node) -> list[list[str]]:
    """The cell texts of every ``grid_row`` (crbc.viz.core.html) under ``node``, in page order."""
    out = []
    for h in node.get("html"):
        if 'class="crbc-grid-row"' in h.value:
            out.append([html.unescape(c) for c in re.findall(r"<div style=\"[^\"]*\"(?: title=\"[^\"]*\")?>(.*?)</div>", h.value)])
    return out
