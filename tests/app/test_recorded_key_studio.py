"""The studio and a run's recorded anchor key (issue 48): a run whose run.json names
``config.anchor_key`` and whose audit was computed without ``--anchor`` is described with that
key, and typing the same key neither warns nor offers a recompute; a regex that cannot match
multi-line anchors says so with a hint, shown as typed (never Markdown)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from devtools.textworld import alfworld_like_run  # noqa: E402
from ui.core import state  # noqa: E402

KEY = "(?s)(.*)"


def _keyed_run(tmp_path):
    import pandas as pd

    path = alfworld_like_run(tmp_path / "runs" / "keyed", iterations=2, groups=2)
    meta = json.loads((path / "run.json").read_text())
    meta["config"]["anchor_key"] = KEY  # as RunRecorder(anchor=KEY) writes it
    (path / "run.json").write_text(json.dumps(meta))
    rows = [{"iteration": i, "estimator": e, "groups": 2, "rollouts": 16, "steps": 100, "success_rate": 0.3,
             "shared_step_share": 0.7, "anchors_per_group": 20.0, "none_share": 0.5, "sure_share": 0.1,
             "trainer_spearman": 0.4, "trainer_sign_agreement": 0.8, "seconds": 0.1}
            for i in range(2) for e in ("crbc", "gigpo")]
    pd.DataFrame(rows).to_parquet(path / "audit.parquet")  # `crbc audit RUN`, no --anchor
    return path


@pytest.mark.slow
def test_a_run_recorded_with_a_key_is_described_with_it(app, tmp_path, monkeypatch):
    path = _keyed_run(tmp_path)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    for extra in ({}, {"anchor_key": KEY}):
        at = app("pages/runs.py", run_folder=path, **extra)
        assert not [w for w in at.warning if "computed with the anchor key" in w.value], extra
        assert any("computed with the anchor key `(?s)(.*)`" in c.value for c in at.caption), extra
        assert not [b for b in at.button if b.key == "runs_audit_go"], extra
        assert at.session_state["_crbc_source"].recorded_key == KEY


def test_a_regex_that_misses_multiline_anchors_says_why_as_typed(app):
    at = app(sample="gridworld.jsonl", anchor_key="^(.*)$")
    errors = " ".join(e.value for e in at.error)
    assert "does not match" in errors and "(?s)" in errors, errors
    assert r"^(.\*)" in errors  # escaped: the * shows, never italics
