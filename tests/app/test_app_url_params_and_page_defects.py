"""AppTest for page defects a walkthrough found and for hostile URL parameters.

Each test reproduces one defect as a user would meet it; the browser tests
(tests/browser/test_explorables.py) cover what needs rendering or clicks on figures.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.html_tables import grid_rows, tables
from tests.support.paths import ROOT


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + \
            [t.value for t in at.title] + [s.value for s in at.subheader] + [h.value for h in at.header]
    return "\n".join(str(p) for p in parts)


def _all_text(at: AppTest) -> str:
    parts = [_text(at)] + [str(e.value) for e in at.info] + [str(e.value) for e in at.warning] + \
            [str(e.value) for e in at.error] + [str(e.value) for e in at.toast]
    return "\n".join(parts)


# ---------------------------------------------------------------- defect 3: backups range and URL K


def test_backups_opens_at_the_url_depth_and_reaches_convergence(app):
    at = app("pages/backups.py", sample="sokoban-weak.jsonl")
    k_slider = at.slider(key="K")
    assert "not converged" not in _text(at), "the default range reaches the convergence depth"
    assert k_slider.max >= 50
    at2 = app("pages/backups.py", sample="sokoban-weak.jsonl", K="50")
    assert at2.slider(key="K").value == 50


# ---------------------------------------------------------------- defect 4: lesson picker label


def test_lesson_picker_reads_the_new_outcome_after_a_flip(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl")
    assert at.selectbox(key="lesson_flip_r").value == "rollout 0 (success)"
    at.button(key="lesson_flip").click().run()
    assert at.selectbox(key="lesson_flip_r").value == "rollout 0 (failure)"
    assert "rollout 0 (failure)" in at.selectbox(key="lesson_flip_r").options


# ---------------------------------------------------------------- defect 7: a big group on the lesson


def test_lesson_on_a_39_anchor_group_collapses_and_keeps_v_visible(app):
    at = app("pages/lesson.py", sample="sokoban-weak.jsonl", group="sokoban-6x6-v0/seed-15")
    at.radio(key="lesson_start").set_value("sidebar group").run()
    at.segmented_control(key="lesson_part").set_value("all").run()
    assert not at.exception
    assert not at.latex, "no LaTeX system for 39 anchors"
    # the long per-anchor tables sit in expanders; the values V stay on the page
    outside = [t for t in tables(at.main) if not _in_expander(at, t)]
    # left in the page: trajectories and GRPO (8 rows each), V (39), a few rows at the root anchor,
    # plus section 9 (a fixed truth group, not this one): at most 14 steps and 3 estimators, and
    # section 11 (a fixed FrozenLake group): the 6 steps of its pair
    assert sum(len(t.value) for t in outside) <= 80 + 14 + 3 + 6, "long tables are collapsed"
    assert any("V" in str(t.value.columns.tolist()) and len(t.value) >= 39 for t in tables(at))


def _in_expander(at: AppTest, el) -> bool:
    for ex in at.main.expander:
        if any(el.element is x.element for x in tables(ex)):
            return True
    return False


# ---------------------------------------------------------------- defect 8: boundary names as anchors


@pytest.mark.parametrize("name", ["z+", "z-", " z+ "])
def test_lesson_refuses_a_boundary_name_as_anchor(app, name):
    at = app("pages/lesson.py", sample="worked-example.jsonl")
    before = [t.value.to_string() for t in tables(at)]
    at.session_state["lesson_edit_open"] = True  # the edit form's fold
    at.run()
    at.text_input(key="lesson_edit_anchor").input(name).run()
    at.button(key="lesson_edit").click().run()
    assert not at.exception
    assert at.error and any("boundary" in e.value for e in at.error)
    assert [t.value.to_string() for t in tables(at)] == before


# ---------------------------------------------------------------- defect 11: disagreements steps


def test_disagreement_steps_are_grouped_by_anchor_and_action(app):
    at = app("pages/disagreements.py", sample="sokoban-weak.jsonl")
    steps_md = _text(at)
    assert "Steps, most disagreement first" in steps_md
    rows = _step_rows(at)
    assert rows, "the steps list is shown"
    assert len(rows) == len(set(rows)), f"repeated (anchor, action) rows: {rows}"
    assert "steps" in steps_md  # a count column


def _step_rows(at: AppTest) -> list[tuple[str, str]]:
    """(anchor, action) of the rows under the Steps heading (the grid rows after the one whose
    header starts anchor, action, steps)."""
    heads = [k for k, v in enumerate(at.main.subheader) if "Steps" in v.value]
    assert heads, "the Steps list is on the page"
    rows = grid_rows(at.main)
    first = next(k for k, r in enumerate(rows) if r[:3] == ["anchor", "action", "steps"])
    return [(r[0], r[1]) for r in rows[first + 1:]]


# ---------------------------------------------------------------- defect 12: small ones


def test_lesson_names_rollouts_by_their_ids_in_the_file_as_every_page_does(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl")
    first = tables(at)[0].value
    assert first["rollout"].astype(str).tolist() == ["0", "1", "2", "3", "4"]
    assert at.selectbox(key="lesson_flip_r").options[0].startswith("rollout 0 ")
    from crbc.io.rollouts import read_rollouts
    ids = [r.rollout for r in read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")[0]]
    assert ids == [0, 1, 2, 3, 4]  # the ids the sidebar and every other page show


def test_lesson_hides_the_sidebar_pickers_it_does_not_use(app):
    at = app("pages/lesson.py", sample="sokoban-weak.jsonl")
    keys = {w.key for w in at.sidebar.selectbox}
    assert "rollout" not in keys and "estimator" not in keys and "group" not in keys
    at.radio(key="lesson_start").set_value("sidebar group").run()
    assert "group" in {w.key for w in at.sidebar.selectbox}


def test_the_same_depth_choices_on_every_page(app):
    at = app("pages/inspector.py", sample="worked-example.jsonl")
    at.session_state["params_open"] = True  # the sidebar's Parameters fold, opened
    at.run()
    side = at.selectbox(key="depth").options
    depths = at.select_slider(key="inspect_K").options  # a scale: 0, 1, ..., then the closure
    assert sorted(depths) == sorted(side) and depths[-1] == side[0] == "inf"


def test_sidebar_names_run_and_iteration(app):
    at = app("pages/runs.py")
    at.session_state["runs_drill_open"] = True
    at.run()
    at.button(key="runs_open_graph").click().run()
    assert not at.exception
    side = "\n".join(str(c.value) for c in list(at.sidebar.caption) + list(at.sidebar.markdown))
    assert "iteration" in side and "run " in side


def test_friendly_metric_names(app):
    at = app("pages/runs.py")
    m = at.selectbox(key="runs_metric")
    shown = [m.format_func(o) for o in m.options]
    assert all("_" not in s and not s.startswith("diag.") for s in shown), shown


def test_a_rejected_upload_reports_up_to_ten_bad_lines_and_is_not_kept():
    from ui.core import state

    good = json.dumps({"schema": "crbc.rollout/1", "group": "g", "rollout": 0,
                       "steps": [{"anchor": "s0", "action": "a"}], "success": True})
    lines = [good] + ["{broken"] * 12
    groups, err = state.load_upload("bad.jsonl", ("\n".join(lines) + "\n").encode())
    assert groups is None
    for n in range(2, 12):
        assert f"bad.jsonl:{n}" in err
    assert "bad.jsonl:12" not in err and "more" in err


# ---------------------------------------------------------------- hostile URL parameters


@pytest.mark.parametrize("page,query", [
    ("pages/backups.py", {"group": "no/such/group"}),
    ("pages/backups.py", {"K": "banana"}),
    ("pages/backups.py", {"K": "-3"}),
    ("pages/backups.py", {"K": "99999999"}),
    ("pages/backups.py", {"kmax": "1e400"}),
    ("pages/credits.py", {"depth": "many"}),
    ("pages/credits.py", {"beta": "2.5"}),
    ("pages/credits.py", {"beta": "nan"}),
    ("pages/rollouts.py", {"rollout": "1e9"}),
    ("pages/rollouts.py", {"step": "x"}),
    ("pages/rollouts.py", {"sample": "../../etc/passwd"}),
    ("pages/rollouts.py", {"source": "ftp"}),
    ("pages/rollouts.py", {"estimator": "<script>"}),
    ("pages/rollouts.py", {"gen_size": "100000000", "source": "generate"}),
    ("pages/rollouts.py", {"seed": "-1", "source": "generate"}),
    ("pages/inspector.py", {"inspect": "nope", "inspect_K": "inf2"}),
    ("pages/lesson.py", {"lesson_start": "everything"}),
    ("pages/accuracy.py", {"acc_metric": "vibes"}),
    ("pages/accuracy.py", {"acc_target": "the moon"}),
    ("pages/backups.py", {"backups_colour": "purple"}),
    ("pages/credits.py", {"field": "A_everything"}),
    ("pages/graph.py", {"graph_colour": "plaid"}),
])
def test_hostile_url_parameters_fall_back_with_a_notice(app, page, query):
    at = app(page, **query)
    text = _all_text(at)
    assert "ignored url parameter" in text.lower(), text[-500:]
    for k in query:
        if k != "source" or query[k] != "generate":
            assert f"`{k}" in text, f"the notice names {k}"


def test_a_url_value_with_backticks_stays_inside_its_notice_code_span(app):
    from markdown_it import MarkdownIt

    at = app(run=False)
    at.query_params["field"] = "x` ![i](http://127.0.0.1:9/i.png) `y"
    at.run()
    at.switch_page("pages/credits.py").run()
    notice = next(str(w.value) for w in at.warning if "field=" in str(w.value))
    tokens = MarkdownIt("commonmark").parseInline(notice)[0].children
    assert "image" not in [t.type for t in tokens], notice
    assert any(t.type == "code_inline" and "![i]" in t.content for t in tokens), notice
