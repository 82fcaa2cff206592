"""rewardflow: against a slow twin written from docs/MATH.md section 11, against a re-implementation of
the upstream pipeline (tests/support/upstream_rewardflow.py), and on hand-checked groups."""

from __future__ import annotations

import io
import json
import statistics

import numpy as np
import pytest

from crbc.actions import INVALID_ACTION
from crbc.estimators.baselines import OUTCOME_REWARD
from crbc.estimators.registry import compute
from crbc.io.creditfile import write_credits
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from tests.support import reference as ref
from tests.support import upstream_rewardflow as up

Z_PLUS, Z_MINUS = "\x00z+", "\x00z-"


# ------------------------------------------------------------------------- the slow twin

def step_rewards(group: RolloutGroup) -> list[list[float]]:
    """r_{i,t}: the step's reward; 10 R_i on the last step of a group without any reward."""
    if any(s.reward is not None for r in group.rollouts for s in r.steps):
        return [[s.reward or 0.0 for s in r.steps] for r in group.rollouts]
    return [[0.0] * (len(r.steps) - 1) + [OUTCOME_REWARD * (r.success and not r.truncated)]
            for r in group.rollouts]


def next_nodes(group: RolloutGroup) -> list[list[str | None]]:
    out = []
    for r in group.rollouts:
        end = None if r.truncated else (Z_PLUS if r.success else Z_MINUS)
        out.append([r.steps[t + 1].anchor for t in range(len(r.steps) - 1)] + [end])
    return out


def twin_values(group: RolloutGroup, gamma: float) -> dict[str, float]:
    """V by node, literally as docs/MATH.md section 11 states it (first entries in file order, all of
    them; self-loops dropped from the edges; iteration to the fixed point)."""
    rew, nxt = step_rewards(group), next_nodes(group)
    r: dict[str, float] = {}
    edges: set[tuple[str, str]] = set()
    for i, ro in enumerate(group.rollouts):
        r.setdefault(ro.steps[0].anchor, 0.0)
        for t, step in enumerate(ro.steps):
            if nxt[i][t] is None:
                continue
            r.setdefault(nxt[i][t], rew[i][t])
            if nxt[i][t] != step.anchor:
                edges.add((step.anchor, nxt[i][t]))
    v = dict(r)
    for _ in range(100_000):
        new = {x: max([v[x]] + [gamma * v[y] for (s, y) in edges if s == x]) for x in v}
        if new == v:
            break
        v = new
    return v


def twin(group: RolloutGroup, gamma=0.9, mode="mean_norm", penalty=0.1, w_group=1.0, w_step=1.0):
    """(advantage, step_advantage, credit, value, q) per step of one group, by loops."""
    rew, nxt = step_rewards(group), next_nodes(group)
    v = twin_values(group, gamma)
    rows = []
    for i, ro in enumerate(group.rollouts):
        score = ro.score if ro.score is not None else sum(rew[i])
        for t, step in enumerate(ro.steps):
            c = penalty if step.action == INVALID_ACTION else 0.0
            d = rew[i][t] if nxt[i][t] is None else v[nxt[i][t]] - v[step.anchor]
            q = None if nxt[i][t] is None else v[nxt[i][t]]
            rows.append(dict(anchor=step.anchor, score=score - c, d=d - c, value=v[step.anchor], q=q))
    norm = mode == "mean_std_norm"
    scores = [x["score"] for x in rows]
    m, s = (0.0, 1.0) if len(rows) == 1 else (statistics.fmean(scores), statistics.stdev(scores))
    for x in rows:
        x["a_e"] = (x["score"] - m) / (s + 1e-6) if norm else x["score"] - m
    for a in {x["anchor"] for x in rows}:
        at = [x for x in rows if x["anchor"] == a]
        ds = [x["d"] for x in at]
        for x in at:
            if len(at) == 1:
                x["a_s"] = 0.0
            else:
                dev = x["d"] - statistics.fmean(ds)
                x["a_s"] = dev / (statistics.stdev(ds) + 1e-6) if norm else dev
    return rows


def random_groups(seed: int) -> list[RolloutGroup]:
    rng = np.random.default_rng(seed)
    return [ref.random_group(rng, name=f"g{i}", p_invalid=0.15) for i in range(int(rng.integers(1, 5)))]


