"""Credits: the step credit of a batch under one estimator, and its ``crbc.credit/1`` records.

Shapes: ``_N`` per step (rollout after rollout, as in the input), ``_R`` per rollout, ``_S`` per
anchor, ``_SA`` per observed (anchor, action) pair; see :mod:`crbc.process`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.io.creditfile import CREDIT_SCHEMA
from crbc.process import Process

__all__ = ["CREDIT_SCHEMA", "Credits"]


@dataclass(frozen=True, eq=False)
class Credits:
    """Step credit of a batch under one estimator.

    Per step: ``value_N`` V(s_t), ``q_N`` Q(s_t, a_t), ``credit_N`` Q - V (None for estimators
    without a value function), ``step_advantage_N`` A_S, ``advantage_N`` A_final.
    Per rollout: ``group_advantage_R`` A_G. Optional per-anchor views for the app and tests:
    ``value_S``, ``q_SA``, ``credit_SA``, ``step_advantage_SA``, ``sigma_S``.
    """

    estimator: str
    params: dict[str, Any]
    process: Process
    step_advantage_N: np.ndarray
    advantage_N: np.ndarray
    group_advantage_R: np.ndarray
    value_N: np.ndarray | None = None
    q_N: np.ndarray | None = None
    credit_N: np.ndarray | None = None
    value_S: np.ndarray | None = None
    q_SA: np.ndarray | None = None
    credit_SA: np.ndarray | None = None
    step_advantage_SA: np.ndarray | None = None
    sigma_S: np.ndarray | None = None

    def rollout_slice(self, r: int) -> slice:
        o = self.process.rollout_offsets
        return slice(int(o[r]), int(o[r + 1]))

    def records(self) -> Iterator[dict[str, Any]]:
        """``crbc.credit/1`` records, one per rollout in input order (docs/FORMATS.md)."""
        p = self.process
        for r in range(len(p.rollout_offsets) - 1):
            sl = self.rollout_slice(r)
            yield {
                "schema": CREDIT_SCHEMA,
                "group": p.group_ids[int(p.rollout_group[r])],
                "rollout": int(p.rollout_index[r]),
                "estimator": self.estimator,
                "params": self.params,
                "value": _listify(self.value_N, sl),
                "q": _listify(self.q_N, sl),
                "credit": _listify(self.credit_N, sl),
                "step_advantage": self.step_advantage_N[sl].tolist(),
                "group_advantage": float(self.group_advantage_R[r]),
                "advantage": self.advantage_N[sl].tolist(),
            }


def _listify(x: np.ndarray | None, sl: slice) -> list[float | None] | None:
    """The steps ``sl`` of ``x`` as a list, NaN (no value, e.g. no next state) as None."""
    if x is None:
        return None
    v = x[sl]
    return [None if f != f else f for f in v.tolist()] if np.isnan(v).any() else v.tolist()
