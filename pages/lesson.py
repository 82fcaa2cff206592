"""Lesson: credit assignment on a small group, in the order a teacher would take it.

Every number on this page is computed by ``crbc`` (through ``crbc.explain``) from the group shown.
The lesson keeps its own copy of the group in ``st.session_state["lesson_group"]`` (all lesson
state is under ``lesson_*`` keys), so flipping an outcome or editing a step here never touches
the shared data source of the sidebar.
"""

from __future__ import annotations

import streamlit as st

from crbc import compare
from crbc import explain as E
from crbc import tables as T
from crbc.edits import edit_step, flip_outcome
from crbc.labels import SHORT_LABEL, node_labels
from crbc.process import merge
from crbc.rollouts import RolloutGroup, read_rollouts
from crbc.rows import fmt, num
from crbc.viz.lesson import (
    arithmetic_markdown,
    backup_figure,
    depth_figure,
    format_rows,
    system_latex,
)
from pages import common

# options of the URL-bound "Start from" radio, shown as they are (a shared URL names one of them)
WORKED, RARE, SIDEBAR = "worked example", "rare route", "sidebar group"
STARTS = (WORKED, RARE, SIDEBAR)
START_FILES = {WORKED: "worked-example.jsonl", RARE: "rare-route.jsonl"}
LATEX_MAX_ANCHORS = 8
TABLE_MAX_ANCHORS = 40


# --------------------------------------------------------------------------------------------
# lesson state


def _start_group(start: str) -> RolloutGroup | None:
    if start == SIDEBAR:
        ctx = common.page_context(require=False)  # also from the reset button's callback
        return ctx.group if ctx else None
    return read_rollouts(common.SAMPLES_DIR / START_FILES[start])[0]


def _start_key(start: str) -> str:
    if start == SIDEBAR:
        ctx = common.page_context(require=False)
        return "sidebar:" + (ctx.key if ctx else "none")
    return start


def _reset() -> None:
    start = st.session_state.get("lesson_start", WORKED)
    st.session_state["lesson_group"] = _start_group(start)
    st.session_state["lesson_base"] = _start_key(start)
    st.session_state["lesson_edits"] = []


def _flip() -> None:
    g = st.session_state["lesson_group"]
    i = int(st.session_state.get("lesson_flip_r", 0))
    st.session_state["lesson_group"] = flip_outcome(g, i)
    r = st.session_state["lesson_group"].rollouts[i]
    st.session_state["lesson_edits"].append(
        f"rollout {r.rollout}: outcome flipped to {'success' if r.success else 'failure'}")


def _edit() -> None:
    g = st.session_state["lesson_group"]
    i = int(st.session_state.get("lesson_edit_r", 0))
    t = int(st.session_state.get("lesson_edit_t", 1))
    anchor = (st.session_state.get("lesson_edit_anchor") or "").strip() or None
    action = (st.session_state.get("lesson_edit_action") or "").strip() or None
    try:
        st.session_state["lesson_group"] = edit_step(g, i, t, anchor=anchor, action=action)
    except (IndexError, ValueError) as e:
        st.session_state["lesson_error"] = str(e)
        return
    what = ", ".join(x for x in (anchor and f"anchor {anchor}", action and f"action {action}") if x)
    if what:
        st.session_state["lesson_edits"].append(f"rollout {g.rollouts[i].rollout}, step {t}: {what}")


def _state() -> RolloutGroup | None:
    ss = st.session_state
    if ss.get("lesson_group") is None or ss.get("lesson_base") != _start_key(ss.get("lesson_start", WORKED)):
        _reset()
    return ss["lesson_group"]


def table(rows, **kw) -> None:
    st.table(format_rows(rows, **kw), hide_index=True)


# --------------------------------------------------------------------------------------------
# the page

ctx = common.page_context(require=False)  # the sidebar's group is one possible start
st.title("Lesson: who gets the credit?")
st.markdown(
    "A group of rollouts of one task ends in successes and failures. Which *steps* deserve the "
    "credit? This page walks through the answer of the Cross-Rollout Bellman Closure (CRBC), one "
    "idea at a time, on a group small enough to check by hand. Every number below is computed "
    "by `crbc` from the group shown: change the group and watch every table follow.")

