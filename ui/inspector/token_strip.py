"""The Anchor inspector's token view: where the sidebar's source is a run folder whose recorder
kept the response tokens of the iteration's steps (``rollouts/iter-NNNN.tokens.parquet``,
:mod:`crbc.io.tokens`), the advantage on each token of the chosen step
(:func:`crbc.viz.token_strip.token_strip_html`).

The chosen step: the visit the reader came from (``_inspect_step``), else the chosen rollout's
first visit of the anchor, else the group's first (:func:`crbc.explain.observation.step_observation`,
as the observation above it); when that step has no stored tokens, the first stored visit of the
same anchor in the group, and the heading says so. Nothing is drawn for other sources or an
iteration without a token file. Computed directly at each run: one step's file read is cheap.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from crbc.errors import FormatError
from crbc.explain.observation import step_observation
from crbc.io.rollouts import RolloutGroup
from crbc.io.tokens import StepTokens, iteration_tokens
from crbc.viz.token_strip import token_strip_html
from ui.core.context import PageContext

__all__ = ["render", "show_token_strip", "run_folder_of"]

SHOWN = 512  #: tokens drawn at most


def show_token_strip(run_dir: str | os.PathLike, iteration: int, group: str, rollout: int, step: int,
                     *, anchor: str | None = None, rollouts: RolloutGroup | None = None) -> bool:
    """Read the run's stored tokens of ``iteration`` and draw those of step ``step`` of rollout
    ``rollout`` (its index in the group) of ``group``; with ``anchor`` and the group's
    ``rollouts``, another stored visit of that anchor when the step itself has none. Returns
    whether a strip was drawn (False: nothing stored, nothing shown); a refused token file is
    shown as an error naming the file."""
    try:
        stored = iteration_tokens(run_dir, iteration)
    except (FormatError, OSError) as e:
        st.error(f"The token file of iteration {iteration} could not be read: {e}")
        return False
    if not stored:
        return False
    mine = {(s.rollout, s.step): s for s in stored if s.group == group}
    hit = mine.get((int(rollout), int(step)))
    note = ""
    if hit is None and anchor is not None and rollouts is not None:
        hit = _same_anchor(mine, rollouts, anchor)
        if hit is not None:
            note = f" (step {step} of rollout {rollout} has no stored tokens: another visit of this anchor)"
    if hit is None:
        st.caption(f"The recorder kept the tokens of {len(stored)} step(s) of iteration {iteration}, "
                   f"{len(mine)} of this group, none at this anchor: RunRecorder(tokens=S) keeps S per "
                   "iteration, rollout 0 of every group first.")
        return False
    st.markdown(f"**The advantage on each token** (rollout {hit.rollout}, step {hit.step}{note})")
    st.html(token_strip_html(hit.advantage, hit.mask, hit.labels(), length=hit.length, max_tokens=SHOWN))
    return True


def _same_anchor(mine: dict[tuple[int, int], StepTokens], group: RolloutGroup, anchor: str) -> StepTokens | None:
    """The first stored step (rollout order, then t) of ``group`` whose anchor is ``anchor``."""
    for (r, t), s in sorted(mine.items()):
        ro = next((x for x in group.rollouts if x.rollout == r), None)
        if ro is not None and t < len(ro.steps) and ro.steps[t].anchor == anchor:
            return s
    return None


def run_folder_of(ctx: PageContext) -> tuple[Path, int] | None:
    """``(run folder, iteration)`` when the page's source is an iteration of a run folder (not
    an upload), else None."""
    from ui.core import run_source

    view = run_source.run_view()
    if view is None or view.folder is None or not ctx.source.key.startswith("run:"):
        return None
    it = st.session_state.get(view.iter_key)
    return (Path(view.folder), int(it)) if isinstance(it, int) else None


def render(ctx: PageContext, label: str, anchor: str) -> None:
    """The Inspector's call (module docstring): the chosen step's token strip, or nothing."""
    where = run_folder_of(ctx)
    if where is None:
        return
    grp = ctx.group
    pick = st.session_state.get("_inspect_step")
    pos, t = (pick[1], pick[2]) if pick and pick[0] == label else (ctx.rollout, None)
    seen = step_observation(grp, anchor, pos, t)
    if seen is None:
        return
    show_token_strip(where[0], where[1], grp.group, grp.rollouts[seen.rollout].rollout, seen.t,
                     anchor=anchor, rollouts=grp)
