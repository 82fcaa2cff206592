"""The Rollouts page's table of the group: up to ROW_BUTTONS_MAX rollouts its rows are buttons,
beyond that a data grid; a click on a row chooses that rollout (the sidebar picker then shows it)
and goes back to its step 0."""

from __future__ import annotations

import streamlit as st

from crbc.estimators.credits import Credits
from crbc.io.rollouts import RolloutGroup
from crbc.viz.core.html import grid_row
from crbc.viz.rollout import rollouts_table

ROW_BUTTONS_MAX = 24  # up to this many rollouts the table's rows are buttons


def _pick(k: int) -> None:
    st.session_state["rollout"] = k
    st.session_state["step"] = 0


def _pick_row() -> None:
    """A row click chooses the rollout (a callback: the sidebar picker then shows it)."""
    sel = st.session_state.get("rollouts_table")
    try:
        rows = sel["selection"]["rows"] if isinstance(sel, dict) else sel.selection.rows
    except (AttributeError, KeyError, TypeError):
        return
    if rows:
        st.session_state["rollout"] = int(rows[0])
        st.session_state["step"] = 0


def render(grp: RolloutGroup, c: Credits, r: int) -> None:
    """The rollouts of ``grp`` with their length, outcome, score and A_G (of ``c``); rollout
    position ``r`` (the chosen one) is highlighted, then a caption on how to choose."""
    table = rollouts_table(grp, c)
    if len(grp) <= ROW_BUTTONS_MAX:
        # the table's rows are buttons: a click chooses the rollout, with nothing but Streamlit's
        # own widgets (no data-grid or plotly bundle on the landing page, which stays fast)
        # each row: its button, then the other cells as one HTML grid (one element, not four
        # Markdown cells for the browser to parse)
        split, widths = [1.1, 3.7], [0.7, 1.4, 0.6, 1]
        head = st.columns(split, vertical_alignment="center", gap="small")
        head[0].markdown("**rollout**")
        head[1].html(grid_row(["length", "outcome", "score", "A_G"], widths, header=True))
        for k, row in enumerate(table.itertuples(index=False)):
            cells = st.columns(split, vertical_alignment="center", gap="small")
            mark = "✓" if row.outcome == "success" else "✗"
            cells[0].button(f"{row.rollout} {mark}", key=f"rollouts_row_{k}", on_click=_pick, args=(k,),
                            type="primary" if k == r else "secondary", width="stretch",
                            help=f"Show rollout {row.rollout}")
            cells[1].html(grid_row([str(row.length), row.outcome, f"{row.score:g}", f"{row.A_G:+.3f}"], widths))
    else:  # many rollouts: the data grid, where a row click chooses the rollout
        st.dataframe(table, key="rollouts_table", on_select=_pick_row, selection_mode="single-row",
                     hide_index=True, width="stretch", height=460,
                     column_config={"A_G": st.column_config.NumberColumn(format="%+.3f")})
    st.caption("**Click a rollout** to choose it (or use the sidebar). score is the "
               "trajectory score; A_G = (score − group mean) / group std.")
