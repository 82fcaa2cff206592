"""The Step credits heatmaps: one SVG of every estimator's panel (built once per input), drawn in
a fragment with the clicked cell's step under it (:mod:`ui.credits.step`), and the click that
chooses a cell, shared with the truth's heatmap."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from crbc.viz.heatmap import credit_heatmaps_svg, heat_rows
from crbc.viz.step_detail import parse_cell
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.svg_view import svg_view
from ui.credits import step as credit_step

CELL = "credits_cell"  # session state: (group, "i:t") of the clicked cell
#: what the page says when a group's intervals are past their budget
EVIDENCE_OFF = "Switch *Evidence* off above to see every estimator's credits without it."


def picker(group: str) -> Callable[[str], None]:
    """The ``on_pick`` of a heatmap of ``group``: a click (``data-pick="i:t"``: rollout position
    i, step t) chooses that step for the step panel under the heatmaps (only the heatmaps'
    fragment runs again); it is read, and checked, where the panel is drawn."""

    def pick(picked: str) -> None:
        st.session_state[CELL] = (group, picked)

    return pick


def evidence_of(ctx: PageContext, names, marks_on: bool) -> dict:
    """name -> per-step evidence of its credit, for those of ``names`` that have it (none with
    the marks off, or without a step credit)."""

    def ev(name: str):
        ci = ctx.intervals(name, then=EVIDENCE_OFF) if marks_on else None
        return None if ci is None else ci.evidence_N

    return {n: e for n in names if (e := ev(n)) is not None}


@st.fragment
def _heat_view(ctx: PageContext, all_c: dict, heat: str, panels: list, marks_on: bool, has_truth: bool,
               slug: str) -> None:
    """The heatmaps and the step panel of the clicked cell: a fragment, so a click reruns only
    this part of the page."""
    grp = ctx.group
    svg_view(heat, key="heat_credits", on_pick=picker(grp.group), download=f"{slug}.heatmaps")
    group, picked = st.session_state.get(CELL, (None, ""))
    cell = parse_cell(picked, ctx.process.rollout_len) if group == grp.group else None
    if cell is not None:
        credit_step.render(ctx, all_c, *cell, evidence_of(ctx, panels, marks_on), has_truth)
    else:
        st.caption("Click a cell to see that step here.")
    widgets.fragment_done()


def render(ctx: PageContext, all_c: dict, field: str, all_params: tuple, panels: list, *, zmax: float,
           marks_on: bool, sure_only: bool, extra: dict, has_truth: bool, slug: str) -> None:
    """The heatmaps of ``panels`` (estimator names; ``all_c``: name -> Credits) showing ``field``
    on one colour scale up to ``zmax``, not-sure cells washed out with ``marks_on`` (blank with
    ``sure_only``), ``extra`` panels (the trainer's advantage) beside them. The one SVG is built
    once per (group, field, parameters, marks): a revisit or a rerun for another widget sends the
    same string again without building it."""
    rows = shown_rows(ctx)
    key = ("credits_heatmaps", field, all_params, marks_on, sure_only and marks_on, ctx.trainer_N is not None,
           tuple(panels), None if rows is None else tuple(rows))
    heat = ctx.kept("figure", key, lambda: credit_heatmaps_svg(
        {n: all_c[n] for n in panels}, field, zmax=zmax, evidence=evidence_of(ctx, panels, marks_on),
        sure_only=sure_only and marks_on, extra=extra, rows=rows))
    if rows is not None:
        st.caption(rows_note(ctx, rows))
    _heat_view(ctx, all_c, heat, panels, marks_on, has_truth, slug)


def shown_rows(ctx: PageContext) -> list[int] | None:
    """The rollouts every heatmap of the page draws (None: all): :func:`heat_rows` keeping the
    sidebar's rollout."""
    return heat_rows(ctx.process, keep=(ctx.rollout,))


def rows_note(ctx: PageContext, rows: list[int]) -> str:
    """What a heatmap of a big group leaves out (``rows``: the rollouts it draws, :func:`heat_rows`)."""
    p = ctx.process
    n, chosen = len(p.rollout_len), ctx.group.rollouts[ctx.rollout].rollout
    return (f"This group has {n:,} rollouts, so each panel draws {len(rows):,} of them: the first that "
            f"succeeded and the first that failed, in file order, and rollout {chosen} chosen in the sidebar, "
            "on the colour scale of all of them. Every step's credits are in the downloads below.")
