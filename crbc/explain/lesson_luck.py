"""Luck against skill: one slippery group, one (anchor, action) that the ice sent to different
places, and what each kind of estimator credits there, beside the exact truth (the Lesson's
section 11; docs/MATH.md section 13.2).

The group: Gymnasium's standard FrozenLake 4x4 map (``frozenlake-4x4-v0``, level seed 0, the
intended move with 1/3, each perpendicular move with 1/3), a step limit of :data:`MAX_STEPS`, and
a fixed policy that leans towards the goal (:func:`lean_policy`: down and right 0.4 each, up and
left 0.1 each). :data:`GROUP_SIZE` rollouts are drawn from the exact pi(a|s) and the env's own
P(s'|s,a) by :func:`crbc.truth.sample.sample_group` with seed :data:`RNG_SEED` (built by
``ui.lesson.luck.luck_group``: explain sits above the truth in the layers, so it reads the
``LevelTruth`` it is given and imports nothing of ``crbc.truth``), so the group and its truth are
the same on every machine. The pair shown is picked by a rule
(:func:`luck_pair`), not by hand: the pair whose realised returns disagree most among pairs whose
occurrences reached two or more successors.

Three answers at that pair:

- a **realised return** (``gigpo``: the step's discounted return minus the anchor's mean;
  ``rewardflow``: V(next) - V(s)) credits each occurrence by where the ice sent it;
- the **closure** (``crbc``) credits the pair once: Q(s,a) - V(s) with Q = beta sum_x P^(x|s,a)
  V(x), P^ the group's own frequencies N(s,a,x) / N(s,a);
- the **truth**: Q_t(s,a) = beta sum_x P(x|s,a) V_{t+1}(x) with the env's P (1/3 each).

numpy only; no streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.estimators import registry as estimators
from crbc.explain.anchor_names import Z_MINUS, Z_PLUS, node_labels
from crbc.explain.lesson_questions import Question
from crbc.explain.table_rows import col, fmt, num
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = ["ENV_ID", "GROUP_SIZE", "LEVEL_SEED", "Luck", "LuckStep", "LuckSuccessor", "MAX_STEPS",
           "POLICY", "POLICY_NAME", "RNG_SEED", "lean_policy", "luck_lesson", "luck_pair", "luck_question"]

ENV_ID = "frozenlake-4x4-v0"
LEVEL_SEED = 0  #: Gymnasium's standard 4x4 map
MAX_STEPS = 16  #: a time-out is a failure (z-)
GROUP_SIZE = 6
RNG_SEED = 7
#: pi(a|s) of the group's policy on the env's action axis (up, down, left, right, invalid)
POLICY = {"up": 0.1, "down": 0.4, "left": 0.1, "right": 0.4}
POLICY_NAME = "lean down-right"
REALISED = ("gigpo", "rewardflow")  #: the estimators built on realised returns shown here
_MOVES = {(-1, 0): "up", (1, 0): "down", (0, -1): "left", (0, 1): "right", (0, 0): "nowhere"}
_DELTA = {v: k for k, v in _MOVES.items()}


def lean_policy(boards, actions) -> np.ndarray:
    """The group's policy: :data:`POLICY` on every board, whatever the cell (a callable for
    :class:`crbc.truth.policies.ScorablePolicy` with ``takes_actions``)."""
    row = [POLICY.get(a, 0.0) for a in actions]
    return np.tile(row, (len(boards), 1))


# --------------------------------------------------------------------------------------------
# the lake's geometry, read from the board text (P is the player, G the goal)


def _cell(board: str, letter: str = "P") -> tuple[int, int] | None:
    for r, line in enumerate(board.split("\n")):
        if letter in line:
            return r, line.index(letter)
    return None


def _where(board: str, r: int, c: int) -> str:
    return f"row {r + 1}, col {c + 1}"


def intended_cell(board: str, action: str) -> tuple[int, int]:
    """Where ``action`` would take the player without a slip (a move off the map stays)."""
    rows = board.split("\n")
    (r, c), (dr, dc) = _cell(board), _DELTA[action]
    nr, nc = r + dr, c + dc
    return (nr, nc) if 0 <= nr < len(rows) and 0 <= nc < len(rows[0]) else (r, c)


def slid(board: str, action: str, landed: tuple[int, int] | None, end: str) -> str:
    """How the ice moved this step, in words: ``"down (as chosen)"``, ``"right (slipped)"``,
    ``"stayed: the wall (as chosen)"``; ``end`` names a boundary when ``landed`` is None."""
    if landed is None:
        return end
    r, c = _cell(board)
    move = _MOVES[(landed[0] - r, landed[1] - c)]
    how = "as chosen" if landed == intended_cell(board, action) else "a slip"
    return f"{'stayed: the wall' if move == 'nowhere' else move} ({how})"


# --------------------------------------------------------------------------------------------
# the rows the section shows


@dataclass(frozen=True)
class LuckStep:
    """One occurrence of the pair: where the ice sent it and what each estimator credits it."""

    rollout: int = col("rollout")
    t: int = col("step t")
    moved: str = col("the ice moved it")
    successor: str = col("to")
    outcome: str = col("rollout ended")
    step_return: float = col("realised return")
    gigpo: float = col("gigpo credit")
    rewardflow: float = col("rewardflow credit")
    closure: float = col("closure Q − V")
    truth_t: float = col("true A_t")


@dataclass(frozen=True)
class LuckSuccessor:
    """One successor x of the pair: how often the group saw it and how often the ice sends there."""

    successor: str = col("successor x")
    where: str = col("cell")
    n: int = col("N(s,a,x)")
    p_group: float = col("group's P̂(x|s,a)")
    p_true: float = col("true P(x|s,a)")
    v_closure: float | None = col("closure V(x)")
    v_true: float = col("true V_{t_next}(x)")
    t_next: int = col(hidden=True, default=0)


@dataclass(frozen=True)
class Luck:
    """The section's numbers. ``state``/``pair``: the anchor and pair shown (process ids);
    ``steps``: its occurrences; ``successors``: every successor the ice can reach from it (seen
    or not); ``closure_q``, ``closure_v``, ``closure_a``: the closure's Q(s,a), V(s), A(s,a);
    ``true_a``: the truth's anchor-level A(s,a) (occupancy-weighted over t); ``closure_line``,
    ``truth_line``: the two backups written out with their numbers (the truth's at ``truth_t``,
    the pair's first step); ``lucky``/``unlucky``: the occurrences with the highest and lowest
    realised return among the others (preferring one the ice sent elsewhere than the lucky one
    and off the anchor)."""

    group: RolloutGroup
    process: Process
    beta: float
    state: int
    pair: int
    label: str
    action: str
    board: str
    steps: tuple[LuckStep, ...]
    successors: tuple[LuckSuccessor, ...]
    closure_q: float
    closure_v: float
    closure_a: float
    true_a: float
    truth_t: int
    closure_line: str
    truth_line: str
    lucky: LuckStep
    unlucky: LuckStep
    gigpo_range: tuple[float, float]
    wrong_sign: int  #: occurrences whose gigpo credit has the opposite sign of the truth's A_t


def luck_pair(p: Process, gigpo_credit_N: np.ndarray) -> int | None:
    """The pair shown: among pairs at anchors with two or more actions whose occurrences reached
    two or more successors, the one whose realised credits spread most (ties: the busiest, then
    the first). None if no pair qualifies."""
    best, key = None, None
    for sa in range(len(p.n_sa)):
        occ = np.flatnonzero(p.step_sa == sa)
        if p.n_actions[p.sa_state[sa]] < 2 or len(set(p.step_next[occ].tolist())) < 2:
            continue
        k = (float(np.ptp(gigpo_credit_N[occ])), int(p.n_sa[sa]))
        if key is None or k > key:
            best, key = sa, k
    return best


def _successors(p: Process, lt, s: int, a_true: int, s_true: int, v_S: np.ndarray,
                labels: tuple[str, ...], occ: np.ndarray, t: int) -> tuple[LuckSuccessor, ...]:
    """Every successor of the pair the env allows, its group count, the closure's V and the
    truth's V_{t+1} (a boundary by the env's verdict: the goal is z+, a hole z-)."""
    sp, index = lt.space, {b: i for i, b in enumerate(p.state_anchor)}
    seen = dict(zip(*np.unique(p.step_next[occ], return_counts=True), strict=True))
    rows = []
    for k in np.flatnonzero(sp.prob_SAK[s_true, a_true] > 0):
        x = int(sp.next_SAK[s_true, a_true, k])
        board = sp.boards[x]
        if sp.solved_S[x] or sp.failed_S[x]:
            node, label, where, v_true = (p.z_plus, Z_PLUS, "the goal", 1.0) if sp.solved_S[x] \
                else (p.z_minus, Z_MINUS, "a hole", 0.0)
            v_cl = 1.0 if sp.solved_S[x] else 0.0
        else:
            node = index.get(board)
            label = labels[node] if node is not None else "(not in the group)"
            where = _where(board, *_cell(board))
            v_true = float(lt.value_TS[t + 1, x]) if t + 1 < sp.horizon else 0.0
            v_cl = float(v_S[node]) if node is not None else None
        n = int(seen.get(node, 0)) if node is not None else 0
        rows.append(LuckSuccessor(label, where, n, n / len(occ), float(sp.prob_SAK[s_true, a_true, k]),
                                  v_cl, v_true, t + 1))
    return tuple(rows)


def _backup_line(name: str, beta: float, rows, p_of, v_of) -> str:
    terms = " + ".join(f"{num(p_of(r))} × {fmt(v_of(r))}" for r in rows if p_of(r) > 0 and v_of(r) is not None)
    total = beta * sum(p_of(r) * v_of(r) for r in rows if p_of(r) > 0 and v_of(r) is not None)
    return f"{name} = {num(beta)} × ({terms}) = {fmt(total)}"


def _truth_line(lt, s_true: int, a_true: int, t: int, beta: float) -> str:
    """Q_t(s,a) = beta sum_x P(x|s,a) V_{t+1}(x), the truth's own backup at step t."""
    sp = lt.space
    terms, total = [], 0.0
    for k in np.flatnonzero(sp.prob_SAK[s_true, a_true] > 0):
        x, px = int(sp.next_SAK[s_true, a_true, k]), float(sp.prob_SAK[s_true, a_true, k])
        v = 1.0 if sp.solved_S[x] else 0.0 if sp.failed_S[x] else (
            float(lt.value_TS[t + 1, x]) if t + 1 < sp.horizon else 0.0)
        terms.append(f"{num(px)} × {fmt(v)}")
        total += px * v
    return (f"Q_{t}(s,a) = {num(beta)} × ({' + '.join(terms)}) = {fmt(beta * total)}; "
            f"V_{t}(s) = {fmt(lt.value_TS[t, s_true])}; A_{t} = {fmt(lt.advantage_TSA[t, s_true, a_true], signed=True)}")


