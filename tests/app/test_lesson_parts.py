"""AppTest: the Lesson in parts (ui/lesson/parts.py): what each part draws, the way from one part
to the next, a bad part in a link, and what stays when the reader moves between parts (the
answers in the shared link, every question in the handout)."""

from __future__ import annotations

import pytest

from ui.lesson import parts as P

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _heads(at) -> list[tuple[str, str]]:
    """(number, header id) of each section header the run drew."""
    return [(h.value.split(" · ")[0], h.proto.anchor) for h in at.main.header]


def test_a_link_without_a_part_draws_the_first_part_only(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl")
    assert not at.exception
    assert _heads(at) == [("1", P.ANCHORS[1]), ("2", P.ANCHORS[2])]
    assert at.segmented_control(key=P.KEY).value == "1-2"
    assert not [b for b in at.button if b.key == "lesson_part_back"]


@pytest.mark.parametrize("part", [p.key for p in P.PARTS] + [P.ALL])
def test_each_part_draws_its_sections_under_their_link_ids(app, part):
    at = app("pages/lesson.py", sample="worked-example.jsonl", lesson_part=part)
    assert not at.exception, [e.message for e in at.exception]
    sections = range(1, 13) if part == P.ALL else P.BY_KEY[part].sections
    assert _heads(at) == [(str(s), P.ANCHORS[s]) for s in sections]
    if part not in ("1-2", P.ALL):  # the group in one line where section 1 is not drawn
        assert any("On group **" in c.value for c in at.caption)


def test_next_opens_the_next_part_and_asks_to_land_on_its_first_section(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl")
    at.button(key="lesson_part_next").click().run()
    assert [n for n, _ in _heads(at)] == ["3", "4", "5", "6"]
    assert at.query_params.get(P.KEY) in ("3-6", ["3-6"])
    assert at.session_state["lesson_goto"] == (P.ANCHORS[3], 1)  # the page scrolls there once drawn
    at.button(key="lesson_part_back").click().run()
    assert [n for n, _ in _heads(at)] == ["1", "2"]
    assert at.session_state["lesson_goto"] == (P.ANCHORS[1], 2)


def test_an_unknown_part_in_a_link_is_said_and_the_first_part_drawn(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl", lesson_part="99")
    assert not at.exception
    assert [n for n, _ in _heads(at)] == ["1", "2"]
    notes = " ".join(w.value for w in (*at.warning, *at.info, *at.caption))
    assert "lesson_part" in notes


def test_every_section_anchor_belongs_to_one_part():
    assert sorted(P.ANCHORS) == list(range(1, 13))
    assert sorted(s for p in P.PARTS for s in p.sections) == list(range(1, 13))
    assert set(P.PART_OF_ANCHOR) == set(P.ANCHORS.values())


def test_an_answer_stays_in_the_link_and_the_handout_when_the_reader_moves_on(app, monkeypatch):
    import ui.lesson.handout as H

    seen = {}
    real = H.lesson_handout

    def spy(group, beta, sigma_min, answers=None, edits=None, extra=None):
        seen.update(answers=dict(answers or {}), extra=list(extra or []))
        return real(group, beta, sigma_min, answers, edits, extra)

    monkeypatch.setattr(H, "lesson_handout", spy)
    at = app("pages/lesson.py", sample="worked-example.jsonl", lesson_part="7-8")
    at.session_state["lesson_share_open"] = True  # the link and the handout are built once opened
    foil = next(p for p in at.pills if p.key and p.key.startswith("lesson_pred_foil"))
    foil.set_value(foil.options[0]).run()
    shared = at.query_params.get("ls")
    assert shared
    at.segmented_control(key=P.KEY).set_value("1-2").run()  # the foil question is no longer drawn ...
    assert not [p for p in at.pills if p.key and p.key.startswith("lesson_pred_foil")]
    assert at.query_params.get("ls") == shared  # ... and its answer is still in the link
    assert seen["answers"].get("foil") == foil.options[0]  # and in the handout's answer key
    # the handout asks sections 10 and 11's questions though neither part was opened
    assert {q.section for q in seen["extra"]} >= {"10", "11"}
