"""Deprecated: per-row advantages of a verl-style flat batch; use :mod:`crbc.integrations`.

:func:`step_advantages` keeps its old signature and results (one advantage per row, in the
input's row order) and now runs on :func:`crbc.integrations.step_rows.layout`, so it also accepts
anchors of any shape (hashed stably) and duplicated rows. Without ``step_index`` the order of
appearance inside each trajectory is taken as the step order, which is only right before any
reordering of the rows. For verl's ``DataProto`` use :func:`crbc.integrations.verl.compute_advantage`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.estimators.registry import compute, get
from crbc.integrations import step_rows as rows

__all__ = ["step_advantages"]


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def step_advantages(anchor_keys: Sequence[Any], uid: Sequence[Any], traj_id: Sequence[Any],
                    success: Sequence[Any], scores: Sequence[float] | None = None,
                    actions: Sequence[Any] | None = None, step_index: Sequence[Any] | None = None,
                    rewards: Sequence[float] | None = None, estimator: str = "crbc",
                    return_credits: bool = False, **params: Any):
    """Deprecated alias. A_final of each row of a flat batch (arrays, lists or tensors of length B).

    Returns a float64 numpy array, or a float32 tensor on the first tensor argument's device when
    any argument was a tensor; with ``return_credits`` also the :class:`crbc.estimators.registry.Credits`
    and ``order`` (the first row of each step: ``out[order] == credits.advantage_N``).
    """
    warnings.warn("crbc.integrations.adapters.step_advantages is deprecated: use crbc.integrations.step_rows.layout "
                  "or crbc.integrations.verl.compute_advantage", DeprecationWarning, stacklevel=2)
    tensors = [x for x in (anchor_keys, uid, traj_id, success, scores, actions, step_index, rewards)
               if x is not None and _is_tensor(x)]
    n = len(rows.column(anchor_keys, "anchor_keys", None))
    if n == 0:
        raise ValueError("the batch has no steps")
    if actions is None and get(estimator).needs_actions:
        raise ValueError(f"estimator {estimator!r} needs the executed actions (actions=...)")
    lay = rows.layout(
        uid, traj_id, anchor_keys, success,
        step_index=np.arange(n) if step_index is None else step_index,
        scores=scores, actions=actions, rewards=rewards, contiguous=False,
        names={"anchors": "anchor_keys", "traj": "traj_id"})
    credits = compute(estimator, lay.process, **params)
    out = rows.scatter(lay, credits.advantage_N)
    if tensors:
        import torch

        out = torch.as_tensor(out, dtype=torch.float32, device=tensors[0].device)
    return (out, credits, lay.step_row_N) if return_credits else out
