"""Audits on a shared server (issue 46), through the Training runs page: one queue for the whole
server with each waiting audit's place shown, one audit per person across tabs, an audit nobody
polls ends, and the result lands in the studio's cache, never in the run's folder."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("streamlit")

import crbc.run_analysis.audit_job  # noqa: E402
from crbc.jobs import jobqueue  # noqa: E402
from devtools.textworld import alfworld_like_run  # noqa: E402
from tests.support.fake_jobs import FakeJob  # noqa: E402
from ui.core import jobs, state  # noqa: E402


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A run under the samples, a queue of one job at a time that moves only on step(), and
    audits that are fake jobs (their starts and cancels logged)."""
    path = alfworld_like_run(tmp_path / "runs" / "alf", iterations=2, groups=2)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    monkeypatch.setenv("CRBC_CACHE_DIR", str(tmp_path / "cache"))
    q = jobqueue.JobQueue(max_running=1, stale_s=60, thread=False)
    monkeypatch.setattr(jobqueue, "_SERVER", q)
    log: list = []
    monkeypatch.setattr(crbc.run_analysis.audit_job, "start_audit", lambda folder, **kw: FakeJob(log, kw["anchor"]))
    return path, q, log


def _progress(at) -> list[str]:
    return [e.proto.text for e in at.get("progress")]


def _ask(app, path, key: str):
    at = app("pages/runs.py", run_folder=path, anchor_key=key)
    at.button(key="runs_audit_go").click().run()
    assert not at.exception
    return at


def test_audits_wait_in_one_queue_with_their_place_shown(app, server):
    path, q, log = server
    first = _ask(app, path, "(?s)(.)")
    q.step()
    first.run()
    assert log == [("start", "(?s)(.)")], log
    assert any("Auditing every iteration" in p for p in _progress(first)), (_progress(first), [w.value for w in first.warning], [e.value for e in first.error])
    second = _ask(app, path, "(?s)(..)")
    third = _ask(app, path, "(?s)(...)")
    assert any(p.startswith("Queued: 2 audit(s) ahead of yours") for p in _progress(third))
    assert any(p.startswith("Queued: 1 audit(s) ahead of yours") for p in _progress(second))
    q.step()
    assert len(log) == 1  # one at a time on the whole server
    first.session_state["_audit_job"][2].job.finish()
    q.step()
    assert log[-1] == ("start", "(?s)(..)")
    second.run()
    assert any("Auditing every iteration" in p for p in _progress(second))


def test_one_audit_per_person_across_tabs(app, server, monkeypatch):
    path, q, log = server
    monkeypatch.setattr(jobs, "owner", lambda: "browser:same")
    tab1 = _ask(app, path, "(?s)(.)")
    q.step()
    tab2 = _ask(app, path, "(?s)(..)")
    (note,) = [w.value for w in tab2.warning if "another tab of yours" in w.value]
    assert "one job per person" in note and "_audit_job" not in tab2.session_state
    assert q.counts() == (1, 0) and tab1.session_state["_audit_job"][2].state == "running"


def test_an_audit_nobody_waits_for_ends_and_frees_its_place(app, server, monkeypatch):
    path, q, log = server
    q.stale_s = 0.5
    monkeypatch.setattr(jobs, "_connection", lambda: (lambda: False))  # the tabs' connections are gone
    gone = _ask(app, path, "(?s)(.)")  # its tab is closed: nothing polls it any more
    q.step()
    kept = _ask(app, path, "(?s)(..)")
    for _ in range(8):
        time.sleep(0.1)
        kept.run()  # the page's fragment polls (AppTest runs no timers): the heartbeat
        q.step()
    ticket = gone.session_state["_audit_job"][2]
    assert ticket.state == "done" and "nobody waited" in ticket.outcome["error"]
    assert ("cancel", "(?s)(.)") in log and log[-1] == ("start", "(?s)(..)")
    assert kept.session_state["_audit_job"][2].state == "running"
