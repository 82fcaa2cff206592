"""The Lesson's shared pieces: its tables and folds, the predict-first questions, the box that
changes the group (section 1), the depth animation (section 7) and the truth section (section 9).

Nothing here is module state: what a table needs of the group (its anchors' count, the rollouts'
positions) travels in a :class:`LessonView`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from crbc.explain.lesson_questions import Question
from crbc.explain.table_rows import cells, num
from crbc.io.rollouts import RolloutGroup, read_rollouts, showcase_group
from crbc.process import Process
from crbc.viz.lesson import format_rows
from ui.core import exact_truth, state, widgets
from ui.core.context import group_context, server
from ui.core.widgets import short, text
from ui.lesson import rewardflow as lesson_rewardflow
from ui.lesson import state as L

BIG = 10  # beyond this many anchors, the long per-anchor tables fold into expanders
TRUTH_FILE = "sokoban-weak.jsonl"
TRUTH_RIVALS = ("visit_local", "crbc", "gigpo", "shortest_path", "rewardflow")


@dataclass(frozen=True)
class LessonView:
    """The lesson group as its tables need it: the merged process and its anchors' count
    (rollouts keep their ids of the file, as on every other page)."""

    process: Process

    @classmethod
    def of(cls, p: Process) -> LessonView:
        return cls(p)

    @property
    def n_anchors(self) -> int:
        return self.process.n_states

    @contextlib.contextmanager
    def fold(self, title: str, always_label: bool = False, key: str | None = None) -> Iterator[bool]:
        """A long per-anchor table: in an expander on a big group (more than BIG anchors), else
        in the page (with ``always_label``, its title is written above it). Yields whether the
        content is shown: a folded expander's content is built only while it is open (opening
        it reruns the page), so a big group's page sends none of its folded tables::

            with view.fold("Every step's credit", key="steps") as shown:
                if shown:
                    table(rows)
        """
        if self.n_anchors > BIG:
            box, is_open = widgets.folded(title, key=f"lesson_fold_{key or title}")
            with box:
                yield is_open
            return
        if always_label:
            st.markdown(title + ":")
        with st.container():
            yield True

    def side_by_side(self, widths: list[float], *panels: tuple[str, list, tuple[str, ...] | None]) -> None:
        """Tables in columns of ``widths``: each panel is (bold title, rows, fields or None)."""
        for col, (title, rows, fields) in zip(st.columns(widths), panels, strict=True):
            with col:
                st.markdown(f"**{title}**")
                self.table(rows, fields=fields)

    def table(self, rows, fields: tuple[str, ...] | None = None, **kw) -> None:
        """A static table of typed rows (:mod:`crbc.explain.table_rows`) or dicts, ``fields``
        (attribute names) picking columns."""
        rows = [cells(r, fields) for r in rows]
        widgets.rows_view(format_rows(rows, **kw))  # a long table (a big group): a scrolling grid


def ask(q: Question) -> bool:
    """Predict first: ask ``q`` (:mod:`crbc.explain.lesson_questions`) and return whether it is
    answered; the answer and why appear once it is. A question the group does not offer says so
    (it never silently vanishes). Options are pills, not radios: arrow keys move between them
    without answering. The answer is kept under ``lesson_pred_<qid>_<version>`` (a new group
    version asks afresh) and in ``lesson_answers`` for the shared link and the handout."""
    ss = st.session_state
    if not q.asked:
        st.caption(f":material/psychology: No question here: {q.why}")
        return True
    key = f"lesson_pred_{q.qid}_{ss.get('lesson_version', 0)}"
    if ss.get(key) is not None and ss[key] not in q.options:  # a stale or shared answer that no longer fits
        del ss[key]
    with st.container(border=True):
        got = st.pills(f":material/psychology: **Predict first.** {q.text}", list(q.options), key=key,
                       selection_mode="single")
        answers = ss.setdefault("lesson_answers", {})
        if got is None:
            answers.pop(q.qid, None)
            st.caption("Choose an answer to reveal what the numbers say.")
            return False
        answers[q.qid] = got
        right = q.is_right(got)
        (st.success if right else st.warning)(
            ("Right: " if right else f"Not quite: the answer is **{q.answer}**. ") + q.why)
        return True


EDIT_OPEN = "lesson_edit_open"  #: the step edit form's fold (opened by a diamond on the graph)


def _edit_form(group: RolloutGroup, labels: tuple[str, ...], p: Process, rollout_opts: list[str]) -> None:
    """The step edit form, folded until the reader opens it or clicks a step's diamond on the
    graph (then it opens on that step); a refused edit says why inside it."""
    picked = st.session_state.pop("lesson_picked", None)
    err = st.session_state.pop("lesson_error", None)
    if picked is not None or err:
        st.session_state[EDIT_OPEN] = True
    box, shown = widgets.folded("Edit a step: a new anchor or action", key=EDIT_OPEN)
    if not shown:
        return
    with box:
        if picked is not None:
            i, t = picked
            stp = group.rollouts[i].steps[t]
            where = labels[int(p.step_state[int(p.rollout_offsets[i]) + t])]
            st.info(f"Editing rollout {group.rollouts[i].rollout}, step {t} ({short(where, 80)} --{short(stp.action, 80)}-->): type a new "
                    "anchor or action and apply.", icon=":material/edit:")
        e1, e2 = st.columns([3, 2])
        e1.selectbox("Rollout to edit", rollout_opts, key="lesson_edit_r")
        # no max: a step beyond the rollout is refused with a message by L.edit, never clamped
        e2.number_input("Step t (from 0)", min_value=0, step=1, key="lesson_edit_t",
                        help="Steps are numbered from 0, as the files number them.")
        e3, e4, e5 = st.columns([2, 2, 1.4], vertical_alignment="bottom")
        e3.text_input("New anchor", key="lesson_edit_anchor", placeholder="keep",
                      help="Exact anchor key; an existing one merges the step into it. The "
                           "boundaries z+ and z- are not anchors (flip the outcome instead).")
        e4.text_input("New action", key="lesson_edit_action", placeholder="keep")
        e5.button("Apply the edit", on_click=L.edit, key="lesson_edit")
        if err:
            st.error(f"That edit was not applied: {text(err)}")


def change_panel(view: LessonView, group: RolloutGroup, labels: tuple[str, ...], v_now: np.ndarray,
                 delta: np.ndarray | None) -> None:
    """Section 1's "Try it" box: flip an outcome, edit a step, reset; what the last change moved."""
    p, n_anchors = view.process, view.n_anchors
    with st.container(border=True):
        st.markdown("**Try it: change the group.** Flip one rollout's outcome or edit a step (here or "
                    "on the graph); every table on the page is recomputed.")
        rollout_opts = [L.rollout_label(group, i) for i in range(len(group))]
        for key in ("lesson_flip_r", "lesson_edit_r"):  # keep the pickers valid when the group changes
            if st.session_state.get(key) not in rollout_opts:
                st.session_state[key] = rollout_opts[0]
        f1, f2 = st.columns([3, 2], vertical_alignment="bottom")
        f1.selectbox("Rollout to flip", rollout_opts, key="lesson_flip_r")
        f2.button("Flip its outcome", on_click=L.flip, key="lesson_flip", icon=":material/swap_horiz:")
        _edit_form(group, labels, p, rollout_opts)
        edits = st.session_state.get("lesson_edits", [])
        b1, b2 = st.columns([3, 1])
        b1.caption("Changes so far: " + ("; ".join(short(e, 160) for e in edits) if edits else "none — this is the original group."))
        b2.button("Reset the group", on_click=L.reset, key="lesson_reset", icon=":material/restart_alt:")
        if delta is not None:
            moved = [(labels[s], v_now[s] - delta[s], v_now[s], delta[s]) for s in range(n_anchors)
                     if np.isfinite(delta[s]) and abs(delta[s]) > 5e-5]
            st.markdown(f"**Before → after the last change** ({short(edits[-1], 160) if edits else ''}): "
                        + (f"{len(moved)} of {n_anchors} anchor values moved." if moved else
                           "no anchor value moved."))
            if moved:
                view.table([{"anchor": a, "V before": b, "V after": x, "Δ V": d} for a, b, x, d in moved][:12])


