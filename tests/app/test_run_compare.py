"""Training runs, a recorded run beside others (ui/runs/compare.py): the trainer's metrics of several
run folders overlaid, named by their labels, and a click that opens another run's iteration."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from tests.support.runs import write_runs  # noqa: E402
from ui.core import state  # noqa: E402


def _svgs(at, key: str) -> list[str]:
    return [json.loads(e.proto.json)["svg"] for e in at.get("bidi_component") if e.proto.id.endswith(key)]


def test_several_runs_overlaid_and_a_click_opens_another_run(app, tmp_path, monkeypatch):
    write_runs(tmp_path / "runs" / "exp")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py", run_folder=tmp_path / "runs" / "exp" / "crbc-s0")
    assert not at.exception, at.exception
    assert not _svgs(at, "runs_cmp_curve")  # folded until asked for
    at.session_state["runs_cmp_open"] = True
    at.run()
    from ui.core.run_source import value as run_value

    pick = at.multiselect(key="runs_cmp")
    exp = tmp_path / "runs" / "exp"
    assert pick.value == [run_value(exp / "crbc-s0")]
    assert {"exp/crbc-s0", "exp/crbc-s1", "exp/grpo-s0"} <= set(pick.options)  # named by their labels
    pick.set_value([run_value(exp / n) for n in ("crbc-s0", "crbc-s1", "grpo-s0")]).run()
    assert not at.exception, at.exception
    at.selectbox(key="runs_cmp_metric").set_value("success_rate").run()
    (svg,) = _svgs(at, "runs_cmp_curve")
    assert "exp/crbc (n=2)" in svg and "exp/grpo (n=1)" in svg  # the seeds of one experiment as one mean
    assert 'data-pick="2|exp/crbc-s1"' in svg
    assert "exp/grpo-s0" in svg and "exp/crbc-s1" in svg  # every run by its label, never a path
    assert str(tmp_path) not in svg


def test_a_link_naming_several_runs_opens_them_compared(app, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.support.paths import APP
    from ui.core.run_source import value as run_value

    write_runs(tmp_path / "runs" / "exp")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    exp = tmp_path / "runs" / "exp"
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["source"] = "run"
    at.query_params["run"] = [run_value(exp / "crbc-s0"), run_value(exp / "grpo-s0")]
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="runs_cmp").value == [run_value(exp / "crbc-s0"), run_value(exp / "grpo-s0")]
    at.selectbox(key="runs_cmp_metric").set_value("success_rate").run()
    (svg,) = _svgs(at, "runs_cmp_curve")
    assert "exp/crbc (n=1)" in svg and "exp/grpo (n=1)" in svg


def test_the_doctors_counts_of_several_recorded_runs_are_overlaid(app, tmp_path, monkeypatch):
    """Recorded runs compared: the rows the recorder's doctor flagged per iteration, every warning
    and error check summed or one check, each point naming its run and iteration (a click opens it,
    as the metric curves' points do); a run that never recorded the counts is named in a sentence."""
    from tests.support.runs import write_doctor_runs
    from ui.core.run_source import value as run_value

    exp = tmp_path / "runs" / "doc"
    write_doctor_runs(exp)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py", run_folder=exp / "rec-s0")
    at.session_state["runs_cmp_open"] = True
    at.run()
    at.multiselect(key="runs_cmp").set_value([run_value(exp / n) for n in ("rec-s0", "rec-s1", "plain-s0")]).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="runs_cmp_doctor_check").options == ["all warning and error checks (summed)",
                                                                 "singleton_groups", "no_shared_anchors"]
    (svg,) = _svgs(at, "runs_cmp_doctor_curve")
    assert "doc/rec (n=2)" in svg and 'data-pick="2|doc/rec-s1"' in svg and "plain-s0" not in svg
    assert any("doc/plain-s0 never recorded the advantage doctor" in c.value for c in at.caption)
    at.selectbox(key="runs_cmp_doctor_check").set_value("no_shared_anchors").run()
    (svg,) = _svgs(at, "runs_cmp_doctor_curve")
    assert "rows flagged: no_shared_anchors" in svg
