"""The Inspector's boards: the chosen anchor's board (or its whole text) with its visits, V and
sigma, and its successors' boards in an expander. Plain escaped HTML, as on the Rollouts page:
drawn at once, no plotly figure to redraw."""

from __future__ import annotations

import streamlit as st

from crbc.explain.arithmetic import AnchorArithmetic
from crbc.explain.table_rows import fmt
from crbc.process import Process
from crbc.viz.board import board_html, board_rows, is_board
from ui.core import widgets
from ui.inspector import observation


def card(ar: AnchorArithmetic, depth: int | None) -> None:
    """The anchor of ``ar`` at ``depth`` (None: the closure): its board scaled to fit, or its
    text; then N(s), V and sigma, and the gate's expression."""
    if is_board(ar.anchor):
        rows = board_rows(ar.anchor)
        st.html(board_html(ar.anchor, cell=max(12, min(34, 240 // max(len(rows), len(rows[0]))))))
    else:
        widgets.long_text(ar.anchor, "The whole anchor", observation.OBS_SHOWN)
    v_name = "V(s)" if depth is None else f"V^({depth})(s)"
    st.markdown(f"visits N(s) = **{ar.n}** · {v_name} = **{fmt(ar.v)}** · sigma(s) = **{fmt(ar.sigma)}**")
    st.caption(ar.gate_expression)


def successors(p: Process, ar: AnchorArithmetic) -> None:
    """The expander "Boards of the successors": each distinct successor of the anchor's actions
    once, four to a row; nothing when the anchor is no board or has no successor anchor."""
    succ_boards = [(x.label, p.state_anchor[x.node]) for a in ar.actions for x in a.successors
                   if x.node < p.n_states]
    if is_board(ar.anchor) and succ_boards:
        with st.expander("Boards of the successors"):
            seen, cols_ = set(), st.columns(min(4, len(succ_boards)))
            i = 0
            for lab, text in succ_boards:
                if lab in seen:
                    continue
                seen.add(lab)
                with cols_[i % len(cols_)]:
                    st.markdown(f"**{widgets.text(lab)}**")
                    st.html(board_html(text))
                i += 1
