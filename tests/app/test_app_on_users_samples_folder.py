"""The studio on a samples folder of users' own files (CRBC_SAMPLES_DIR)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from crbc.io.rollouts import write_rollouts  # noqa: E402
from devtools.user_like import big_group, many_groups  # noqa: E402
from tests.support.html_tables import tables
from ui.core import widgets  # noqa: E402


def test_the_lesson_opens_on_a_samples_folder_without_its_worked_example(app, tmp_path, monkeypatch):
    # the benchmark's samples folder holds only the user's files: the Lesson's own teaching
    # files come from the shipped folder (before: "worked-example.jsonl: cannot read file")
    write_rollouts(tmp_path / "big.jsonl", [big_group()])
    at = app(samples=tmp_path, page="pages/lesson.py")
    assert at.title[0].value.startswith("Lesson")
    at.radio(key="lesson_start").set_value("sidebar group").run()
    at.segmented_control(key="lesson_part").set_value("all").run()
    assert not at.exception, [e.message for e in at.exception]
    # a 150+ anchor group: its long tables are scrolling grids, not thousands of HTML rows
    assert all(len(t.value) <= widgets.GRID_ROWS for t in tables(at))
    assert at.dataframe


def test_disagreements_across_many_groups_long_tables_are_grids(app, tmp_path, monkeypatch):
    write_rollouts(tmp_path / "many.jsonl", many_groups())
    at = app(samples=tmp_path, page="pages/disagreements.py")
    at.segmented_control(key="dis_scope").set_value("all groups of the file").run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.dataframe  # the long tables are folded, and a fold is built only when opened
    at.session_state["dis_all_anchors"] = True
    at.session_state["dis_all_pairs"] = True
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert all(len(t.value) <= widgets.GRID_ROWS for t in tables(at))
    assert len(at.dataframe) == 2
