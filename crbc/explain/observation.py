"""What the policy saw at a step, and what changed since the step before (for long text anchors).

:func:`step_observation` finds a visit of an anchor (a given step, else the first visit of a given
rollout, else the first visit in the group) and returns its observation text (``Step.obs`` when the
anchor is a key of it, else the anchor) with the previous step's. :func:`changes` is a line diff
(difflib) of the two: the lines added or changed, as ``+ line`` / ``- line``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from crbc.io.rollouts import RolloutGroup

__all__ = ["changes", "step_observation", "StepObservation"]


@dataclass(frozen=True)
class StepObservation:
    rollout: int  #: position of the rollout in the group
    t: int  #: the step, 0-based as the files number it
    text: str
    previous: str | None  #: the observation one step earlier in the same rollout (None at t = 0)


def _text(step) -> str:
    return step.obs if step.obs is not None else step.anchor


def step_observation(group: RolloutGroup, anchor: str, rollout: int | None = None,
                     t: int | None = None) -> StepObservation | None:
    """A visit of ``anchor`` (the anchor key as merged): step ``t`` (0-based) of rollout position
    ``rollout`` if it is one, else the first visit in that rollout, else the first in the group."""
    order = list(range(len(group.rollouts)))
    if rollout is not None and 0 <= rollout < len(order):
        order.remove(rollout)
        order.insert(0, rollout)
        steps = group.rollouts[rollout].steps
        if t is not None and 0 <= t < len(steps) and steps[t].anchor == anchor:
            return StepObservation(rollout, t, _text(steps[t]), _text(steps[t - 1]) if t > 0 else None)
    for pos in order:
        steps = group.rollouts[pos].steps
        for k, s in enumerate(steps):
            if s.anchor == anchor:
                return StepObservation(pos, k, _text(s), _text(steps[k - 1]) if k else None)
    return None


def changes(previous: str | None, text: str, max_lines: int = 40) -> list[str]:
    """The lines of ``text`` that are new since ``previous`` (``+``) and those gone (``-``)."""
    if previous is None:
        return []
    out = [line for line in difflib.ndiff(previous.splitlines(), text.splitlines())
           if line[:2] in ("+ ", "- ")]
    return out if len(out) <= max_lines else out[:max_lines] + [f"... {len(out) - max_lines} more lines"]
