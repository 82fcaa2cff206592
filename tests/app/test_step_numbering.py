"""Every page numbers steps as the files do: from 0 (verl's ``step_index``, the run recorder, the
Step credits CSV). Each test fails if a page calls the first step of a rollout "step 1".

Worked example (docs/MATH.md section 8): rollout 0 is s0 -a-> s1 -c-> z+, two steps, 0 and 1.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("streamlit")

from tests.support.html_tables import tables  # noqa: E402

SAMPLE = "worked-example.jsonl"


def _text(at) -> str:
    return "\n".join(str(x.value) for x in [*at.markdown, *at.caption, *at.info, *at.subheader])


def _htmls(at) -> str:
    return "\n".join(str(h.value) for h in at.get("html"))


def test_rollouts_page_starts_its_steps_at_0(app):
    at = app(sample=SAMPLE, rollout="0")
    slider = at.slider(key="step")
    assert (slider.min, slider.value, slider.max) == (0, 0, 1)
    assert "before step 0" in _text(at) and "before step 1**" not in _text(at)
    bars = _htmls(at)
    ticks = re.findall(r'<div style="flex:1;text-align:center">(\d*)</div>', bars)
    assert ticks[:2] == ["0", "1"], ticks  # the bars' axis, like their tooltips ("step 0: a ...")
    assert "step 0: a" in bars
    at.session_state["rollouts_steps_open"] = True
    at.run()
    frame = next(t.value for t in tables(at) if "A_S" in t.value.columns)
    assert frame["t"].astype(int).tolist() == [0, 1]


def test_lesson_step_table_and_edit_form_start_at_0(app):
    at = app(sample=SAMPLE)
    at.switch_page("pages/lesson.py").run()
    assert not at.exception
    at.session_state["lesson_edit_open"] = True  # the edit form's fold
    at.run()
    edit_t = at.number_input(key="lesson_edit_t")
    assert (edit_t.min, edit_t.value) == (0, 0)
    at.segmented_control(key="lesson_part").set_value("3-6").run()  # section 6: every step's credit
    steps = next(t.value for t in tables(at) if {"rollout", "t", "A_S"} <= set(t.value.columns))
    first = steps[steps["rollout"].astype(int) == 0]["t"].astype(int).tolist()
    assert first == [0, 1], steps.head()


def test_inspector_names_the_first_visit_step_0(app):
    at = app(sample=SAMPLE, rollout="0")
    at.switch_page("pages/inspector.py").run()
    assert not at.exception
    obs = [m.value for m in at.markdown if m.value.startswith("**The observation**")]
    assert obs and "rollout 0, step 0;" in obs[0], obs  # s0 is rollout 0's first step


def test_step_credits_opens_the_inspector_at_the_same_0_based_step(app):
    at = app("pages/credits.py", sample=SAMPLE)
    grp = at.session_state["_crbc_source"].groups[0]
    at.session_state["credits_cell"] = (grp.group, "1:2")  # a click on rollout 1's second step
    at.run()
    head = next(m.value for m in at.markdown if m.value.startswith("**Rollout 1 ("))
    assert "step 1 (steps 0–" in head
    at.button(key="credits_open_inspector").click().run()  # AppTest cannot follow st.switch_page:
    assert at.session_state["inspect_anchor"]["step"] == (1, 1)  # the request is 0-based ...
    at.switch_page("pages/inspector.py").run()  # ... and the Inspector reads it as such
    assert not at.exception
    note = next(i.value for i in at.info if i.value.startswith("Opened from Step credits"))
    assert "rollout 1, step 1 (" in note, note
