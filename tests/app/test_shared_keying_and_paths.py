"""A shared studio against hostile links (issue 46): an anchor key sent in a link ends in one
notice at once (bounded before anything runs), a key a session asks for runs in a worker and is
kept for the session, an over-long run path is a notice, never ``OSError``."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("streamlit")

from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts  # noqa: E402
from crbc.jobs import keying  # noqa: E402
from devtools.textworld import alfworld_like_run  # noqa: E402
from ui.core import state  # noqa: E402

HOSTILE = "(" * 5000 + ")" * 5000


def _samples(tmp_path):
    g = RolloutGroup("h", tuple(Rollout("h", i, tuple(Step(f"chat {i} | room {t}", "a") for t in range(3)),
                                        i % 2 == 0) for i in range(4)))
    write_rollouts(tmp_path / "history.jsonl", [g])
    return tmp_path


def _count_jobs(monkeypatch) -> list:
    started = []
    real = keying.KeyJob.__init__

    def counted(self, *a, **k):
        started.append(a[1] if len(a) > 1 else k.get("pattern"))
        real(self, *a, **k)

    monkeypatch.setattr(keying.KeyJob, "__init__", counted)
    return started


def test_a_hostile_key_in_a_link_is_one_short_notice_at_once(app, tmp_path, monkeypatch):
    started = _count_jobs(monkeypatch)
    t = time.perf_counter()
    at = app(samples=_samples(tmp_path), anchor_key=HOSTILE)
    assert time.perf_counter() - t < 30 and not started  # refused before any worker
    (err,) = [e.value for e in at.error]
    assert "at most 1,000" in err and "10,000 characters" in err and len(err) < 200
    assert not at.sidebar.error and "_crbc_source" not in at.session_state


def test_a_key_is_applied_in_a_worker_once_per_session(app, tmp_path, monkeypatch):
    started = _count_jobs(monkeypatch)
    at = app(samples=_samples(tmp_path))
    at.text_input(key="anchor_key").set_value(r"room (\d+)$").run()
    assert not at.exception and started == [r"room (\d+)$"]
    src = at.session_state["_crbc_source"]
    assert [s.anchor for s in src.groups[0].rollouts[0].steps] == ["0", "1", "2"]
    at.run()  # another rerun: the keyed groups are the session's
    assert not at.exception and len(started) == 1
    at.text_input(key="anchor_key").set_value("nomatch").run()
    (err,) = [e.value for e in at.error]
    assert "group 'h' rollout 0 step 0" in err and "'nomatch'" in err
    at.run()  # the refusal is kept too: no second worker
    assert len(started) == 2 and len(at.error) == 1


def test_a_slow_key_ends_in_a_notice_at_its_budget(app, tmp_path, monkeypatch):
    monkeypatch.setattr(keying, "LIMITS", keying.Limits(seconds=0.001, memory_bytes=10**9, cpu_seconds=None))
    at = app(samples=_samples(tmp_path))
    at.text_input(key="anchor_key").set_value(r"(?s)(.)").run()
    assert not at.exception
    (err,) = [e.value for e in at.error]
    assert err.startswith("Anchor key: matching took longer than") and "nothing was keyed" in err


def test_an_over_long_run_path_typed_or_linked_is_a_notice(app, tmp_path, monkeypatch):
    run = alfworld_like_run(tmp_path / "runs" / "alf", iterations=1, groups=1)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    long = "runs/" + "x" * 5000
    at = app(run=False, source="run")
    at.query_params["run"] = long  # "run" is also the fixture's own keyword
    at.run()
    assert not at.exception
    assert any("Ignored URL parameter" in w.value and "run=" in w.value for w in at.warning)
    at.sidebar.text_input(key="run_path").set_value(long).run()
    assert not at.exception
    (err,) = [e.value for e in at.sidebar.error]
    assert "5,005 characters" in err and "longer than any run folder" in err and len(err) < 300
    at.sidebar.text_input(key="run_path").set_value("runs/" + "y" * 300 + "/alf").run()  # one name too long
    assert not at.exception
    (err,) = [e.value for e in at.sidebar.error]  # the limit it breaks, not the path's length
    assert "is 300 bytes" in err and "at most 255 bytes" in err and "1,024" not in err, err
    at.sidebar.text_input(key="run_path").set_value(str(run)).run()
    assert not at.exception and not at.sidebar.error


def test_a_refused_upload_is_one_alert(app, tmp_path):
    at = app(samples=_samples(tmp_path), run=False, source="upload")
    at.session_state["_crbc_error"] = "bad.jsonl:1: group: missing"
    at.run()
    assert not at.exception and not at.sidebar.error
    assert [e.value for e in at.error] == ["**The uploaded file was refused; nothing was loaded.** Fix these lines "
                                           "and upload it again:"]
    assert any("see the message on the page" in c.value for c in at.sidebar.caption)


def test_keyings_share_a_few_workers_and_a_long_wait_is_a_notice(app, tmp_path, monkeypatch):
    from ui.core import anchor_key

    monkeypatch.setattr(anchor_key, "_SLOTS", __import__("threading").BoundedSemaphore(1))
    monkeypatch.setattr(anchor_key, "WAIT_S", 0.5)
    anchor_key._SLOTS.acquire()  # another session's keying holds the only place
    try:
        at = app(samples=_samples(tmp_path))
        at.text_input(key="anchor_key").set_value(r"room (\d+)$").run()
        assert not at.exception
        (err,) = [e.value for e in at.error]
        assert "busy keying for others" in err
    finally:
        anchor_key._SLOTS.release()
    at.run()  # a place is free: the same key is tried again (a busy server is not kept as its answer)
    assert not at.exception and not at.error
