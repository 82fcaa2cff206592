"""The Lesson's section 11 (crbc.explain.lesson_luck): one slippery FrozenLake group, one pair the
ice sent to different places, and what realised returns, the closure and the exact truth credit."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.requires import importable

importable("gymnasium", "pip install 'crbc[worlds]'")

from crbc.explain import lesson_luck as LL  # noqa: E402
from ui.lesson.luck import luck_group  # noqa: E402 (the truth is built where the layers allow)


@pytest.fixture(scope="module")
def luck():
    group, lt = luck_group(0.98)
    return LL.luck_lesson(group, lt, 0.98)


def test_the_group_is_fixed_and_slippery(luck):
    g = luck.group
    assert len(g) == LL.GROUP_SIZE and 1 <= sum(r.success for r in g.rollouts) < len(g)
    again, _ = luck_group(0.98)
    assert [[(s.anchor, s.action) for s in r.steps] for r in again.rollouts] == \
        [[(s.anchor, s.action) for s in r.steps] for r in g.rollouts]  # same seed, same group
    assert len({s.successor for s in luck.steps}) >= 2  # one pair, several successors


def test_realised_returns_credit_the_slip_and_the_closure_the_choice(luck):
    gigpo = [s.gigpo for s in luck.steps]
    assert max(gigpo) > 0 > min(gigpo)  # the same choice, credits of both signs
    assert len({round(s.closure, 12) for s in luck.steps}) == 1  # one credit per (anchor, action)
    assert luck.closure_a == pytest.approx(luck.steps[0].closure)
    assert luck.wrong_sign >= 1
    # on this group the closure's sign is the truth's, at every step and overall
    assert all(np.sign(s.truth_t) == np.sign(luck.closure_a) for s in luck.steps)
    assert np.sign(luck.true_a) == np.sign(luck.closure_a)
    assert luck.lucky.successor != luck.unlucky.successor


def test_the_backups_add_up(luck):
    succ = luck.successors
    assert sum(r.n for r in succ) == len(luck.steps)
    assert sum(r.p_group for r in succ) == pytest.approx(1.0)
    assert sum(r.p_true for r in succ) == pytest.approx(1.0)
    assert all(r.p_true == pytest.approx(1 / 3) for r in succ)  # FrozenLake's slip
    q = luck.beta * sum(r.p_group * r.v_closure for r in succ if r.n)
    assert q == pytest.approx(luck.closure_q)
    assert luck.closure_line.endswith(f"= {luck.closure_q:.4f}")
    assert luck.closure_a == pytest.approx(luck.closure_q - luck.closure_v)
    assert f"A_{luck.truth_t} = " in luck.truth_line


def test_the_question_asks_about_luck_and_the_truth_answers_it(luck):
    q = LL.luck_question(luck)
    assert q.asked and q.answer == q.options[0] and "the same credit" in q.answer
    assert f"rollout {luck.lucky.rollout}" in q.text and f"rollout {luck.unlucky.rollout}" in q.text
    assert "luck" in q.why and f"{luck.closure_a:+.4f}" in q.why


@pytest.mark.parametrize(("action", "landed", "words"), [
    ("down", (3, 2), "stayed: the wall (as chosen)"),
    ("down", (3, 1), "left (a slip)"),
    ("right", (3, 3), "right (as chosen)"),
    ("left", (2, 2), "up (a slip)"),
])
def test_how_the_ice_moved_is_read_from_the_boards(action, landed, words):
    board = "SFFF\nFHFH\nFFFH\nHFPG"
    assert LL.slid(board, action, landed, "") == words
