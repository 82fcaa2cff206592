"""The Lesson's section 7: finite depth, drawn on a group whose backups move.

What it shows comes from :mod:`crbc.explain.depth_lesson` (which group, how fast the error
shrinks) and :mod:`crbc.explain.arithmetic`; this module only draws: the graph at depth K
(scrubbed or played), the error against K beside the Cor. 3 bound, the arithmetic at the first
anchor at K = 0 and at the closure, and A^(K) of every pair.
"""

from __future__ import annotations

import streamlit as st

import crbc.explain.arithmetic as E
import crbc.explain.lesson_tables as T
from crbc.explain import depth_lesson as D
from crbc.explain import lesson_questions as Qs
from crbc.explain.anchor_names import node_labels
from crbc.explain.table_rows import fmt
from crbc.viz.lesson import depth_chart_svg, depth_error_chart_svg
from crbc.viz.lesson_graph import lesson_graph_svg
from ui.core import widgets
from ui.core.context import PageContext
from ui.core.svg_view import svg_view
from ui.core.widgets import short
from ui.lesson import state as L

K_DEFAULT = 6
K_KEEP = "lesson_k_keep"  # K as last chosen, apart from its slider's own state (see _flow)


def _k_moved() -> None:
    """The K slider's callback: keep the reader's K and ask for a whole-page run (the link)."""
    ss = st.session_state
    ss[K_KEEP] = int(ss.get("lesson_K", 0))
    ss["lesson_k_moved"] = True


def _set_k(k: int) -> None:
    st.session_state["lesson_K"] = st.session_state[K_KEEP] = int(k)


def _flow(dl: D.DepthLesson, k_max: int, big: bool) -> int:
    """The graph at depth K: a K slider (also in the shared URL) and Play, one round per second.
    Returns the K shown. The Play button is outside the auto-refreshing fragment: its click
    reruns the whole page, which starts or stops the timer.

    K lives twice: in the slider's state (``lesson_K``) and in :data:`K_KEEP`. A new "Deepest K"
    gives the slider another maximum, hence another widget, which starts at 0; the slider is
    therefore set from :data:`K_KEEP` (clamped to the new maximum) before it is drawn. A reader's
    move of the slider reruns the whole page rather than the fragment, so that the link at the
    top carries the new K; a tick of Play writes the address only, and its last tick reruns the
    page."""
    p, sweep = dl.process, dl.sweep
    ss = st.session_state
    playing = ss.get("lesson_playing", False)
    _set_k(min(int(ss.get(K_KEEP, ss.get("lesson_K", 0))), k_max))

    def _toggle_play() -> None:
        ss["lesson_playing"] = not ss.get("lesson_playing", False)
        if ss["lesson_playing"] and int(ss.get("lesson_K", 0)) >= k_max:
            _set_k(0)

    @st.fragment(run_every=1.0 if playing else None)
    def _graph() -> None:
        if ss.pop("lesson_k_moved", False):
            st.rerun()  # the whole page, whose last line writes the link with this K
        if ss.get("lesson_playing", False):
            k_now = int(ss.get("lesson_K", 0))
            if k_now >= k_max:
                ss["lesson_playing"] = False
                st.rerun()  # the whole page: the timer stops and the button says Play again
            _set_k(k_now + 1)
            L.write_url()
        k = st.slider("Depth K on the graph", 0, k_max, key="lesson_K", on_change=_k_moved,
                      help="Scrub, or press Play: each step is one more round of backup.")
        d = sweep.v_KS[k] - sweep.v_KS[k - 1] if k >= 1 else None
        moved = 0 if d is None else int((abs(d) > D.MOVE_TOL).sum())
        svg_view(lesson_graph_svg(p, sweep.v_KS[k], value_name=f"V^({k})", delta_S=d, pickable=False,
                                  shown_width_px=480), key="lesson_flow_fig")
        st.caption(f"Node colour and number: V^({k}). " + (
            "K = 0: each anchor knows only the outcomes of its own visits." if k == 0 else
            f"Rings: the {moved} value(s) this round moved (blue up, red down): what other rollouts "
            "found flows one step back.") + " This graph is a picture; the one in section 1 is the control.")

    if not big:
        st.button("Pause" if playing else "Play", key="lesson_play", on_click=_toggle_play,
                  icon=":material/pause:" if playing else ":material/play_arrow:",
                  help="Animate K from 0 to the deepest K, one round of backup per second.")
        _graph()
    return int(ss.get("lesson_K", 0))