def _truth_group(path: Path) -> RolloutGroup:
    """The showcase group of the shipped file ``path`` (read again when the file changes)."""
    def build() -> RolloutGroup:
        groups = read_rollouts(path)
        return groups[showcase_group(groups)]

    return server().kept("file", ("lesson_truth", str(path), path.stat().st_mtime), build)


def truth_sample(beta: float):
    """Section 9's group and its truth: ``(group, GroupTruth or None, why not)``; ``(None, None,
    why)`` without the shipped sample."""
    truth_path = state.SHIPPED_DIR / TRUTH_FILE
    if not truth_path.exists():
        return None, None, f"This section needs the shipped sample `{TRUTH_FILE}`."
    tgroup = _truth_group(truth_path)
    tt, why = exact_truth.truth_of(group_context(tgroup, private=False), beta)
    return tgroup, tt, why


def group_line(group: RolloutGroup, n_anchors: int, beta: float) -> None:
    """The lesson group in one line, at the top of a part without section 1."""
    edits = st.session_state.get("lesson_edits", [])
    st.caption(f"On group **{short(group.group, 80)}**: {len(group)} rollouts, "
               f"{sum(r.success for r in group)} successful, {n_anchors} anchors, beta = {num(beta)}; "
               + (f"{len(edits)} change{'s' if len(edits) != 1 else ''} made in part 1-2." if edits
                  else "as it came (change it in part 1-2)."))


