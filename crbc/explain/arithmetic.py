"""Explain one anchor: its backup arithmetic at any depth, and the dense system of a small group.

V, Q, A, sigma and A_S are read from the ``crbc`` :class:`~crbc.estimators.registry.Credits` at the
chosen depth (never recomputed here); this module writes them out as formulas with the numbers
substituted, for the inspector and the lesson. numpy only: no streamlit. Related:
:mod:`crbc.explain.lesson_tables` (the group as tables), :mod:`crbc.explain.disagreements` (where estimators disagree),
:mod:`crbc.explain.what_if` (what-if edits of a group), :mod:`crbc.explain.anchor_names` (how anchors are named),
:mod:`crbc.explain.table_rows` (typed rows, ``fmt``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import crbc.estimators.closure as C
from crbc.estimators.registry import Credits, compute_cached
from crbc.explain.anchor_names import anchor_labels, group_states, node_labels, pair_steps, state_pairs
from crbc.explain.table_rows import col, fmt, joined, num
from crbc.process import Process

__all__ = [
    "ActionLine", "ActionRow", "anchor_arithmetic", "AnchorArithmetic", "dense_system", "DenseSystem",
    "Successor", "SuccessorRow"
]


def _crbc(p: Process, beta: float, depth: int | None, sigma_min: float, cache: dict | None = None) -> Credits:
    return compute_cached(cache, "crbc", p, beta=beta, depth=depth, sigma_min=sigma_min)


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

    def rows(self) -> list[ActionRow]:
        """One row per action: action, N(s,a), mu, Q, A, A_S."""
        return [ActionRow(a.action, a.n, a.mu, a.q, a.a, a.a_s) for a in self.actions]

    def successor_rows(self) -> list[SuccessorRow]:
        """One row per (action, successor): N(s,a,x), P(x|s,a), V(x) (None at K = 0: no backup)."""
        return [SuccessorRow(a.action, x.label, x.n, x.p, None if math.isnan(x.v) else x.v)
                for a in self.actions for x in a.successors]

    def action(self, name: str) -> ActionLine:
        for a in self.actions:
            if a.action == name:
                return a
        raise KeyError(f"action {name!r} not observed at {self.label}")


@dataclass(frozen=True)
class ActionRow:
    """One observed action at an anchor (a table row of :meth:`AnchorArithmetic.rows`)."""

    action: str = col()
    n: int = col("N(s,a)")
    mu: float = col("mu(a|s)")
    q: float = col("Q(s,a)")
    a: float = col("A(s,a)")
    a_s: float = col("A_S(s,a)")


@dataclass(frozen=True)
class SuccessorRow:
    """One observed successor of an (anchor, action) (:meth:`AnchorArithmetic.successor_rows`)."""

    action: str = col()
    successor: str = col()
    n: int = col("N(s,a,x)")
    p: float = col("P(x|s,a)")
    v: float | None = col("V(x)")


def _successors_by_pair(p: Process, pairs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each pair's observed ``(next[k], count[k])`` (:meth:`crbc.process.Process.transitions`,
    sorted by pair then next): the ``src == sa`` rows, cut by one binary search per pair."""
    src, nxt, cnt = p.transitions()
    lo, hi = np.searchsorted(src, pairs, "left"), np.searchsorted(src, pairs, "right")
    return [(nxt[a:b], cnt[a:b]) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


def anchor_arithmetic(p: Process, state: int, beta: float = 0.98, depth: int | None = None,
                      sigma_min: float = 0.1, digits: int = 4, cache: dict | None = None) -> AnchorArithmetic:
    """The backup arithmetic at anchor ``state`` for the CRBC family member of depth ``depth``.

    Closure and K >= 1:  ``Q(s,a) = beta * sum_x P(x|s,a) V(x)`` with V = V^(K-1) (closure: V).
    K = 0:               ``Q0(s,a)`` = mean of the realised returns ``beta^(T-t+1) R``.
    Then ``V(s) = sum_a mu Q``, ``A = Q - V``, ``sigma^2 = sum_a mu A^2`` and
    ``A_S = [#actions >= 2] A / max(sigma, sigma_min)`` (Eq. 7-10, 13); all read from the
    ``crbc`` credits at that depth (computed once per ``cache``, a dict the caller owns:
    :func:`crbc.estimators.registry.compute_cached`; a report explains several anchors of one
    group with one closure solve).
    """
    if not 0 <= state < p.n_states:
        raise IndexError(f"anchor id {state} out of range (0..{p.n_states - 1})")
    labels = node_labels(p)
    cr = _crbc(p, beta, depth, sigma_min, cache)
    v_S, q_SA, a_SA, a_s_SA, sigma_S = cr.value_S, cr.q_SA, cr.credit_SA, cr.step_advantage_SA, cr.sigma_S
    # the V that Q backs up: V itself at the closure, V^(K-1) at depth K >= 1, none at K = 0
    vprev_S = (v_S if depth is None else np.full(p.n_states, np.nan) if depth == 0
               else _crbc(p, beta, depth - 1, sigma_min, cache).value_S)
    vprev_ext = p.extend(vprev_S)
    g_N = C.realized_returns(p, beta)
    pairs = state_pairs(p, state)
    steps_of, succ_of = pair_steps(p, state, pairs), _successors_by_pair(p, pairs)
    f = lambda x: fmt(x, digits)  # noqa: E731
    lines = []
    vname = "V" if depth is None else f"V^({depth - 1})" if depth else "V"
    for i, sa in enumerate(pairs.tolist()):
        act = p.action_names[p.sa_action[sa]]
        nxt, cnt = succ_of[i]
        succ = tuple(Successor(x, labels[x], c, c / p.n_sa[sa], float(vprev_ext[x]))
                     for x, c in zip(nxt.tolist(), cnt.tolist(), strict=True))
        rets = tuple(g_N[steps_of[i]].tolist())
        qname = f"Q({labels[state]},{act})" if depth is None else f"Q^({depth})({labels[state]},{act})"
        if depth == 0:
            body = joined(rets, f)
            expr = (f"{qname} = mean of realised returns = ({body}) / {len(rets)} = {f(q_SA[sa])}"
                    if len(rets) > 1 else f"{qname} = realised return {f(rets[0])} = {f(q_SA[sa])}")
        else:
            sym = joined(succ, lambda x: f"{num(x.p)} × {vname}({x.label})")
            nums = joined(succ, lambda x: f"{num(x.p)} × {f(x.v)}")
            expr = f"{qname} = {num(beta)} × ({sym}) = {num(beta)} × ({nums}) = {f(q_SA[sa])}"
        lines.append(ActionLine(sa, act, int(p.n_sa[sa]), float(p.mu[sa]), float(q_SA[sa]),
                                float(a_SA[sa]), float(a_s_SA[sa]), succ, expr, rets))
    lab = labels[state]
    k = "" if depth is None else f"^({depth})"
    v_expr = (f"V{k}({lab}) = Σ_a mu(a|{lab}) Q{k}({lab},a) = "
              + joined(lines, lambda a: f"{num(a.mu)} × {f(a.q)}") + f" = {f(v_S[state])}")
    sig = float(sigma_S[state])
    sig_expr = (f"sigma({lab}) = sqrt(Σ_a mu A²) = sqrt("
                + joined(lines, lambda a: f"{num(a.mu)} × ({fmt(a.a, digits, True)})²")
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
    v = compute_cached(None, "crbc", p, beta=beta).value_S[sl]
    m = (np.eye(len(states)) - a) / beta
    labels = tuple(anchor_labels(p)[s] for s in states)
    return DenseSystem(labels, beta, m, a, b, v, float(np.abs(a @ v - b).max(initial=0.0)))


