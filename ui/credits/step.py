"""The Step credits page's clicked step: its action and anchor, its credit under every estimator
with the evidence, the truth and the trainer's advantage where known, and the way on to the
Inspector."""

from __future__ import annotations

import streamlit as st

from crbc.explain.anchor_names import anchor_labels
from crbc.viz.core.credits import outcome
from crbc.viz.step_detail import step_rows
from ui.core import exact_truth, url, widgets
from ui.core.context import PageContext


def _open_in_inspector(group: str, anchor: str, rollout: int, t: int) -> None:
    """Open ``anchor`` of ``group`` in the Inspector on step ``t`` (0-based) of rollout position
    ``rollout`` (a button callback)."""
    st.session_state["inspect_anchor"] = {"group": group, "anchor": anchor, "step": (rollout, t)}
    url.switch_page("pages/inspector.py")


def render(ctx: PageContext, all_c: dict, i: int, t: int, evidence: dict, has_truth: bool) -> None:
    """Step ``t`` (1-based, as the heatmap's cell names it) of the rollout at position ``i``.
    ``all_c``: estimator -> Credits; ``evidence``: estimator -> (N,) evidence classes."""
    p, grp = ctx.process, ctx.group
    n = int(p.rollout_offsets[i]) + t - 1
    roll = grp.rollouts[i]
    step = roll.steps[t - 1]
    label = anchor_labels(p)[int(p.step_state[n])]
    st.markdown(f"**Rollout {roll.rollout} ({outcome(roll)}), step {t - 1} (steps 0–{len(roll.steps) - 1})**: "
                f"action {widgets.code(widgets.short(step.action, 80))} at anchor "
                f"{widgets.code(widgets.short(label, 80))}")
    truth = exact_truth.group_truth(ctx)[0] if has_truth else None
    widgets.table(step_rows(all_c, n, evidence, None if truth is None else truth.advantage_N, ctx.trainer_N))
    s = int(p.step_state[n])
    c1, c2 = st.columns([2, 3], vertical_alignment="center")
    c1.button("Open this anchor in the Inspector", icon=":material/search:", key="credits_open_inspector",
              on_click=_open_in_inspector, args=(grp.group, label, int(p.step_rollout[n]), int(p.step_t[n]) - 1),
              type="primary")
    c2.caption(f"The anchor was visited {int(p.n_s[s])} times in the group, with {int(p.n_actions[s])} "
               "different actions: the Inspector shows the arithmetic of each estimator there.")