@pytest.mark.parametrize("mode", ["mean_norm", "mean_std_norm"])
@pytest.mark.parametrize("seed", range(40))
def test_equals_the_slow_twin_of_crbc_md(seed, mode):
    groups = random_groups(seed)
    params = dict(gamma=[0.9, 0.5, 1.0][seed % 3], mode=mode, invalid_penalty=[0.1, 0.0][seed % 2],
                  w_group=1.0, w_step=[1.0, 2.0][seed % 2])
    c = compute("rewardflow", groups, **params)
    rows = [x for g in groups for x in twin(g, params["gamma"], mode, params["invalid_penalty"],
                                            params["w_group"], params["w_step"])]
    # (x - mean) / (std + 1e-6) multiplies rounding noise by up to 1e6 when std is ~0
    assert c.step_advantage_N == pytest.approx([x["a_s"] for x in rows], rel=1e-7, abs=1e-8)
    assert c.advantage_N == pytest.approx([x["a_e"] + params["w_step"] * x["a_s"] for x in rows],
                                          rel=1e-7, abs=1e-8)
    assert c.credit_N == pytest.approx([x["d"] for x in rows], abs=1e-12)
    assert c.value_N == pytest.approx([x["value"] for x in rows], abs=1e-12)
    q = [np.nan if x["q"] is None else x["q"] for x in rows]
    np.testing.assert_allclose(c.q_N, q, atol=1e-12)  # NaN where no next node, in the same places


# ------------------------------------------------------------------------- upstream parity

def upstream_trajs(group: RolloutGroup) -> list[list[dict]]:
    """The group as upstream's step dicts (see tests/support/upstream_rewardflow.py)."""
    rew = step_rewards(group)
    trajs = []
    for i, ro in enumerate(group.rollouts):
        traj = [dict(anchor_obs=s.anchor, rewards=rew[i][t], active=True, valid=s.action != INVALID_ACTION)
                for t, s in enumerate(ro.steps)]
        if not ro.truncated:
            traj.append(dict(anchor_obs=Z_PLUS if ro.success else Z_MINUS, rewards=0.0, active=False,
                             valid=True))
        trajs.append(traj)
    return trajs


def first_entry_departs(group: RolloutGroup) -> bool:
    """True when some node's reward differs between docs/MATH.md (the first entry in file order) and
    upstream (the first entry that belongs to a kept, non-self-loop tuple; a node in no kept tuple
    has none and value 0): docs/MATH.md section 11, departures."""
    ours: dict[str, float] = {}
    for traj in upstream_trajs(group):
        ours.setdefault(traj[0]["anchor_obs"], 0.0)
        for j in range(1, len(traj)):
            ours.setdefault(traj[j]["anchor_obs"], traj[j - 1]["rewards"])
    theirs = up.first_rewards(upstream_trajs(group))
    return any(theirs.get(x, 0.0) != r for x, r in ours.items())


def parity_group(rng: np.random.Generator, rewards: bool) -> RolloutGroup:
    """Random walks over 2-6 anchors with occasional self-loops (10%), invalid actions, truncations,
    step rewards or none, scores or none."""
    n_anchors = int(rng.integers(2, 7))
    rollouts = []
    for i in range(int(rng.integers(1, 9))):
        s, steps = 0, []
        for _ in range(int(rng.integers(1, 10))):
            act = "invalid" if rng.random() < 0.15 else f"a{int(rng.integers(3))}"
            rew = float(rng.choice([0.0, -0.1, 1.0, 10.0])) if rewards else None
            steps.append(Step(f"s{s}", act, reward=rew))
            if rng.random() > 0.1:
                s = int(rng.choice([x for x in range(n_anchors) if x != s]))
        truncated = bool(rng.random() < 0.2)
        score = float(rng.choice([0.0, 1.0, 2.5])) if rng.random() < 0.3 else None
        rollouts.append(Rollout("g", i, tuple(steps), (not truncated) and bool(rng.random() < 0.45),
                                truncated, score))
    return RolloutGroup("g", tuple(rollouts))


