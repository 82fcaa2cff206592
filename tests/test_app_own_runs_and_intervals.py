"""AppTest for users' own runs and for how sure a credit is: the sidebar's merge line, the
upload's importers (their refusals), the Training runs review of a run that is not ours, the
Inspector's intervals and observation, Step credits' evidence marks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts  # noqa: E402
from devtools.textworld import alfworld_like_group, alfworld_like_run  # noqa: E402
from tests.html_tables import numeric, tables
from ui import state, upload  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def _app(tmp_path, monkeypatch, page: str | None = None) -> AppTest:
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _merge_captions(at: AppTest) -> list[str]:
    return [c.value for c in at.sidebar.caption if c.value.startswith("anchors:")]


def test_sidebar_merge_line_and_the_merges_nothing_warning(tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    history = RolloutGroup("h", tuple(Rollout("h", i, tuple(Step(f"turn {t} of chat {i}", "a") for t in range(3)),
                                              i % 2 == 0) for i in range(4)))
    write_rollouts(tmp_path / "history.jsonl", [history])
    at = _app(tmp_path, monkeypatch)
    line = _merge_captions(at)
    assert len(line) == 1 and "steps at anchors shared by ≥ 2 rollouts: 100%" in line[0]
    assert not [w for w in at.sidebar.warning if "merges nothing" in w.value]
    at.selectbox(key="sample").set_value("history.jsonl").run()
    assert _merge_captions(at) == ["anchors: 12, steps at anchors shared by ≥ 2 rollouts: 0%"]
    assert any("merges nothing" in w.value and "anchor regex" in w.value for w in at.sidebar.warning)


def test_the_upload_offers_every_importer(tmp_path, monkeypatch):
    at = _app(tmp_path, monkeypatch)
    at.radio(key="source").set_value("upload").run()
    assert not at.exception
    assert at.selectbox(key="upload_kind").options == [label for label, _t, _s in upload.FORMATS.values()]
    at.selectbox(key="upload_kind").set_value("steps").run()
    assert not at.exception and at.text_input(key="upload_regex") is not None


def test_refused_uploads_name_file_row_and_column():
    _, err = upload._read("steps", {"mine.csv": b"uid,traj_uid,anchor_obs\n1,2,x\n"}, None, None, "t1")
    assert err.startswith("mine.csv: row 1: column 'success'") and "Traceback" not in err
    _, err = upload._read("rollout", {"bad.jsonl": b'{"group": "g"}\n'}, None, None, "t2")
    assert err.startswith("bad.jsonl:1:")
    _, err = upload._read("steps", {"mine.csv": b"x"}, "(", None, "t3")
    assert "not a valid regular expression" in err
    rows = [{"uid": "g", "traj_uid": f"t{i}", "step_index": t, "anchor_obs": f"chat ... Now: room {t}",
             "action": "go", "success": i == 0, "advantages": 0.5 - i} for i in range(2) for t in range(3)]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    got, err = upload._read("steps", {"steps.jsonl": data}, r"Now: (.*)$", None, "t4")
    assert err is None
    (groups,) = got.values()
    assert [s.anchor for s in groups[0].rollouts[0].steps] == ["room 0", "room 1", "room 2"]
    assert groups[0].rollouts[1].steps[0].trainer_advantage == -0.5


def test_runs_page_reviews_a_run_that_is_not_ours(tmp_path, monkeypatch):
    alfworld_like_run(tmp_path / "runs" / "alf-verl-agent", iterations=3, groups=3)
    at = _app(tmp_path, monkeypatch, "pages/runs.py")
    at.segmented_control(key="runs_kind").set_value("any").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="review_run").value == "alf-verl-agent"
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"success", "steps at shared anchors", "evidence coverage", "sure steps", "groups"}
    assert metrics["groups"] == "3" and metrics["steps at shared anchors"].endswith("%")
    agree = at.dataframe[0].value
    assert "crbc" in agree["estimator"].tolist() and agree["Spearman ρ with the trainer"].notna().any()
    groups = at.dataframe[1].value
    assert sorted(groups["group"]) == ["alfworld/task-0", "alfworld/task-1", "alfworld/task-2"]
    assert at.button(key="review_all").label == "Review the other 2 iteration(s)"
    at.button(key="review_all").click().run()
    assert not at.exception
    done = at.session_state["_review_done"]
    assert [sorted(v) for v in done.values()] == [[0, 1, 2]]
    at.selectbox(key="review_iter").set_value(1).run()
    assert not at.exception
    first = at.dataframe[1].value["group"].iloc[0]
    at.button(key="review_open_credits").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="source").value == "run"
    assert at.selectbox(key="group").value == first


def test_runs_page_refuses_a_folder_that_is_no_run(tmp_path, monkeypatch):
    at = _app(tmp_path, monkeypatch, "pages/runs.py")
    at.segmented_control(key="runs_kind").set_value("any").run()
    at.text_input(key="review_dir").set_value(str(tmp_path)).run()
    assert not at.exception
    assert any("could not be read" in e.value for e in at.error)


def test_inspector_intervals_and_the_observation(tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    at = _app(tmp_path, monkeypatch, "pages/inspector.py")
    assert any("How sure is each action's credit here" in m.value for m in at.markdown)
    table = tables(at)[0].value
    assert {"q", "q_lo", "q_hi", "Q − V", "Q − V lo", "Q − V hi", "evidence"} <= set(table.columns)
    assert set(table["evidence"]) <= {"sure", "unsure", "none"}
    ok = numeric(table, ["Q − V", "Q − V lo", "Q − V hi"]).dropna(subset=["Q − V lo"])
    assert (ok["Q − V lo"] <= ok["Q − V"] + 1e-9).all() and (ok["Q − V"] <= ok["Q − V hi"] + 1e-9).all()
    assert any("toy tasks" in c.value for c in at.caption)  # the level is the measured one
    assert any(m.value.startswith("**The observation**") for m in at.markdown)


def test_step_credits_evidence_marks_and_sure_only(tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    at = _app(tmp_path, monkeypatch, "pages/credits.py")
    assert at.toggle(key="credits_marks").value is True
    at.toggle(key="credits_sure_only").set_value(True).run()
    assert not at.exception
    at.toggle(key="credits_marks").set_value(False).run()
    assert not at.exception and at.toggle(key="credits_sure_only").disabled


def test_lesson_section_on_intervals_as_the_group_grows():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/lesson.py").run()
    assert not at.exception, at.exception
    assert any(h.value.startswith("How sure is a credit") for h in at.subheader)
    rows = next(t.value for t in tables(at) if "covers the truth" in t.value.columns)
    assert rows["G"].tolist()[0] == "2" or rows["G"].tolist()[0] == 2
    assert any("toy tasks" in c.value for c in at.caption)  # the level is the measured one
