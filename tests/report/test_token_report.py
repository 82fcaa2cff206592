"""The report's token view (issue 55, point 4): a run whose iteration kept response tokens
(``rollouts/iter-NNNN.tokens.parquet``) shows the advantage on each token of a step in the
group sections and in a ``--group`` report; a run without a token file is reported as before;
a refused token file is a note in the report, not a failed report."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from crbc.cli.main import main  # noqa: E402
from crbc.io.rollouts import Rollout, RolloutGroup, Step  # noqa: E402
from crbc.io.run_writer import RunWriter  # noqa: E402
from crbc.io.tokens import StepTokens, tokens_path, tokens_table, write_tokens  # noqa: E402
from crbc.report import report  # noqa: E402


def _groups() -> list[RolloutGroup]:
    """Two groups of three rollouts on a small corridor, mixed outcomes."""
    out = []
    for g in range(2):
        rs = []
        for r, moves in enumerate((["right", "right"], ["left", "right", "right"], ["left", "left"])):
            pos, steps = 0, []
            for a in moves:
                steps.append(Step(f"cell-{pos}", a, trainer_advantage=0.5 if r == 0 else -0.5))
                pos += 1 if a == "right" else -1
            rs.append(Rollout(f"task-{g}", r, tuple(steps), success=pos >= 2))
        out.append(RolloutGroup(f"task-{g}", tuple(rs)))
    return out


def _run(path: Path, tokens: bool) -> Path:
    w = RunWriter.create(path, {"name": path.name, "config": {"estimator": "grpo", "source": "verl recorder"}})
    groups = _groups()
    w.write_rollouts(0, groups)
    w.append_metrics({"iteration": 0, "success_rate": 0.5})
    if tokens:
        kept = []
        for g in groups:
            for r in g.rollouts:
                for t in range(len(r.steps)):
                    a = np.full(6, 0.75 if r.success else -0.75)
                    a[-1] = 0.0
                    kept.append(StepTokens(g.group, r.rollout, t, len(kept), 6, a,
                                           np.array([True, True, False, True, True, False]),
                                           np.arange(6), ("I", " move", "<obs>", " right", ".", "</s>")))
        write_tokens(tokens_path(path, 0), tokens_table(kept, 64, 1024))
    return path


def test_a_run_with_tokens_shows_the_strip_in_its_groups(tmp_path):
    html = report(_run(tmp_path / "tok", tokens=True))
    assert html.count('<div class="crbc-tokens">') == 4  # two groups, a success and a failure each
    assert re.search(r'id="g\d-tokens"', html)
    assert "masked: not trained" in html and 'data-masked="1"' in html
    assert "Rollout 0 (✓ succeeded), step 0 of 2: action right" in html
    assert "Rollout 1 (✗ failed)" in html
    assert "every trained token carries the same value" in html
    assert "&lt;obs&gt;" in html and "<obs>" not in html


def test_a_group_report_of_a_run_carries_the_strip(tmp_path):
    out = tmp_path / "g.html"
    assert main(["report", str(_run(tmp_path / "tok", tokens=True)), "--group", "task-1", "-o", str(out), "-q"]) == 0
    html = out.read_text()
    assert 'id="tokens"' in html and html.count('<div class="crbc-tokens">') == 2


def test_a_run_without_tokens_is_reported_as_before(tmp_path):
    html = report(_run(tmp_path / "plain", tokens=False))
    assert "crbc-tokens" not in html and "advantage on each token" not in html
    assert "Iteration 0: the groups worth a look" in html


def test_a_refused_token_file_is_a_note(tmp_path):
    path = _run(tmp_path / "bad", tokens=False)
    tokens_path(path, 0).write_bytes(b"garbage")
    html = report(path)
    assert "The token file of iteration 0 could not be read" in html and "not a Parquet file" in html
    assert "crbc-tokens" not in html.replace("crbc-tokens{", "")
