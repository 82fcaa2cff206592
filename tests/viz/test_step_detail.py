"""The Step credits page's step panel (crbc.viz.step_detail): a clicked heatmap cell's step under
every estimator, with its evidence and the truth, and the page that shows it."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crbc.estimators import registry
from crbc.viz.step_detail import parse_cell, step_rows
from tests.support.apptest import chosen_group


def _group():
    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    return RolloutGroup("g", (Rollout("g", 0, (Step("s0", "a"), Step("s1", "x")), True),
                              Rollout("g", 1, (Step("s0", "b"), Step("s1", "y")), False),
                              Rollout("g", 2, (Step("s0", "a"),), False)))


def test_step_rows_read_every_estimator_at_the_step():
    grp = _group()
    credits = {n: registry.compute(n, [grp]) for n in registry.names()}
    n = 2  # rollout 1, step 1: action b at s0
    ev = {"crbc": np.array(["sure", "unsure", "none", "sure", "unsure"])}
    truth = np.arange(5, dtype=float) / 10
    rows = step_rows(credits, n, ev, truth)
    assert [r["estimator"] for r in rows] == [*registry.names(), "truth (exact A_t)"]
    by = {r["estimator"]: r for r in rows}
    c = credits["crbc"]
    assert by["crbc"]["A_S"] == f"{c.step_advantage_N[n]:+.3f}"
    assert by["crbc"]["A_final"] == f"{c.advantage_N[n]:+.3f}"
    assert by["crbc"]["Q − V"] == f"{c.credit_N[n]:+.3f}"
    assert by["crbc"]["evidence"] == "0 by construction"
    assert by["grpo"]["Q − V"] == "—" and by["grpo"]["evidence"] == "—"  # no value function, no evidence
    assert by["truth (exact A_t)"]["Q − V"] == "+0.200"


@pytest.mark.parametrize(("picked", "want"), [
    ("0:1", (0, 1)), ("1:2", (1, 2)), ("2:1", (2, 1)),
    ("2:2", None), ("3:1", None), ("-1:1", None), ("0:0", None), ("a:b", None), ("0:1:2", None), ("", None),
])
def test_parse_cell_accepts_only_a_step_of_the_group(picked, want):
    assert parse_cell(picked, np.array([2, 2, 1])) == want


def test_a_chosen_cell_shows_its_step_under_the_heatmaps(app):
    at: AppTest = app("pages/credits.py")
    assert any("Click a cell to see that step here" in c.value for c in at.caption)
    grp = chosen_group(at)
    at.session_state["credits_cell"] = (grp.group, "0:1")  # what a click on r0, step 1 sets
    at.run()
    assert not at.exception
    roll = grp.rollouts[0]
    head = next(m.value for m in at.markdown if m.value.startswith(f"**Rollout {roll.rollout} ("))
    assert f"step 0 (steps 0–{len(roll.steps) - 1})" in head  # numbered from 0, as in the files
    assert at.button(key="credits_open_inspector")
    want = f"{registry.compute('crbc', [grp]).step_advantage_N[0]:+.3f}"
    assert any(want in h.proto.body for h in at.get("html")), want
