"""The backups side by side as a report section: every method's value at one anchor written out
with the group's numbers, and how each orders the anchor's actions against the reference.

The numbers are :func:`crbc.explain.backups_side.side_by_side`'s (the exact truth's A(s,a) is the
reference where the report has the truth, else the closure's). The anchor is the one named by
``compare_at`` (:func:`anchor_to_compare`: an anchor id as the report's anchor index lists it,
``s12``-style label or the anchor's exact text), by default the most visited anchor where the
group tried two or more actions and the closure tells them apart
(:func:`crbc.explain.backups_side.informative_anchor`). This is what the studio's Bellman backups page shows, and the
command its notice gives when a large upload's comparison outgrows the studio's budget.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crbc.errors import UsageError
from crbc.explain import backups_side as B
from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.report.text import anchor_html, pre
from crbc.viz.core.html import html_table
from crbc.viz.core.text import esc

__all__ = ["anchor_to_compare", "side_by_side_html"]


def anchor_to_compare(p: Process, compare_at: int | str | None, credit_SA: np.ndarray | None = None) -> int | None:
    """The anchor id named by ``compare_at`` (an id, a label or the exact anchor text); None: the
    default (module docstring; ``credit_SA`` the closure's A(s,a) per pair, else the most visited
    anchor with two or more actions), None when no anchor has two. A name that is no anchor of
    the group raises :class:`crbc.errors.UsageError` saying what the group has."""
    if compare_at is None:
        if credit_SA is not None:
            return B.informative_anchor(p, credit_SA)
        choosable = B.choosable_anchors(p)
        return choosable[0] if choosable else None
    text = str(compare_at).strip()
    if text.isdigit():
        s = int(text)
        if s < p.n_states:
            return s
        raise UsageError(f"--compare-at {s}: the group has anchors 0..{p.n_states - 1}")
    labels = anchor_labels(p)
    for s in range(p.n_states):
        if labels[s] == text or p.state_anchor[s] == text:
            return s
    raise UsageError(f"--compare-at {text[:80]!r}: no anchor of the group has this id, label or text "
                     "(the report's Anchors section lists them)")


def side_by_side_html(p: Process, compare_at: int | str | None, beta: float, sigma_min: float,
                      truth: Any = None, credit_SA: np.ndarray | None = None) -> str:
    """The section's body at the anchor :func:`anchor_to_compare` names; ``truth``: the group's
    exact truth (its per-step ``anchor_advantage_N``) or None; ``credit_SA``: the closure's
    A(s,a) per pair (chooses the default anchor)."""
    s = anchor_to_compare(p, compare_at, credit_SA)
    if s is None:
        return ('<p class="note">No anchor of this group saw two or more actions: every method gives each '
                "step the same credit as its neighbours there, so there is nothing to rank.</p>")
    truth_N = getattr(truth, "anchor_advantage_N", None)
    sb = B.side_by_side(p, s, beta=beta, sigma_min=sigma_min,
                        anchor_advantage_N=None if truth_N is None else np.asarray(truth_N, dtype=float))
    ref = "the exact truth" if sb.truth is not None else "the closure (no exact truth here)"
    right = ", ".join(sb.right) or "none of them"
    parts = [f'<p class="note">Anchor {s} ({esc(sb.label)}), visited {int(p.n_s[s])} times, '
             f"{sb.n_actions} actions observed. Each method backs a value up over the same graph, then scores "
             f"the actions (another anchor: <code>--compare-at ID</code>). {esc(sb.compared_note)}</p>",
             anchor_html(p.state_anchor[s])]
    for m in sb.lines:
        parts.append(f"<h3>{esc(m.method)}: {esc(m.rule)}</h3>" + pre("\n".join((m.value_line, *m.action_lines))))
    parts.append(f'<p class="note">Ordered most like {esc(ref)}: <b>{esc(right)}</b>. Scores are each method\'s '
                 "own units: compare orders, not sizes; pairs ordered like it: of every two actions, how "
                 "many the method puts in the reference's order.</p>")
    parts.append(html_table(sb.rows(lambda a: a[:30])))
    return "".join(parts)
