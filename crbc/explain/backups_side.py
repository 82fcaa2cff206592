"""One graph, different backups: each method's value at one anchor as one line of arithmetic.

docs/MATH.md section 12: on one group, at anchor s, every state-graph method backs a value up over the
same merged graph and scores the actions observed at s. Here each method's rule is written out
with the group's numbers, and its score of each action is read from its own definition:

- ``crbc`` (the fixed point, Eq. 7-9): ``V(s) = sum_a mu(a|s) Q(s,a)``,
  ``Q(s,a) = beta * sum_x P(x|s,a) V(x)``; score ``A(s,a) = Q - V``.
- ``rewardflow`` (a maximum, section 11): ``V(s) = max(r(s), gamma * max_{s->y} V(y))``;
  score: the mean over the pair's steps of ``d = V(next) - V(s)``.
- ``shortest_path`` (GraphGPO's idea, section 7): ``d(s) = 1 + min_{s->x} d(x)``,
  ``V_sp(s) = gamma_g^d(s)``; score: the mean step return ``10 gamma_g^d(next)`` of the pair
  minus the anchor's mean.
- ``gigpo`` (visit-local returns, section 7): ``V(s)`` = mean discounted return ``G`` of the
  anchor's steps; score: mean ``G`` of the pair minus ``V(s)``.
- ``graphgpo`` (section 12.1): ``d(s)`` as above but ``D + 1`` where z+ cannot be reached; score:
  the pair's mean ``10 gamma^d(next)`` minus the anchor's mean.
- ``hgpo`` (12.2): history clusters; score: the pair's mean aggregated step advantage ``A_S``.
- ``g2po`` (12.3): ``V(x)`` = mean return of the anchor's steps; score: the pair's mean
  ``r + gamma V(next)`` minus ``V(s)`` (its TD error).
  The three are shown when registered (crbc/estimators/graph_methods.py).

A method ranks the actions *right* when it orders the most pairs of actions as the reference does
(:func:`pairs_agreeing`, ties equal within ``TIE``; with two actions: the same order): the exact
truth's anchor-level ``A(s,a)`` (section 9) where it exists, else the closure's (which is then
not a candidate). ``right`` lists every method with that most pairs, none if it is 0. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.estimators import registry, result_files, worker_job
from crbc.estimators.baselines import step_rewards
from crbc.estimators.rewardflow import propagate
from crbc.explain.anchor_names import node_labels, pair_steps, state_pairs
from crbc.explain.arithmetic import anchor_arithmetic
from crbc.explain.table_rows import joined
from crbc.process import Process

__all__ = [
    "available_methods", "choosable_anchors", "compared_pairs", "GRAPH_METHODS", "informative_anchor", "MAX_COMPARED", "MethodLine",
    "pairs_agreeing", "RULES", "same_order", "side_by_side", "SideBySide", "TIE"
]

TIE = 1e-9
#: the most actions compared at one anchor: the most visited (an upload's anchor may see 20,000)
MAX_COMPARED = 30
GRAPH_METHODS = ("graphgpo", "hgpo", "g2po")  # written on the `graph` branch; used when registered
RULES = {"crbc": "the fixed point (average over what the group did)",
         "rewardflow": "a maximum over successors",
         "shortest_path": "the shortest path to success",
         "gigpo": "the anchor's own returns (no backup)",
         "graphgpo": "shortest-path returns, normalised",
         "hgpo": "history-cluster means",
         "g2po": "one-step TD on group-mean values"}


@dataclass(frozen=True)
class MethodLine:
    """One method at one anchor: ``value_line`` its value of the anchor from its successors',
    ``action_lines`` one line per action, ``scores`` per action (the method's own units)."""

    method: str
    rule: str
    value_line: str
    action_lines: tuple[str, ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class SideBySide:
    """Every method at anchor ``state``; ``truth`` (per action, or None) the exact anchor-level
    A(s,a); ``reference`` names what ``right`` was judged against ("the truth" or "the closure");
    ``right``: the methods that order the most pairs of actions as the reference does;
    ``n_actions``: the actions observed at the anchor, of which ``actions`` are the compared ones
    (all of them, or the :data:`MAX_COMPARED` most visited)."""

    state: int
    label: str
    actions: tuple[str, ...]
    lines: tuple[MethodLine, ...]
    truth: tuple[float, ...] | None
    reference: str
    right: tuple[str, ...]
    n_actions: int

    @property
    def reference_scores(self) -> tuple[float, ...]:
        """The scores ``right`` is judged against: the truth's, else the closure's (crbc's line)."""
        return self.truth if self.truth is not None else self.lines[0].scores

    def rows(self, name=str) -> list[dict]:
        """The comparison table: the reference, then one row per method: its score of each action
        (columns ``name(action)``), its best action and ``k/n`` pairs ordered like the reference."""
        ref = self.reference_scores
        out = [{"method": "truth A(s,a)" if self.truth is not None else "closure A(s,a)",
                **{name(a): float(v) for a, v in zip(self.actions, ref, strict=True)},
                "best action": self.best(ref), "pairs ordered like it": "—"}]
        for m in self.lines:
            out.append({"method": m.method, **{name(a): float(v) for a, v in zip(self.actions, m.scores, strict=True)},
                        "best action": self.best(m.scores),
                        "pairs ordered like it": "{}/{}".format(*pairs_agreeing(m.scores, ref))})
        return out

    @property
    def compared_note(self) -> str:
        """"" when every observed action is compared, else which ones are."""
        if self.n_actions <= len(self.actions):
            return ""
        return (f"This anchor saw {self.n_actions:,} actions; the {len(self.actions)} most visited are compared "
                "(crbc's V still sums over all of them).")

    def best(self, scores) -> str:
        """The action ranked first by ``scores`` ("(tie)" when two share the top)."""
        s = np.asarray(scores, dtype=float)
        top = np.flatnonzero(s >= s.max() - TIE)
        return self.actions[int(top[0])] if len(top) == 1 else "(tie)"


def same_order(x, y, tie: float = TIE) -> bool:
    """Whether ``x`` and ``y`` order every pair of positions alike: sign(x_i - x_j) = sign(y_i - y_j)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    dx, dy = x[:, None] - x[None, :], y[:, None] - y[None, :]
    sx = np.where(np.abs(dx) <= tie, 0, np.sign(dx))
    sy = np.where(np.abs(dy) <= tie, 0, np.sign(dy))
    return bool(np.array_equal(sx, sy))


def pairs_agreeing(x, y, tie: float = TIE) -> tuple[int, int]:
    """``(k, n)``: of the ``n`` pairs of positions i < j, the ``k`` that ``x`` orders as ``y`` does
    (sign(x_i - x_j) = sign(y_i - y_j), ties within ``tie`` counting as a sign of 0)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(len(x), k=1)
    dx, dy = x[i] - x[j], y[i] - y[j]
    sx = np.where(np.abs(dx) <= tie, 0, np.sign(dx))
    sy = np.where(np.abs(dy) <= tie, 0, np.sign(dy))
    return int((sx == sy).sum()), int(len(i))


def choosable_anchors(p: Process) -> list[int]:
    """Anchors where two or more actions were observed, most visited first."""
    keep = np.flatnonzero(p.n_actions >= 2)
    return [int(s) for s in keep[np.argsort(-p.n_s[keep], kind="stable")]]


def compared_pairs(p: Process, s: int) -> np.ndarray:
    """The pair ids compared at anchor ``s``, ascending (the order actions were first seen): every
    observed one, or the :data:`MAX_COMPARED` most visited (ties: first seen first)."""
    pairs = state_pairs(p, s)
    if len(pairs) <= MAX_COMPARED:
        return pairs
    top = np.argsort(-p.n_sa[pairs], kind="stable")[:MAX_COMPARED]
    return np.sort(pairs[top])


def informative_anchor(p: Process, credit_SA: np.ndarray) -> int | None:
    """The most visited anchor with two or more actions whose reference credits (``credit_SA``,
    per pair: the closure's A(s,a)) tell its actions apart, else the most visited one with two or
    more actions; None when there is none."""
    a = np.asarray(credit_SA, dtype=float)
    hi, lo = np.full(p.n_states, -np.inf), np.full(p.n_states, np.inf)
    np.maximum.at(hi, p.sa_state, a)  # a NaN makes its anchor's spread NaN: never "apart"
    np.minimum.at(lo, p.sa_state, a)
    apart = hi - lo > TIE
    anchors = choosable_anchors(p)
    return next((s for s in anchors if apart[s]), anchors[0] if anchors else None)


def _pair_mean(x_N: np.ndarray, steps: list[np.ndarray]) -> np.ndarray:
    """Mean of ``x_N`` over each pair's steps (``steps``: :func:`pair_steps`), NaN ignored, 0 for
    a pair with no finite value."""
    x_N = np.asarray(x_N, dtype=float)
    out = []
    for idx in steps:
        v = x_N[idx]
        v = v[np.isfinite(v)]
        out.append(float(v.mean()) if len(v) else 0.0)
    return np.array(out)


@dataclass(frozen=True)
class _At:
    """Anchor ``s`` of ``p`` as the methods read it: its labels, compared pairs and their steps."""

    p: Process
    s: int
    labels: tuple[str, ...]
    pairs: np.ndarray
    steps: list[np.ndarray]

    @property
    def lab(self) -> str:
        return self.labels[self.s]

    @property
    def acts(self) -> list[str]:
        p = self.p
        return [p.action_names[p.sa_action[sa]] for sa in self.pairs.tolist()]

    def successors(self, next_N: np.ndarray) -> list[int]:
        """The anchor's distinct successors under ``next_N`` (ascending; itself and cuts left out)."""
        nxt = next_N[(self.p.step_state == self.s) & (next_N >= 0)]
        return np.unique(nxt[nxt != self.s]).tolist()

    def mean(self, x_N: np.ndarray) -> np.ndarray:
        return _pair_mean(x_N, self.steps)


def _crbc(at: _At, beta, sigma_min) -> MethodLine:
    ar = anchor_arithmetic(at.p, at.s, beta=beta, depth=None, sigma_min=sigma_min)
    keep = set(at.pairs.tolist())
    acts = [a for a in ar.actions if a.pair in keep]
    return MethodLine("crbc", RULES["crbc"], ar.v_expression,
                      tuple(f"{a.q_expression};  A = {a.a:+.4f}" for a in acts), tuple(a.a for a in acts))


def _rewardflow(at: _At, gamma) -> MethodLine:
    p, s, labels, lab = at.p, at.s, at.labels, at.lab
    prop = propagate(p, step_rewards(p), gamma)
    v_X = prop.node_values(int(p.state_group[s]))
    succ = at.successors(prop.next_N)
    names = joined(succ, lambda y: f"V({labels[y]})", ", ") or "none"
    vals = joined(succ, lambda y: f"{v_X[y]:.2f}", ", ") or "0"
    best = float(v_X[succ].max()) if succ else 0.0
    line = (f"V_rf({lab}) = max(r({lab}), {gamma:g} × max({names})) = max({prop.r_S[s]:.2f}, {gamma:g} × "
            f"max({vals})) = max({prop.r_S[s]:.2f}, {gamma * best:.4f}) = {v_X[s]:.4f}   "
            "(reward scale: 10 per win)")
    d = at.mean(prop.d_N)
    nexts = [joined(sorted({labels[x] if x >= 0 else "(cut)" for x in np.unique(prop.next_N[idx]).tolist()}),
                    str, ", ", 6) for idx in at.steps]
    return MethodLine("rewardflow", RULES["rewardflow"], line,
                      tuple(f"d({lab},{a}) = mean of V(next) − V({lab}) over its steps (next: {n}) = {x:+.4f}"
                            for a, n, x in zip(at.acts, nexts, d, strict=True)), tuple(d))


def _shortest(at: _At, gamma_g) -> MethodLine:
    p, s, labels, lab = at.p, at.s, at.labels, at.lab
    d = p.hops([p.z_plus])[0]

    def hop(x) -> str:
        return "∞" if not np.isfinite(d[x]) else str(int(d[x]))

    parts = joined(at.successors(p.step_next), lambda x: f"d({labels[x]}) = {hop(x)}", ", ") or "none"
    v_sp = gamma_g ** d[s] if np.isfinite(d[s]) else 0.0
    line = f"d({lab}) = 1 + min({parts}) = {hop(s)};  V_sp({lab}) = {gamma_g:g}^{hop(s)} = {v_sp:.4f}"
    ret_N = np.where(np.isfinite(d[p.step_next]), 10.0 * gamma_g ** np.where(np.isfinite(d[p.step_next]),
                                                                               d[p.step_next], 0), 0.0)
    r = at.mean(ret_N)
    mean_s = float(ret_N[p.step_state == s].mean())
    return MethodLine("shortest_path", RULES["shortest_path"], line,
                      tuple(f"R({lab},{a}) = mean 10 × {gamma_g:g}^d(next) = {x:.4f};  minus the anchor's "
                            f"mean {mean_s:.4f} = {x - mean_s:+.4f}" for a, x in zip(at.acts, r, strict=True)),
                      tuple(r - mean_s))


def _gigpo(at: _At) -> MethodLine:
    p, s, lab = at.p, at.s, at.lab
    cr = registry.compute("gigpo", p)
    g = at.mean(cr.q_N)
    v = float(np.asarray(cr.q_N, dtype=float)[p.step_state == s].mean())
    return MethodLine("gigpo", RULES["gigpo"],
                      f"V({lab}) = mean discounted return G of its {int(p.n_s[s])} visits = {v:.4f}   "
                      "(no successor's value is used)",
                      tuple(f"mean G({lab},{a}) − V({lab}) = {x:.4f} − {v:.4f} = {x - v:+.4f}"
                            for a, x in zip(at.acts, g, strict=True)), tuple(g - v))


def _no_path(p: Process, s: int) -> str:
    """GraphGPO's note on ``d(s)``: only where no observed path leads from ``s`` to success."""
    return "" if np.isfinite(p.hops([p.z_plus])[0, s]) else " (no path to success: D + 1)"


def _graphgpo(at: _At, gamma: float, normalize: bool) -> MethodLine:
    from crbc.estimators.graph_methods import graphgpo_returns

    p, s, labels, lab = at.p, at.s, at.labels, at.lab
    gr = graphgpo_returns(p, gamma, normalize)
    g = int(p.state_group[s])
    parts = joined(at.successors(p.step_next), lambda x: f"d({labels[x]}) = {gr.node_distance(x, g):g}", ", ")
    r = at.mean(gr.r_N)
    mean_s = float(gr.r_N[p.step_state == s].mean())
    return MethodLine("graphgpo", RULES["graphgpo"],
                      f"d({lab}) = 1 + min({parts or 'none'}) = {gr.d_S[s]:g}{_no_path(p, s)};  value "
                      f"10 × {gamma:g}^d = {gr.value_S[s]:.4f}",
                      tuple(f"R({lab},{a}) = mean 10 × {gamma:g}^d(next) = {x:.4f};  minus the anchor's "
                            f"mean {mean_s:.4f} = {x - mean_s:+.4f}" for a, x in zip(at.acts, r, strict=True)),
                      tuple(r - mean_s))


def _g2po(at: _At, cr, gamma: float) -> MethodLine:
    p, s, labels, lab = at.p, at.s, at.labels, at.lab
    value_N = np.asarray(cr.value_N, dtype=float)
    v = float(value_N[p.step_state == s][0])
    q = at.mean(cr.q_N)
    succ = at.successors(p.step_next)
    states, first = np.unique(p.step_state, return_index=True)  # each anchor's first step
    v_of = dict(zip(states.tolist(), value_N[first].tolist(), strict=True))
    vals = joined(succ, lambda x: f"V({labels[x]}) = {v_of.get(x, 0.0) if x < p.n_states else 0.0:.4f}", ", ")
    return MethodLine("g2po", RULES["g2po"],
                      f"V({lab}) = mean return G of its {int(p.n_s[s])} visits = {v:.4f};  successors: {vals}",
                      tuple(f"δ({lab},{a}) = mean(r + {gamma:g} × V(next)) − V({lab}) = {x:.4f} − {v:.4f} = "
                            f"{x - v:+.4f}" for a, x in zip(at.acts, q, strict=True)), tuple(q - v))


def _graph_method(at: _At, name) -> MethodLine:
    """graphgpo / hgpo / g2po at the anchor, from their registered credits (docs/MATH.md section 12)."""
    est = registry.get(name)
    cfg = est.config()
    gamma = float(getattr(cfg, "gamma", 0.95))
    if name == "graphgpo":
        return _graphgpo(at, gamma, bool(getattr(cfg, "normalize_distance", False)))
    cr = est(at.p, cfg)
    if name == "g2po":
        return _g2po(at, cr, gamma)
    x = at.mean(cr.step_advantage_N)
    h = int(getattr(cfg, "history_length", 0))
    return MethodLine(name, RULES[name],
                      f"clusters: the steps whose last k anchors (k = 1..{h + 1}) equal this step's; in each, "
                      "a = G − the cluster's mean return; A_S = the (k+1)^alpha-weighted mean of a step's a",
                      tuple(f"mean A_S({at.lab},{a}) = {v:+.4f}" for a, v in zip(at.acts, x, strict=True)), tuple(x))


def available_methods() -> tuple[str, ...]:
    """The methods shown: the four always there, then the graph methods that are registered."""
    names = set(registry.names())
    return ("crbc", "rewardflow", "shortest_path", "gigpo") + tuple(m for m in GRAPH_METHODS if m in names)


def side_by_side(p: Process, state: int, beta: float = 0.98, sigma_min: float = 0.1,
                 anchor_advantage_N: np.ndarray | None = None, rf_gamma: float = 0.9,
                 gamma_g: float = 0.8) -> SideBySide:
    """Every available method at anchor ``state`` of ``p``; ``anchor_advantage_N`` (N,): the exact
    anchor-level A(s,a) of each step (section 9), when the group has a truth."""
    if not 0 <= state < p.n_states:
        raise IndexError(f"anchor id {state} out of range (0..{p.n_states - 1})")
    pairs = compared_pairs(p, state)
    at = _At(p, state, node_labels(p), pairs, pair_steps(p, state, pairs))
    lines = [_crbc(at, beta, sigma_min), _rewardflow(at, rf_gamma), _shortest(at, gamma_g), _gigpo(at)]
    lines += [_graph_method(at, m) for m in available_methods()[4:]]
    truth = None if anchor_advantage_N is None else tuple(at.mean(anchor_advantage_N).tolist())
    ref = truth if truth is not None else lines[0].scores
    agree = {m.method: pairs_agreeing(m.scores, ref)[0] for m in lines}
    judged = [m.method for m in lines if truth is not None or m.method != "crbc"]
    top = max((agree[m] for m in judged), default=0)
    right = tuple(m for m in judged if agree[m] == top and top > 0)
    return SideBySide(state, at.lab, tuple(at.acts), tuple(lines), truth,
                      "the truth" if truth is not None else "the closure", right, int(p.n_actions[state]))


def _compute_in_worker(groups, params) -> SideBySide:
    """The bounded worker's computation (:class:`crbc.estimators.worker_job.EstimateJob`)."""
    from crbc.process import merge

    return side_by_side(merge(groups), int(params["state"]), beta=float(params["beta"]),
                        sigma_min=float(params["sigma_min"]))


def _command(params) -> list[str]:
    """The report that writes the same comparison (``crbc report FILE --compare-at S``)."""
    return ["report", "FILE", "-o", "report.html", "--group", str(params.get("group", 0)),
            "--compare-at", str(params["state"]), "--beta", str(params.get("beta", 0.98)),
            "--sigma-min", str(params.get("sigma_min", 0.1))]


result_files.register(SideBySide, MethodLine)
worker_job.register_computation(worker_job.Computation("side_by_side", _compute_in_worker, _command))
