"""Explain the estimators: the arithmetic behind every number, for teaching and inspection.

Everything here is computed by the core (:mod:`crbc.process`, :mod:`crbc.closure`,
:mod:`crbc.estimators`) from a group; this module only lays the numbers out as rows (lists of
plain dicts, ready for a table) and as readable formulas with the numbers substituted. It needs
numpy only: no streamlit, no plotly. Builders in :mod:`crbc.viz.lesson` and the pages
``lesson``, ``inspector`` and ``disagreements`` sit on top of it.

Anchors are shown by *label*: the anchor text itself when every anchor of the group is a short
single line (as in the worked example of CRBC.md section 8: ``s0``, ``s1``, ``s2``), otherwise
``s<i>`` with ``i`` the order of first appearance inside the group. Boundaries are ``z+``, ``z-``.

Contents:

* per-anchor arithmetic at any depth K (:func:`anchor_arithmetic`): actions with N, mu, Q, A, A_S;
  successors with P and V; ``Q = beta * sum P V`` written out with the numbers;
* the group as tables (:func:`process_tables`, :func:`trajectory_table`, :func:`step_table`,
  :func:`grpo_pair_spread`, :func:`depth_table`, :func:`foil_table`);
* the dense linear system of a small group (:func:`dense_system`);
* where estimators disagree, per anchor and per step, for one group or a whole file
  (:func:`disagreements`);
* small edits of a group for "what if" teaching (:func:`flip_outcome`, :func:`edit_step`,
  :func:`remove_rollout`, :func:`duplicate_rollout`), each returning a new :class:`RolloutGroup`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import closure as C
from .estimators import compute, get, hop_distance
from .process import Process, merge
from .rollouts import Rollout, RolloutGroup, Step

Z_PLUS, Z_MINUS = "z+", "z-"
SHORT_LABEL = 16  # anchors up to this many characters on one line are shown as they are


# --------------------------------------------------------------------------------------------
# formatting


def fmt(x: float, digits: int = 4, signed: bool = False) -> str:
    """A number as the tables show it: ``digits`` decimals, trailing zeros kept; ``∞`` for inf."""
    if x is None:
        return "—"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < 0.5 * 10 ** (-digits):
        x = 0.0
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def depth_name(depth: int | None) -> str:
    """``"K = 3"`` or ``"K = ∞ (closure)"``."""
    return "K = ∞ (closure)" if depth is None else f"K = {depth}"


# --------------------------------------------------------------------------------------------
# labels and lookups


def group_states(p: Process, group: int = 0) -> range:
    """The anchor ids of group ``group`` (anchors of a group are contiguous)."""
    sl = p.group_slices()[group]
    return range(sl.start, sl.stop)


def anchor_labels(p: Process) -> tuple[str, ...]:
    """A short label per anchor (see the module docstring), unique inside each group."""
    labels: list[str] = [""] * p.n_states
    for g in range(len(p.group_ids)):
        states = group_states(p, g)
        texts = [p.state_anchor[s] for s in states]
        short = all(len(t) <= SHORT_LABEL and "\n" not in t and t.strip() == t and t
                    and t not in (Z_PLUS, Z_MINUS) for t in texts)
        for i, s in enumerate(states):
            labels[s] = texts[i] if short else f"s{i}"
    return tuple(labels)


def node_labels(p: Process) -> tuple[str, ...]:
    """Labels of the extended value vector: anchors, then ``z+``, ``z-``."""
    return anchor_labels(p) + (Z_PLUS, Z_MINUS)


def find_state(p: Process, anchor: str, group: str | int | None = None) -> int:
    """The anchor id of ``anchor`` (its text or its label) in ``group`` (id or index; default: any).

    Raises ``KeyError`` when the anchor is not in the group."""
    if isinstance(group, str):
        if group not in p.group_ids:
            raise KeyError(f"no group {group!r}")
        group = p.group_ids.index(group)
    labels = anchor_labels(p)
    for key in (p.state_anchor, labels):
        for s in range(p.n_states):
            if key[s] == anchor and (group is None or int(p.state_group[s]) == group):
                return s
    raise KeyError(f"anchor {anchor!r} not found" + ("" if group is None else f" in group {group}"))


def state_pairs(p: Process, s: int) -> np.ndarray:
    """The pair ids (SA) of anchor ``s``, in the order actions were first seen."""
    return np.flatnonzero(p.sa_state == s)


def rollout_path(p: Process, r: int, labels: Sequence[str] | None = None) -> str:
    """``s0 -a-> s1 -c-> z+`` for rollout ``r`` of the process."""
    labels = node_labels(p) if labels is None else labels
    o = p.rollout_offsets
    parts = []
    for n in range(int(o[r]), int(o[r + 1])):
        parts.append(f"{labels[p.step_state[n]]} -{p.action_names[p.sa_action[p.step_sa[n]]]}->")
    parts.append(labels[p.step_next[int(o[r + 1]) - 1]])
    return " ".join(parts)


def group_rollouts(p: Process, group: int = 0) -> np.ndarray:
    return np.flatnonzero(p.rollout_group == group)


# --------------------------------------------------------------------------------------------
# the arithmetic at one anchor


@dataclass(frozen=True)
class Successor:
    """One observed successor x of (s, a): N(s,a,x), P(x|s,a) and the V(x) the backup uses."""

    node: int  # index into the extended value vector (anchors, z+, z-)
    label: str
    n: int
    p: float
    v: float


@dataclass(frozen=True)
class ActionLine:
    """One observed action a at the anchor, with its backup written out.

    ``q_expression`` is ``Q(s,a) = beta * (P V + ...) = ... = value`` with the numbers; at
    K = 0 it is the mean of the realised returns ``returns`` instead.
    """

    pair: int
    action: str
    n: int
    mu: float
    q: float
    a: float
    a_s: float
    successors: tuple[Successor, ...]
    q_expression: str
    returns: tuple[float, ...]


@dataclass(frozen=True)
class AnchorArithmetic:
    """Everything the inspector shows about one anchor at one depth (``None`` = closure).

    ``v`` is V^(K)(s) (= sum_a mu Q^(K)); ``sigma`` and ``gate`` are Eq. 13's scale and gate;
    the ``*_expression`` strings substitute the numbers into the formulas.
    """

    state: int
    label: str
    anchor: str
    group: str
    beta: float
    depth: int | None
    sigma_min: float
    n: int
    v: float
    sigma: float
    gate: bool
    actions: tuple[ActionLine, ...]
    v_expression: str
    sigma_expression: str
    gate_expression: str

    def rows(self) -> list[dict[str, Any]]:
        """One row per action: action, N(s,a), mu, Q, A, A_S (numbers, not strings)."""
        return [{"action": a.action, "N(s,a)": a.n, "mu(a|s)": a.mu, "Q(s,a)": a.q,
                 "A(s,a)": a.a, "A_S(s,a)": a.a_s} for a in self.actions]

    def successor_rows(self) -> list[dict[str, Any]]:
        """One row per (action, successor): N(s,a,x), P(x|s,a), V(x) (None at K = 0: no backup)."""
        return [{"action": a.action, "successor": x.label, "N(s,a,x)": x.n, "P(x|s,a)": x.p,
                 "V(x)": None if math.isnan(x.v) else x.v}
                for a in self.actions for x in a.successors]

    def action(self, name: str) -> ActionLine:
        for a in self.actions:
            if a.action == name:
                return a
        raise KeyError(f"action {name!r} not observed at {self.label}")


def values_at_depth(p: Process, beta: float, depth: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V_S, Q_SA, V_prev_S)``: V^(K), Q^(K) and the V^(K-1) that Q^(K) backs up.

    For the closure ``V_prev = V``; for K = 0 there is no backup and ``V_prev`` is NaN."""
    v_S, q_SA = C.estimate(p, beta, depth)
    if depth is None:
        return v_S, q_SA, v_S
    if depth == 0:
        return v_S, q_SA, np.full(p.n_states, np.nan)
    return v_S, q_SA, C.estimate(p, beta, depth - 1)[0]


