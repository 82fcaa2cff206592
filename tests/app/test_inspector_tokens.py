"""The Anchor inspector's token strip (issue 55, point 4): a run folder whose iteration kept
response tokens shows the chosen step's advantage on each token; the same run without a token
file, and a sample file, show no strip and nothing breaks."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("pyarrow")

from crbc.io.runs import read_run  # noqa: E402
from crbc.io.tokens import StepTokens, tokens_path, tokens_table, write_tokens  # noqa: E402
from devtools.textworld import alfworld_like_run  # noqa: E402


def _htmls(at) -> str:
    return "\n".join(str(h.value) for h in at.get("html"))


def _keep_every_step(path) -> None:
    """A token file for iteration 0 holding every step: per-token advantages, one masked token."""
    kept = []
    for g in read_run(path).rollouts(0):
        for r in g.rollouts:
            for t in range(len(r.steps)):
                a = np.linspace(-1.0, 1.0, 5) + 0.01 * t
                kept.append(StepTokens(g.group, r.rollout, t, len(kept), 7, a, np.array([1, 1, 0, 1, 1], bool),
                                       np.arange(5), ("go", " to", " [obs]", " desk", " 1")))
    write_tokens(tokens_path(path, 0), tokens_table(kept, len(kept), 5))


@pytest.mark.slow
def test_inspector_shows_the_chosen_steps_tokens(app, tmp_path):
    path = alfworld_like_run(tmp_path / "runs" / "alf", iterations=1, groups=2)
    at = app(samples=tmp_path, run_folder=path, page="pages/inspector.py")
    assert not at.exception
    assert "crbc-tokens" not in _htmls(at)  # no token file: no strip, no message
    _keep_every_step(path)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    heads = [m.value for m in at.markdown if m.value.startswith("**The advantage on each token**")]
    assert heads and heads[0].startswith("**The advantage on each token** (rollout "), heads
    html = _htmls(at)
    assert 'class="crbc-tokens"' in html and 'data-masked="1"' in html and "masked: not trained" in html
    assert "7 response tokens (5 stored)" in html and "GAE-style" in html


def test_a_sample_file_shows_no_token_strip(app):
    at = app(sample="worked-example.jsonl", page="pages/inspector.py")
    assert not at.exception
    assert "crbc-tokens" not in _htmls(at)
    assert not [m for m in at.markdown if m.value.startswith("**The advantage on each token**")]
