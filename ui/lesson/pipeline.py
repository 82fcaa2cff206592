"""The Lesson's section 12, when the pipeline is wrong: presets that plant the bugs trainers shipped
(:mod:`crbc.explain.lesson_pipeline`) into the lesson's group, what each does to the steps'
advantages, and what crbc's doctor says about the batch a trainer would log (its public entry
point: ``diagnose(from_groups(...), expect="grpo")``)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from crbc.explain import lesson_pipeline as LP
from crbc.explain.anchor_names import node_labels
from crbc.explain.depth_lesson import retry_loop_group
from crbc.explain.table_rows import fmt
from crbc.io.rollouts import RolloutGroup
from crbc.process import merge
from ui.core.context import PageContext

HEADER = "12 · When the pipeline is wrong"
ANCHOR = "12-when-the-pipeline-is-wrong"
NONE = "the correct pipeline"
_ICON = {"error": ":material/error:", "warning": ":material/warning:", "info": ":material/info:"}


def _group(group: RolloutGroup) -> tuple[RolloutGroup, str]:
    """The lesson group, or the group with retries when every rollout has the same length (then a
    baseline over rows and a grouping by turn index change nothing, and the reader would see no bug)."""
    if len({len(r.steps) for r in group.rollouts}) > 1:
        return group, ""
    return retry_loop_group(), ("Every rollout of the lesson group has the same length, and there two of "
                                "these bugs change nothing (a row counts as much as a trajectory); so this "
                                "section runs on the **worked example with retries** of section 7.")


def _doctor(planted: LP.Planted):
    """The doctor's findings on the batch the trainer would log, or the reason there are none."""
    try:
        from crbc.doctor import diagnose, from_groups

        return diagnose(from_groups(list(planted.logged)), expect="grpo"), None
    except Exception as e:  # noqa: BLE001 (the doctor is being reworked: say so, never break the Lesson)
        return None, f"The doctor could not run here: {e}"


def render(ctx: PageContext, table: Callable, fold: Callable) -> None:
    """Section 12 under its header, on the lesson group (its context ``ctx``, where the planted
    batches and the doctor's findings are kept), with the Lesson's table renderer and its fold (a
    big group's step table sits in an expander)."""
    st.header(HEADER, anchor=ANCHOR)
    g, why = _group(ctx.group)
    st.markdown(
        "Everything above assumed the advantage reaches the loss as the estimator computed it. Trainers "
        "have shipped bugs on that way: each preset below plants one into the group and shows what it "
        "does to every step's advantage, against the pipeline as the trainer meant it (GRPO per "
        "trajectory, broadcast to every step: docs/MATH.md section 7), and what crbc's **doctor** "
        "(`python -m crbc doctor`) says about the batch the trainer would log.")
    if why:
        st.caption(why)
    names = {b.title: b.name for b in LP.BUGS.values()}
    picked = st.pills("Plant a bug", [NONE, *names], key="lesson_bug", selection_mode="single",
                      default=NONE)
    bug = names.get(picked)
    planted, found = ctx.kept("lesson", ("pipeline", bug), lambda: _planted(g, bug))
    _effect(planted, table, fold)
    _doctor_says(planted, found)


def _planted(g: RolloutGroup, bug: str | None):
    """``bug`` planted into ``g``, and the doctor's findings on what the trainer would log."""
    planted = LP.plant(g, bug, node_labels(merge([g])))
    return planted, _doctor(planted)


def _effect(planted: LP.Planted, table: Callable, fold: Callable) -> None:
    bug, n = planted.bug, len(planted.rows)
    if bug is None:
        st.markdown("The correct pipeline: each rollout's score minus the group's mean, over the group's "
                    "standard deviation, on every step of the rollout.")
    else:
        st.markdown(f"**{bug.title.capitalize()}**: {bug.what} (source: {bug.seen}). On this group it changes "
                    f"**{planted.changed} of {n}** step advantages (the largest by {fmt(planted.max_delta, 3)}), "
                    f"sets **{planted.zeroed}** that should not be 0 to 0 and flips the sign of **{planted.flipped}**.")
    with fold(f"Every step's advantage ({n} steps)", key="pipeline") as shown:
        if shown:
            table(planted.rows, signed=["correct", "buggy", "delta"])
    st.caption("correct: GRPO's advantage as the trainer meant it; buggy: what reaches the loss with the "
               "bug; delta: buggy − correct. These hand-made groups have no exact truth: the reference is "
               "the correct pipeline.")


def _doctor_says(planted: LP.Planted, found) -> None:
    findings, err = found
    st.markdown("**What the doctor says** about this batch:")
    if findings is None:
        st.info(err)
        return
    if not findings:
        st.success("Nothing to report: every check passes." if planted.bug is None else
                   "Nothing: this bug leaves no trace the doctor's checks can see on this group.")
        return
    for f in findings:
        st.markdown(f"{_ICON.get(f.severity, '')} `{f.check}` ({f.severity}, {f.rows} rows): {f.message}")
