"""crbc.integrations.step_rows: stable keys, and step rows in any order with copies -> the same credits
as the groups merged directly (numpy only; the verl glue is tested in test_verl_integration.py)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crbc.estimators.registry import compute, names
from crbc.integrations import step_rows as rows
from tests.support import reference as ref
from tests.support.paths import ROOT


def test_stable_key_is_stable_across_processes():
    values = ["s0", b"s0", 3, 2.5, True, None, ("a", 1), np.arange(6, dtype=np.uint8).reshape(2, 3)]
    here = [rows.stable_key(v).hex() for v in values]
    code = ("import numpy as np\nfrom crbc.integrations.step_rows import stable_key\n"
            "vals = ['s0', b's0', 3, 2.5, True, None, ('a', 1), np.arange(6, dtype=np.uint8).reshape(2, 3)]\n"
            "print(' '.join(stable_key(v).hex() for v in vals))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == here
    assert len(set(here)) == len(here)  # str and bytes, int and bool, ... all differ


def test_stable_key_of_arrays():
    a = np.zeros((3, 4, 3), dtype=np.uint8)
    b = a.copy()
    b[1, 2, 0] = 1
    assert rows.stable_key(a) == rows.stable_key(a.copy())
    assert rows.stable_key(a) != rows.stable_key(b)
    assert rows.stable_key(a) != rows.stable_key(a.reshape(4, 3, 3))       # shape counts
    assert rows.stable_key(a) != rows.stable_key(a.astype(np.int16))        # dtype counts
    assert rows.stable_key(a[:, ::-1]) == rows.stable_key(np.ascontiguousarray(a[:, ::-1]))
    # an object array of numbers keys like the plain array it converts to
    obj = np.empty((2, 2), dtype=object)
    obj[:] = [[1, 2], [3, 4]]
    assert rows.stable_key(obj) == rows.stable_key(np.array([[1, 2], [3, 4]]))
    with pytest.raises(TypeError):
        rows.stable_key(object())


def flat(groups, rng=None, copies=0):
    """One row per step (a dict of columns), optionally shuffled and with copied rows."""
    cols = {k: [] for k in ("uid", "traj", "anchor", "action", "success", "score", "reward", "t", "key")}
    for g in groups:
        has_reward = any(s.reward is not None for r in g.rollouts for s in r.steps)
        for r in g.rollouts:
            for t, s in enumerate(r.steps):
                cols["uid"].append(g.group)
                cols["traj"].append(r.rollout)
                cols["anchor"].append(s.anchor)
                cols["action"].append(s.action)
                cols["success"].append(r.success and not r.truncated)
                cols["score"].append(r.effective_score)
                cols["reward"].append((s.reward or 0.0) if has_reward else None)
                cols["t"].append(t)
                cols["key"].append((g.group, r.rollout, t))
    n = len(cols["uid"])
    idx = np.arange(n)
    if copies:
        idx = np.r_[idx, rng.choice(n, size=copies)]
    if rng is not None:
        idx = rng.permutation(idx)
    out = {}
    for k, v in cols.items():
        arr = np.empty(n, dtype=object)
        arr[:] = v
        out[k] = arr[idx]
    return out


def run(cols, estimator, **params):
    has_rewards = all(x is not None for x in cols["reward"])
    lay = rows.layout(cols["uid"], cols["traj"], cols["anchor"], cols["success"], step_index=cols["t"],
                      scores=cols["score"], actions=cols["action"],
                      rewards=cols["reward"] if has_rewards else None)
    return rows.scatter(lay, compute(estimator, lay.process, **params).advantage_N), lay


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# rewardflow is left out: its node rewards follow the order of the rollouts and its end nodes the
# truncation flag, neither of which a trainer's rows carry (docs/MATH.md section 11)
@given(st.integers(0, 2**32 - 1), st.sampled_from([n for n in names() if n != "rewardflow"]), st.integers(0, 5))
def test_rows_in_any_order_with_copies_equal_the_merged_groups(seed, estimator, copies):
    rng = np.random.default_rng(seed)
    # all groups with scores and rewards given (what a trainer's rows carry)
    groups = [ref.random_group(rng, name=f"g{i}", rewards=True, scores=True, p_invalid=0.1)
              for i in range(int(rng.integers(1, 5)))]
    want = compute(estimator, groups)
    by_key = {}
    for r in range(len(want.process.rollout_len)):
        g = want.process.group_ids[want.process.rollout_group[r]]
        for t, a in enumerate(want.advantage_N[want.rollout_slice(r)]):
            by_key[(g, int(want.process.rollout_index[r]), t)] = a
    cols = flat(groups, rng, copies)
    got, lay = run(cols, estimator)
    assert lay.n_copies == copies
    np.testing.assert_allclose(got, [by_key[k] for k in cols["key"]], rtol=0, atol=1e-8)


def test_errors_name_the_field():
    rng = np.random.default_rng(0)
    groups = [ref.random_group(rng, name="g", max_rollouts=3, max_len=4, rewards=True, scores=True)]
    cols = flat(groups)
    args = (cols["uid"], cols["traj"], cols["anchor"], cols["success"])
    names_ = {"step_index": "step_index", "anchors": "anchor_obs", "success": "won"}
    with pytest.raises(ValueError, match=r"no step index \(step_index\)"):
        rows.layout(*args, names=names_)
    bad = cols["success"].copy()
    bad[0] = not bad[0]
    if len(groups[0].rollouts[0].steps) > 1:
        with pytest.raises(ValueError, match="won must be constant within a trajectory"):
            rows.layout(*args[:3], bad, step_index=cols["t"], names=names_)
    t = cols["t"].copy()
    t[t == 0] = 7
    with pytest.raises(ValueError, match="must be 0, 1, 2"):
        rows.layout(*args, step_index=t, names=names_)
    with pytest.raises(ValueError, match="no trajectory outcome"):
        rows.layout(*args[:3], None, step_index=cols["t"], names={"success": "success"})
    with pytest.raises(ValueError, match=r"anchor_obs\[0\]: cannot key"):
        rows.layout(cols["uid"], cols["traj"], np.array([object()] * len(cols["uid"])), cols["success"],
                    step_index=cols["t"], names=names_)
    with pytest.raises(ValueError, match="2 rows but the batch has"):
        rows.layout(cols["uid"][:2], cols["traj"], cols["anchor"], cols["success"], step_index=cols["t"])