if "lesson_start" in st.session_state and st.session_state["lesson_start"] not in STARTS:
    del st.session_state["lesson_start"]
st.radio("Start from", STARTS, key="lesson_start", horizontal=True, bind="query-params",
         captions=["CRBC.md section 8, checkable by hand", "a gridworld fork (sample_rollouts/)",
                   "whatever the sidebar has loaded"])
group = _state()
if group is None:
    st.info("No group is loaded in the sidebar; pick the worked example or the rare-route sample.")
    st.stop()

params = ctx.params if ctx else common.shared_params()
beta, sigma_min = params["beta"], params["sigma_min"]
w_group, w_step = params["w_group"], params["w_step"]
p = merge([group])
labels = node_labels(p)
n_anchors = p.n_states
root = 0  # the first anchor of the group: where every rollout starts in these examples

# ---- 1. the group ---------------------------------------------------------------------------
st.header("1 · The group")
st.markdown(
    f"Group **{group.group}**: {len(group)} rollouts of the same task from the same start, "
    f"{sum(r.success for r in group)} of them successful. Each step is an **anchor** (an exact "
    "key of the environment state) and the **action** executed there; the last step leads to a "
    "boundary: **z+** after a success, **z-** after a failure or a time-out. "
    f"The discount is beta = {num(beta)} (sidebar, *Parameters*).")
traj = T.trajectory_table(p)
table(traj, fields=("rollout", "path", "r"))

with st.container(border=True):
    st.markdown("**Try it: change the group.** Flip one rollout's outcome or edit a step; every "
                "table on the page is recomputed.")
    c1, c2 = st.columns([1, 2])
    rollout_opts = list(range(len(group)))
    for key in ("lesson_flip_r", "lesson_edit_r"):  # keep the pickers valid when the group changes
        if st.session_state.get(key) not in rollout_opts:
            st.session_state[key] = 0
    n_steps = len(group.rollouts[int(st.session_state["lesson_edit_r"])].steps)
    if not 1 <= int(st.session_state.get("lesson_edit_t", 1)) <= n_steps:
        st.session_state["lesson_edit_t"] = 1

    def _rlabel(i: int) -> str:
        r = group.rollouts[i]
        return f"#{r.rollout} ({'success' if r.success and not r.truncated else 'failure'})"

    with c1:
        st.selectbox("Rollout", rollout_opts, format_func=_rlabel, key="lesson_flip_r")
        st.button("Flip its outcome", on_click=_flip, key="lesson_flip", icon=":material/swap_horiz:")
    with c2:
        e1, e2, e3, e4 = st.columns([1.2, 0.8, 1, 1])
        e1.selectbox("Rollout ", rollout_opts, format_func=_rlabel, key="lesson_edit_r")
        e2.number_input("Step t", 1, n_steps, key="lesson_edit_t")
        e3.text_input("New anchor", key="lesson_edit_anchor", placeholder="keep",
                      help="Exact anchor key; an existing one merges the step into it.")
        e4.text_input("New action", key="lesson_edit_action", placeholder="keep")
        st.button("Apply the edit", on_click=_edit, key="lesson_edit")
    if st.session_state.pop("lesson_error", None):
        st.error("That edit was not applied (check the rollout and step).")
    edits = st.session_state.get("lesson_edits", [])
    b1, b2 = st.columns([3, 1])
    b1.caption("Changes so far: " + ("; ".join(edits) if edits else "none — this is the original group."))
    b2.button("Reset the group", on_click=_reset, key="lesson_reset", icon=":material/restart_alt:")

# ---- 2. GRPO ----------------------------------------------------------------------------------
st.header("2 · GRPO: one number per trajectory")
st.markdown(
    "GRPO scores a whole rollout: its advantage is the rollout's score minus the group mean, "
    "divided by the group's standard deviation, "
    r"$A_G(i) = (\text{score}_i - \overline{\text{score}}) / (\text{std} + 10^{-6})$. "
    "Every step of the rollout receives that same number.")
table(traj, fields=("rollout", "path", "score", "a_g"))
spread = T.grpo_pair_spread(p)
mixed = [r for r in spread if r.min < 0 < r.max]
if mixed:
    m = mixed[0]
    st.markdown(
        f"Look at action **{m.action}** at **{m.anchor}**: it occurs {m.occurrences} times and "
        f"GRPO credits it with {m.a_g_values}, depending only on what happened *later* "
        "in each rollout. GRPO cannot tell the actions apart; it can only tell the trajectories apart.")
