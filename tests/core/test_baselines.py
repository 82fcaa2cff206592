"""gigpo, grpo and the group_norm options against independent twins of the upstream functions
(tests/support/upstream.py: verl-agent's GiGPO pipeline, verl's GRPO and RLOO), and the ALFWorld-like
group of issue 11 by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crbc.estimators.registry import compute
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from tests.support import reference as ref

torch = pytest.importorskip("torch")
from tests.support import upstream as up  # noqa: E402  (needs torch)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_groups(seed: int, max_groups: int = 6) -> list[RolloutGroup]:
    """Unequal lengths, invalid actions, groups with and without rewards and scores, and always
    one group of a single one-step rollout (a group of one row)."""
    rng = np.random.default_rng(seed)
    groups = [ref.random_group(rng, name=f"g{i}", p_invalid=0.2) for i in range(int(rng.integers(1, max_groups)))]
    lone = Rollout("lone", 0, (Step("s0", "a0" if rng.random() < 0.5 else "invalid"),),
                   bool(rng.random() < 0.5))
    return groups + [RolloutGroup("lone", (lone,))]


def alfworld_group() -> RolloutGroup:
    """One success in 3 steps, seven failures of 8 steps; no step rewards, no scores, so the
    reward is verl-agent's ALFWorld one: 10 * won on the last step."""
    win = Rollout("alf", 0, tuple(Step(f"room-{t}", "go") for t in range(3)), True)
    fails = [Rollout("alf", i, tuple(Step(f"room-{t % 4}", f"look-{i % 3}") for t in range(8)), False, truncated=True)
             for i in range(1, 8)]
    return RolloutGroup("alf", (win, *fails))


# ------------------------------------------------------------------------- hand-checked

def test_alfworld_episode_advantage_is_verl_agents_4_28():
    c = compute("gigpo", [alfworld_group()])
    # 59 step rows: 3 with S = 10, 56 with S = 0 (rows, not trajectories)
    mean = 30 / 59
    std = math.sqrt((3 * (10 - mean) ** 2 + 56 * mean**2) / 58)
    a_e = (10 - mean) / (std + 1e-6)
    assert round(a_e, 2) == 4.28
    assert c.group_advantage_R[0] == pytest.approx(a_e, abs=1e-12)
    # the trajectory-level GRPO of the paper would give 2.47 (one success out of eight)
    grpo = compute("grpo", [alfworld_group()]).group_advantage_R[0]
    assert round(grpo, 2) == 2.47
    rec = next(c.records())
    assert rec["group_advantage"] == pytest.approx(a_e, abs=1e-12)
    assert rec["advantage"] == pytest.approx([a_e + x for x in rec["step_advantage"]], abs=1e-12)


def test_alfworld_group_equals_verl_agent_in_float32_too():
    """The ALFWorld group has no ties that float32 would break: upstream's own dtype agrees."""
    g = [alfworld_group()]
    c = compute("gigpo", g)
    b = up.agent_batch(g, np.random.default_rng(0), dtype=torch.float32)
    got32 = up.gigpo_pipeline(b, dtype=torch.float32).numpy()
    np.testing.assert_allclose(c.advantage_N, got32, atol=1e-5)


def test_penalty_lowers_only_the_invalid_rows_episode_term():
    g = RolloutGroup("p", (Rollout("p", 0, (Step("s", "invalid"), Step("s", "go")), True),
                           Rollout("p", 1, (Step("s", "go"),), False)))
    on = compute("gigpo", [g], mode="mean_norm")
    off = compute("gigpo", [g], mode="mean_norm", invalid_penalty=0.0)
    # rows' scores: 9.9, 10, 0 (mean 19.9/3) against 10, 10, 0 (mean 20/3)
    assert on.advantage_N[2] - on.step_advantage_N[2] == pytest.approx(-19.9 / 3, abs=1e-12)
    assert off.advantage_N[2] - off.step_advantage_N[2] == pytest.approx(-20 / 3, abs=1e-12)
    assert on.q_N[0] == pytest.approx(off.q_N[0] - 0.1, abs=1e-12)  # its own step return
    assert on.q_N[1] == off.q_N[1]


