"""How well an anchor key merges a batch, beyond the first step: the line under the studio's data source.

Observations that carry their history (a chat transcript, textarena's ``LLMObservationWrapper``)
never repeat as text, except the first one: every rollout of a group starts from the same
prompt, so step 0 is always "shared" and :func:`crbc.merge_stats` alone reports a healthy share
(31 % on 4 x 8 rollouts of 3-4 steps) while nothing after it merges. So the profile also counts
the steps *beyond the first* of each rollout:

    shared_S        = (distinct rollouts of the group that visit anchor s) >= 2
    shared_share    = mean over the N steps of shared_S[step_state]
    later_share     = mean over the steps with step index t >= 1 (0-based) of shared_S[step_state]

A key that merges nothing beyond the first step (``later_share < ALMOST_NOTHING``) leaves every
credit after step 0 at zero; the studio then asks for an anchor key. Numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crbc.io.rollouts import RolloutGroup
from crbc.process import Process, merge

__all__ = ["ALMOST_NOTHING", "merge_profile", "MergeProfile"]

ALMOST_NOTHING = 0.05  #: below this share of later steps at shared anchors, the key merges (almost) nothing


@dataclass(frozen=True)
class MergeProfile:
    """n_anchors: distinct anchors S. n_steps: N. shared_share: steps at shared anchors / N.
    later_steps: steps with t >= 1. later_share: of those, the share at shared anchors (NaN when
    every rollout has one step)."""

    n_anchors: int
    n_steps: int
    shared_share: float
    later_steps: int
    later_share: float

    @property
    def merges_nothing(self) -> bool:
        """True when (almost) no step beyond the first sits at a shared anchor."""
        return self.later_steps > 0 and not self.later_share >= ALMOST_NOTHING

    def line(self) -> str:
        """``anchors 42 · steps at shared anchors 31% · steps beyond the first at shared anchors 0%``."""
        later = "—" if self.later_steps == 0 else f"{self.later_share:.0%}"
        return (f"anchors {self.n_anchors} · steps at shared anchors {self.shared_share:.0%} · "
                f"steps beyond the first at shared anchors {later}")


def merge_profile(batch: Process | Sequence[RolloutGroup]) -> MergeProfile:
    """:class:`MergeProfile` of a process, or of groups (merged first; module docstring)."""
    p = batch if isinstance(batch, Process) else merge(list(batch))
    if not p.n_steps:
        return MergeProfile(int(p.n_states), 0, 0.0, 0, float("nan"))
    width = max(len(p.rollout_group), 1)
    pair = np.unique(p.step_state.astype(np.int64) * width + p.step_rollout)
    shared_N = (np.bincount(pair // width, minlength=p.n_states) >= 2)[p.step_state]
    later_N = p.step_t >= 2  # Process.step_t is 1-based
    n_later = int(later_N.sum())
    return MergeProfile(int(p.n_states), int(p.n_steps), float(shared_N.mean()), n_later,
                        float(shared_N[later_N].mean()) if n_later else float("nan"))
