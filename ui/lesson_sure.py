"""The end of the Lesson's section 9: how sure a credit is, watching one pair's interval shrink as G grows.

Drawn by :func:`render` at the end of ``pages/lesson.py``; the numbers come from
:mod:`crbc.explain.growing_group`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from crbc.explain import growing_group as GG
from crbc.explain.anchor_names import node_labels
from crbc.io.rollouts import RolloutGroup
from crbc.process import merge
from crbc.viz.reliability import interval_note, load_report
from ui import state


@st.cache_data(show_spinner=False, max_entries=16)
def _rows(key: str, anchor: str, action: str, truth: float | None, beta: float, sigma_min: float,
          _group: RolloutGroup) -> list[dict]:
    return GG.intervals_by_size(_group, anchor, action, GG.sizes_for(len(_group)), truth=truth,
                                beta=beta, sigma_min=sigma_min)


def render(group: RolloutGroup, truth, beta: float, sigma_min: float, table: Callable) -> None:
    """The section on ``group`` (one level); ``truth``: its GroupTruth or None; ``table``: the
    Lesson's table renderer."""
    st.subheader("How sure is a credit: the interval shrinks as the group grows")
    st.markdown(
        "A credit computed from a few rollouts can look confident and still rest on one lucky "
        "visit. Reweight the group's own rollouts at random (plus a little mass on what no rollout "
        "showed), recompute, and widen the spread of the credit by a factor fitted on toy levels: "
        "that is its calibrated interval (90% here). Below: the same (anchor, action) on the same "
        "level, computed from the first G rollouts of the group, for growing G.")
    p = merge([group])
    pair = GG.busiest_pair(p)
    if pair is None:
        st.info("No anchor of this group saw two or more actions: every step credit is 0 by construction.")
        return
    anchor, action = p.state_anchor[int(p.sa_state[pair])], p.action_names[int(p.sa_action[pair])]
    true_sa = None
    if truth is not None:
        true_sa = float(np.mean(truth.anchor_advantage_N[p.step_sa == pair]))
    rows = _rows(f"{group.group}:{len(group)}:{p.n_steps}", anchor, action, true_sa, float(beta),
                 float(sigma_min), group)
    st.markdown("The most visited pair where the group tried two or more actions: anchor "
                f"**{node_labels(p)[int(p.sa_state[pair])]}**, action:")
    st.text(action + (f"   (its true advantage A(s,a) = {true_sa:+.4f})" if true_sa is not None else ""))
    table(rows)
    st.caption("Read down the rows: the interval narrows as G grows, because each resample draws "
               "from more rollouts. sure: the interval excludes 0; none: the credit is 0 by "
               "construction. covers the truth: whether the interval holds the level's exact A(s,a). "
               + interval_note(load_report(state.SHIPPED_DIR), 0.9))