else:
    st.markdown("In this group no (anchor, action) pair sits in both a success and a failure, but "
                "GRPO still gives every step of a rollout the same number.")
table(spread, fields=("anchor", "action", "occurrences", "a_g_values"))

# ---- 3. anchors and the merged process ----------------------------------------------------------
st.header("3 · Anchors: merging the rollouts into one process")
st.markdown(
    "Rollouts that reach the same anchor share it: their futures become evidence about each other. "
    "Merging all steps by anchor turns the group into one graph, the **empirical process**: each "
    "observed transition (anchor, action) → successor is an edge, counted as often as it was seen.")
tables = T.process_tables(p)
c1, c2 = st.columns([1, 2])
with c1:
    st.markdown("**Anchors**")
    table(tables.states)
with c2:
    st.markdown("**Observed transitions**")
    table(tables.transitions, fields=("anchor", "action", "successor", "n_sax"))
if any(len(a) > SHORT_LABEL or "\n" in a for a in p.state_anchor):
    with st.expander("What the labels s0, s1, ... stand for (the anchor keys)"):
        for s in range(n_anchors):
            st.markdown(f"**{labels[s]}**")
            st.code(p.state_anchor[s], language=None, wrap_lines=True)

# ---- 4. counts, mu and P ----------------------------------------------------------------------------
st.header("4 · Counts, the behaviour policy mu and the transitions P")
st.markdown(
    "Dividing the counts gives two tables of probabilities, with no smoothing (what was never "
    r"seen has probability 0): how often each action was taken at an anchor, "
    r"$\mu(a\mid s) = N(s,a)/N(s)$, and where it led, $P(x\mid s,a) = N(s,a,x)/N(s,a)$.")
c1, c2 = st.columns([2, 3])
with c1:
    st.markdown("**mu(a|s)**")
    table(tables.pairs)
with c2:
    st.markdown("**P(x|s,a)**")
    table(tables.transitions)

# ---- 5. the linear system ----------------------------------------------------------------------------
st.header("5 · One linear system for all values")
st.markdown(
    r"The value $V(s)$ is the discounted probability of reaching success from $s$ if we keep "
    r"acting like the group did. It satisfies one Bellman equation per anchor: "
    r"$V(s) = \beta \sum_a \mu(a\mid s) \sum_x P(x\mid s,a) V(x)$ with $V(z+) = 1$, $V(z-) = 0$. "
    r"Moving the anchors to the left gives $(I - \beta M)\,V = b$, where "
    r"$M(s,s') = \sum_a \mu(a\mid s) P(s'\mid s,a)$ and $b(s) = \beta \sum_a \mu(a\mid s) P(z+\mid s,a)$. "
    "One solve gives every value at once: no iteration, no sampling.")
if n_anchors <= TABLE_MAX_ANCHORS:
    ds = E.dense_system(p, beta=beta, max_states=TABLE_MAX_ANCHORS)
    if n_anchors <= LATEX_MAX_ANCHORS:
        st.latex(system_latex(ds))
    st.table(ds.rows(), hide_index=True)
    st.caption(f"Rows: I - beta M, then b and the solution V (residual {ds.residual:.1e}).")
else:
    st.info(f"This group has {n_anchors} anchors; the matrix is shown for up to {TABLE_MAX_ANCHORS}.")

# ---- 6. Q, A, sigma, gate, A_S, A_final -------------------------------------------------------------
st.header("6 · From values to step credit")
st.markdown(
    r"With $V$ known, each action gets a one-step look-ahead, $Q(s,a) = \beta \sum_x P(x\mid s,a)\,V(x)$, "
    r"and its **advantage** $A(s,a) = Q(s,a) - V(s)$: better or worse than the anchor's average. "
    r"Advantages are put on a common scale per anchor with $\sigma(s)^2 = \sum_a \mu(a\mid s) A(s,a)^2$, "
    r"floored at $\sigma_{\min}$ = " + num(sigma_min) + ". An anchor where only one action was ever "
    r"taken has nothing to compare: the **gate** sets its credit to 0. So "
    r"$A_S = [\#\text{actions} \ge 2]\; A / \max(\sigma, \sigma_{\min})$.")
