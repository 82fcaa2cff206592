"""An upload's merge line (the sidebar's "anchors · steps at shared anchors · ...") comes from the
worker that read the file: the server does not merge the groups again for it. A second upload
with a similarity TAU (merged in the server after the read) still computes its own."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from crbc.io.rollouts import read_rollouts
from crbc.process import merge_profile
from tests.support.apptest import TIMEOUT
from tests.support.paths import APP, ROOT
from tests.support.uploads import uploading

SAMPLE = ROOT / "sample_rollouts" / "gridworld.jsonl"


def _open(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _captions(at: AppTest) -> str:
    return " ".join(str(c.value) for c in at.sidebar.caption)


def test_the_merge_line_of_an_upload_is_the_workers(monkeypatch):
    from ui.core import anchor_key

    calls = []
    monkeypatch.setattr(anchor_key, "merge_profile", lambda groups: calls.append(1) or merge_profile(groups))
    uploading(monkeypatch, "upload_file_", "mine.jsonl", SAMPLE.read_bytes())
    at = _open(source="upload")
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["_crbc_source"].key.startswith("upload:")
    assert merge_profile(read_rollouts(SAMPLE)).line() in _captions(at) and calls == []


def test_a_similarity_merge_after_the_read_computes_its_own_line(monkeypatch):
    from ui.core import anchor_key

    calls = []
    monkeypatch.setattr(anchor_key, "merge_profile", lambda groups: calls.append(1) or merge_profile(groups))
    uploading(monkeypatch, "upload_file_", "mine.jsonl", SAMPLE.read_bytes())
    at = _open(source="upload", anchor_similarity="0.9")
    assert not at.exception, [e.message for e in at.exception]
    assert calls == [1] and "similar observations merged" in _captions(at)
