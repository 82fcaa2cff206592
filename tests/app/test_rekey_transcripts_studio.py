"""The studio re-keys a keyed run from the transcripts its recorder kept, as the report does."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tests.support.apptest import chosen_group  # noqa: E402
from tests.support.runs import keyed_run as _keyed_run  # noqa: E402
from ui.core import state  # noqa: E402


def test_the_sidebars_key_reads_the_kept_transcripts(app, tmp_path, monkeypatch):
    path = tmp_path / "runs" / "keyed"
    _keyed_run(path)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app(run_folder=path, anchor_key=r"Current Board: ([A-Z])")
    assert not at.exception, at.exception
    g = chosen_group(at)
    assert [s.anchor for r in g.rollouts for s in r.steps] == ["B", "B", "B", "C"]
    at = app(run_folder=path)  # no key asked for: the recorded one, as stored
    g = chosen_group(at)
    assert [s.anchor for r in g.rollouts for s in r.steps] == ["B1", "B2", "B1", "C2"]
