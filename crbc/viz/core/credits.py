"""What views read of computed credits: the per-step fields, estimators' labels and colours,
rollout outcomes. No estimate is computed here."""

from __future__ import annotations

import numpy as np

from crbc.estimators.registry import Credits, UnknownEstimatorError, get

__all__ = [
    "est_color", "est_color_at", "est_label", "FALLBACK_COLORS", "field_label", "field_N", "FIELDS",
    "outcome"
]

FIELDS = {
    "step_advantage": "A_S (normalised step credit)",
    "advantage": "A_final = w_G·A_G + w_S·A_S",
    "credit": "Q − V (raw step credit)",
}
#: colours of estimators the registry does not know, by position
FALLBACK_COLORS = ("#2ca02c", "#d62728", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f")


def field_N(c: Credits, field: str) -> np.ndarray | None:
    """Per-step values (N,) of ``field`` (a key of :data:`FIELDS`); None where the estimator has
    none (``credit`` without a value function)."""
    return {"step_advantage": c.step_advantage_N, "advantage": c.advantage_N,
            "credit": c.credit_N}[field]


def field_label(field: str) -> str:
    """The short name of a field: ``A_S``, ``A_final`` or ``Q − V`` (the field itself if unknown)."""
    return FIELDS.get(field, field).split(" (")[0].split(" =")[0]


def est_color(name: str, fallback: str | None = None) -> str | None:
    """The registry's colour of estimator ``name`` (``fallback`` for a name it does not know)."""
    try:
        return get(name).color or fallback
    except UnknownEstimatorError:
        return fallback


def est_color_at(name: str, i: int) -> str:
    """:func:`est_color` with the ``i``-th of :data:`FALLBACK_COLORS` (cyclic) as the fallback."""
    return est_color(name, FALLBACK_COLORS[i % len(FALLBACK_COLORS)])


def est_label(name: str) -> str:
    """The registry's display label of estimator ``name`` (the name itself if it is unknown)."""
    try:
        return get(name).label
    except UnknownEstimatorError:
        return name


def outcome(r) -> str:
    """A rollout's outcome word: ``truncated``, ``success`` or ``failure``."""
    if r.truncated:
        return "truncated"
    return "success" if r.success else "failure"
