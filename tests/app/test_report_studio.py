"""The studio's "Download this view as a report": a button on Step credits, Anchor graph,
Disagreements and Training runs that builds the report only when clicked (AppTest), and gives
the very file ``crbc report`` writes (headless Chromium, slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

import crbc.report
from tests.support.paths import ROOT
from ui import state

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
LABEL = "Download this view as a report"


@pytest.fixture
def calls(monkeypatch):
    """Counts every report built (the pages must build none while they are drawn)."""
    made = []
    real_group, real_run = crbc.report.group_report, crbc.report.run_report
    monkeypatch.setattr(crbc.report, "group_report", lambda *a, **k: made.append("group") or real_group(*a, **k))
    monkeypatch.setattr(crbc.report, "run_report", lambda *a, **k: made.append("run") or real_run(*a, **k))
    return made


@pytest.mark.parametrize("page", ["pages/credits.py", "pages/graph.py", "pages/disagreements.py"])
def test_group_pages_offer_the_report_and_build_it_only_on_click(app, page, calls):
    at = app(run=False)
    at.query_params["sample"] = "worked-example.jsonl"
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    labels = [b.proto.label for b in at.get("download_button")]
    assert LABEL in labels, labels
    assert calls == []


def test_runs_page_offers_the_run_report(app, tmp_path, monkeypatch, calls):
    from tests.support.runs import write_runs

    write_runs(tmp_path / "runs")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app(run=False)
    at.run()
    at.switch_page("pages/runs.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download this run as a report" in labels, labels
    # the review of the run folder the sidebar opened (ui/run_source.py)
    first = sorted((tmp_path / "runs").rglob("run.json"))[0].parent
    at = app(run=False)
    at.query_params.update(source="run", run=str(first.resolve()))
    at.run()
    at.switch_page("pages/runs.py").run()
    assert at.segmented_control(key="runs_kind").value == "any"
    assert not at.exception, [e.message for e in at.exception]
    keys = [b.proto.id for b in at.get("download_button")]
    assert any("review_dl_report" in k for k in keys), keys
    assert calls == []


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("sample", ["worked-example.jsonl", "sokoban-weak.jsonl"])
def test_the_download_is_the_file_the_command_writes(sample, guarded_page, artifacts_dir):
    """Step credits of a sample's opening group (for sokoban-weak with its exact truth, which the
    page computed and the download reuses): the downloaded bytes are ``crbc report``'s."""
    from devtools.apprunner import running_app, wait_ready

    with running_app(log_path=artifacts_dir / "report-studio.log") as base:
        page = guarded_page
        page.goto(f"{base}/credits?sample={sample}")
        wait_ready(page, "Step credits", 120_000)
        button = page.get_by_role("button", name=LABEL)
        button.scroll_into_view_if_needed()
        with page.expect_download(timeout=120_000) as info:
            button.click()
        got = Path(info.value.path()).read_bytes()
    want = crbc.report.report(ROOT / "sample_rollouts" / sample).encode("utf-8")
    assert got == want
    assert (b'data-panel="truth"' in got) == (sample == "sokoban-weak.jsonl")
