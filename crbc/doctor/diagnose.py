"""``diagnose(batch, expect=None)``: every registered check of the doctor on one batch, in their
declared order (:mod:`crbc.doctor.registry`); each returns a finding or nothing.

Importing this module registers the built-in checks: their modules (:mod:`.row_checks`,
:mod:`.token_checks`, :mod:`.weight_checks`, :mod:`.expect`) register each one where it is defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import crbc.doctor.expect  # noqa: F401  (imported to register its check; so are the three below)
import crbc.doctor.row_checks  # noqa: F401
import crbc.doctor.token_checks  # noqa: F401
import crbc.doctor.weight_checks  # noqa: F401
from crbc.doctor.batch import Batch, Tokens
from crbc.doctor.findings import Finding
from crbc.doctor.registry import CHECKS, ordered

__all__ = ["counts", "diagnose", "diagnose_all", "diagnose_tokens"]


def diagnose(batch: Batch, expect: str | None = None, params: dict[str, Any] | None = None) -> list[Finding]:
    """The findings of one :class:`Batch` (an iteration, or a trainer's batch), each example row
    placed in its group, rollout and step (:meth:`Batch.locate`).

    expect: a registered estimator the trainer's advantage should equal (``estimator_mismatch``);
    params: that estimator's parameters (its defaults otherwise).
    """
    return [f.located(batch.locate) for check in ordered() if (f := check.run(batch, expect, params)) is not None]


def diagnose_tokens(advantages: Any, response_mask: Any, iteration: int | None = None, *,
                    values: Any = None, token_level_rewards: Any = None, gamma: float | None = None,
                    lam: float | None = None) -> list[Finding]:
    """The token checks alone (``advantage_off_mask``, ``advantage_shifted``) on (B, L) arrays: for
    a trainer whose rows are not steps of a group (numpy arrays, or ``tensor.cpu().numpy()``).
    ``values`` and ``token_level_rewards`` (B, L), when given, let ``advantage_off_mask``
    recompute GAE (``gamma``, ``lam``: the trainer's, else a small grid is tried)."""
    t = Tokens(advantages, response_mask, values, token_level_rewards, gamma, lam)
    return [f for check in ordered() if check.reads == "tokens" and (f := check.fn(t, iteration)) is not None]


def diagnose_all(batches: Sequence[Batch], expect: str | None = None,
                 params: dict[str, Any] | None = None) -> list[Finding]:
    """The findings of several batches (a run's iterations), iteration after iteration."""
    return [f for b in batches for f in diagnose(b, expect, params)]


def counts(findings: Sequence[Finding]) -> dict[str, float]:
    """``{"doctor/<check>": rows flagged}`` for every check (0.0 when silent), the recorder's and
    the audit's numbers."""
    out = {f"doctor/{name}": 0.0 for name in CHECKS}
    for f in findings:
        out[f"doctor/{f.check}"] += float(f.rows)
    return out