def anchor_arithmetic(p: Process, state: int, beta: float = 0.98, depth: int | None = None,
                      sigma_min: float = 0.1, digits: int = 4) -> AnchorArithmetic:
    """The backup arithmetic at anchor ``state`` for the CRBC family member of depth ``depth``.

    Closure and K >= 1:  ``Q(s,a) = beta * sum_x P(x|s,a) V(x)`` with V = V^(K-1) (closure: V).
    K = 0:               ``Q0(s,a)`` = mean of the realised returns ``beta^(T-t+1) R``.
    Then ``V(s) = sum_a mu Q``, ``A = Q - V``, ``sigma^2 = sum_a mu A^2`` and
    ``A_S = [#actions >= 2] A / max(sigma, sigma_min)`` (Eq. 7-10, 13).
    """
    if not 0 <= state < p.n_states:
        raise IndexError(f"anchor id {state} out of range (0..{p.n_states - 1})")
    labels = node_labels(p)
    v_S, q_SA, vprev_S = values_at_depth(p, beta, depth)
    a_SA = q_SA - v_S[p.sa_state]
    a_s_SA, sigma_S = C.normalise(p, a_SA, sigma_min)
    vprev_ext = p.extend(vprev_S)
    g_N = C.realized_returns(p, beta)
    src, nxt, cnt = p.transitions()
    f = lambda x: fmt(x, digits)  # noqa: E731
    lines = []
    pairs = state_pairs(p, state)
    vname = "V" if depth is None else f"V^({depth - 1})" if depth else "V"
    for sa in pairs:
        sa = int(sa)
        act = p.action_names[p.sa_action[sa]]
        sel = src == sa
        succ = tuple(Successor(int(x), labels[x], int(c), c / p.n_sa[sa], float(vprev_ext[x]))
                     for x, c in zip(nxt[sel], cnt[sel], strict=True))
        rets = tuple(float(g) for g in g_N[p.step_sa == sa])
        qname = f"Q({labels[state]},{act})" if depth is None else f"Q^({depth})({labels[state]},{act})"
        if depth == 0:
            body = " + ".join(f(g) for g in rets)
            expr = (f"{qname} = mean of realised returns = ({body}) / {len(rets)} = {f(q_SA[sa])}"
                    if len(rets) > 1 else f"{qname} = realised return {f(rets[0])} = {f(q_SA[sa])}")
        else:
            sym = " + ".join(f"{num(x.p)} × {vname}({x.label})" for x in succ)
            nums = " + ".join(f"{num(x.p)} × {f(x.v)}" for x in succ)
            expr = f"{qname} = {num(beta)} × ({sym}) = {num(beta)} × ({nums}) = {f(q_SA[sa])}"
        lines.append(ActionLine(sa, act, int(p.n_sa[sa]), float(p.mu[sa]), float(q_SA[sa]),
                                float(a_SA[sa]), float(a_s_SA[sa]), succ, expr, rets))
    lab = labels[state]
    k = "" if depth is None else f"^({depth})"
    v_expr = (f"V{k}({lab}) = Σ_a mu(a|{lab}) Q{k}({lab},a) = "
              + " + ".join(f"{num(a.mu)} × {f(a.q)}" for a in lines) + f" = {f(v_S[state])}")
    sig = float(sigma_S[state])
    sig_expr = (f"sigma({lab}) = sqrt(Σ_a mu A²) = sqrt("
                + " + ".join(f"{num(a.mu)} × ({fmt(a.a, digits, True)})²" for a in lines)
                + f") = {f(sig)}")
    gate = bool(p.n_actions[state] >= 2)
    if gate:
        gate_expr = (f"{int(p.n_actions[state])} actions observed ≥ 2: gate open; "
                     f"A_S = A / max(sigma, sigma_min) = A / max({f(sig)}, {num(sigma_min)}) "
                     f"= A / {f(max(sig, sigma_min))}")
    else:
        gate_expr = "only 1 action observed: gate closed, A_S = 0 (nothing to compare it with)"
    return AnchorArithmetic(
        state=state, label=lab, anchor=p.state_anchor[state],
        group=p.group_ids[int(p.state_group[state])], beta=beta, depth=depth, sigma_min=sigma_min,
        n=int(p.n_s[state]), v=float(v_S[state]), sigma=sig, gate=gate, actions=tuple(lines),
        v_expression=v_expr, sigma_expression=sig_expr, gate_expression=gate_expr)


