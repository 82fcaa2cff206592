"""The trainer's advantage function for verl-style trainers (a flat batch of steps).

verl / verl-agent keep one row per *step* (one model response) in a batch, with the episode
bookkeeping in parallel arrays: ``uid`` (the task group: the G rollouts of one prompt / initial
state), ``traj_uid`` (the trajectory), ``anchor_obs`` (the observation used as the anchor key).
:func:`step_advantages` takes exactly that layout and returns one advantage per row, in the
same row order, computed by the same estimator registry the ``train`` command uses
(:func:`crbc.estimators.compute`). Rows can arrive in any order (Ray workers concatenate shards):
they are grouped by (uid, trajectory) and ordered inside a trajectory by ``step_index`` (or, if
it is not given, by their order of appearance).

Layout (B = number of rows = steps in the batch; every argument is a 1-D array of length B, a
numpy array, a list, or a torch tensor):

==================  =====================================================================
``anchor_keys``     exact-match anchor key of the state before the step (str, int, bytes,
                    or anything hashable; ``anchor_obs`` in verl-agent). Matched only inside
                    one uid.
``uid``             task-group id (``uid``): anchors and A_G are pooled over its rollouts.
``traj_id``         trajectory id (``traj_uid``), unique at least within its uid.
``success``         the trajectory's binary outcome R_i, repeated on each of its rows (bool or
                    0/1; must be constant within a trajectory). A time-out is a failure.
``scores``          optional trajectory score for A_G (constant within a trajectory);
                    default ``success`` as 0/1 (CRBC.md section 6).
``actions``         semantic action executed at the step (str or int); required by the
                    estimators that work on (anchor, action) pairs (``needs_actions`` in the
                    registry: ``crbc``, ``visit_local``, ``shortest_path``) — pass it always.
``step_index``      optional position of the step inside its trajectory (any increasing
                    numbers; ties are an error).
``rewards``         optional per-step environment rewards (``gigpo`` uses them when given,
                    otherwise the outcome at the last step).
==================  =====================================================================

Returns a float array of length B (A_final of each row, as ``Credits.advantage_N``) in the
type of the inputs: a torch tensor (float32, on the device of the first tensor argument) if
any argument was a tensor, else a numpy float64 array. ``return_credits=True`` also returns the
:class:`crbc.estimators.Credits` (rows in canonical order) and the permutation ``order`` such that
``out[order] == credits.advantage_N``.

torch is imported only when a tensor is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .estimators import compute, get
from .process import build_process


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def _to_numpy(x: Any, name: str, n: int | None) -> np.ndarray:
    if _is_tensor(x):
        x = x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        arr = x
    else:
        items = list(x)
        arr = np.empty(len(items), dtype=object)
        for i, v in enumerate(items):
            arr[i] = v
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one entry per step), got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} entries but the batch has {n} steps")
    return arr


def _codes(arr: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Integer codes in order of first appearance, and the distinct values."""
    seen: dict[Any, int] = {}
    codes = np.fromiter((seen.setdefault(_hashable(v), len(seen)) for v in arr), dtype=np.int64,
                        count=len(arr))
    return codes, list(seen)


def _hashable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return tuple(v.ravel().tolist())
    if isinstance(v, list):
        return tuple(_hashable(e) for e in v)
    return v


def step_advantages(anchor_keys: Sequence[Any], uid: Sequence[Any], traj_id: Sequence[Any],
                    success: Sequence[Any], scores: Sequence[float] | None = None,
                    actions: Sequence[Any] | None = None, step_index: Sequence[Any] | None = None,
                    rewards: Sequence[float] | None = None, estimator: str = "crbc",
                    return_credits: bool = False, **params: Any):
    """Per-row advantages of a verl-style flat batch (layout in the module docstring).

    ``estimator`` and ``params`` are those of :func:`crbc.estimators.compute` (e.g.
    ``estimator="crbc", beta=0.98, w_step=5.0``).
    """
    tensors = [x for x in (anchor_keys, uid, traj_id, success, scores, actions, step_index, rewards)
               if x is not None and _is_tensor(x)]
    anchors = _to_numpy(anchor_keys, "anchor_keys", None)
    n = len(anchors)
    if n == 0:
        raise ValueError("the batch has no steps")
    uids = _to_numpy(uid, "uid", n)
    trajs = _to_numpy(traj_id, "traj_id", n)
    succ = _to_numpy(success, "success", n).astype(float)
    if not np.all((succ == 0) | (succ == 1)):
        raise ValueError("success must be 0/1 or boolean")
    score = succ if scores is None else _to_numpy(scores, "scores", n).astype(float)
    if not np.all(np.isfinite(score)):
        raise ValueError("scores must be finite")
    if actions is None:
        if get(estimator).needs_actions:
            raise ValueError(f"estimator {estimator!r} needs the executed actions (actions=...)")
        acts = np.zeros(n, dtype=np.int64)
    else:
        acts = _to_numpy(actions, "actions", n)
    rew = None if rewards is None else _to_numpy(rewards, "rewards", n).astype(float)
    if rew is not None and not np.all(np.isfinite(rew)):
        raise ValueError("rewards must be finite")

    # canonical order: group (first appearance), trajectory (first appearance), step index
    g_code, g_vals = _codes(uids)
    pairs = np.empty(n, dtype=object)
    for i, (u, t) in enumerate(zip(uids, trajs, strict=True)):
        pairs[i] = (_hashable(u), _hashable(t))
    t_code, _ = _codes(pairs)
    if step_index is None:
        pos = np.arange(n, dtype=float)
    else:
        pos = _to_numpy(step_index, "step_index", n).astype(float)
    order = np.lexsort((pos, t_code, g_code))
    t_sorted, p_sorted = t_code[order], pos[order]
    same = t_sorted[1:] == t_sorted[:-1]
    if np.any(same & (p_sorted[1:] == p_sorted[:-1])):
        raise ValueError("two steps of one trajectory have the same step_index")
    starts = np.r_[0, np.nonzero(~same)[0] + 1]
    offsets = np.r_[starts, n].astype(np.int64)
    for name, v in (("success", succ), ("scores", score)):
        vs = v[order]
        if np.any(vs[1:][same] != vs[:-1][same]):
            raise ValueError(f"{name} must be constant within a trajectory")
    anchor_code, anchor_vals = _codes(anchors[order])
    action_code, action_vals = _codes(acts[order])
    p = build_process(
        group_code_N=_dense(g_code[order]),
        anchor_code_N=anchor_code,
        action_code_N=action_code,
        reward_N=np.zeros(n) if rew is None else rew[order],
        success_R=succ[order][starts].astype(bool),
        score_R=score[order][starts],
        offsets_R1=offsets,
        group_ids=[str(g) for g in g_vals],
        anchor_texts=[str(a) for a in anchor_vals],
        action_names=[str(a) for a in action_vals],
        has_reward_N=None if rew is None else np.ones(n, dtype=bool),
    )
    credits = compute(estimator, p, **params)
    out = np.empty(n)
    out[order] = credits.advantage_N
    if tensors:
        import torch

        out_t = torch.as_tensor(out, dtype=torch.float32, device=tensors[0].device)
        return (out_t, credits, order) if return_credits else out_t
    return (out, credits, order) if return_credits else out


def _dense(codes: np.ndarray) -> np.ndarray:
    """Relabel sorted group codes as 0, 1, 2, ... (build_process wants contiguous groups)."""
    change = np.r_[0, np.cumsum(codes[1:] != codes[:-1])]
    return change.astype(np.int64)

