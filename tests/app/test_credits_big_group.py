"""Step credits on a group of more rollouts than a heatmap draws (crbc.viz.heatmap.HEAT_ROWS):
each panel draws the stated selection, the sidebar's rollout among them, and says so."""

from __future__ import annotations

import re

from tests.support.heatmap_cells import app_svg


def test_the_heatmaps_of_a_big_group_draw_a_stated_selection_with_the_chosen_rollout(app, monkeypatch):
    from crbc.process import merge
    from crbc.viz import heatmap
    from tests.support.apptest import chosen_group
    from ui.core import context

    context.clear_shared()
    at = app("pages/credits.py", sample="sokoban-weak.jsonl")
    n = len(chosen_group(at).rollouts)
    assert len({int(i) for i in re.findall(r'data-pick="(\d+):', app_svg(at, "heat_credits"))}) == n
    assert not any("each panel draws" in c.value for c in at.caption)

    monkeypatch.setattr(heatmap, "HEAT_ROWS", 6)
    context.clear_shared()
    last = n - 1  # the sidebar's rollout: the last, which the first rows would not hold
    cut = app("pages/credits.py", sample="sokoban-weak.jsonl", rollout=str(last))
    assert not cut.exception
    p = merge([chosen_group(cut)])
    rows = heatmap.heat_rows(p, keep=(last,))
    assert n > 7 and rows is not None and last in rows and len(rows) <= 7
    drawn = {int(i) for i in re.findall(r'data-pick="(\d+):', app_svg(cut, "heat_credits"))}
    assert drawn == set(rows)
    assert any(f"This group has {n:,} rollouts, so each panel draws {len(rows)} of them" in c.value
               and f"rollout {chosen_group(cut).rollouts[last].rollout} chosen in the sidebar" in c.value
               for c in cut.caption)


def test_a_refused_evidence_says_how_to_see_the_credits_and_the_evidence_off_draws_them(app, monkeypatch):
    """The intervals past their budget end the page with the budget's notice and what to do
    instead (switch the evidence off); with it off, every panel is drawn and no notice is shown."""
    from ui.core import bounded, context
    from ui.credits.heatmaps import EVIDENCE_OFF

    def refused(self, name, params=None, *, then=""):
        bounded.show(bounded.Refused(f"the {name} intervals of this group: past the budget."), then)

    monkeypatch.setattr(context.PageContext, "intervals", refused)
    context.clear_shared()
    at = app("pages/credits.py", sample="sokoban-weak.jsonl")
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and "intervals of this group: past the budget." in notes[0] and EVIDENCE_OFF in notes[0]
    assert not [e for e in at.get("bidi_component") if e.proto.id.endswith("heat_credits")]
    at.toggle(key="credits_marks").set_value(False).run()
    assert not at.exception and not at.warning
    assert app_svg(at, "heat_credits").count('data-pick="') > 0