def num(x: float) -> str:
    """A parameter or probability, short: 0.98, 0.25, 0.6667."""
    s = f"{float(x):.4f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"


# --------------------------------------------------------------------------------------------
# the group as tables


@dataclass(frozen=True)
class ProcessTables:
    """The empirical process of one group (Eq. 5) as rows: anchors, pairs (mu), transitions (P)."""

    states: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    transitions: list[dict[str, Any]]


def process_tables(p: Process, group: int = 0) -> ProcessTables:
    """N(s), N(s,a), mu(a|s), N(s,a,x), P(x|s,a) of group ``group``."""
    labels = node_labels(p)
    states = group_states(p, group)
    st_rows = [{"anchor": labels[s], "N(s)": int(p.n_s[s]), "actions": int(p.n_actions[s])}
               for s in states]
    pair_rows, tr_rows = [], []
    src, nxt, cnt = p.transitions()
    for s in states:
        for sa in state_pairs(p, s):
            act = p.action_names[p.sa_action[sa]]
            pair_rows.append({"anchor": labels[s], "action": act, "N(s,a)": int(p.n_sa[sa]),
                              "N(s)": int(p.n_s[s]), "mu(a|s)": float(p.mu[sa])})
            sel = src == sa
            for x, c in zip(nxt[sel], cnt[sel], strict=True):
                tr_rows.append({"anchor": labels[s], "action": act, "successor": labels[x],
                                "N(s,a,x)": int(c), "N(s,a)": int(p.n_sa[sa]),
                                "P(x|s,a)": float(c / p.n_sa[sa])})
    return ProcessTables(st_rows, pair_rows, tr_rows)