# ------------------------------------------------------------- parity with the upstream twins

@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["mean_std_norm", "mean_norm"]), st.sampled_from([0.0, 0.1, 0.5]))
def test_gigpo_equals_verl_agent(seed, mode, penalty):
    groups = random_groups(seed)
    c = compute("gigpo", groups, mode=mode, invalid_penalty=penalty)
    b = up.agent_batch(groups, np.random.default_rng(seed))
    want = up.gigpo_pipeline(b, gamma=0.95, mode=mode, penalty_coef=penalty).numpy()
    np.testing.assert_allclose(c.advantage_N, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["mean_std_norm", "mean_norm"])
@pytest.mark.parametrize("penalty", [0.0, 0.1])
def test_gigpo_equals_verl_agent_on_seeded_batches(mode, penalty):
    worst = 0.0
    for seed in range(40):
        groups = random_groups(1000 + seed, max_groups=10)
        c = compute("gigpo", groups, mode=mode, invalid_penalty=penalty, w_step=0.7, gamma=0.9)
        b = up.agent_batch(groups, np.random.default_rng(seed))
        want = up.gigpo_pipeline(b, gamma=0.9, mode=mode, penalty_coef=penalty, step_advantage_w=0.7).numpy()
        worst = max(worst, float(np.abs(c.advantage_N - want).max()))
    assert worst <= 1e-5, worst


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_grpo_equals_verl(seed, norm_by_std):
    groups = random_groups(seed)
    c = compute("grpo", groups, norm_by_std=norm_by_std)
    scores, mask, index = up.trajectory_rows(groups)
    adv, ret = up.grpo(scores, mask, index, norm_adv_by_std_in_grpo=norm_by_std)
    np.testing.assert_allclose(c.group_advantage_R, adv[:, 0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(c.advantage_N, adv[:, 0].numpy()[c.process.step_rollout], atol=1e-5)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["drgrpo", "rloo", "steps"]))
def test_crbc_group_norm_equals_upstream(seed, norm):
    groups = random_groups(seed)
    c = compute("crbc", groups, group_norm=norm)
    scores, mask, index = up.trajectory_rows(groups)
    if norm == "drgrpo":
        want = up.grpo(scores, mask, index, norm_adv_by_std_in_grpo=False)[0][:, 0]
    elif norm == "rloo":
        want = up.rloo(scores, mask, index)[0][:, 0]
    else:  # verl-agent's episode term over step rows, mean_std_norm, no penalty
        b = up.agent_batch(groups, np.random.default_rng(0))
        rows = torch.tensor([r.effective_score for g in groups for r in g.rollouts for _ in r.steps],
                            dtype=torch.float64)[:, None]
        per_row = up.episode_norm(rows, torch.ones_like(rows), b.uid, b.traj_uid, 1e-6, remove_std=False)[:, 0]
        want = per_row[torch.as_tensor(np.array(c.process.rollout_offsets[:-1]))]
    np.testing.assert_allclose(c.group_advantage_R, want.numpy(), rtol=0, atol=1e-5)


def test_float32_upstream_differs_only_by_its_rounding():
    """Upstream runs float32: on a tie at an anchor (equal step returns) its mean is off by an
    ulp and mean_std_norm divides that by std + 1e-6 ~ 1e-6, so float32 GiGPO can move by O(1)
    where the exact value is 0. In mean_norm no division amplifies it."""
    worst = 0.0
    for seed in range(20):
        groups = random_groups(2000 + seed)
        c = compute("gigpo", groups, mode="mean_norm")
        b = up.agent_batch(groups, np.random.default_rng(seed), dtype=torch.float32)
        want = up.gigpo_pipeline(b, mode="mean_norm", dtype=torch.float32).numpy()
        worst = max(worst, float(np.abs(c.advantage_N - want).max()))
    assert worst < 1e-4, worst
