"""The Lesson's own copy of its group and the callbacks that change it.

The lesson keeps its group in ``st.session_state["lesson_group"]`` (all lesson state is under
``lesson_*`` keys), so flipping an outcome or editing a step there never touches the shared data
source of the sidebar. Every function here is a widget callback or runs at the top of the page.
"""

from __future__ import annotations

import streamlit as st

from crbc.explain.anchor_names import SHORT_LABEL, is_short
from crbc.explain.depth_lesson import retry_loop_group
from crbc.explain.lesson_share import LessonShare, replay
from crbc.explain.lesson_share import decode as decode_share
from crbc.explain.lesson_share import encode as encode_share
from crbc.explain.what_if import edit_step, flip_outcome
from crbc.io.rollouts import RolloutGroup, read_rollouts
from ui.core import state, url

# options of the URL-bound "Start from" radio, shown as they are (a shared URL names one of them)
WORKED, LOOP, RARE, SIDEBAR = "worked example", "retry loop", "rare route", "sidebar group"
STARTS = (WORKED, LOOP, RARE, SIDEBAR)
START_FILES = {WORKED: "worked-example.jsonl", RARE: "rare-route.jsonl"}


def start_group(start: str) -> RolloutGroup | None:
    if start == SIDEBAR:
        ctx = state.page_context(require=False)  # also from the reset button's callback
        return ctx.group if ctx else None
    if start == LOOP:
        return retry_loop_group()
    return read_rollouts(state.SHIPPED_DIR / START_FILES[start])[0]


def start_key(start: str) -> str:
    if start == SIDEBAR:
        ctx = state.page_context(require=False)
        return "sidebar:" + (ctx.key if ctx else "none")
    return start


def reset() -> None:
    start = st.session_state.get("lesson_start", WORKED)
    st.session_state["lesson_group"] = start_group(start)
    st.session_state["lesson_base"] = start_key(start)
    st.session_state["lesson_edits"] = []
    st.session_state["lesson_ops"] = []
    st.session_state.pop("lesson_before", None)
    for key in ("lesson_edit_anchor", "lesson_edit_action", "lesson_edit_t"):  # no stale form values
        st.session_state.pop(key, None)
    bump()


def bump() -> None:
    """A new version of the lesson group: the clickable graph starts with no selection and every
    question is asked afresh (its answer widget is keyed by the version; the answers go)."""
    st.session_state["lesson_version"] = st.session_state.get("lesson_version", 0) + 1
    st.session_state["lesson_answers"] = {}


def rollout_label(g: RolloutGroup, i: int) -> str:
    """How the ``i``-th rollout is named on this page: its id in the file, as on every page."""
    r = g.rollouts[i]
    return f"rollout {r.rollout} ({'success' if r.success and not r.truncated else 'failure'})"


def flip_at(i: int) -> None:
    g = st.session_state["lesson_group"]
    st.session_state["lesson_before"] = g
    new = st.session_state["lesson_group"] = flip_outcome(g, i)
    st.session_state.setdefault("lesson_ops", []).append(("flip", i))
    r = new.rollouts[i]
    st.session_state["lesson_edits"].append(
        f"rollout {r.rollout}: outcome flipped to {'success' if r.success else 'failure'}")
    # the pickers show the rollout under its new outcome
    st.session_state["lesson_flip_r"] = rollout_label(new, i)
    if st.session_state.get("lesson_edit_r") == rollout_label(g, i):
        st.session_state["lesson_edit_r"] = rollout_label(new, i)
    bump()


def flip() -> None:
    g = st.session_state["lesson_group"]
    opts = [rollout_label(g, i) for i in range(len(g))]
    chosen = st.session_state.get("lesson_flip_r")
    flip_at(opts.index(chosen) if chosen in opts else 0)


def edit() -> None:
    g = st.session_state["lesson_group"]
    opts = [rollout_label(g, i) for i in range(len(g))]
    chosen = st.session_state.get("lesson_edit_r")
    i = opts.index(chosen) if chosen in opts else 0
    t = int(st.session_state.get("lesson_edit_t", 0))  # 0-based, as the files number steps
    anchor = (st.session_state.get("lesson_edit_anchor") or "").strip() or None
    action = (st.session_state.get("lesson_edit_action") or "").strip() or None
    n_steps = len(g.rollouts[i].steps)
    if not 0 <= t < n_steps:  # refused, never clamped to the last step
        st.session_state["lesson_error"] = (
            f"rollout {g.rollouts[i].rollout} has steps 0 to {n_steps - 1} (numbered from 0); "
            f"there is no step {t}")
        return
    try:
        new = edit_step(g, i, t, anchor=anchor, action=action)
    except (IndexError, ValueError) as e:
        st.session_state["lesson_error"] = str(e)
        return
    named_by_text = all(is_short(s.anchor) for r in g.rollouts for s in r.steps)
    if anchor is not None and named_by_text and not is_short(anchor):
        # one long anchor would switch the whole group to s0, s1, ... by first appearance, and
        # "s2" would start meaning another anchor: refuse it rather than rename the others
        st.session_state["lesson_error"] = (
            f"this group's anchors are named by their own text, so a new anchor must be one line "
            f"of at most {SHORT_LABEL} characters (this one has {len(anchor):,}); a longer one "
            "would rename every anchor of the group")
        return
    what = ", ".join(x for x in (anchor and f"anchor {anchor}", action and f"action {action}") if x)
    if what:
        st.session_state["lesson_before"] = g
        st.session_state["lesson_group"] = new
        st.session_state["lesson_edits"].append(f"rollout {g.rollouts[i].rollout}, step {t}: {what}")
        st.session_state.setdefault("lesson_ops", []).append(("edit", i, t, anchor, action))
        bump()


