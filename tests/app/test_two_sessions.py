"""Two sessions of the studio: nothing derived from one user's data reaches the store every
session reads (ui/core/context.py), on the Lesson, Training runs and Estimator accuracy.

The test is a comparison, so it cannot be fooled by a key that hides where its content came
from (a digest of a choice that includes an upload): the server's store is emptied, a session
*without* the user's data visits the pages and what it leaves there is recorded; the store is
emptied again and a session *with* the data (an edited Lesson, an uploaded run archive, an
uploaded rollout file) visits the same pages. Everything the second session left in the shared
store must be something the first one left too; what it computed from its data is in its own
session's store. Then a third session, opened after it, sees none of it.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import TIMEOUT
from tests.support.paths import APP
from tests.support.uploads import uploading

pytestmark = [pytest.mark.usefixtures("own_session_ids"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _visit(pages: list[str], **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    for page in pages:
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
    return at


def _shared_after(visit) -> set:
    from ui.core import context

    context.clear_shared()
    at = visit()
    return set(context.shared_entries()), at


def _own(at: AppTest) -> list:
    store = at.session_state["_crbc_kept"] if "_crbc_kept" in at.session_state else None
    return [] if store is None else store.entries()


def _compare(clean, with_data, marker: str) -> None:
    """``with_data`` leaves in the shared store nothing that ``clean`` does not; ``marker`` (a
    digest of the user's data) names entries of its own session, and none of a later one."""
    shared_clean, _ = _shared_after(clean)
    shared_data, at = _shared_after(with_data)
    extra = shared_data - shared_clean
    assert not extra, "derived from the user's data and shared: " + "; ".join(sorted(repr(x)[:160] for x in extra)[:5])
    assert any(marker in repr(k) for k in _own(at)), "the user's results are kept in the user's session"
    later = _visit([])  # another session, opened afterwards: none of it
    assert not any(marker in repr(k) for k in _own(later))


def test_an_edited_lesson_stays_in_its_session():
    from crbc.explain.lesson_share import LessonShare, encode
    from crbc.explain.what_if import flip_outcome
    from crbc.io.rollouts import read_rollouts
    from ui.core.context import group_digest

    edited = flip_outcome(read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl")[0], 0)
    link = encode(LessonShare(ops=(("flip", 0),)))
    _compare(lambda: _visit(["pages/lesson.py"]), lambda: _visit(["pages/lesson.py"], ls=link),
             "lesson:" + group_digest(edited))


def test_an_uploaded_run_archive_stays_in_its_session(monkeypatch):
    run = ROOT / "sample_rollouts" / "runs" / "sokoban-6x6" / "crbc-s0"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(run.rglob("*")):
            if f.is_file():
                z.write(f, f"mine/{f.relative_to(run)}")
    data = buf.getvalue()

    def with_archive():
        uploading(monkeypatch, "runs_upload", "mine.zip", data)
        try:
            at = _visit(["pages/runs.py"])
        finally:
            monkeypatch.undo()
        assert not at.error, [e.value for e in at.error]
        return at

    import hashlib

    _compare(lambda: _visit(["pages/runs.py"]), with_archive, "upload:" + hashlib.sha1(data).hexdigest()[:16])


def test_an_uploaded_group_stays_in_its_session_on_credits_and_accuracy(monkeypatch):
    data = (ROOT / "sample_rollouts" / "gridworld.jsonl").read_bytes()
    pages = ["pages/credits.py", "pages/accuracy.py"]

    def with_upload():
        uploading(monkeypatch, "upload_file_", "mine.jsonl", data)
        try:
            at = _visit(pages, source="upload")
        finally:
            monkeypatch.undo()
        assert at.session_state["_crbc_source"].key.startswith("upload:")
        return at

    # the clean session opens the same file as the shipped sample it is: its shared results are
    # the ones a shipped file may have; the upload's may have none beyond them
    _compare(lambda: _visit(pages, source="sample", sample="gridworld.jsonl"), with_upload, "upload:")