ar = E.anchor_arithmetic(p, root, beta=beta, depth=None, sigma_min=sigma_min)
st.markdown(f"At **{ar.label}**, written out:")
st.code("\n".join(arithmetic_markdown(ar)), language=None, wrap_lines=True)
st.markdown("The same for every (anchor, action) of the group:")
table(T.pair_table(p, beta=beta, depth=None, sigma_min=sigma_min))
st.markdown(
    r"The final advantage of each step adds the trajectory part back: "
    rf"$A_\text{{final}} = w_G A_G + w_S A_S$ with $w_G$ = {num(w_group)}, $w_S$ = {num(w_step)}. "
    "Now two occurrences of the same action at the same anchor get the same step credit, whatever "
    "happened afterwards in their own rollout.")
table(T.step_table(p, estimator="crbc", beta=beta, depth=None, sigma_min=sigma_min, w_group=w_group,
                   w_step=w_step))

# ---- 7. finite depth -------------------------------------------------------------------------------
st.header("7 · Finite depth: from visit-local averages to the closure")
st.markdown(
    r"Depth **K = 0** averages what each rollout itself experienced: $Q_0(s,a)$ is the mean realised "
    r"return $\beta^{T-t+1} R$ of the pair's occurrences. Each further round $K$ backs the values up "
    r"once through the merged process, $Q^{(K)} = B\,V^{(K-1)}$, letting outcomes observed in *other* "
    "rollouts flow back. As K grows the family reaches the closure of section 6.")
k_max = st.slider("Deepest K to show", 1, 12, 4, key="lesson_kmax")
a0 = E.anchor_arithmetic(p, root, beta=beta, depth=0, sigma_min=sigma_min)
c1, c2 = st.columns(2)
with c1:
    st.markdown(f"**K = 0 at {a0.label}**")
    table(a0.rows())
    st.code("\n".join(a.q_expression for a in a0.actions), language=None, wrap_lines=True)
with c2:
    st.markdown(f"**K = ∞ (closure) at {ar.label}**")
    table(ar.rows())
    st.code("\n".join(a.q_expression for a in ar.actions), language=None, wrap_lines=True)
changed = [(x, y) for x, y in zip(a0.actions, ar.actions, strict=True) if abs(x.a - y.a) > 5e-5]
if changed:
    x, y = max(changed, key=lambda xy: abs(xy[0].a - xy[1].a))
    st.markdown(
        f"Action **{x.action}** at **{ar.label}**: A = {fmt(x.a, signed=True)} at K = 0 but "
        f"{fmt(y.a, signed=True)} at the closure. What the other rollouts revealed about the "
        "anchors it leads to flows back through the backup.")
rows_a = T.depth_table(p, beta=beta, k_max=k_max, what="A")
st.plotly_chart(depth_figure(rows_a, title="A^(K)(s,a) for every pair; dotted: the closure"),
                key="lesson_depth_fig")
table(rows_a.records())

# ---- 8. the foil ---------------------------------------------------------------------------------------
st.header("8 · The shortest-path foil")
st.markdown(
    "A graph-based alternative scores a step by the **fewest hops** from its successor to success "
    "on the same merged graph (10 × 0.8^hops), ignoring how often each edge was seen. It takes an "
    "extremum: one lucky route is enough. The closure instead weighs every route by how often it "
    "was observed.")
foil = T.foil_table(p, beta=beta)
table(foil)
dis = compare.disagreements(p, "crbc vs shortest_path", beta=beta, sigma_min=sigma_min, depth=None)
ties = {}
for r in foil:
    if r.hops is not None:
        ties.setdefault(r.hops, []).append(r)
fooled = [grp for grp in ties.values() if len(grp) >= 2]
if fooled:
    grp = max(fooled, key=lambda g: max(r.v_closure for r in g) - min(r.v_closure for r in g))
    hi = max(grp, key=lambda r: r.v_closure)
    lo = min(grp, key=lambda r: r.v_closure)
    st.markdown(
        f"**{hi.anchor}** and **{lo.anchor}** are both {hi.hops} hop(s) from success, so "
        f"shortest path values them the same. But {hi.succeeded} of the "
        f"{hi.through} rollouts through {hi.anchor} succeeded, and only "
        f"{lo.succeeded} of {lo.through} through {lo.anchor}: the closure "
        f"gives V = {fmt(hi.v_closure)} against {fmt(lo.v_closure)}.")
