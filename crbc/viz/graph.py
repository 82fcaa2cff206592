"""The merged empirical process of one group drawn as a graph: the public names of the drawings.

The vis-network page (:mod:`crbc.viz.graph_html`, the Anchor graph page) and the SVG drawings
(:mod:`crbc.viz.graph_svg`: the Inspector, the Bellman backups, the Lesson) share
:func:`layout`: anchors in layers by their hop distance from the start anchor(s), the two
absorbing boundaries (z+ success, z- failure) in a last column on the right. Positions are
fixed, so the graph never moves between reruns.
"""

from __future__ import annotations

from crbc.viz.graph_html import anchor_graph_html, external_urls, vis_assets  # noqa: F401 (re-exported)
from crbc.viz.layout import (  # noqa: F401  (re-exported: the graph drawings' public names)
    LABEL_ALL_MAX,
    X_GAP,
    Y_GAP,
    Layout,
    crossings,
    layout,
    rollout_edges,
)
from crbc.viz.style import BOARD_COLORS

__all__ = ["Layout", "layout", "rollout_edges", "anchor_graph_html", "external_urls",
           "vis_assets", "BOARD_COLORS"]
