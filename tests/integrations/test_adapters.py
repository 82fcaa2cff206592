"""The deprecated verl-style advantage function (crbc.integrations.adapters) on a synthetic flat batch, against the CLI."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from crbc.cli.main import main
from crbc.integrations.adapters import step_advantages
from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts
from tests.support.paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:crbc.integrations.adapters.step_advantages is deprecated")


def test_the_alias_warns_that_it_is_deprecated():
    with pytest.warns(DeprecationWarning, match="crbc.integrations"):
        step_advantages(["a"], ["g"], ["r"], [1], estimator="grpo")


def synthetic_groups(seed: int = 0, n_groups: int = 4, group_size: int = 6) -> list[RolloutGroup]:
    """Random walks on a small chain per group, so anchors recur and actions differ."""
    rng = np.random.default_rng(seed)
    groups = []
    for g in range(n_groups):
        rs = []
        for i in range(group_size):
            pos, steps = 0, []
            for _ in range(int(rng.integers(1, 7))):
                a = ["left", "right", "stay"][int(rng.integers(3))]
                steps.append(Step(f"cell-{pos}", a, reward=float(rng.choice([-0.1, 1.0]))))
                pos = max(0, pos + (a == "right") - (a == "left"))
            success = bool(pos >= 2)
            rs.append(Rollout(f"task-{g}", i, tuple(steps), success, score=float(success) * 10 - len(steps) * 0.1))
        groups.append(RolloutGroup(f"task-{g}", tuple(rs)))
    return groups


def cli_advantages(groups, tmp_path: Path, estimator: str) -> list[list[float]]:
    src, out = tmp_path / f"in-{estimator}.jsonl", tmp_path / f"out-{estimator}.jsonl"
    write_rollouts(src, groups)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["credit", str(src), "-o", str(out), "--estimator", estimator]) == 0
    return [json.loads(line)["advantage"] for line in out.read_text().splitlines()]


def verl_layout(groups, rng: np.random.Generator):
    """One row per step, shuffled like shards concatenated by Ray workers."""
    rows = []
    for g in groups:
        for r in g.rollouts:
            for t, s in enumerate(r.steps):
                rows.append({"anchor_obs": s.anchor, "uid": f"uid-{g.group}", "traj_uid": f"{g.group}/{r.rollout}",
                             "action": s.action, "success": r.success, "score": r.score, "t": t,
                             "reward": s.reward, "key": (g.group, r.rollout, t)})
    perm = rng.permutation(len(rows))
    rows = [rows[i] for i in perm]
    cols = {k: np.array([row[k] for row in rows], dtype=object if k in ("anchor_obs", "uid", "traj_uid", "action")
                        else None) for k in rows[0] if k != "key"}
    return cols, [row["key"] for row in rows]


@pytest.mark.parametrize("estimator", ["crbc", "gigpo", "grpo", "visit_local", "shortest_path", "graphgpo", "hgpo", "g2po"])
def test_shuffled_flat_batch_matches_the_cli(tmp_path, estimator):
    groups = synthetic_groups()
    expected = cli_advantages(groups, tmp_path, estimator)
    by_key = {(g.group, r.rollout, t): adv[t] for g in groups for r, adv in
              zip(g.rollouts, expected[sum(len(x) for x in groups[:groups.index(g)]):], strict=False)
              for t in range(len(r.steps))}
    cols, keys = verl_layout(groups, np.random.default_rng(1))
    got = step_advantages(cols["anchor_obs"], cols["uid"], cols["traj_uid"], cols["success"],
                          scores=cols["score"], actions=cols["action"], step_index=cols["t"],
                          rewards=cols["reward"], estimator=estimator)
    assert isinstance(got, np.ndarray) and got.shape == (len(keys),)
    np.testing.assert_allclose(got, [by_key[k] for k in keys], rtol=1e-9, atol=1e-9)


def test_torch_in_torch_out_and_order_of_appearance(tmp_path):
    torch = pytest.importorskip("torch")
    groups = synthetic_groups(seed=3)
    expected = np.concatenate([np.asarray(a) for a in cli_advantages(groups, tmp_path, "crbc")])
    cols, _ = verl_layout(groups, np.random.default_rng(0))
    # rows in canonical order (no shuffle), no step_index: the order of appearance is the step order
    rows = []
    for g in groups:
        for r in g.rollouts:
            for s in r.steps:
                rows.append((s.anchor, g.group, f"{g.group}/{r.rollout}", r.success, r.score, s.action))
    anchors, uid, traj, succ, score, act = zip(*rows, strict=True)
    out = step_advantages(list(anchors), list(uid), list(traj), torch.tensor(succ),
                          scores=torch.tensor(score, dtype=torch.float64), actions=list(act))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (len(rows),)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    # integer anchor keys and actions work as well as strings
    a_codes = {a: i for i, a in enumerate(dict.fromkeys(anchors))}
    x_codes = {a: i for i, a in enumerate(dict.fromkeys(act))}  # injective (hash() % n may collide)
    out2 = step_advantages(np.array([a_codes[a] for a in anchors]), list(uid), list(traj), np.array(succ),
                           scores=np.array(score), actions=np.array([x_codes[a] for a in act]))
    np.testing.assert_allclose(out2, expected, rtol=1e-9, atol=1e-9)


def test_return_credits_gives_the_permutation():
    groups = synthetic_groups(seed=5, n_groups=2)
    cols, _ = verl_layout(groups, np.random.default_rng(2))
    out, credits, order = step_advantages(cols["anchor_obs"], cols["uid"], cols["traj_uid"], cols["success"],
                                          actions=cols["action"], step_index=cols["t"], return_credits=True)
    np.testing.assert_array_equal(out[order], credits.advantage_N)
    assert credits.estimator == "crbc" and len(credits.process.group_ids) == 2


def test_bad_batches_are_refused():
    a = np.array(["s0", "s1", "s0"], dtype=object)
    u = np.array(["g", "g", "g"], dtype=object)
    t = np.array(["r0", "r0", "r1"], dtype=object)
    with pytest.raises(ValueError, match="needs the executed actions"):
        step_advantages(a, u, t, [1, 1, 0])
    with pytest.raises(ValueError, match="success must be constant within a trajectory"):
        step_advantages(a, u, t, [1, 0, 0], actions=["x", "y", "x"])
    with pytest.raises(ValueError, match="same step .* differ in anchor_keys"):
        step_advantages(a, u, t, [1, 1, 0], actions=["x", "y", "x"], step_index=[0, 0, 0])
    with pytest.raises(ValueError, match="uid has 2 rows but the batch has 3"):
        step_advantages(a, u[:2], t, [1, 1, 0], actions=["x", "y", "x"])
    with pytest.raises(ValueError, match="0/1"):
        step_advantages(a, u, t, [2, 2, 0], actions=["x", "y", "x"])
    with pytest.raises(ValueError, match="no steps"):
        step_advantages([], [], [], [])
    # grpo needs no actions
    out = step_advantages(a, u, t, [1, 1, 0], estimator="grpo")
    np.testing.assert_allclose(out, [0.7071, 0.7071, -0.7071], atol=1e-3)


def test_adapter_does_not_import_torch_for_numpy_input():
    import subprocess
    import sys

    code = ("import numpy as np, sys\nfrom crbc.integrations.adapters import step_advantages\n"
            "step_advantages(np.array(['a','b']), np.array(['g','g']), np.array(['r','r']), np.array([1,1]),"
            " actions=np.array(['x','y']))\nprint('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
