"""The Lesson's shared pieces: its tables and folds, the predict-first questions, the box that
changes the group (section 1), the depth animation (section 7) and the truth section (section 9).

Nothing here is module state: what a table needs of the group (its anchors' count, the rollouts'
positions) travels in a :class:`LessonView`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import streamlit as st

from crbc.estimators.closure import depth_sweep
from crbc.explain.table_rows import cells
from crbc.io.rollouts import RolloutGroup, read_rollouts, showcase_group
from crbc.process import Process, merge
from crbc.viz.lesson import format_rows
from crbc.viz.lesson_graph import lesson_graph_svg
from ui import exact_truth, lesson_rewardflow, state, widgets
from ui import lesson_state as L
from ui.svg_view import svg_view
from ui.widgets import short, text

BIG = 10  # beyond this many anchors, the long per-anchor tables fold into expanders
TRUTH_FILE = "sokoban-weak.jsonl"
TRUTH_RIVALS = ("visit_local", "crbc", "shortest_path", "rewardflow")


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


def predict(key: str, question: str, options: list[str], answer: str, why: str) -> bool:
    """Predict first: ask, and reveal only once answered (``answer`` is computed from the group;
    ``question``, ``options``, ``answer`` and ``why`` are Markdown, user strings escaped)."""
    with st.container(border=True):
        got = st.radio(f":material/psychology: **Predict first.** {question}", options, index=None,
                       key=key, horizontal=True)
        if got is None:
            st.caption("Choose an answer to reveal what the numbers say.")
            return False
        (st.success if got == answer else st.warning)(
            ("Right: " if got == answer else f"Not quite: the answer is **{answer}**. ") + why)
        return True


def change_panel(view: LessonView, group: RolloutGroup, labels: tuple[str, ...], v_now: np.ndarray,
                 delta: np.ndarray | None) -> None:
    """Section 1's "Try it" box: flip an outcome, edit a step, reset; what the last change moved."""
    p, n_anchors = view.process, view.n_anchors
    with st.container(border=True):
        st.markdown("**Try it: change the group.** Flip one rollout's outcome or edit a step (here or "
                    "on the graph); every table on the page is recomputed.")
        c1, c2 = st.columns([1, 2])
        rollout_opts = [L.rollout_label(group, i) for i in range(len(group))]
        for key in ("lesson_flip_r", "lesson_edit_r"):  # keep the pickers valid when the group changes
            if st.session_state.get(key) not in rollout_opts:
                st.session_state[key] = rollout_opts[0]
        edit_i = rollout_opts.index(st.session_state["lesson_edit_r"])
        n_steps = len(group.rollouts[edit_i].steps)
        if not 0 <= int(st.session_state.get("lesson_edit_t", 0)) < n_steps:  # 0-based, as the files
            st.session_state["lesson_edit_t"] = 0
        with c1:
            st.selectbox("Rollout", rollout_opts, key="lesson_flip_r")
            st.button("Flip its outcome", on_click=L.flip, key="lesson_flip", icon=":material/swap_horiz:")
        with c2:
            picked = st.session_state.pop("lesson_picked", None)
            if picked is not None:
                i, t = picked
                stp = group.rollouts[i].steps[t]
                where = labels[int(p.step_state[int(p.rollout_offsets[i]) + t])]
                st.info(f"Editing rollout {group.rollouts[i].rollout}, step {t} ({short(where, 80)} --{short(stp.action, 80)}-->): type a new "
                        "anchor or action and apply.", icon=":material/edit:")
            e1, e2, e3, e4 = st.columns([1.2, 0.8, 1, 1])
            e1.selectbox("Rollout ", rollout_opts, key="lesson_edit_r")
            e2.number_input("Step t", 0, n_steps - 1, key="lesson_edit_t",
                            help="Steps are numbered from 0, as the files number them.")
            e3.text_input("New anchor", key="lesson_edit_anchor", placeholder="keep",
                          help="Exact anchor key; an existing one merges the step into it. The "
                               "boundaries z+ and z- are not anchors (flip the outcome instead).")
            e4.text_input("New action", key="lesson_edit_action", placeholder="keep")
            st.button("Apply the edit", on_click=L.edit, key="lesson_edit")
        err = st.session_state.pop("lesson_error", None)
        if err:
            st.error(f"That edit was not applied: {text(err)}")
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


