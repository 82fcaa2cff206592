"""A group's token view in a report: where the run's recorder kept the response tokens of some
steps (``rollouts/iter-NNNN.tokens.parquet``, :mod:`crbc.io.tokens`), the advantage on each token
of up to :data:`STEPS_SHOWN` of the group's steps (:func:`crbc.viz.token_strip.token_strip_html`).

Which steps: the first stored step (smallest t) of each rollout with stored steps, a succeeding
rollout's first and a failing one's next (so both outcomes show when both were kept), else the
first ones in rollout order. Each strip draws at most :data:`TOKENS_SHOWN` tokens.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from crbc.errors import FormatError
from crbc.io.rollouts import RolloutGroup
from crbc.io.tokens import StepTokens, iteration_tokens
from crbc.report.page import Section
from crbc.viz.core.text import esc, one_line
from crbc.viz.token_strip import token_strip_html

__all__ = ["chosen_steps", "STEPS_SHOWN", "stored_tokens", "token_section", "tokens_html", "TOKENS_SHOWN"]

STEPS_SHOWN = 2  #: strips per group at most
TOKENS_SHOWN = 256  #: tokens drawn per strip at most (the file stays small)


def chosen_steps(stored: Sequence[StepTokens], group: RolloutGroup) -> list[StepTokens]:
    """The group's stored steps shown (module docstring), at most :data:`STEPS_SHOWN`."""
    mine = sorted((s for s in stored if s.group == group.group), key=lambda s: (s.rollout, s.step))
    first: dict[int, StepTokens] = {}
    for s in mine:
        first.setdefault(s.rollout, s)
    ok = {r.rollout: r.success for r in group.rollouts}
    wins = [s for s in first.values() if ok.get(s.rollout)]
    losses = [s for s in first.values() if not ok.get(s.rollout)]
    pick = (wins[:1] + losses[:1]) or list(first.values())
    rest = [s for s in first.values() if s not in pick]
    return sorted((pick + rest)[:STEPS_SHOWN], key=lambda s: (s.rollout, s.step))


def _caption(s: StepTokens, group: RolloutGroup) -> str:
    r = next((r for r in group.rollouts if r.rollout == s.rollout), None)
    if r is None or s.step >= len(r.steps):
        return f"Rollout {s.rollout}, step {s.step}"
    return (f"Rollout {s.rollout} ({'✓ succeeded' if r.success else '✗ failed'}), step {s.step} of "
            f"{len(r.steps)}: action {one_line(r.steps[s.step].action, 60)}")


def tokens_html(stored: Sequence[StepTokens], group: RolloutGroup) -> str:
    """The strips of the group's chosen steps with a note on what is stored; a note alone when
    none of its steps has tokens stored."""
    mine = [s for s in stored if s.group == group.group]
    shown = chosen_steps(stored, group)
    if not shown:
        return ('<p class="note">The recorder kept the tokens of other steps of this iteration, none of this '
                'group\'s (RunRecorder(tokens=S) keeps S steps per iteration, rollout 0 of every group first).</p>')
    note = (f'<p class="note">The advantage your trainer put on each response token of the step, as its loss read '
            f'it (kept by the recorder for {len(mine)} step(s) of this group; the studio\'s Anchor inspector shows '
            'any of them). Blue positive, red negative; hatched tokens are outside the loss mask. Hover a token '
            'for its text and value.</p>')
    return note + "".join(token_strip_html(s.advantage, s.mask, s.labels(), length=s.length,
                                           max_tokens=TOKENS_SHOWN, caption=_caption(s, group)) for s in shown)


def stored_tokens(run_dir: str | os.PathLike, iteration: int) -> list[StepTokens] | str | None:
    """The iteration's stored tokens (:func:`crbc.io.tokens.iteration_tokens`), None when it kept
    none, or the error's text when its token file is refused (the report still gets written)."""
    try:
        return iteration_tokens(run_dir, iteration)
    except (FormatError, OSError) as e:
        return f"The token file of iteration {iteration} could not be read: {e}"


def token_section(stored: Sequence[StepTokens] | str | None, group: RolloutGroup, anchor: str,
                  level: int = 2) -> Section | None:
    """The group's "Tokens" section (id ``anchor``) of :func:`stored_tokens`' result: the strips,
    the refusal's message, or None when the iteration kept no tokens."""
    if stored is None:
        return None
    body = f'<p class="note">{esc(stored)}</p>' if isinstance(stored, str) else tokens_html(stored, group)
    return Section(anchor, "The advantage on each token", body, level)
