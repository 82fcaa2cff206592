"""The studio's "Download this view as a report": a button on Step credits, Anchor graph,
Disagreements and Training runs that builds the report only when clicked (AppTest). That it
gives the very file ``crbc report`` writes is tests/browser/test_report_download.py's."""

from __future__ import annotations

import pytest

import crbc.report
from tests.support.paths import ROOT
from ui.core import state

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
    at.session_state["runs_drill_open"] = True  # the run's report is offered in the drill-down
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download this run as a report" in labels, labels
    # the review of the run folder the sidebar opened (ui/core/run_source.py)
    first = sorted((tmp_path / "runs").rglob("run.json"))[0].parent
    at = app("pages/runs.py", run_folder=first)
    assert at.segmented_control(key="runs_kind").value == "any"
    assert not at.exception, [e.message for e in at.exception]
    keys = [b.proto.id for b in at.get("download_button")]
    assert any("review_dl_report" in k for k in keys), keys
    assert calls == []




def test_the_group_download_of_a_run_is_the_file_crbc_report_run_group_writes(app, tmp_path, monkeypatch):
    """Issue 55.5: the studio's group download on a run folder's iteration and ``crbc report RUN
    --group G --iteration I`` are one call (ui.core.report_download.run_group_args): the same bytes."""
    from crbc.cli.main import main
    from tests.support.runs import write_runs
    from ui.core import report_download

    write_runs(tmp_path / "runs" / "exp")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    got = {}

    def eager(ctx, key, container=None):  # build the download now, as a click would
        got["group"], got["bytes"] = ctx.group.group, report_download.group_file(ctx)

    monkeypatch.setattr(report_download, "group_button", eager)
    folder = tmp_path / "runs" / "exp" / "crbc-s1"
    at = app("pages/disagreements.py", run_folder=folder, run_iter="2", beta="0.9")
    assert not at.exception, [e.message for e in at.exception]
    out = tmp_path / "cli.html"
    assert main(["report", str(folder), "--group", got["group"], "--iteration", "2", "--beta", "0.9",
                 "-o", str(out), "-q"]) == 0
    assert got["bytes"] == out.read_bytes()
    assert b"iteration 2" in got["bytes"]


@pytest.mark.parametrize("sample, group", [("worked-example.jsonl", None), ("gridworld.jsonl", -1)])
def test_the_group_download_of_a_sample_file_is_the_file_crbc_report_file_group_writes(app, monkeypatch, tmp_path,
                                                                                        sample, group):
    """Issue 55 leftovers: on a shipped sample file the studio's group download and ``crbc report
    FILE [--group G] [--sigma-min X]`` are the same bytes, with the default parameters and with one
    changed (the source label, the exact truth, the key line and the doctor's findings alike);
    ``group=-1``: the file's last group, not the one the page opens on."""
    from crbc.cli.main import main
    from crbc.io.rollout_files import read_rollouts
    from ui.core import report_download

    path = ROOT / "sample_rollouts" / sample
    gid = None if group is None else read_rollouts(path)[group].group
    got = {}

    def eager(ctx, key, container=None):  # build the download now, as a click would
        got["group"], got["bytes"] = ctx.group.group, report_download.group_file(ctx)

    monkeypatch.setattr(report_download, "group_button", eager)
    files = {}
    for k, extra in enumerate(([], ["--sigma-min", "0.3"])):
        query = {"sample": sample, **({"group": gid} if gid else {}), **({"sigma_min": extra[1]} if extra else {})}
        at = app("pages/credits.py", **query)
        assert not at.exception, [e.message for e in at.exception]
        assert gid is None or got["group"] == gid
        cli = tmp_path / f"cli-{k}.html"
        assert main(["report", str(path), *(["--group", gid] if gid else []), *extra, "-o", str(cli), "-q"]) == 0
        assert got["bytes"] == cli.read_bytes(), (sample, extra)
        files[k] = got["bytes"]
    assert files[0] != files[1]  # the changed parameter is in the file
