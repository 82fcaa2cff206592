"""Edits of a rollout group for "what if" teaching: flip an outcome, edit a step, drop or copy a rollout.

Each edit returns a new :class:`~crbc.io.rollouts.RolloutGroup` (groups are immutable); positions
are 0-based places in ``group.rollouts``, and steps are 0-based too, as the files number them
(verl's ``step_index``, the run recorder, the Step credits downloads).
"""

from __future__ import annotations

import dataclasses

from crbc.explain.anchor_names import Z_MINUS, Z_PLUS
from crbc.io.rollouts import Rollout, RolloutGroup, Step

__all__ = ["duplicate_rollout", "edit_step", "flip_outcome", "remove_rollout"]


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
    """The group with step ``t`` (0-based) of rollout position ``i`` given a new anchor and/or action."""
    r = group.rollouts[i] if 0 <= i < len(group.rollouts) else None
    if r is None:
        raise IndexError(f"rollout position {i} out of range (0..{len(group.rollouts) - 1})")
    if not 0 <= t < len(r.steps):
        raise IndexError(f"step {t} out of range (0..{len(r.steps) - 1})")
    for name, val in (("anchor", anchor), ("action", action)):
        if val is not None and (not isinstance(val, str) or not val.strip()):
            raise ValueError(f"{name} must be a non-empty string")
    if anchor is not None and anchor.strip() in (Z_PLUS, Z_MINUS):
        raise ValueError(f"{anchor.strip()!r} is the name of a boundary (z+ success, z- failure), "
                         "not an anchor: a rollout reaches a boundary by its outcome; flip the "
                         "outcome instead")
    steps = list(r.steps)
    old = steps[t]
    steps[t] = Step(old.anchor if anchor is None else anchor, old.action if action is None else action,
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