def trajectory_table(p: Process, group: int = 0) -> list[dict[str, Any]]:
    """One row per rollout: path, outcome R, score and GRPO's A_G (Eq. 3)."""
    a_g_R = C.group_advantage(p)
    labels = node_labels(p)
    return [{"rollout": int(p.rollout_index[r]), "path": rollout_path(p, r, labels),
             "R": int(p.rollout_success[r]), "score": float(p.rollout_score[r]),
             "A_G": float(a_g_R[r])} for r in group_rollouts(p, group)]


def grpo_pair_spread(p: Process, group: int = 0) -> list[dict[str, Any]]:
    """GRPO's credit of each (anchor, action) occurrence: the A_G of whichever rollout it was in.

    The same pair gets different credits when it sits in rollouts with different outcomes: GRPO
    cannot tell the action apart from what happened after it."""
    a_g_R = C.group_advantage(p)
    labels = node_labels(p)
    rows = []
    for s in group_states(p, group):
        for sa in state_pairs(p, s):
            vals = a_g_R[p.step_rollout[p.step_sa == sa]]
            rows.append({"anchor": labels[s], "action": p.action_names[p.sa_action[sa]],
                         "occurrences": int(len(vals)),
                         "A_G of those rollouts": ", ".join(fmt(v, 3, True) for v in vals),
                         "min": float(vals.min()), "max": float(vals.max())})
    return rows