def graph_pick(picked: str) -> None:
    """The lesson graph is the control (:func:`crbc.viz.lesson_graph.lesson_graph_svg`): a rollout's
    outcome chip (``outcome:i:0``) flips it; a step's diamond (``edge:i:t``) opens it in the edit
    form below. A callback of the graph's view, so it runs before the page is drawn again."""
    g = st.session_state.get("lesson_group")
    parts = picked.split(":")
    if g is None or len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return
    kind, i, t = parts[0], int(parts[1]), int(parts[2])
    if kind == "outcome" and i < len(g):
        flip_at(i)
    elif kind == "edge" and i < len(g):
        st.session_state["lesson_edit_r"] = rollout_label(g, i)
        st.session_state["lesson_edit_t"] = t
        st.session_state["lesson_picked"] = (i, t)
        bump()


def is_private() -> bool:
    """Whether the lesson group is this session's own: edited (by hand or by a shared link), or
    the sidebar's group of an upload. A shipped start left as it is is the same for everybody,
    and what is computed on it is shared (:mod:`ui.core.context`)."""
    ss = st.session_state
    if ss.get("lesson_ops"):
        return True
    if ss.get("lesson_start", WORKED) == SIDEBAR:
        ctx = state.page_context(require=False)
        return ctx is None or ctx.private
    return False


def current_group() -> RolloutGroup | None:
    ss = st.session_state
    if ss.get("lesson_group") is None or ss.get("lesson_base") != start_key(ss.get("lesson_start", WORKED)):
        reset()
    return ss["lesson_group"]


# --------------------------------------------------------------------------------------------
# the state in the URL: ?ls=... (crbc.explain.lesson_share), restored when a session opens it

SHARE_PARAM = "ls"


def share_state() -> LessonShare:
    """This session's lesson state: its edits, section 7's K and deepest K (None at their
    defaults) and the answers given to this version of the group, in whichever part."""
    ss = st.session_state
    k, k_max = ss.get("lesson_K"), ss.get("lesson_kmax")
    return LessonShare(tuple(tuple(o) for o in ss.get("lesson_ops", [])),
                       None if not k else int(k), None if k_max in (None, 6) else int(k_max),
                       dict(ss.get("lesson_answers", {})))


def restore_from_url() -> None:
    """Once per link value: replay the URL's edits on a fresh copy of the start group and set K
    and the answers, before their widgets are drawn. A link that does not decode or fit the
    group is reported at the top of the page and ignored."""
    ss = st.session_state
    raw = st.query_params.get(SHARE_PARAM)
    if raw is None or ss.get("lesson_share_seen") == raw:
        return
    ss["lesson_share_seen"] = raw
    try:
        share = decode_share(raw)
        reset()
        group, done = replay(ss["lesson_group"], share.ops)
    except ValueError as e:
        url.url_notice(SHARE_PARAM, raw, str(e))
        reset()
        return
    if share.ops:
        ss["lesson_group"], ss["lesson_edits"], ss["lesson_ops"] = group, done, [list(o) for o in share.ops]
        bump()
    if share.k_max is not None:
        ss["lesson_kmax"] = max(2, min(12, share.k_max))
    if share.k is not None:
        ss["lesson_K"] = ss["lesson_k_keep"] = min(share.k, int(ss.get("lesson_kmax", 6)))
    version = ss.get("lesson_version", 0)
    ss["lesson_answers"] = dict(share.answers)
    for qid, answer in share.answers.items():
        ss[f"lesson_pred_{qid}_{version}"] = answer


def write_url() -> str:
    """Put this state in the URL (``ls``; removed when there is nothing to share) and return it."""
    share = share_state()
    value = "" if share.empty else encode_share(share)
    st.session_state["lesson_share_seen"] = value or None
    if value and st.query_params.get(SHARE_PARAM) != value:
        st.query_params[SHARE_PARAM] = value
    elif not value and SHARE_PARAM in st.query_params:
        del st.query_params[SHARE_PARAM]
    return value
