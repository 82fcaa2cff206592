"""What the Lesson's section 7 (finite depth) reads: a group whose backups move, and how fast they do.

On the worked example (docs/MATH.md section 8) every anchor is one step from a boundary, so one round
of backup already gives the closure and V^(K) is the same for every K: nothing moves. Section 7
therefore runs on the lesson group only when its backups move over several rounds, else on
:func:`retry_loop_group`, the worked example with retries (a self-loop at s1 and at s2), where
V^(K) keeps moving and converges geometrically.

The error at depth K is ``err_K = ||A_inf - A^(K)||_inf`` (sup over observed pairs); Cor. 3 bounds
it by ``2 beta^K / (1 - beta) ||T V0 - V0||_inf``. Why it shrinks: the backup T is a
beta-contraction in the sup norm, ``||T V - T W||_inf <= beta ||V - W||_inf`` (T averages values
with weights summing to at most 1 and multiplies by beta), so every round multiplies the gap to
the fixed point by at most beta. The observed rate ``err_{K+1} / err_K`` is usually smaller than
beta, because part of the weight leaves for a boundary, whose value is fixed (M is substochastic).
numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crbc.estimators.closure import DepthSweep
from crbc.io.rollouts import Rollout, RolloutGroup, Step

__all__ = [
    "choose", "Contraction", "contraction", "DepthLesson", "MOVE_TOL", "moves", "moving_rounds",
    "RETRY_LOOP", "retry_loop_group", "RETRY_LOOP_PATHS"
]

RETRY_LOOP = "retry-loop"
#: (path of (anchor, action) steps, success) per rollout: the worked example, with retries
RETRY_LOOP_PATHS = (
    ((("s0", "a"), ("s1", "wait"), ("s1", "wait"), ("s1", "c")), True),
    ((("s0", "b"), ("s1", "d")), False),
    ((("s0", "b"), ("s2", "e")), False),
    ((("s0", "b"), ("s2", "wait"), ("s2", "e")), False),
    ((("s0", "b"), ("s2", "g")), True),
)
MOVE_TOL = 5e-5  # a value "moved" in a round when it changed by more than this (4 decimals shown)


def retry_loop_group() -> RolloutGroup:
    """The worked example with retries: rollout 0 waits twice at s1 before succeeding, rollout 3
    waits once at s2 before failing (``wait`` leaves the state as it is: a self-loop, like an
    invalid action). The loops make V^(K) move at every K, converging geometrically::

        0: s0 -a-> s1 -wait-> s1 -wait-> s1 -c-> z+      1: s0 -b-> s1 -d-> z-
        2: s0 -b-> s2 -e-> z-    3: s0 -b-> s2 -wait-> s2 -e-> z-    4: s0 -b-> s2 -g-> z+
    """
    rollouts = tuple(
        Rollout(RETRY_LOOP, i, tuple(Step(s, a) for s, a in steps), ok,
                meta={"source": "crbc.explain.depth_lesson: docs/MATH.md section 8 with retries"})
        for i, (steps, ok) in enumerate(RETRY_LOOP_PATHS))
    return RolloutGroup(RETRY_LOOP, rollouts)


def moving_rounds(sw: DepthSweep, tol: float = MOVE_TOL) -> int:
    """How many rounds K = 1..K_max change some V^(K)(s) or A^(K)(s,a) by more than ``tol``:
    ``#{K >= 1 : max(|V^(K) - V^(K-1)|, |A^(K) - A^(K-1)|) > tol}``."""
    if sw.k_max < 1:
        return 0
    dv = np.abs(np.diff(sw.v_KS, axis=0)).max(axis=1, initial=0.0)
    da = np.abs(np.diff(sw.a_KSA, axis=0)).max(axis=1, initial=0.0)
    return int((np.maximum(dv, da) > tol).sum())


def moves(sw: DepthSweep, min_rounds: int = 3) -> bool:
    """Whether section 7 can show the backups moving on this sweep: at least ``min_rounds`` rounds
    that change a value (:func:`moving_rounds`)."""
    return moving_rounds(sw) >= min_rounds


@dataclass(frozen=True)
class Contraction:
    """How fast the error ``err_K = ||A_inf - A^(K)||_inf`` shrank on one sweep.

    ``beta``: the discount (the contraction factor of T); ``rate``: the geometric mean of
    ``err_{K+1} / err_K`` over the rounds where both are above 1e-12 (None without two such);
    ``first``, ``last``: err at K = 1 and at K = K_max; ``bound_last``: the Cor. 3 bound at K_max.
    """

    beta: float
    rate: float | None
    first: float
    last: float
    bound_last: float

    def sentence(self) -> str:
        """One sentence on why the error shrinks, with this sweep's numbers."""
        s = (f"Why it shrinks: each backup averages the successors' values and multiplies by "
             f"beta = {self.beta:g} < 1, so it is a contraction (||TV − TW|| ≤ beta·||V − W||) and "
             f"every round multiplies the remaining error by at most beta")
        if self.rate is not None:
            s += (f"; here by about {self.rate:.2f} per round, faster than beta because part of "
                  "the weight flows into z+ and z-, whose values are fixed")
        return s + "."


def contraction(sw: DepthSweep) -> Contraction:
    """The :class:`Contraction` of a sweep (K = 1..K_max; the K = 0 error is not a backup's)."""
    err = np.asarray(sw.err_a_K[1:], dtype=float)
    ok = (err[:-1] > 1e-12) & (err[1:] > 1e-12)
    ratios = err[1:][ok] / err[:-1][ok]
    rate = float(np.exp(np.log(ratios).mean())) if len(ratios) else None
    first = float(err[0]) if len(err) else 0.0
    last = float(err[-1]) if len(err) else 0.0
    return Contraction(float(sw.beta), rate, first, last, float(sw.bound_K[-1]))


@dataclass(frozen=True, eq=False)
class DepthLesson:
    """The group section 7 draws on: ``process`` (the lesson group's, or the retry loop's),
    its ``sweep`` K = 0..k_max, and ``own``: whether it is the lesson group's own."""

    process: object
    sweep: DepthSweep
    own: bool


def choose(p, beta: float, k_max: int, min_rounds: int = 3) -> DepthLesson:
    """Section 7's group: the lesson group's process ``p`` if its backups move over at least
    ``min_rounds`` rounds within ``max(k_max, 6)``, else the retry loop's (:func:`retry_loop_group`)."""
    from crbc.estimators.closure import depth_sweep
    from crbc.process import merge

    sw = depth_sweep(p, beta, max(k_max, 6))
    if moves(sw, min_rounds):
        return DepthLesson(p, depth_sweep(p, beta, k_max), True)
    q = merge([retry_loop_group()])
    return DepthLesson(q, depth_sweep(q, beta, k_max), False)
