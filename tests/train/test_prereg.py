"""The pre-registered test (crbc.train.prereg): Holm's adjustment, paired seeds, the verdict."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from crbc.train import prereg


def _run(est: str, seed: int, success: float | None):
    meta = {"final_eval": {"eval_success_rate": success}} if success is not None else {}
    return SimpleNamespace(estimator=est, seed=seed, meta=meta)


def test_holm_golden():
    # sorted 0.01, 0.02, 0.04 -> x3, x2, x1 = 0.03, 0.04, 0.04 (running maximum)
    assert prereg.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert prereg.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert prereg.holm([]) == []


def test_pairs_only_seeds_both_arms_finished_and_gives_the_exact_floor():
    runs = [_run("crbc", s, 0.5 + 0.01 * (s - 100)) for s in range(100, 108)]
    runs += [_run("grpo", s, 0.4) for s in range(100, 108)]
    runs += [_run("gigpo", s, 0.6) for s in range(100, 107)] + [_run("gigpo", 107, None)]
    res = prereg.preregistered(runs, [("crbc", "gigpo"), ("crbc", "grpo")], [("gigpo", "grpo")])
    gig, grpo = res["primary"]
    assert grpo["n"] == 8 and grpo["wins"] == 8
    assert grpo["p"] == pytest.approx(2 / 256)  # every difference positive: the exact floor
    assert grpo["diff"] == pytest.approx(0.1 + 0.01 * 3.5)
    assert gig["n"] == 7 and gig["seeds"] == list(range(100, 107)) and gig["losses"] == 7
    assert grpo["p_holm"] == pytest.approx(2 * 2 / 256) and grpo["confirmed"]
    assert not gig["confirmed"]  # significant, but crbc is behind
    assert res["secondary"][0]["p_holm"] is None and res["secondary"][0]["confirmed"] is None
    table = prereg.markdown(res)
    assert "| crbc - grpo | primary | 8 | +13.5 [" in table and "confirmed" in table