def step_table(p: Process, group: int = 0, estimator: str = "crbc", **params: Any) -> list[dict[str, Any]]:
    """Per step of group ``group``: anchor, action, successor, V, Q, A = Q - V, A_S, A_G, A_final."""
    cr = compute(estimator, p, **params)
    labels = node_labels(p)
    rows = []
    for r in group_rollouts(p, group):
        for n in range(int(p.rollout_offsets[r]), int(p.rollout_offsets[r + 1])):
            row = {"rollout": int(p.rollout_index[r]), "t": int(p.step_t[n]),
                   "anchor": labels[p.step_state[n]],
                   "action": p.action_names[p.sa_action[p.step_sa[n]]],
                   "next": labels[p.step_next[n]]}
            if cr.value_N is not None:
                row.update({"V": float(cr.value_N[n]), "Q": float(cr.q_N[n]), "A = Q - V": float(cr.credit_N[n])})
            row.update({"A_S": float(cr.step_advantage_N[n]), "A_G": float(cr.group_advantage_R[r]),
                        "A_final": float(cr.advantage_N[n])})
            rows.append(row)
    return rows


def pair_table(p: Process, group: int = 0, beta: float = 0.98, depth: int | None = None,
               sigma_min: float = 0.1) -> list[dict[str, Any]]:
    """Per (anchor, action) of the group at depth K: V(s), Q, A, sigma(s), gate, A_S."""
    v_S, q_SA = C.estimate(p, beta, depth)
    a_SA = q_SA - v_S[p.sa_state]
    a_s_SA, sigma_S = C.normalise(p, a_SA, sigma_min)
    labels = node_labels(p)
    rows = []
    for s in group_states(p, group):
        for sa in state_pairs(p, s):
            rows.append({"anchor": labels[s], "action": p.action_names[p.sa_action[sa]],
                         "mu(a|s)": float(p.mu[sa]), "V(s)": float(v_S[s]), "Q(s,a)": float(q_SA[sa]),
                         "A = Q - V": float(a_SA[sa]), "sigma(s)": float(sigma_S[s]),
                         "gate": bool(p.n_actions[s] >= 2), "A_S": float(a_s_SA[sa])})
    return rows


def depth_table(p: Process, group: int = 0, beta: float = 0.98, k_max: int = 6,
                what: str = "A") -> list[dict[str, Any]]:
    """Rows K = 0..k_max and ∞ (closure); columns: ``V(s)`` per anchor (``what="V"``) or
    ``Q(s,a)`` / ``A(s,a)`` per pair (``what="Q"`` / ``"A"``) of group ``group``."""
    if what not in ("V", "Q", "A"):
        raise ValueError(f"what must be 'V', 'Q' or 'A', got {what!r}")
    sw = C.depth_sweep(p, beta, k_max)
    labels = node_labels(p)
    states = list(group_states(p, group))
    pairs = [int(sa) for s in states for sa in state_pairs(p, s)]

    def row(name: str, v_S: np.ndarray, q_SA: np.ndarray, a_SA: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"K": name}
        if what == "V":
            out.update({f"V({labels[s]})": float(v_S[s]) for s in states})
        else:
            x = q_SA if what == "Q" else a_SA
            out.update({f"{what}({labels[p.sa_state[sa]]},{p.action_names[p.sa_action[sa]]})": float(x[sa])
                        for sa in pairs})
        return out

    rows = [row(str(k), sw.v_KS[k], sw.q_KSA[k], sw.a_KSA[k]) for k in range(k_max + 1)]
    rows.append(row("∞", sw.v_S, sw.q_SA, sw.a_SA))
    return rows


# --------------------------------------------------------------------------------------------
# the linear system of a small group


