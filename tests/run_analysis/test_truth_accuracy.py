"""crbc.run_analysis.truth_accuracy: the training loop's credit-accuracy diagnostics equal crbc.truth.accuracy's scores
computed group by group, skip what the truth cannot score, and run only every k-th iteration."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

MODEL = ROOT / "models" / "sokoban-tiny-weak"


@pytest.mark.slow
def test_truth_diagnostics_match_accuracy_scores_group_by_group():
    from crbc.estimators.registry import compute
    from crbc.policy import load_policy
    from crbc.policy.generate import generate_groups
    from crbc.run_analysis.truth_accuracy import truth_diagnostics
    from crbc.truth import TruthCache, group_truth, scorable_policy
    from crbc.truth.accuracy import group_agreement

    policy = load_policy(str(MODEL))
    groups = generate_groups("sokoban-6x6-v0", list(range(10)), 8, policy, 1.0, 15, rng=7)
    for g in groups:
        for r in g.rollouts:
            r.meta["iteration"] = 2  # a training iteration: the hook supplies the current policy
    hook = truth_diagnostics(groups=2, every=2, estimators=("grpo", "crbc"))
    assert hook(policy, groups, None, 3) == {}  # not a scored iteration
    out = hook(policy, groups, None, 2)
    chosen = [g for g in groups if 0 < g.success_rate < 1
              and all(s.action != "invalid" for r in g for s in r.steps)][:2]
    assert out["truth_groups"] == len(chosen) >= 1
    cache = TruthCache(resolver=lambda name, t: scorable_policy(policy, t))
    per = {"grpo": [], "crbc": []}
    for g in chosen:
        truth = np.concatenate([st.advantage for st in group_truth(g, cache=cache)])
        ag = group_agreement({e: compute(e, [g]) for e in per}, truth)
        for e in per:
            per[e].append(ag[e]["spearman"])
    for e, vals in per.items():
        assert out[f"truth_spearman.{e}"] == pytest.approx(np.nanmean(vals))
        assert 0.0 <= out[f"truth_sign.{e}"] <= 1.0
