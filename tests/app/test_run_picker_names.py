"""The sidebar's run picker names each run by its run.json name (project/experiment and seed),
never by a cut-off path, while the link's ``run=`` keeps the run's path (issue 55.1)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tests.support.runs import write_runs  # noqa: E402
from ui.core import state  # noqa: E402


def _link_run(at) -> str:
    v = at.query_params["run"]
    return v if isinstance(v, str) else v[-1]


def test_the_run_picker_shows_names_and_the_link_keeps_paths(app, tmp_path, monkeypatch):
    from ui.core.run_source import value as run_value

    write_runs(tmp_path / "runs" / "exp")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    exp = tmp_path / "runs" / "exp"
    at = app(run_folder=exp / "crbc-s0")
    pick = at.selectbox(key="run")
    assert pick.value == run_value(exp / "crbc-s0")  # the option is the path the link names
    assert {"exp/crbc-s0", "exp/crbc-s1", "exp/grpo-s0"} <= set(pick.options)  # shown by name
    assert not any(str(tmp_path) in o for o in pick.options)
    assert _link_run(at) == str((exp / "crbc-s0").resolve())

    pick.set_value(run_value(exp / "grpo-s0")).run()
    assert not at.exception, at.exception
    assert _link_run(at) == run_value(exp / "grpo-s0")  # the link carries the path, not the name
