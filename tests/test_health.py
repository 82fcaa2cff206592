"""crbc.health.iteration_health: the numbers of one iteration, by hand on a tiny group, against
independent computations (scipy's Spearman, the bootstrap's evidence), and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

import crbc
from crbc.estimators.bootstrap import credit_intervals
from crbc.health import iteration_health, later_shared_share, merge_warning, shared_steps
from crbc.io.rollouts import Rollout, RolloutGroup, Step


def fork() -> list[RolloutGroup]:
    """r0: s0 -a-> s1 -a-> success; r1: s0 -b-> s2 -a-> failure. Four steps, three anchors."""
    return [RolloutGroup("g", (
        Rollout("g", 0, (Step("s0", "a"), Step("s1", "a")), True),
        Rollout("g", 1, (Step("s0", "b"), Step("s2", "a")), False)))]


def test_by_hand_on_a_fork():
    p = crbc.merge(fork())
    h = iteration_health(p, None)
    # s0 is visited by both rollouts: 2 of the 4 steps are shared; 3 anchors in 1 group;
    # s1 and s2 have one action each (credit 0 by construction), s0 reaches both z+ and z-
    assert h == {"shared_step_share": 0.5, "anchors_per_group": 3.0, "none_share": 0.5}


def random_groups(seed: int, n_groups: int = 4, size: int = 6) -> list[RolloutGroup]:
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_groups):
        rs = []
        for i in range(size):
            pos, steps = 0, []
            for _ in range(int(rng.integers(2, 9))):
                a = str(rng.choice(["left", "right", "stay"]))
                steps.append(Step(f"c{pos}", a))
                pos = max(0, pos + (a == "right") - (a == "left"))
                if pos >= 3:
                    break
            rs.append(Rollout(f"g{g}", i, tuple(steps), pos >= 3))
        out.append(RolloutGroup(f"g{g}", tuple(rs)))
    return out


def test_agreement_with_the_trainer_against_scipy():
    groups = random_groups(1)
    p = crbc.merge(groups)
    rng = np.random.default_rng(2)
    trainer = np.round(rng.normal(size=p.n_steps), 1)  # ties on purpose
    trainer[:3] = np.nan  # steps without a trainer advantage are left out
    trainer[3] = 0.0  # the trainer's zeros are left out of the sign agreement
    # each estimator takes the parameters its config has: beta for crbc, w_step for crbc and gigpo
    h = iteration_health(p, trainer, ("crbc", "gigpo", "grpo"), beta=0.9, w_step=2.0)
    have = np.isfinite(trainer)
    for name in ("crbc", "gigpo", "grpo"):
        params = {"crbc": {"beta": 0.9, "w_step": 2.0}, "gigpo": {"w_step": 2.0}, "grpo": {}}[name]
        x = crbc.compute(name, p, **params).advantage_N
        assert h[f"trainer_spearman/{name}"] == pytest.approx(spearmanr(x[have], trainer[have]).statistic, abs=1e-12)
        nz = have & (np.abs(trainer) > 1e-6)
        assert h[f"trainer_sign_agreement/{name}"] == pytest.approx(np.mean(np.sign(x[nz]) == np.sign(trainer[nz])))
    # the trainer's own advantage agrees perfectly with itself
    mine = crbc.compute("crbc", p).advantage_N
    h = iteration_health(p, mine, ("crbc",))
    assert h["trainer_spearman/crbc"] == pytest.approx(1.0) and h["trainer_sign_agreement/crbc"] == 1.0
    assert iteration_health(p, -mine, ("crbc",))["trainer_spearman/crbc"] == pytest.approx(-1.0)


def test_undefined_values_are_left_out():
    p = crbc.merge(random_groups(3))
    assert not [k for k in iteration_health(p, None) if k.startswith("trainer_")]
    assert not [k for k in iteration_health(p, np.full(p.n_steps, np.nan)) if k.startswith("trainer_")]
    h = iteration_health(p, np.zeros(p.n_steps), ("crbc",))  # constant: no rho; all zero: no sign
    assert "trainer_spearman/crbc" not in h and "trainer_sign_agreement/crbc" not in h
    assert all(isinstance(v, float) and math.isfinite(v) for v in h.values())


def test_sure_share_only_with_the_bootstrap():
    p = crbc.merge(random_groups(4))
    assert "sure_share" not in iteration_health(p, None)
    h = iteration_health(p, None, bootstrap=20, seed=5, beta=0.95)
    ci = credit_intervals(p, "crbc", n_resamples=20, seed=5, beta=0.95)
    assert h["sure_share"] == ci.sure_share()
    # none_share is the bootstrap's own evidence class "none"
    assert h["none_share"] == pytest.approx(np.mean(ci.evidence_N == "none"))


def test_bad_input_is_refused_with_the_reason():
    p = crbc.merge(fork())
    with pytest.raises(ValueError, match=r"shape \(3,\).*4 steps.*\(N,\)"):
        iteration_health(p, np.zeros(3))
    with pytest.raises(ValueError, match="no estimator among crbc, gigpo has a parameter nope"):
        iteration_health(p, None, nope=1)
    with pytest.raises(ValueError, match="bootstrap must be an integer >= 0"):
        iteration_health(p, None, bootstrap=-1)
    with pytest.raises(TypeError, match="Process"):
        iteration_health(fork(), None)
    with pytest.raises(ValueError, match="unknown estimator|no estimator|not registered|known"):
        iteration_health(p, None, ("nope",))


def test_merge_warning_on_observations_with_history():
    groups = random_groups(6)
    p = crbc.merge(groups)
    assert not merge_warning(p) and later_shared_share(p) > 0.5
    # the same walks, each observation carrying the rollout's own history: only step 0 is shared
    hist = [RolloutGroup(g.group, tuple(Rollout(r.group, r.rollout, tuple(
        Step(f"{r.rollout}:" * (t > 0) + "|".join(s.anchor for s in r.steps[:t + 1]), s.action)
        for t, s in enumerate(r.steps)), r.success) for r in g)) for g in groups]
    q = crbc.merge(hist)
    assert later_shared_share(q) == 0.0 and merge_warning(q)
    assert shared_steps(q).sum() == sum(len(g) for g in groups)  # every first step, nothing else
    # groups of one rollout share nothing by nature: no warning
    alone = crbc.merge([RolloutGroup(g.group, g.rollouts[:1]) for g in hist])
    assert not merge_warning(alone)
