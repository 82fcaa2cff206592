"""Exact sign-flip tests on integer success counts (crbc.run_analysis.training_stats.sign_flip_p_counts,
crbc.train.prereg.compare) and the code commit a run records (crbc.train.provenance)."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from crbc.run_analysis import training_stats as A
from crbc.train import prereg
from crbc.train.provenance import code_version

# the shipped pre-registered runs (sample_rollouts/runs/sokoban-6x6-prereg), seeds 100-107:
# successful held-out episodes out of 64 x 4 and run.json's rounded eval_success_rate
CRBC = [(143, 0.5586), (135, 0.5273), (137, 0.5352), (113, 0.4414), (135, 0.5273), (140, 0.5469),
        (135, 0.5273), (146, 0.5703)]
GIGPO = [(134, 0.5234), (127, 0.4961), (131, 0.5117), (128, 0.5), (132, 0.5156), (119, 0.4648),
         (123, 0.4805), (125, 0.4883)]


def _slow(d):
    """All 2^S sign patterns listed: the share whose |sum| reaches the observed, in integers."""
    obs = abs(sum(d))
    hits = [abs(sum(e * x for e, x in zip(signs, d, strict=True))) >= obs
            for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(hits) / len(hits)


def test_counts_p_equals_the_enumeration():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 6, 9, 12):
        for _ in range(5):
            d = rng.integers(-6, 7, n).tolist()  # small values: many exact ties and zeros
            assert A.sign_flip_p_counts(d) == _slow(d)
    assert A.sign_flip_p_counts([0, 0, 0]) == 1.0
    assert A.sign_flip_p_counts([3, 3, 3, 3, 3]) == 2 / 32  # the floor with 5 seeds
    assert np.isnan(A.sign_flip_p_counts([]))
    with pytest.raises(ValueError):
        A.sign_flip_p_counts([1, 2.5])


def test_counts_p_is_exact_for_64_levels():
    # 64 differences of +1: only the identity and the all-flipped pattern reach |64|
    assert A.sign_flip_p_counts([1] * 64) == 2 / 2 ** 64
    d = [1] * 63 + [-1]  # |sum| = 62: patterns with at most one flip against the observed side
    assert A.sign_flip_p_counts(d) == 2 * (1 + 64) / 2 ** 64


def _run(est, seed, k, rate, levels=64, g=4):
    # k successes spread over the levels, each level's rate a multiple of 1/g (exact in float)
    per = np.zeros(levels, dtype=int)
    per[: k // g] = g
    per[k // g] += k % g
    return SimpleNamespace(estimator=est, seed=seed, name=f"{est}-s{seed}",
                           meta={"config": {"eval_group_size": g},
                                 "final_eval": {"eval_success_rate": rate,
                                                "eval_level_success": (per / g).tolist()}})


def test_compare_uses_counts_and_rounded_rates_would_break_the_ties():
    runs = [_run("crbc", 100 + i, k, r) for i, (k, r) in enumerate(CRBC)]
    runs += [_run("gigpo", 100 + i, k, r) for i, (k, r) in enumerate(GIGPO)]
    row = prereg.compare(runs, "crbc", "gigpo")
    assert row["exact"] and row["count_diff_by_seed"] == [9, 8, 6, -15, 3, 21, 12, 21]
    assert row["p"] == 26 / 256  # 0.1016: the corrected pre-registered p
    # the rates as run.json rounds them move tied sums off the tie: the float test gives 24/256
    rounded = np.array([a[1] - b[1] for a, b in zip(CRBC, GIGPO, strict=True)])
    assert A.sign_flip_p(rounded) == 24 / 256
    # without the per-level record the comparison falls back to the rates, and says so
    for r in runs:
        del r.meta["final_eval"]["eval_level_success"]
    row = prereg.compare(runs, "crbc", "gigpo")
    assert not row["exact"] and row["count_diff_by_seed"] is None
    assert "(from rates)" in prereg.markdown({"primary": [], "secondary": [dict(row, p_holm=None, confirmed=None)]})


def test_level_counts_refuses_rates_that_are_not_whole_episodes():
    r = _run("crbc", 1, 7, 0.0273, levels=4)
    assert A.level_counts(r).tolist() == [4, 3, 0, 0]
    r.meta["final_eval"]["eval_level_success"] = [0.3333, 1.0, 0.0, 0.0]
    assert A.level_counts(r) is None
    assert A.level_counts(r, {"eval_level_success": [0.5, 1.0], "group_size": 2}).tolist() == [1, 2]


def test_paired_test_levels_p_is_the_exact_enumeration():
    rng = np.random.default_rng(2)
    a = [_run("crbc", s, int(k), 0.0, levels=5) for s, k in enumerate(rng.integers(5, 20, 3))]
    b = [_run("grpo", s, int(k), 0.0, levels=5) for s, k in enumerate(rng.integers(0, 15, 3))]
    res = A.paired_test(a, b, rounds=200)
    c = np.stack([A.level_counts(x) - A.level_counts(y) for x, y in zip(a, b, strict=True)])
    assert res["exact"]
    assert res["p_seeds"] == _slow(c.sum(1).tolist()) and res["p_levels"] == _slow(c.sum(0).tolist())


def test_code_version_outside_and_inside_a_checkout(tmp_path):
    assert code_version(tmp_path) == {"code_commit": None, "code_dirty": None}
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "f.txt"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                         env=env).stdout.strip()
    v = code_version(repo)
    assert v == {"code_commit": sha, "code_dirty": False}
    (repo / "f.txt").write_text("b\n")
    assert code_version(repo)["code_dirty"] is True
    (repo / "sub").mkdir()
    assert code_version(repo / "sub")["code_commit"] is None  # not the top of the work tree
