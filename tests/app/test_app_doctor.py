"""The advantage doctor on the Training runs page: a run recorded from a trainer with a planted
bug (SkyRL's last-step broadcast, tests/support/doctor_bugs.py) shows the iterations the recorder
flagged and the chosen iteration's findings, whose rows open in the Inspector."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("pyarrow")

from crbc.integrations import verl as V  # noqa: E402
from tests.support import doctor_bugs as bugs  # noqa: E402
from ui.core import state  # noqa: E402


@pytest.mark.slow
def test_a_planted_bug_is_shown_with_its_rows_one_click_away(app, tmp_path, monkeypatch):
    path = tmp_path / "runs" / "skyrl"
    rec = V.RunRecorder(path)
    bad, want = bugs.skyrl_last_step_broadcast(fixed=False)
    good, _ = bugs.skyrl_last_step_broadcast(fixed=True, seed=1)
    rec.record(good, 0)
    rec.record(bad, 1)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py", run_folder=path)
    assert not at.exception, at.exception
    assert any("flagged 1 of 2 iterations" in w.value for w in at.warning)
    flagged = next(d for d in at.dataframe if "checks (rows flagged)" in d.value.columns)
    assert flagged.value["iteration"].tolist() == [1]
    at.button(key="review_open_iter").click().run()
    assert not at.exception, at.exception
    assert any("Every check is silent on this iteration." in s.value for s in at.success)  # iteration 0
    at.session_state["run_iter"] = 1
    at.run()
    at.button(key="review_open_iter").click().run()
    assert not at.exception, at.exception
    findings = next(d for d in at.dataframe if "check" in d.value.columns and "message" in d.value.columns)
    assert findings.value["check"].tolist()[0] == "zero_step_advantage"
    assert findings.value["rows"].tolist()[0] == len(want)
    rows = at.selectbox(key="doctor_row_1_zero_step_advantage")
    assert rows.options[0].startswith(f"row {want[0]}: group prompt-")
    at.button(key="doctor_open_inspector").click().run()
    assert not at.exception, at.exception


def _upload_script():
    from crbc.io.rollouts import Rollout, RolloutGroup, Step
    from ui.core import upload
    from ui.core.context import Source

    groups = [RolloutGroup(f"traj-{k}", (Rollout(f"traj-{k}", 0, (Step("s", "a"),), k % 2 == 0),))
              for k in range(4)]
    upload.upload_note(Source("upload:test", "mine.jsonl", groups))
    upload.upload_note(Source("sample:clean", "a sample", groups))  # not an upload: nothing


def test_an_uploaded_file_is_reviewed_by_the_doctor_in_the_sidebar():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_upload_script, default_timeout=60).run()
    assert not at.exception, at.exception
    notes = [w.value for w in at.sidebar.warning]
    assert len(notes) == 1 and "singleton_groups" in notes[0] and "4 rows" in notes[0]


@pytest.mark.slow
def test_a_shift_only_the_recorder_saw_is_shown_as_the_cli_shows_it(app, tmp_path, monkeypatch):
    """xtuner's shift lives in the token tensors: the recorder counted it, so the iteration's
    findings on the page are the ones ``crbc doctor RUN`` prints (never "silent" beside "flagged")."""
    from crbc.doctor.examine import examine

    path = tmp_path / "runs" / "xtuner"
    rec = V.RunRecorder(path)
    for it in range(3):
        rec.record(bugs.xtuner_shift_proto(fixed=False, seed=it)[0], it)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py", run_folder=path)
    assert not at.exception, at.exception
    assert any("flagged 3 of 3 iterations" in w.value for w in at.warning)
    at.session_state["run_iter"] = 2
    at.run()
    at.button(key="review_open_iter").click().run()
    assert not at.exception, at.exception
    assert not any("silent" in s.value for s in at.success)
    assert not any("No warning and no error" in c.value for c in at.caption)
    shown = next(d for d in at.dataframe if "check" in d.value.columns and "message" in d.value.columns)
    cli = [f for f in examine(path).findings if f.iteration == 2]
    assert shown.value["check"].tolist() == [f.check for f in cli]
    assert "advantage_shifted" in shown.value["check"].tolist()


def _big_upload_script(log: list):
    import crbc.estimators.worker_job as E
    from crbc.io.rollouts import Rollout, RolloutGroup, Step
    from ui.core import upload
    from ui.core.context import Source

    real = E.EstimateJob.__init__

    def counted(self, *a, **k):
        log.append(a[1])
        return real(self, *a, **k)

    E.EstimateJob.__init__ = counted
    try:
        groups = [RolloutGroup(f"traj-{k}", (Rollout(f"traj-{k}", 0, (Step("s", "a"),) * 3, k % 2 == 0),))
                  for k in range(1500)]  # 4,500 steps: above the server's inline size
        upload.upload_note(Source("upload:big", "mine.jsonl", groups))
        upload.upload_note(Source("sample:big", "a shipped file", groups))  # not one session's: never shown
    finally:
        E.EstimateJob.__init__ = real


def test_a_large_upload_is_reviewed_by_the_doctor_in_a_bounded_worker():
    """The sidebar's doctor on a large upload runs as the bounded worker's "doctor" job and shows
    what the server itself computes (crbc.doctor.diagnose on the same groups)."""
    from streamlit.testing.v1 import AppTest

    from crbc.doctor import diagnose, from_groups
    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    log: list = []
    at = AppTest.from_function(_big_upload_script, args=(log,), default_timeout=120).run()
    assert not at.exception, at.exception
    assert log == ["doctor"]
    groups = [RolloutGroup(f"traj-{k}", (Rollout(f"traj-{k}", 0, (Step("s", "a"),) * 3, k % 2 == 0),))
              for k in range(1500)]
    want = [f for f in diagnose(from_groups(groups)) if f.serious]
    notes = [w.value for w in at.sidebar.warning]
    assert len(notes) == len(want) >= 1
    for note, f in zip(notes, want, strict=True):
        assert f"**{f.check}** ({f.severity}) on {f.rows} rows" in note and f.message in note