@dataclass(frozen=True)
class DenseSystem:
    """``(I - beta M) V = b`` of one group as dense arrays, with its solution (Eq. 9).

    ``labels`` (S,), ``m`` (S, S) M(s,s') = sum_a mu(a|s) P(s'|s,a), ``a`` (S, S) = I - beta M,
    ``b`` (S,) = beta * sum_a mu P(z+|s,a), ``v`` (S,) the solution, ``residual`` = ||A V - b||_inf.
    """

    labels: tuple[str, ...]
    beta: float
    m: np.ndarray
    a: np.ndarray
    b: np.ndarray
    v: np.ndarray
    residual: float

    def rows(self, digits: int = 4) -> list[dict[str, str]]:
        """``[I - beta M | b | V]`` as printable rows, one per anchor."""
        out = []
        for i, lab in enumerate(self.labels):
            row = {"": lab}
            row.update({lab2: fmt(self.a[i, j], digits) for j, lab2 in enumerate(self.labels)})
            row["b"] = fmt(self.b[i], digits)
            row["V"] = fmt(self.v[i], digits)
            out.append(row)
        return out


def dense_system(p: Process, group: int = 0, beta: float = 0.98, max_states: int = 40) -> DenseSystem:
    """The system of group ``group`` as dense matrices, for display (refused above ``max_states``)."""
    states = group_states(p, group)
    if len(states) > max_states:
        raise ValueError(f"group has {len(states)} anchors; the dense system is shown up to {max_states}")
    a_sp, b_S = C.system(p, beta)
    sl = slice(states.start, states.stop)
    a = a_sp.toarray()[sl, sl] if p.n_states <= 4 * max_states else a_sp[sl, sl].toarray()
    b = b_S[sl]
    v = C.solve_values(p, beta)[sl]
    m = (np.eye(len(states)) - a) / beta
    labels = tuple(anchor_labels(p)[s] for s in states)
    return DenseSystem(labels, beta, m, a, b, v, float(np.abs(a @ v - b).max(initial=0.0)))


# --------------------------------------------------------------------------------------------
# the shortest-path foil


def foil_table(p: Process, group: int = 0, beta: float = 0.98, gamma_g: float = 0.8) -> list[dict[str, Any]]:
    """Per anchor: visits, the rollouts through it and how many of them succeeded, hops to z+
    and the shortest-path value ``gamma_g^d`` next to the closure value V (CRBC.md section 7)."""
    d = hop_distance(p)
    v_S = C.solve_values(p, beta)
    labels = node_labels(p)
    rows = []
    for s in group_states(p, group):
        through = np.unique(p.step_rollout[p.step_state == s])
        reach = bool(np.isfinite(d[s]))
        rows.append({"anchor": labels[s], "visits N(s)": int(p.n_s[s]),
                     "rollouts through it": int(len(through)),
                     "of which succeeded": int(p.rollout_success[through].sum()),
                     "hops to z+": int(d[s]) if reach else None,
                     f"V_sp = {num(gamma_g)}^hops": float(gamma_g ** d[s]) if reach else 0.0,
                     "V closure": float(v_S[s])})
    return rows


# --------------------------------------------------------------------------------------------
# where estimators disagree


@dataclass(frozen=True)
class Comparison:
    """Two estimators (with fixed extra parameters) whose step credits A_S are compared."""

    name: str
    x: str
    y: str
    x_params: dict[str, Any] = dataclasses.field(default_factory=dict)
    y_params: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def x_label(self) -> str:
        return _est_label(self.x, self.x_params)

    @property
    def y_label(self) -> str:
        return _est_label(self.y, self.y_params)


def _est_label(name: str, params: dict[str, Any]) -> str:
    if name == "crbc" and params.get("depth") is not None:
        return f"crbc K={params['depth']}"
    return name


COMPARISONS: dict[str, Comparison] = {c.name: c for c in (
    Comparison("crbc vs shortest_path", "crbc", "shortest_path"),
    Comparison("crbc vs gigpo", "crbc", "gigpo"),
    Comparison("K = 0 vs closure", "visit_local", "crbc"),
)}

