"""How sure is a credit: bootstrap intervals and evidence classes of step credits (docs/MATH.md s. 10).

For a batch of groups, an estimator and its parameters, B resamples of every group are computed
as one batch (:mod:`crbc.estimators.resample`): the CRBC family (``crbc`` at any depth,
``visit_local``) on weighted processes with one batched block solve; the step-return estimators
(``gigpo``, ``shortest_path``, and any registered estimator without a fast path) as one process
of B x G resampled groups (``percentile``) or with weighted step terms (``bayes``).

Each resample b gives every (anchor, action) pair that occurs in it a credit

    c_b(s,a) = Q_b(s,a) - V_b(s)                 (estimators with a value: ``credit``)
    c_b(s,a) = mean of A_S over the pair's steps   (``step_advantage``: gigpo, shortest_path)

(|c_b| <= 1e-12 is snapped to 0: the rounding of a solve, e.g. an anchor with one action left).
Interval of a pair: the central ``level`` percentile interval of c_b over the resamples where the
pair occurs, none if it occurs in fewer than half of them. Evidence of a step (of its pair):

    none    the credit is 0 by construction on the group: one action observed at the anchor, or
            no observed continuation from it (the anchors and boundaries it reaches on the
            merged graph) reaches z+; the estimator's credit there is exactly 0. (An anchor from
            which every continuation succeeds is not ``none``: with beta < 1 its actions differ
            by how soon they succeed.) For a step-advantage signal (gigpo, shortest_path):
            no path to z+ and the signal exactly 0 on every step of the pair
    sure    the interval excludes 0 (lo > 0 or hi < 0)
    unsure  otherwise (including a pair without an interval)

An estimator without a step credit (``grpo``) gives no intervals and ``none`` everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.estimators import registry
from crbc.estimators import resample as RS
from crbc.estimators.credits import Credits
from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = [
    "ALIASES", "calibrated_applies", "check_args", "credit_intervals", "CreditIntervals", "DEFAULT_B",
    "DEFAULT_LEVEL", "DEFAULT_METHOD", "default_method", "EVIDENCE", "FAST_PATHS", "MAX_CELLS",
    "METHODS", "pair_table", "percentile_interval", "resolve_method", "signal_of", "SNAP",
    "structural_none", "summarise"
]

#: interval methods: ``calibrated`` (the default for crbc's closure; docs/MATH.md section 10.1),
#: ``range`` (the percentile range of rollout resamples: a resampling range, not a calibrated
#: interval) and ``bayes`` (the percentile range of the Bayesian bootstrap of transitions)
METHODS = ("calibrated", "range", "bayes")
ALIASES = {"percentile": "range"}  #: the range's former name, still accepted
EVIDENCE = ("sure", "unsure", "none")
SNAP = 1e-12
DEFAULT_B, DEFAULT_LEVEL, DEFAULT_METHOD = 200, 0.9, "calibrated"


def default_method(estimator: str, params: dict[str, Any] | None = None) -> str:
    """``calibrated`` where it was fitted (crbc's closure, depth None), else ``range``."""
    return "calibrated" if calibrated_applies(estimator, params or {}) else "range"


def calibrated_applies(estimator: str, params: dict[str, Any]) -> bool:
    """Whether the registry says the calibrated interval was fitted for ``estimator`` with ``params``."""
    return registry.get(estimator).calibrated(params)


def resolve_method(method: str | None, estimator: str, params: dict[str, Any]) -> str:
    """The method to run: None gives :func:`default_method`; ``percentile`` is ``range``."""
    m = default_method(estimator, params) if method is None else ALIASES.get(method, method)
    if m not in METHODS:
        raise ValueError(f"interval method must be one of {', '.join(METHODS)}, got {method!r}")
    if m == "calibrated" and not calibrated_applies(estimator, params):
        raise ValueError("the calibrated interval is fitted for crbc's closure (depth inf) only; "
                         "use --interval range for this estimator")
    return m
MAX_CELLS = 4_000_000  #: resampled steps (B x steps) per batched call; larger batches are cut by groups


def signal_of(name: str) -> str | None:
    """The step signal an estimator's intervals are about, as it declared at registration:
    ``"credit"`` (Q - V), ``"step_advantage"`` (A_S), or ``None`` without a step term (grpo)."""
    return registry.get(name).interval_signal()


@dataclass(frozen=True, eq=False)
class CreditIntervals:
    """Intervals and evidence of one estimator's step credits on a batch.

    Per step (N, the process's order): ``lo_N``, ``hi_N`` the interval of the step's pair (NaN:
    none), ``evidence_N`` ``"sure"`` / ``"unsure"`` / ``"none"`` (str array).
    Per pair (SA): ``credit_SA`` the point credit (Q - V, or mean A_S), ``lo_SA``, ``hi_SA``,
    ``q_SA``, ``q_lo_SA``, ``q_hi_SA`` (Q and its interval; None without a value function),
    ``occurs_SA`` resamples in which the pair occurs, ``none_SA`` credit 0 by construction.
    ``samples_BSA`` (B, SA) the credit in each resample (NaN where the pair is absent).
    ``credits`` the point estimate (:class:`Credits`) on the same process.
    """

    estimator: str
    params: dict[str, Any]
    method: str
    level: float
    n_resamples: int
    seed: int | None
    credits: Credits
    lo_N: np.ndarray
    hi_N: np.ndarray
    evidence_N: np.ndarray
    credit_SA: np.ndarray
    lo_SA: np.ndarray
    hi_SA: np.ndarray
    occurs_SA: np.ndarray
    none_SA: np.ndarray
    samples_BSA: np.ndarray
    q_SA: np.ndarray | None = None
    q_lo_SA: np.ndarray | None = None
    q_hi_SA: np.ndarray | None = None

    @property
    def process(self) -> Process:
        return self.credits.process

    def sure_share(self) -> float:
        """Share of the batch's steps that are ``sure``."""
        return float(np.mean(self.evidence_N == "sure")) if len(self.evidence_N) else float("nan")

    def record_fields(self, r: int) -> dict[str, list]:
        """``credit_interval`` and ``evidence`` of process rollout r (docs/FORMATS.md)."""
        sl = self.credits.rollout_slice(r)
        iv = [None if not (np.isfinite(a) and np.isfinite(b)) else [float(a), float(b)]
              for a, b in zip(self.lo_N[sl].tolist(), self.hi_N[sl].tolist(), strict=True)]
        return {"credit_interval": iv, "evidence": self.evidence_N[sl].tolist()}


def check_args(n_resamples: int, level: float, method: str | None) -> None:
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"the number of resamples B must be an integer >= 1, got {n_resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if method is not None and ALIASES.get(method, method) not in METHODS:
        raise ValueError(f"interval method must be one of {', '.join(METHODS)}, got {method!r}")


def credit_intervals(groups: Sequence[RolloutGroup] | Process, estimator: str = "crbc",
                     n_resamples: int = DEFAULT_B, level: float = DEFAULT_LEVEL, seed: int | None = 0,
                     method: str | None = None, **params: Any) -> CreditIntervals:
    """Intervals and evidence classes of ``estimator``'s step credits (module docstring).

    All B resamples of the groups are one batched computation per chunk of groups of at most
    ``MAX_CELLS`` resampled steps (one chunk for a paper-sized batch).

    ``groups``: rollout groups or a merged process; ``params``: the estimator's config fields;
    ``n_resamples`` B >= 1; ``level`` in (0, 1); ``seed``: each group's resamples come from its
    own numpy Generator seeded by (seed, crc32(group id)), so the same seed gives the same
    intervals, whatever the other groups of the batch (None: fresh entropy); ``method``:
    ``calibrated`` (B posterior draws, :mod:`crbc.estimators.posterior`, then the fitted
    interval of :mod:`crbc.estimators.calibration`; crbc's closure only), ``range`` (rollouts
    resampled with replacement, the central percentile range; ``percentile`` is its former
    name) or ``bayes`` (the percentile range of the Bayesian bootstrap of the observed
    transitions); None: ``calibrated`` where it applies, else ``range``.
    """
    check_args(n_resamples, level, method)
    est = registry.get(estimator)
    cfg = est.config(**params)
    method = resolve_method(method, estimator, dataclasses.asdict(cfg))
    p = groups if isinstance(groups, Process) else merge(groups)
    credits = est(p, cfg)
    kind = signal_of(estimator)
    q_BSA = None
    if kind is None:
        samples = np.full((n_resamples, len(p.n_sa)), np.nan)
    else:
        base = int(np.random.SeedSequence().entropy) if seed is None else int(seed)
        parts = []
        for g0, g1 in RS.chunks(p, n_resamples, MAX_CELLS):
            sub = RS.group_range(p, g0, g1)
            if method == "calibrated":
                from crbc.estimators import calibration as CAL
                from crbc.estimators.posterior import posterior_draws

                parts.append(posterior_draws(sub, n_resamples, base, cfg.beta, CAL.ALPHA, CAL.KAPPA,
                                             CAL.ALPHA_PI))
                continue
            w_BN, chosen = RS.step_weights(sub, n_resamples, "percentile" if method == "range" else method,
                                           base)
            parts.append(_samples(sub, est, cfg, kind, w_BN, chosen))
        samples = np.concatenate([c for c, _ in parts], axis=1)
        if parts[0][1] is not None:
            q_BSA = np.concatenate([q for _, q in parts], axis=1)
    samples = np.where(np.abs(samples) <= SNAP, 0.0, samples)
    return summarise(credits, samples, q_BSA, level, method, seed, estimator, kind)


def _family(p: Process, cfg, w_BN: np.ndarray, depth: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Fast path of the CRBC family: ``(c_BSA, q_BSA)`` on the weighted processes."""
    v_BS, q_BSA, w_BSA = RS.weighted_family(p, w_BN, cfg.beta, depth)
    absent = w_BSA <= 0
    return np.where(absent, np.nan, q_BSA - v_BS[:, p.sa_state]), np.where(absent, np.nan, q_BSA)


#: estimators with a weighted fast path (every method): name -> fn(p, cfg, w_BN) -> (c_BSA, q_BSA)
FAST_PATHS = {
    "crbc": lambda p, cfg, w_BN: _family(p, cfg, w_BN, cfg.depth),
    "visit_local": lambda p, cfg, w_BN: _family(p, cfg, w_BN, 0),
}


def _samples(p: Process, est, cfg, kind: str, w_BN: np.ndarray, chosen: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(c_BSA, q_BSA)``: per-resample pair credits (NaN where absent) and Q (or None).

    A fast path of ``FAST_PATHS``; else ``percentile`` runs the estimator once on the B x G
    resampled groups, and ``bayes`` reweights GiGPO-style step terms (configs with ``mode`` and
    ``epsilon``: gigpo, shortest_path), whose step returns ``q_N`` no positive reweighting changes."""
    if est.name in FAST_PATHS:
        return FAST_PATHS[est.name](p, cfg, w_BN)
    if chosen is not None:
        return _replicated(p, est, cfg, kind, chosen)
    fields = dataclasses.asdict(cfg)
    if kind != "step_advantage" or not {"mode", "epsilon"} <= set(fields):
        raise ValueError(f"estimator {est.name!r} has no 'bayes' interval; use 'range'")
    a_BN = RS.weighted_step_term(p, est(p, cfg).q_N, w_BN, fields["mode"], fields["epsilon"])
    w_BSA = RS.sums(p.step_sa, len(p.n_sa), w_BN)
    mean_BSA = RS.ratio(RS.sums(p.step_sa, len(p.n_sa), w_BN * a_BN), w_BSA)
    return np.where(w_BSA > 0, mean_BSA, np.nan), None


def _replicated(p: Process, est, cfg, kind: str, chosen_BR: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Generic percentile path: the estimator once on the B x G resampled groups; a pair's credit
    in resample b is the mean of the signal over its steps there."""
    big, b_M, orig_M = RS.replicated_process(p, chosen_BR)
    c = est(big, cfg)
    n_b, n_sa = len(chosen_BR), len(p.n_sa)
    key = b_M * n_sa + p.step_sa[orig_M]
    cnt = np.bincount(key, minlength=n_b * n_sa).reshape(n_b, n_sa)

    def mean(x_M):
        s = np.bincount(key, weights=x_M, minlength=n_b * n_sa).reshape(n_b, n_sa)
        return np.where(cnt > 0, RS.ratio(s, cnt.astype(float)), np.nan)

    x = c.credit_N if kind == "credit" else c.step_advantage_N
    return mean(x), (mean(c.q_N) if kind == "credit" and c.q_N is not None else None)


def structural_none(p: Process) -> np.ndarray:
    """``none_SA`` of a credit (Q - V) signal: :func:`crbc.estimators.closure.zero_credit` (one
    observed action at the anchor, or no observed path from it to z+; the estimator snaps the
    credit of these pairs to exactly 0)."""
    from crbc.estimators.closure import zero_credit

    return zero_credit(p)


def percentile_interval(samples_BSA: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo_SA, hi_SA, occurs_SA)``: central ``level`` percentiles over the non-NaN resamples of
    each pair (numpy's default linear rule, vectorised: the k finite values sorted, virtual index
    ``q (k - 1)``, linear interpolation between its neighbours; equals ``np.nanquantile``);
    NaN where the pair occurs in fewer than half of the resamples."""
    n_b = len(samples_BSA)
    occurs = np.isfinite(samples_BSA).sum(axis=0)
    ok = (occurs * 2 >= n_b) & (occurs > 0)
    srt = np.sort(samples_BSA[:, ok], axis=0)  # NaN sorts last
    k = occurs[ok]
    cols = np.arange(len(k))
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        pos = q * (k - 1)
        i0 = np.floor(pos).astype(np.int64)
        i1 = np.minimum(i0 + 1, k - 1)
        t = pos - i0
        a, b = srt[i0, cols], srt[i1, cols]
        diff = b - a
        val = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)  # numpy's _lerp
        full = np.full(samples_BSA.shape[1], np.nan)
        full[ok] = val
        out.append(full)
    return out[0], out[1], occurs


def summarise(credits: Credits, samples_BSA: np.ndarray, q_BSA: np.ndarray | None, level: float,
              method: str, seed: int | None, estimator: str, kind: str | None) -> CreditIntervals:
    """Intervals and evidence from the per-resample pair credits (shared by the fast path and
    any other way of producing ``samples_BSA``)."""
    p = credits.process
    if method == "calibrated":
        from crbc.estimators.calibration import calibrated_interval, strata

        occurs = np.isfinite(samples_BSA).sum(axis=0)
        g_SA = np.bincount(p.rollout_group, minlength=len(p.group_ids))[p.state_group[p.sa_state]]
        lo, hi = calibrated_interval(credits.credit_SA, samples_BSA, credits.value_S[p.sa_state], level, g_SA,
                                     strata(p, credits.value_S))
        q_BSA = None  # Q's spread over the draws is not a calibrated interval: none is shown
    else:
        lo, hi, occurs = percentile_interval(samples_BSA, level)
    if kind is None:
        none = np.ones(len(p.n_sa), dtype=bool)
        point = np.zeros(len(p.n_sa))
    else:
        x_N = credits.credit_N if kind == "credit" else credits.step_advantage_N
        point = np.bincount(p.step_sa, weights=x_N, minlength=len(p.n_sa)) / p.n_sa
        none = structural_none(p)
        if kind != "credit":  # a step advantage is 0 by construction only where it is 0 on every step
            from crbc.estimators.closure import reaches_success

            nonzero = np.bincount(p.step_sa, weights=(x_N != 0).astype(float), minlength=len(p.n_sa)) > 0
            none = ~reaches_success(p)[p.sa_state] & ~nonzero
    ev = np.where(none, "none", np.where((lo > 0) | (hi < 0), "sure", "unsure"))
    q_lo = q_hi = None
    if q_BSA is not None:
        q_lo, q_hi, _ = percentile_interval(q_BSA, level)
    return CreditIntervals(
        estimator=estimator, params=credits.params, method=method, level=level,
        n_resamples=len(samples_BSA), seed=seed, credits=credits,
        lo_N=lo[p.step_sa], hi_N=hi[p.step_sa], evidence_N=ev[p.step_sa],
        credit_SA=point, lo_SA=lo, hi_SA=hi, occurs_SA=occurs, none_SA=none,
        samples_BSA=samples_BSA, q_SA=credits.q_SA if q_BSA is not None else None,
        q_lo_SA=q_lo, q_hi_SA=q_hi)


def pair_table(ci: CreditIntervals, state: int) -> list[dict[str, Any]]:
    """The Inspector's rows at one anchor: per observed action, N(s,a), Q and its interval, the
    credit (Q - V) and its interval, the evidence class (keys: action, n, q, q_lo, q_hi,
    credit, lo, hi, evidence; None where absent)."""
    p = ci.process
    out = []
    for i in np.flatnonzero(p.sa_state == state):
        def f(a, i=i):
            return None if a is None or not np.isfinite(a[i]) else float(a[i])

        out.append({"action": p.action_names[int(p.sa_action[i])], "n": int(p.n_sa[i]),
                    "q": f(ci.q_SA), "q_lo": f(ci.q_lo_SA), "q_hi": f(ci.q_hi_SA),
                    "credit": f(ci.credit_SA), "lo": f(ci.lo_SA), "hi": f(ci.hi_SA),
                    "evidence": "none" if ci.none_SA[i] else
                    ("sure" if (ci.lo_SA[i] > 0 or ci.hi_SA[i] < 0) else "unsure")})
    return out
