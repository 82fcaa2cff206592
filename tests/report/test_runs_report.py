"""``crbc report RUN RUN ...``: several runs in one offline file, named by their runs, with what
carried no signal and every iteration's groups behind the curves' points."""

from __future__ import annotations

import json
import re

import pytest

from crbc.cli.main import main
from crbc.report.runs import runs_report
from crbc.run_analysis import no_signal as NS
from tests.support.runs import write_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("exp") / "my-experiment"
    write_runs(root)
    return [root / "crbc-s0", root / "crbc-s1", root / "grpo-s0"]


def _groups_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" class="crbc-groups-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_runs_named_by_their_runs_and_aggregated_by_experiment(runs):
    html = runs_report(runs)
    for name in ("my-experiment/crbc-s0", "my-experiment/crbc-s1", "my-experiment/grpo-s0"):
        assert name in html
    assert str(runs[0].parent.parent) not in html  # never an absolute path
    assert "my-experiment/crbc (n=2)" in html  # the two crbc seeds as one mean curve
    assert 'data-pick="1|my-experiment/crbc-s0"' in html  # points open a run's iteration
    assert "no signal at all" in html and 'class="crbc-runs-chart"' in html
    by_run = runs_report(runs, aggregate=False)
    assert "(n=2)" not in by_run and "my-experiment/crbc-s1 (n=1)" in by_run


def test_every_iterations_groups_are_in_the_file(runs):
    data = _groups_data(runs_report(runs))
    assert data["runs"] == ["my-experiment/crbc-s0", "my-experiment/crbc-s1", "my-experiment/grpo-s0"]
    from crbc.io.runs import read_run

    run = read_run(runs[0])
    rows = NS.group_rows(run.rollouts(2))
    got = data["groups"][0]["2"]
    assert [g[0] for g in got] == [r["group"] for r in rows]
    assert [g[3] for g in got] == [round(r["success"], 3) for r in rows]
    assert sorted(data["groups"][0]) == ["0", "1", "2"]


def test_the_command_takes_several_runs(runs, tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", *map(str, runs), "-o", str(out), "-q", "--by-run"]) == 0
    assert "my-experiment/grpo-s0" in out.read_text()
    assert main(["report", *map(str, runs), "-o", str(tmp_path / "x.html"), "--group", "0"]) == 2
    assert main(["report", str(runs[0]), str(tmp_path), "-o", str(tmp_path / "y.html")]) == 2
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "y.html").exists()


def test_the_doctors_counts_are_overlaid_and_runs_without_them_are_named(tmp_path):
    """The recorder's crbc/doctor/<check> counts: one chart of every warning and error check summed
    and one per check that flagged rows, each point opening its run's iteration; a run that never
    recorded them named in a sentence; the counts are not drawn again among the trainer's metrics."""
    from tests.support.runs import write_doctor_runs

    root = tmp_path / "doc"
    write_doctor_runs(root)
    html = runs_report([root / "rec-s0", root / "rec-s1", root / "plain-s0"])
    doctor = html[html.index('id="doctor"'):html.index('id="groups"')]
    assert "rows flagged by any warning or error check" in doctor
    assert "rows flagged: singleton_groups (error)" in doctor and "rows flagged: no_shared_anchors" in doctor
    assert "doc/rec (n=2)" in doctor and 'data-pick="2|doc/rec-s1"' in doctor
    assert "doc/plain-s0 never recorded the doctor" in doctor and "plain-s0 (n=" not in doctor
    assert "Silent on every iteration of every run: zero_step_advantage" in doctor
    curves = html[html.index('id="curves"'):html.index('id="no-signal"')]
    assert "crbc/doctor" not in curves
    none = runs_report([root / "plain-s0"])
    assert "None of these runs recorded the doctor" in none