def _landing(p: Process, lt, n: int, labels) -> tuple[tuple[int, int] | None, str]:
    """Where step ``n`` landed (a cell) or, at a boundary, what the boundary is in words."""
    x = int(p.step_next[n])
    if x < p.n_states:
        return _cell(p.state_anchor[x]), labels[x]
    r = int(p.step_rollout[n])
    if x == p.z_plus:
        return None, "onto the goal"
    truncated = p.rollout_truncated is not None and bool(p.rollout_truncated[r])
    return None, "out of time (step limit)" if truncated else "into a hole"


def luck_lesson(group: RolloutGroup, lt, beta: float) -> Luck:
    """The section's numbers on ``group`` with its exact truth ``lt`` (see the module docstring)."""
    p = merge([group])
    labels = node_labels(p)
    cred = {n: estimators.compute(n, p, **estimators.get(n).shared({"beta": beta}))
            for n in ("crbc", *REALISED)}
    sa = luck_pair(p, cred["gigpo"].credit_N)
    if sa is None:
        raise ValueError("no pair of this group reached two or more successors")
    s, action = int(p.sa_state[sa]), p.action_names[int(p.sa_action[sa])]
    board = p.state_anchor[s]
    s_true, a_true = lt.space.index()[board], lt.actions.index(action)
    occ = np.flatnonzero(p.step_sa == sa)
    steps = tuple(_step(p, lt, n, cred, labels, board, action, s_true, a_true) for n in occ)
    c = cred["crbc"]
    t0 = min(st.t for st in steps)
    succ = _successors(p, lt, s, a_true, s_true, c.value_S, labels, occ, t0)
    lucky = max(steps, key=lambda x: x.step_return)
    away = [x for x in steps if x.successor not in (lucky.successor, labels[s])] or \
        [x for x in steps if x.successor != lucky.successor] or list(steps)
    unlucky = min(away, key=lambda x: x.step_return)
    g = [x.gigpo for x in steps]
    return Luck(group, p, float(beta), s, int(sa), labels[s], action, board, steps, succ,
                float(c.q_SA[sa]), float(c.value_S[s]), float(c.credit_SA[sa]),
                float(lt.anchor_advantage_SA[s_true, a_true]), t0,
                _backup_line("Q(s,a)", beta, succ, lambda r: r.p_group, lambda r: r.v_closure),
                _truth_line(lt, s_true, a_true, t0, beta), lucky, unlucky, (min(g), max(g)),
                sum(np.sign(x.gigpo) != np.sign(x.truth_t) for x in steps))