def render(ctx: PageContext, beta: float, sigma_min: float, table, fold, ask, big: bool) -> None:
    """Section 7 on the lesson group (its context ``ctx``, where the section's sweep and tables
    are kept), or, when its backups do not move, on
    the retry loop: one group for the whole section (its question, its K = 0 and closure tables,
    the rounds and the error); ``table``, ``fold``, ``ask``: the Lesson's renderers."""
    st.markdown(
        r"Depth **K = 0** averages what each rollout itself experienced: $Q_0(s,a)$ is the mean realised "
        r"return $\beta^{T-t+1} R$ of the pair's occurrences. Each further round $K$ backs the values up "
        r"once through the merged process, $Q^{(K)} = B\,V^{(K-1)}$, letting outcomes observed in *other* "
        "rollouts flow back. As K grows the family reaches the closure of section 6. "
        "**GiGPO** (arXiv 2505.10978), the step-level method most students meet first, also groups "
        "the steps by anchor, but compares their own discounted returns: it stays at the K = 0 "
        "idea, so what other rollouts found beyond a step never reaches it.")
    ss = st.session_state
    if int(ss.get("lesson_kmax", K_DEFAULT)) not in range(2, 13):
        ss["lesson_kmax"] = K_DEFAULT
    p, k_max = ctx.process, int(ss.get("lesson_kmax", K_DEFAULT))  # the slider below, as it will be drawn
    dl = ctx.kept("lesson", ("depth", beta, k_max), lambda: D.choose(p, beta, k_max))
    if not dl.own:
        st.info("On the lesson group one round of backup already gives the closure: every anchor is "
                "one step from z+ or z-, so a second round has nothing new to carry and V^(K) is the "
                "same for every K ≥ 1. So this whole section, its question included, runs on the "
                "**worked example with retries** (`wait` leaves the state as it is): rollout 0 waits "
                "twice at s1, rollout 3 once at s2. A loop keeps sending value around, so the backups "
                "move at every K.", icon=":material/loop:")
        st.markdown(_one_round_line(p, beta, sigma_min))
        table(T.trajectory_table(dl.process), fields=("rollout", "path", "r"))
        st.button("Use this group for the whole lesson", key="lesson_use_loop", icon=":material/loop:",
                  on_click=lambda: st.session_state.update(lesson_start=L.LOOP))
    _closure_question(dl.process, beta, sigma_min, table, ask)
    st.subheader("Round by round: the backups converge")
    k_max = st.slider("Deepest K to show", 2, 12, K_DEFAULT, key="lesson_kmax")
    q, sw = dl.process, dl.sweep
    k = _flow(dl, k_max, big)
    st.markdown("**How far A^(K) still is from the closure, and the guarantee**")
    svg_view(depth_error_chart_svg(sw, k), key="lesson_err_fig")
    c = D.contraction(sw)
    st.markdown(
        f"Red: the largest gap over all pairs, ‖A∞ − A^(K)‖∞: {fmt(c.first)} at K = 1, "
        f"{fmt(c.last)} at K = {sw.k_max}. Dashed: the guarantee of Cor. 3, "
        "2β^K/(1−β)·‖TV0 − V0‖∞: loose at β = 0.98 (its factor 2/(1−β) is 100), but it shrinks by "
        f"β every round and holds for every group. {c.sentence()} {_flat_bound(sw)}")
    rows_a = ctx.kept("lesson", ("depth_table", dl.own, beta, k_max),
                      lambda: T.depth_table(q, beta=beta, k_max=k_max, what="A"))
    st.markdown("**A^(K)(s,a) for every pair** (dotted: the closure)")
    svg_view(depth_chart_svg(rows_a), key="lesson_depth_fig")
    with fold(f"A^(K) of the {len(rows_a.columns)} pairs, K = 0..{k_max}", key="depths") as shown:
        if shown:
            table(rows_a.records())


def _flat_bound(sw) -> str:
    """Why the dashed bound looks flat beside the error on the log axis, with the numbers."""
    import numpy as np

    ks = [k for k in range(1, sw.k_max + 1) if np.isfinite(sw.bound_K[k]) and sw.err_a_K[k] > 0]
    if len(ks) < 2:
        return ""
    k0, k1 = ks[0], ks[-1]
    return (f"Both lines fall, at different speeds: the bound by 2% a round (β = 0.98), from "
            f"{sw.bound_K[k0] / sw.err_a_K[k0]:.0f}× the error at K = {k0} to "
            f"{sw.bound_K[k1] / sw.err_a_K[k1]:.0f}× at K = {k1}, which on a log axis looks flat.")


def _one_round_line(p, beta: float, sigma_min: float) -> str:
    """What depth changes on the lesson group itself, where one round already reaches the closure:
    the first anchor's advantage that moves most from K = 0 to the closure."""
    a0 = E.anchor_arithmetic(p, 0, beta=beta, depth=0, sigma_min=sigma_min)
    ar = E.anchor_arithmetic(p, 0, beta=beta, depth=None, sigma_min=sigma_min)
    x, y = max(zip(a0.actions, ar.actions, strict=True), key=lambda xy: abs(xy[0].a - xy[1].a))
    label, act = short(node_labels(p)[0], 80), short(x.action, 80)
    return (f"On the lesson group itself, A({label}, {act}) = {fmt(x.a, signed=True)} at K = 0 and "
            f"{fmt(y.a, signed=True)} from K = 1 on, the closure: one round is all it takes there. "
            "Below, the group with retries:")


def _closure_question(q, beta: float, sigma_min: float, table, ask) -> None:
    """K = 0 against K = infinity at the first anchor, asked before it is shown."""
    a0 = E.anchor_arithmetic(q, 0, beta=beta, depth=0, sigma_min=sigma_min)
    ar = E.anchor_arithmetic(q, 0, beta=beta, depth=None, sigma_min=sigma_min)
    label = short(node_labels(q)[0], 80)
    revealed = ask(Qs.depth_question(q, beta, sigma_min))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**K = 0 at {label}**")
        table(a0.rows())
        widgets.pre("\n".join(a.q_expression for a in a0.actions))
    with c2:
        st.markdown(f"**K = ∞ (closure) at {label}**")
        if revealed:
            table(ar.rows())
            widgets.pre("\n".join(a.q_expression for a in ar.actions))
        else:
            st.caption("Answer the question above to reveal the closure's numbers.")
