"""The Step credits page's folded scatter: two estimators' credits of every step against each
other, built and drawn only when the expander is open."""

from __future__ import annotations

import streamlit as st

from crbc.viz.scatter import scatter_chart_svg
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.svg_view import svg_view


def render(ctx: PageContext, all_c: dict, names: list[str], all_params: tuple, field: str, slug: str) -> None:
    """The expander with an estimator per axis (gigpo against crbc when both are registered) and
    their ``field`` (``all_c``: name -> Credits) step by step."""
    box, scatter_open = widgets.folded("Two estimators, step by step (a scatter of their credits)",
                                       key="credits_scatter_open")
    if scatter_open:
        with box:
            s1, s2 = st.columns(2)
            x_name = s1.selectbox("x axis", names, index=names.index("gigpo") if "gigpo" in names else 0,
                                  key="scatter_x")
            y_name = s2.selectbox("y axis", names, index=names.index("crbc") if "crbc" in names else 0,
                                  key="scatter_y")
            scatter = ctx.kept("figure",("credits_scatter_svg", all_params, x_name, y_name, field),
                                          lambda: scatter_chart_svg(all_c[x_name], all_c[y_name], field))
            svg_view(scatter, key="scatter", download=f"{slug}.{x_name}-vs-{y_name}.scatter")
            st.caption("Each dot is one step (hover it for its rollout, step and both values). On the "
                       "dotted diagonal both estimators agree; dots in the top-left or bottom-right "
                       "quadrants are steps they judge in opposite directions.")