def depth_flow(p: Process, beta: float, n_anchors: int, big: int) -> int:
    """Section 7's animation: the deepest K to show (returned), and on a small group V^(K) on the
    graph, scrubbed or played one round of backup per second. The Play button lives outside the
    auto-refreshing fragment: its click reruns the whole page, which starts or stops the timer."""
    k_max = st.slider("Deepest K to show", 1, 12, 4, key="lesson_kmax")
    sweep = depth_sweep(p, beta, k_max)
    playing = st.session_state.get("lesson_playing", False)

    def _toggle_play() -> None:
        st.session_state["lesson_playing"] = not st.session_state.get("lesson_playing", False)
        if st.session_state["lesson_playing"] and int(st.session_state.get("lesson_K", 0)) >= k_max:
            st.session_state["lesson_K"] = 0

    @st.fragment(run_every=1.0 if playing else None)
    def _flow() -> None:
        """V^(K) on the graph, one round of backup per tick: the flow of value, animated. The Play
        button lives outside this fragment: its click reruns the whole page, which is what starts
        (or stops) the fragment's timer."""
        if st.session_state.get("lesson_playing", False):
            k_now = int(st.session_state.get("lesson_K", 0))
            if k_now >= k_max:
                st.session_state["lesson_playing"] = False
                st.rerun()  # the whole page: the timer stops and the button says Play again
            st.session_state["lesson_K"] = k_now + 1
        ss = st.session_state
        if ss.get("lesson_K_max") not in (None, k_max):  # a new range is a new widget: keep K
            ss["lesson_K"] = min(int(ss.get("lesson_K_shown", 0)), k_max)
        if int(ss.get("lesson_K", 0)) > k_max:
            ss["lesson_K"] = k_max
        k = st.slider("Depth K on the graph", 0, k_max, key="lesson_K",
                      help="Scrub, or press Play: each step is one more round of backup.")
        ss["lesson_K_shown"], ss["lesson_K_max"] = k, k_max
        d = sweep.v_KS[k] - sweep.v_KS[k - 1] if k >= 1 else None
        svg_view(lesson_graph_svg(p, sweep.v_KS[k], value_name=f"V^({k})", delta_S=d), key="lesson_flow_fig")
        st.caption(f"Node colour and number: V^({k}). " + ("K = 0: each anchor knows only the outcomes of "
                   "its own visits." if k == 0 else "Rings: the values this round of backup moved (blue "
                   "up, red down): what other rollouts found flows one step back."))

    if n_anchors <= big:
        st.button("Pause" if playing else "Play", key="lesson_play", on_click=_toggle_play,
                  icon=":material/pause:" if playing else ":material/play_arrow:",
                  help="Animate K from 0 to the deepest K, one round of backup per second.")
        _flow()
    return k_max


@st.cache_resource(show_spinner=False)
def _truth_group(stamp: float) -> RolloutGroup:
    del stamp  # part of the key
    groups = read_rollouts(state.SHIPPED_DIR / TRUTH_FILE)
    return groups[showcase_group(groups)]


def truth_section(beta: float):
    """Section 9: a real Sokoban group with the exact truth beside three estimators. Returns
    ``(group, GroupTruth or None)``, or ``(None, None)`` without the shipped sample."""
    truth_path = state.SHIPPED_DIR / TRUTH_FILE
    if not truth_path.exists():
        st.info(f"This section needs the shipped sample `{TRUTH_FILE}`.")
        return None, None
    else:
        tgroup = _truth_group(truth_path.stat().st_mtime)
        st.markdown(
            "Every estimator above is a guess from the rollouts of one group. On our own toy tasks the "
            "**truth** can be computed: the rules of Sokoban are known and the tiny policy's probability "
            "of each action can be read from the model exactly, so the policy's true value of every "
            "reachable board at every time step, and the true advantage A = Q − V of every move, "
            f"follow from one backward pass. Here is a real group, `{tgroup.group}` from "
            f"`{TRUTH_FILE}` ({sum(r.success for r in tgroup)} of {len(tgroup)} rollouts solved it), "
            "with the truth beside visit-local, the closure and the two foils (shortest path, RewardFlow).")
        tkey = f"lesson-truth:{TRUTH_FILE}:{tgroup.group}"
        tt, why = exact_truth.truth_for_group(tkey, tgroup, beta)
        if tt is None:
            st.info(why)
        else:
            from crbc.estimators import registry as estimators
            from crbc.truth import accuracy

            tp = merge([tgroup])
            tcred = {n: estimators.compute(n, tp, **estimators.get(n).shared({"beta": beta}))
                     for n in TRUTH_RIVALS}
            rows = accuracy.truth_pairs(tp, tcred, tt.advantage_N, tt.anchor_advantage_N)
            view = LessonView.of(tp)
            view.table(rows[:14], signed=["true A_t", "true A(s,a)", *TRUTH_RIVALS])
            st.caption(
                "One row per (anchor, action) at anchors where the group tried two or more actions, "
                "most visited first. true A_t: the exact advantage, averaged over the steps where the "
                "group took this action here; true A(s,a): the same averaged over every time the policy "
                "may be here. visit_local and crbc: their Q − V (same units); shortest_path and "
                "rewardflow: their normalised step advantage (their own units: read the sign and "
                "the order).")
            lesson_rewardflow.with_truth(view, tp, tt.value_N, beta)
            agree = accuracy.group_agreement(tcred, tt.advantage_N)
            view.table([{"estimator": n, "sign agreement": agree[n]["sign"], "Spearman": agree[n]["spearman"],
                         "RMSE of Q − V": agree[n].get("rmse")} for n in TRUTH_RIVALS])
            best = max(TRUTH_RIVALS, key=lambda n: agree[n]["spearman"])
            st.markdown(
                f"On this group **{best}** ranks the steps most like the truth (Spearman "
                f"{agree[best]['spearman']:.2f}). One group is one sample: the **Estimator accuracy** "
                "page scores every estimator this way on 100 held-out levels and shows how each one "
                "improves as the group grows.")
        return tgroup, tt