top = dis.anchors[0]
if top.ranks_differ:
    other = ("gives every action there the same credit" if top.best_y == "(tie)"
             else f"prefers **{top.best_y}**")
    st.markdown(f"Where it matters most, at **{top.anchor}**, the closure prefers "
                f"**{top.best_x}** while shortest path {other}:")
table([r for r in dis.pairs if r.anchor == top.anchor], drop=("group",))
if st.session_state.get("lesson_start", WORKED) != RARE:
    st.markdown("The rare-route sample shows the same effect on a gridworld fork.")

    def _load_rare() -> None:
        st.session_state["lesson_start"] = RARE

    st.button("Continue on the rare-route sample", on_click=_load_rare, key="lesson_go_rare",
              icon=":material/alt_route:")
st.markdown("Explore any anchor's arithmetic on the **Inspector** page, and where estimators "
            "disagree most on **Disagreements**.")
with st.expander("The backup at the first anchor as a picture"):
    st.plotly_chart(backup_figure(ar), key="lesson_backup_fig")

# ---- 9. which estimate is right? ---------------------------------------------------------------
st.header("9 · Which estimate is right?")
TRUTH_FILE = "sokoban-weak.jsonl"
TRUTH_RIVALS = ("visit_local", "crbc", "shortest_path")


@st.cache_resource(show_spinner=False)
def _truth_group(stamp: float) -> RolloutGroup:
    del stamp  # part of the key
    groups = read_rollouts(common.SAMPLES_DIR / TRUTH_FILE)
    return groups[common.showcase_group(groups)]


truth_path = common.SAMPLES_DIR / TRUTH_FILE
if not truth_path.exists():
    st.info(f"This section needs the shipped sample `{TRUTH_FILE}`.")
else:
    tgroup = _truth_group(truth_path.stat().st_mtime)
    st.markdown(
        f"Every estimator above is a guess from {len(tgroup)} rollouts. On our own toy tasks the "
        "**truth** can be computed: the rules of Sokoban are known and the tiny policy's probability "
        "of each action can be read from the model exactly, so the policy's true value of every "
        "reachable board at every time step, and the true advantage A = Q − V of every move, "
        f"follow from one backward pass. Here is a real group, `{tgroup.group}` from "
        f"`{TRUTH_FILE}` ({sum(r.success for r in tgroup)} of {len(tgroup)} rollouts solved it), "
        "with the truth beside visit-local, the closure and the shortest-path foil.")
    tkey = f"lesson-truth:{TRUTH_FILE}:{tgroup.group}"
    tt, why = common.truth_for_group(tkey, tgroup, beta)
    if tt is None:
        st.info(why)
    else:
        from crbc import accuracy, estimators

        tp = merge([tgroup])
        tcred = {n: estimators.compute(n, tp, **({"beta": beta} if n != "shortest_path" else {}))
                 for n in TRUTH_RIVALS}
        rows = accuracy.truth_pairs(tp, tcred, tt.advantage_N, tt.anchor_advantage_N)
        table(rows[:14], signed=["true A_t", "true A(s,a)", *TRUTH_RIVALS])
        st.caption(
            "One row per (anchor, action) at anchors where the group tried two or more actions, "
            "most visited first. true A_t: the exact advantage, averaged over the steps where the "
            "group took this action here; true A(s,a): the same averaged over every time the policy "
            "may be here. visit_local and crbc: their Q − V (same units); shortest_path: its "
            "normalised step advantage (its own units: read the sign and the order).")
        agree = accuracy.group_agreement(tcred, tt.advantage_N)
        table([{"estimator": n, "sign agreement": agree[n]["sign"], "Spearman": agree[n]["spearman"],
                "RMSE of Q − V": agree[n].get("rmse")} for n in TRUTH_RIVALS])
        best = max(TRUTH_RIVALS, key=lambda n: agree[n]["spearman"])
        st.markdown(
            f"On this group **{best}** ranks the steps most like the truth (Spearman "
            f"{agree[best]['spearman']:.2f}). One group is one sample: the **Estimator accuracy** "
            "page scores every estimator this way on 100 held-out levels and shows how each one "
            "improves as the group grows.")