def truth_section(beta: float):
    """Section 9: a real Sokoban group with the exact truth beside three estimators. Returns
    ``(group, GroupTruth or None)``, or ``(None, None)`` without the shipped sample."""
    tgroup, tt, why = truth_sample(beta)
    if tgroup is None:
        st.info(why)
        return None, None
    else:
        st.markdown(
            "Every estimator above is a guess from the rollouts of one group. On our own toy tasks the "
            "**truth** can be computed: the rules of Sokoban are known and the tiny policy's probability "
            "of each action can be read from the model exactly, so the policy's true value of every "
            "reachable board at every time step, and the true advantage A = Q − V of every move, "
            f"follow from one backward pass. Here is a real group, `{tgroup.group}` from "
            f"`{TRUTH_FILE}` ({sum(r.success for r in tgroup)} of {len(tgroup)} rollouts solved it), "
            "with the truth beside visit-local, the closure, GiGPO and the two foils (shortest path, RewardFlow).")
        tctx = group_context(tgroup, private=False)
        if tt is None:
            st.info(why)
        else:
            from crbc.estimators import registry as estimators
            from crbc.truth import accuracy

            tp = tctx.process
            tcred = {n: tctx.credits(n, estimators.get(n).shared({"beta": beta})) for n in TRUTH_RIVALS}
            rows = accuracy.truth_pairs(tp, tcred, tt.advantage_N, tt.anchor_advantage_N)
            view = LessonView.of(tp)
            view.table(rows[:14], signed=["true A_t", "true A(s,a)", *TRUTH_RIVALS])
            st.caption(
                "One row per (anchor, action) at anchors where the group tried two or more actions, "
                "most visited first. true A_t: the exact advantage, averaged over the steps where the "
                "group took this action here; true A(s,a): the same averaged over every time the policy "
                "may be here. visit_local and crbc: their Q − V (same units as the truth); gigpo, "
                "shortest_path and rewardflow: their normalised step advantage (their own units, "
                "rewards of 10 per win: read the sign and the order, not the size).")
            lesson_rewardflow.with_truth(view, tp, tt.value_N, beta)
            agree = accuracy.group_agreement(tcred, tt.advantage_N)
            view.table([{"estimator": n, "sign agreement": agree[n]["sign"], "Spearman": agree[n]["spearman"],
                         "RMSE of Q − V": agree[n].get("rmse")} for n in TRUTH_RIVALS])
            best = max(TRUTH_RIVALS, key=lambda n: np.nan_to_num(agree[n]["spearman"], nan=-2.0))
            signs = max(TRUTH_RIVALS, key=lambda n: np.nan_to_num(agree[n]["sign"], nan=-1.0))
            st.markdown(
                "The three columns ask three different questions. **Sign agreement**: does it say "
                "*better* or *worse* than the anchor's average where the truth does? **Spearman**: "
                "does it put the steps in the truth's *order*? **RMSE of Q − V**: is the *number* "
                "itself right? Only visit_local and crbc are in the truth's units, so only they have "
                "one. A maximum can order steps well (a state that can reach success sits above one "
                "that cannot) while its numbers say nothing about how often success comes, which is "
                "what the argument against it in section 8 was about.")
            st.markdown(
                f"On this group **{best}** orders the steps most like the truth (Spearman "
                f"{agree[best]['spearman']:.2f}) and **{signs}** gets the most signs right "
                f"({agree[signs]['sign']:.0%}). One group is one sample: the **Estimator accuracy** "
                "page scores every estimator this way on 100 held-out levels and shows how each one "
                "improves as the group grows.")
        return tgroup, tt