def _params_for(name: str, shared: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    out = get(name).shared(shared)  # the shared parameters the registry says it takes
    out.update(fixed)
    return out


@dataclass(frozen=True)
class Disagreement:
    """Anchors and steps ranked by how much two estimators' step credits A_S differ.

    Per step: ``delta = A_S^x - A_S^y`` (both are normalised per anchor, so they share a scale).
    Per anchor: ``score`` = mean |delta| over the anchor's visits (= sum_a mu(a|s) |mean delta|
    when every occurrence of a pair gets the same credit), ``max |delta|``, and the best action
    under each estimator (highest mean A_S); ``ranks differ`` flags a different best action.
    ``anchors`` and ``steps`` are sorted by disagreement, largest first.
    """

    comparison: Comparison
    anchors: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    pairs: list[dict[str, Any]]


def disagreements(groups: Sequence[RolloutGroup] | Process, comparison: str | Comparison,
                  **shared: Any) -> Disagreement:
    """Rank anchors and steps of ``groups`` (one group, or every group of a file) by the
    disagreement of two estimators. ``shared`` are the crbc parameters (beta, depth, sigma_min);
    each estimator takes the ones it knows."""
    cmp_ = COMPARISONS[comparison] if isinstance(comparison, str) else comparison
    p = groups if isinstance(groups, Process) else merge(groups)
    cx = compute(cmp_.x, p, **_params_for(cmp_.x, shared, cmp_.x_params))
    cy = compute(cmp_.y, p, **_params_for(cmp_.y, shared, cmp_.y_params))
    ax_N, ay_N = cx.step_advantage_N, cy.step_advantage_N
    d_N = ax_N - ay_N
    labels = node_labels(p)
    n_sa = p.n_sa
    mx_SA = np.bincount(p.step_sa, weights=ax_N, minlength=len(n_sa)) / n_sa
    my_SA = np.bincount(p.step_sa, weights=ay_N, minlength=len(n_sa)) / n_sa
    score_S = np.bincount(p.step_state, weights=np.abs(d_N), minlength=p.n_states) / p.n_s
    max_S = np.zeros(p.n_states)
    np.maximum.at(max_S, p.step_state, np.abs(d_N))
    xl, yl = cmp_.x_label, cmp_.y_label
    anchors, pairs = [], []
    for s in range(p.n_states):
        sas = state_pairs(p, s)
        acts = [p.action_names[p.sa_action[sa]] for sa in sas]
        bx = acts[int(np.argmax(mx_SA[sas]))]
        by = acts[int(np.argmax(my_SA[sas]))]
        tie_x = len(sas) > 1 and np.ptp(mx_SA[sas]) < 1e-9  # a single action is its own best
        tie_y = len(sas) > 1 and np.ptp(my_SA[sas]) < 1e-9
        anchors.append({
            "group": p.group_ids[int(p.state_group[s])], "anchor": labels[s], "state": s,
            "visits": int(p.n_s[s]), "actions": len(sas),
            "disagreement": float(score_S[s]), "max |Δ|": float(max_S[s]),
            f"best by {xl}": "(tie)" if tie_x else bx, f"best by {yl}": "(tie)" if tie_y else by,
            "ranks differ": bool(len(sas) > 1 and (tie_x != tie_y or (not tie_x and bx != by))),
        })
        for sa in sas:
            pairs.append({"group": p.group_ids[int(p.state_group[s])], "anchor": labels[s], "state": s,
                          "action": p.action_names[p.sa_action[sa]], "N(s,a)": int(n_sa[sa]),
                          f"A_S {xl}": float(mx_SA[sa]), f"A_S {yl}": float(my_SA[sa]),
                          "Δ": float(mx_SA[sa] - my_SA[sa])})
    steps = []
    for n in range(p.n_steps):
        r = int(p.step_rollout[n])
        steps.append({"group": p.group_ids[int(p.rollout_group[r])], "rollout": int(p.rollout_index[r]),
                      "t": int(p.step_t[n]), "anchor": labels[p.step_state[n]], "state": int(p.step_state[n]),
                      "action": p.action_names[p.sa_action[p.step_sa[n]]],
                      f"A_S {xl}": float(ax_N[n]), f"A_S {yl}": float(ay_N[n]), "Δ": float(d_N[n])})
    anchors.sort(key=lambda r: (-r["disagreement"], -r["visits"], r["state"]))
    pairs.sort(key=lambda r: (-abs(r["Δ"]), r["state"]))
    steps.sort(key=lambda r: (-abs(r["Δ"]), r["group"], r["rollout"], r["t"]))
    return Disagreement(cmp_, anchors, steps, pairs)


def anchors_by_visits(p: Process, group: int | None = None) -> list[dict[str, Any]]:
    """Anchors (of one group, or all) sorted by visits: label, visits, actions, group."""
    labels = anchor_labels(p)
    states = range(p.n_states) if group is None else group_states(p, group)
    rows = [{"group": p.group_ids[int(p.state_group[s])], "anchor": labels[s], "state": s,
             "visits": int(p.n_s[s]), "actions": int(p.n_actions[s])} for s in states]
    rows.sort(key=lambda r: (-r["visits"], -r["actions"], r["state"]))
    return rows


# --------------------------------------------------------------------------------------------
# editing a group ("what if")


def _replace_rollout(group: RolloutGroup, i: int, new: Rollout) -> RolloutGroup:
    if not 0 <= i < len(group.rollouts):
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    rs = list(group.rollouts)
    rs[i] = new
    return RolloutGroup(group.group, tuple(rs))


def flip_outcome(group: RolloutGroup, i: int) -> RolloutGroup:
    """The group with the outcome of its ``i``-th rollout (position, not index) flipped.

    A success becomes a plain failure; a failure (truncated or not) becomes a success that was not
    truncated. The flipped rollout's ``score`` is cleared, so A_G uses the default 1 / 0."""
    r = group.rollouts[i] if 0 <= i < len(group.rollouts) else None
    if r is None:
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    ok = not (r.success and not r.truncated)
    return _replace_rollout(group, i, dataclasses.replace(r, success=ok, truncated=False, score=None))


def edit_step(group: RolloutGroup, i: int, t: int, anchor: str | None = None,
              action: str | None = None) -> RolloutGroup:
    """The group with step ``t`` (1-based) of rollout position ``i`` given a new anchor and/or action."""
    r = group.rollouts[i] if 0 <= i < len(group.rollouts) else None
    if r is None:
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    if not 1 <= t <= len(r.steps):
        raise IndexError(f"step {t} out of range (1..{len(r.steps)})")
    for name, val in (("anchor", anchor), ("action", action)):
        if val is not None and (not isinstance(val, str) or not val.strip()):
            raise ValueError(f"{name} must be a non-empty string")
    steps = list(r.steps)
    old = steps[t - 1]
    steps[t - 1] = Step(old.anchor if anchor is None else anchor, old.action if action is None else action,
                        old.obs, old.response, old.reward)
    return _replace_rollout(group, i, dataclasses.replace(r, steps=tuple(steps)))


def remove_rollout(group: RolloutGroup, i: int) -> RolloutGroup:
    """The group without its ``i``-th rollout (a group keeps at least one)."""
    if len(group.rollouts) <= 1:
        raise ValueError("a group needs at least one rollout")
    if not 0 <= i < len(group.rollouts):
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    return RolloutGroup(group.group, group.rollouts[:i] + group.rollouts[i + 1:])


def duplicate_rollout(group: RolloutGroup, i: int) -> RolloutGroup:
    """The group with a copy of its ``i``-th rollout appended (with a fresh rollout index)."""
    if not 0 <= i < len(group.rollouts):
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    new_idx = max(r.rollout for r in group.rollouts) + 1
    return RolloutGroup(group.group, group.rollouts + (dataclasses.replace(group.rollouts[i], rollout=new_idx),))
