"""The heatmaps of crbc.viz.heatmap read back as a reader sees them: per panel, each cell's
pick, fill, tooltip and the value its tooltip names. Parsing as XML also checks that the
drawing is well formed (a user string that broke out of its escaping would not parse)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

VALUE = re.compile(r"(?:value|true A_t) (\S+)")


@dataclass(frozen=True)
class Cell:
    row: int            #: the rollout position (from the pick, or the row it is drawn on)
    pick: str | None    #: its data-pick ("i:t"), None when not clickable
    fill: str
    title: str

    @property
    def value(self) -> float:
        """The value the tooltip names (3 decimals; NaN for "–")."""
        s = VALUE.search(self.title).group(1)
        return float("nan") if s == "–" else float(s)

    @property
    def step(self) -> tuple[int, int] | None:
        """(rollout position, step t) the cell opens."""
        return None if self.pick is None else tuple(int(x) for x in self.pick.split(":"))


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def panels(svg: str) -> dict[str, list[Cell]]:
    """Panel title -> its cells, row by row, left to right."""
    out: dict[str, list[Cell]] = {}
    for g in parse(svg.replace(' xmlns="http://www.w3.org/2000/svg"', "", 1)).iter("g"):
        if g.get("class") != "crbc-panel":
            continue
        cells = []
        for row, rg in enumerate(r for r in g.findall("g") if (r.get("transform") or "").startswith("translate(0,")):
            for rect in rg.findall("rect"):
                title = rect.find("title")
                cells.append(Cell(row, rect.get("data-pick"), rect.get("fill"), title.text if title is not None else ""))
        out[g.get("data-panel")] = cells
    return out


def app_svg(at, key: str) -> str:
    """The SVG a page showed through ui.core.svg_view under widget key ``key`` (an AppTest)."""
    el = next(e for e in at.get("bidi_component") if e.proto.id.endswith(key))
    return json.loads(el.proto.json)["svg"]
