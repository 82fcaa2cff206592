"""The Inspector's "what the policy saw" part, for anchors that are not boards: the observation of
one visit of the anchor and what changed in it since the rollout's step before."""

from __future__ import annotations

import streamlit as st

from crbc.explain import observation as O
from ui.core import widgets
from ui.core.context import PageContext

OBS_SHOWN = 1200  # characters of a long observation shown before "see all"


def render(ctx: PageContext, label: str, anchor: str) -> None:
    """The visit the user came from (``_inspect_step``, when it was at ``label``), else the
    chosen rollout's first visit of ``anchor``; nothing when no rollout shows an observation there."""
    grp = ctx.group
    where = st.session_state.get("_inspect_step")
    pos, t = (where[1], where[2]) if where and where[0] == label else (ctx.rollout, None)
    seen = O.step_observation(grp, anchor, pos, t)
    if seen is None:
        return
    st.markdown(f"**The observation** (rollout {grp.rollouts[seen.rollout].rollout}, step {seen.t}; "
                f"{len(seen.text)} characters)")
    c_obs, c_diff = st.columns([3, 2])
    with c_obs:
        widgets.long_text(seen.text, "See all", OBS_SHOWN)
    with c_diff:
        diff = O.changes(seen.previous, seen.text)
        st.caption("What changed since the previous step (+ new lines, − gone lines):"
                   if seen.previous is not None else "The first step of the rollout.")
        if seen.previous is not None:
            widgets.long_text("\n".join(diff) if diff else "(the same text as the step before)",
                              "See the whole change", OBS_SHOWN)
