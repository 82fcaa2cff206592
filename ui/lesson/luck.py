"""The Lesson's section 11, luck against skill: a slippery FrozenLake group, one (anchor, action)
that the ice sent to different places, and what a realised return, the closure and the exact
truth each credit there (predict first, then the numbers). The numbers come from
:mod:`crbc.explain.lesson_luck`; this module only draws them."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from crbc.explain import lesson_luck as LL
from crbc.explain import lesson_tables as T
from crbc.explain.table_rows import fmt, num
from ui.core import widgets
from ui.core.context import server

HEADER = "11 · Luck against skill: a slippery world"
ANCHOR = "11-luck-against-skill"
_SIGNED = ["gigpo credit", "rewardflow credit", "closure Q − V", "true A_t"]


def luck_group(beta: float = 0.98):
    """``(group, LevelTruth)``: the section's fixed slippery group (:mod:`crbc.explain.lesson_luck`)
    and its exact truth at ``beta``. Raises ImportError without gymnasium (``crbc[worlds]``)."""
    from crbc.truth import level_truth
    from crbc.truth.policies import ScorablePolicy
    from crbc.truth.sample import sample_group

    pol = ScorablePolicy(LL.lean_policy, name=LL.POLICY_NAME, takes_actions=True)
    lt = level_truth(LL.ENV_ID, LL.LEVEL_SEED, pol, max_steps=LL.MAX_STEPS, beta=beta, full_policy=True)
    return sample_group(lt, LL.GROUP_SIZE, LL.RNG_SEED), lt


def _luck(beta: float):
    """The section's numbers, or the reason there are none (no gymnasium, a changed sampler);
    the same fixed group for everybody, kept in the server's store."""
    return server().kept("lesson", ("luck", float(beta)), lambda: _luck_now(float(beta)))


def _luck_now(beta: float):
    try:
        group, lt = luck_group(beta)
        return LL.luck_lesson(group, lt, beta), None
    except ImportError as e:
        return None, f"This section needs Gymnasium's FrozenLake: {e}"
    except ValueError as e:
        return None, f"The slippery group offers no pair to show: {e}"


def question(beta: float):
    """The section's question (:func:`crbc.explain.lesson_luck.luck_question`), or None when the
    section has no numbers here; the handout prints it whichever part of the Lesson is shown."""
    luck, _why = _luck(beta)
    return None if luck is None else LL.luck_question(luck)


def render(beta: float, ask: Callable, table: Callable) -> None:
    """Section 11 under its own header. ``ask``: the Lesson's predict-first question
    (:func:`ui.lesson.sections.ask`); ``table``: a table renderer of typed rows."""
    st.header(HEADER, anchor=ANCHOR)
    luck, why = _luck(beta)
    if luck is None:
        st.info(why)
        return
    _intro(luck, table)
    answered = ask(LL.luck_question(luck))
    if not answered:
        st.caption("The credits, the successors and both backups appear once you answer.")
        return
    _reveal(luck, table)


def _intro(luck: LL.Luck, table: Callable) -> None:
    g, n_ok = luck.group, sum(r.success for r in luck.group.rollouts)
    policy = ", ".join(f"{a} {num(p)}" for a, p in LL.POLICY.items())
    st.markdown(
        "Every group so far lived on a board where a move always lands in the same place. Agent "
        "tasks are not like that: a tool call fails, a page loads differently. Gymnasium's "
        "**FrozenLake** is the field's small model of it: on slippery ice the chosen move happens "
        "with probability 1/3, and each of the two moves at right angles to it with 1/3 each. So one "
        "(anchor, action) pair leads to different successors in different rollouts, and a rollout's "
        "return mixes the policy's **skill** (what it chose) with the ice's **luck** (where it slid).")
    st.markdown(
        f"The group: {len(g)} rollouts on the standard 4x4 map (`{LL.ENV_ID}`, S start, H hole, G goal; "
        f"P is the player), at most {LL.MAX_STEPS} steps (a time-out is a failure), from a fixed policy "
        f"that leans towards the goal ({policy}); {n_ok} of them reached G. It is drawn from the "
        "policy's exact probabilities and the env's own slip with a fixed seed, so its truth is known "
        f"exactly. Look at anchor **{luck.label}**, next to the goal, and action **{luck.action}**:")
    c1, c2 = st.columns([1, 3])
    with c1:
        st.code(luck.board, language=None)
    with c2:
        st.markdown(
            f"The group chose **{luck.action}** at {luck.label} {len(luck.steps)} times. The ice "
            "sent those steps to different places:")
        table(luck.steps, fields=("rollout", "t", "moved", "successor", "outcome"))
    box, shown = widgets.folded(f"The {len(g)} rollouts as paths of anchors", key="lesson_luck_paths")
    if shown:
        with box:
            table(T.trajectory_table(luck.process), fields=("rollout", "path", "r"))


def _reveal(luck: LL.Luck, table: Callable) -> None:
    lo, hi = luck.gigpo_range
    st.markdown(f"**What each one credits** at ({luck.label}, {luck.action}), step by step:")
    table(luck.steps, fields=("rollout", "t", "successor", "step_return", "gigpo", "rewardflow", "closure",
                              "truth_t"), signed=_SIGNED)
    st.caption(
        "realised return: GiGPO's discounted return from this step (γ = 0.95; −0.1 a step, +10 at G). "
        "gigpo credit: that return minus the mean return of every step at this anchor; rewardflow "
        "credit: V(next) − V(s) of RewardFlow's maximum. Both are on the reward scale (read their sign). "
        "closure Q − V and true A_t: discounted probabilities of success (β = "
        f"{num(luck.beta)}), the same units.")
    st.markdown(
        f"- **A realised return credits the slip.** The same choice gets a gigpo credit from "
        f"{fmt(lo, 2, signed=True)} to {fmt(hi, 2, signed=True)}; {luck.wrong_sign} of "
        f"{len(luck.steps)} steps get the opposite sign of the truth, so a trainer would make "
        f"*{luck.action}* less likely where the ice was unkind, though the choice was as good each time.\n"
        f"- **The closure credits the choice.** It backs the pair up once over the successors the "
        f"group saw, each weighed by how often it was seen, and gives every step "
        f"{fmt(luck.closure_a, signed=True)}. The truth's A(s,a) over the whole episode is "
        f"{fmt(luck.true_a, signed=True)}.")
    st.markdown("**The two backups, with their numbers.** The closure weighs each successor by the group's "
                "frequency; the truth by the ice's 1/3:")
    table(luck.successors, signed=[])
    st.code(f"closure:  {luck.closure_line}\n"
            f"          V(s) = {fmt(luck.closure_v)};  A = Q − V = {fmt(luck.closure_a, signed=True)}\n"
            f"truth:    {luck.truth_line}", language=None, wrap_lines=True)
    st.markdown(
        "Where the closure can still be wrong: its frequencies are the group's (a successor seen "
        "once in six counts 1/6, one never seen counts 0), and its V(x) are the group's own "
        "estimates, which a small group conditions on the rollouts it happened to draw. Both errors "
        "shrink as the group grows; the realised return's coin-flip does not average out inside "
        "one group, only across many updates. The same truth scores every estimator over many "
        f"levels: `python -m crbc accuracy --env {LL.ENV_ID} --model uniform --seeds 1-100`.")