def _step(p: Process, lt, n: int, cred, labels, board: str, action: str, s_true: int, a_true: int) -> LuckStep:
    r = int(p.step_rollout[n])
    t = int(p.step_t[n]) - 1  # 0-based, as the files number steps
    landed, end = _landing(p, lt, n, labels)
    outcome = "success" if p.rollout_success[r] else "failure"
    to = labels[int(p.step_next[n])] if int(p.step_next[n]) < p.n_states else (Z_PLUS if "goal" in end else Z_MINUS)
    return LuckStep(int(p.rollout_index[r]), t, slid(board, action, landed, end), to, outcome,
                    float(cred["gigpo"].q_N[n]), float(cred["gigpo"].credit_N[n]),
                    float(cred["rewardflow"].credit_N[n]), float(cred["crbc"].credit_N[n]),
                    float(lt.advantage_TSA[t, s_true, a_true]))


def luck_question(luck: Luck) -> Question:
    """Predict first: two rollouts chose the same action at the same anchor, the ice sent one
    towards the goal and the other away. Should their credits differ?"""
    hi, lo, act, s = luck.lucky, luck.unlucky, luck.action, luck.label
    same = "the same credit: the choice was the same"
    more_hi = f"more to rollout {hi.rollout}'s step: it went {hi.moved.split(' (')[0]}"
    more_lo = f"more to rollout {lo.rollout}'s step"
    return Question(
        "luck", "11",
        f"Rollouts {hi.rollout} and {lo.rollout} both chose **{act}** at {s}. The ice moved rollout "
        f"{hi.rollout} {hi.moved} (it ended in {hi.outcome}) and rollout {lo.rollout} {lo.moved} "
        f"(it ended in {lo.outcome}). What should the two steps be credited?",
        (same, more_hi, more_lo), same,
        f"the policy made the same choice at the same place; where the ice sent it is luck, drawn "
        f"with the env's own probabilities. The exact truth averages over the slip: A_t(s, {act}) "
        f"is {fmt(hi.truth_t, signed=True)} at step {hi.t} and {fmt(lo.truth_t, signed=True)} at step "
        f"{lo.t} (it differs only through the time left before the step limit). A realised return "
        f"credits the slip itself: gigpo gives {fmt(hi.gigpo, 2, signed=True)} against "
        f"{fmt(lo.gigpo, 2, signed=True)}. The closure gives both {fmt(luck.closure_a, signed=True)}.",
        on=f"the FrozenLake group of section 11 ({ENV_ID}, {len(luck.group)} rollouts), anchor {s}",
        data=(*luck.board.split("\n"), *(f"rollout {x.rollout}, step {x.t}: {act}, the ice moved it {x.moved}, "
                                          f"to {x.successor}; the rollout ended in {x.outcome}" for x in luck.steps)))