@pytest.mark.parametrize("mode", ["mean_norm", "mean_std_norm"])
def test_equals_the_upstream_pipeline(mode):
    compared = departed = 0
    for seed in range(120):
        rng = np.random.default_rng(1000 + seed)
        group = parity_group(rng, rewards=bool(seed % 2))
        if first_entry_departs(group):
            departed += 1
            continue
        gamma = [0.9, 0.95, 0.5][seed % 3]
        c = compute("rewardflow", [group], gamma=gamma, mode=mode)
        scores = [ro.score if ro.score is not None else sum(r) for ro, r in zip(group.rollouts,
                                                                                step_rewards(group), strict=True)]
        want = up.advantages(upstream_trajs(group), scores, gamma, mode)
        assert c.advantage_N == pytest.approx([a for traj in want for a in traj], abs=1e-6)
        compared += 1
    assert compared >= 90 and departed >= 3  # both kinds of group occur


def test_the_first_reward_departure_is_the_named_one():
    """s0 -(self-loop, r=-0.1)-> s0 -> s1: docs/MATH.md gives s0 the reward 0 of the rollout's start;
    upstream drops the self-loop tuple first and keeps -0.1, the reward entering its second entry."""
    ro = Rollout("g", 0, (Step("s0", "a", reward=-0.1), Step("s0", "b", reward=0.0),
                          Step("s1", "a", reward=1.0)), True)
    group = RolloutGroup("g", (ro,))
    assert first_entry_departs(group)
    c = compute("rewardflow", [group])
    assert c.value_N[0] == pytest.approx(0.9 * 0.9 * 1.0)  # max(r = 0, 0.9 V(s1)), V(s1) = 0.9 V(z+)
    ups = up.step_signals(upstream_trajs(group), 0.9)[0]
    assert ups[1] == pytest.approx(c.credit_N[1])  # the same graph values where r does not matter


# ------------------------------------------------------------------------- by hand

def test_a_rare_route_is_worth_as_much_as_a_reliable_one():
    """From s0, action 'rare' reaches success once in four tries, action 'safe' three times in four:
    the maximum makes both successors worth the same, so RewardFlow's credit cannot tell them
    apart, while crbc weighs each route by how often it succeeds."""
    def ro(i, first, ok):
        return Rollout("g", i, (Step("s0", first), Step(f"after-{first}", "go")), ok)
    group = RolloutGroup("g", tuple(
        [ro(0, "rare", True)] + [ro(i, "rare", False) for i in (1, 2, 3)]
        + [ro(4, "safe", True), ro(5, "safe", True), ro(6, "safe", True), ro(7, "safe", False)]))
    rf = compute("rewardflow", [group])
    cr = compute("crbc", [group])
    first = [int(o) for o in rf.process.rollout_offsets[:-1]]
    assert rf.credit_N[first[0]] == pytest.approx(rf.credit_N[first[4]])  # rare == safe
    assert cr.credit_N[first[4]] > 0 > cr.credit_N[first[0]]  # the closure prefers 'safe'


def test_a_group_without_rewards_uses_ten_times_success_and_sweeps_stop_early():
    group = RolloutGroup("g", (Rollout("g", 0, (Step("a", "x"), Step("b", "x")), True),
                               Rollout("g", 1, (Step("a", "y"), Step("c", "y")), False)))
    c = compute("rewardflow", [group])
    # V(z+) = 10, V(b) = 9, V(a) = 8.1; V(z-) = 0, V(c) = 0
    assert c.value_N.tolist() == pytest.approx([8.1, 9.0, 8.1, 0.0])
    assert c.credit_N.tolist() == pytest.approx([0.9, 1.0, -8.1, 0.0])


def test_credit_file_writes_null_where_there_is_no_next_node():
    group = RolloutGroup("g", (Rollout("g", 0, (Step("a", "x", reward=0.5),), False, truncated=True),
                               Rollout("g", 1, (Step("a", "y", reward=1.0),), True)))
    buf = io.BytesIO()
    write_credits(compute("rewardflow", [group]), buf)
    first, second = (json.loads(line) for line in buf.getvalue().splitlines())
    assert first["q"] == [None] and first["credit"] == [0.5]  # truncated: its own reward
    assert second["q"] == [1.0]
    assert next(compute("rewardflow", [group]).records())["q"] == [None]
