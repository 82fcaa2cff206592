"""crbc.integrations.verl against the real verl package (requirements-verl.txt), on CPU.

Multi-turn groups are laid out as verl-agent's rollout loop lays them out (one row per step,
trajectory after trajectory), wrapped in a real ``verl.DataProto``, then put through what the
trainer does before ``compute_advantage``: copies appended as ``adjust_batch(mode="copy")`` does
(``DataProto.concat`` of ``select_idxs``), rows reordered as ``_balance_batch`` does
(``DataProto.reorder``), the invalid-action penalty on ``token_level_rewards``. The advantages
must equal the ``credit`` command's on the same rollouts, row by row.

Without verl these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")


from crbc.cli.main import main  # noqa: E402  (after the skip above)
from crbc.estimators.registry import names  # noqa: E402
from crbc.integrations import verl as V  # noqa: E402
from crbc.io.rollouts import RolloutGroup, write_rollouts  # noqa: E402
from tests.support import upstream as up  # noqa: E402
from tests.support.groups import chain_groups  # noqa: E402
from tests.support.verl_batches import DataProto, data_proto, trainer_pipeline  # noqa: E402 (skips without verl)

ESTIMATORS = names()  # every registered estimator


def cli_advantages(groups, tmp_path: Path, estimator: str) -> dict[tuple[str, int, int], float]:
    src, out = tmp_path / f"in-{estimator}.jsonl", tmp_path / f"out-{estimator}.jsonl"
    write_rollouts(src, groups)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["credit", str(src), "-o", str(out), "--estimator", estimator]) == 0
    got = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        for t, a in enumerate(rec["advantage"]):
            got[(rec["group"], rec["rollout"], t)] = a
    return got


def per_row(data: DataProto) -> np.ndarray:
    adv, mask = data.batch["advantages"], data.batch["response_mask"]
    assert adv.shape == mask.shape and torch.equal(adv, data.batch["returns"])
    assert torch.all(adv[mask == 0] == 0)
    # constant over the response tokens of a row
    first = adv[:, 0]
    assert torch.allclose(adv, first[:, None] * mask, atol=0)
    return first.double().numpy()


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_reordered_and_copied_rows_match_the_credit_command(tmp_path, estimator):
    groups = chain_groups(seed=1)
    if estimator == "rewardflow":  # a verl batch says nothing of truncation: failures end in z-
        groups = [RolloutGroup(g.group, tuple(dataclasses.replace(r, truncated=False) for r in g.rollouts))
                  for g in groups]
    want = cli_advantages(groups, tmp_path, estimator)
    rng = np.random.default_rng(7)
    data = trainer_pipeline(data_proto(groups, rng), rng)
    V.compute_advantage(data, estimator)
    got = per_row(data)
    keys = [tuple(int(x) if j else x for j, x in enumerate(k.split("|"))) for k in data.non_tensor_batch["test_key"]]
    np.testing.assert_allclose(got, [want[k] for k in keys], rtol=1e-6, atol=1e-5)
    assert len(set(keys)) < len(keys)  # copies were present


@pytest.mark.parametrize("anchors", ["image", "bytes"])
def test_image_and_bytes_anchors_equal_text_anchors(anchors):
    groups = chain_groups(seed=2)
    ref = data_proto(groups, np.random.default_rng(0))
    alt = data_proto(groups, np.random.default_rng(0), anchors=anchors)
    if anchors == "image":
        assert alt.non_tensor_batch["anchor_obs"].shape == (len(alt), 3, 4, 3)
    for d in (ref, alt):
        V.add_step_index(d)
        V.compute_advantage(d, "crbc")
    np.testing.assert_array_equal(per_row(alt), per_row(ref))


@pytest.mark.parametrize("mode", ["mean_std_norm", "mean_norm"])
@pytest.mark.parametrize("penalty", [0.0, 0.1])
def test_gigpo_through_dataproto_equals_verl_agents_pipeline(mode, penalty):
    """No copies (upstream would count them twice): the integration on a DataProto equals the
    twin of verl-agent's discounted returns + penalty + compute_gigpo_outcome_advantage."""
    groups = chain_groups(seed=3, n_groups=4)
    rng = np.random.default_rng(3)
    data = data_proto(groups, rng, penalty=penalty)
    V.add_step_index(data)
    data.reorder(torch.as_tensor(rng.permutation(len(data))))
    V.compute_advantage(data, "gigpo", mode=mode, invalid_penalty=penalty)
    got = dict(zip(data.non_tensor_batch["test_key"], per_row(data), strict=True))
    ab = up.agent_batch(groups, np.random.default_rng(0))
    want = up.gigpo_pipeline(ab, gamma=0.95, mode=mode, penalty_coef=penalty).numpy()
    order = [f"{g.group}|{r.rollout}|{t}" for g in groups for r in g.rollouts for t in range(len(r.steps))]
    np.testing.assert_allclose([got[k] for k in order], want, rtol=1e-6, atol=1e-5)


def test_episode_score_from_the_penalised_rows():
    groups = chain_groups(seed=4)
    rng = np.random.default_rng(4)
    data = data_proto(groups, rng)
    V.add_step_index(data)
    V.compute_advantage(data, "gigpo")
    want = per_row(data)
    data.non_tensor_batch.pop("episode_rewards")
    with pytest.raises(ValueError, match=r"token_level_rewards.sum\(-1\) must be constant within a trajectory"):
        V.compute_advantage(data, "gigpo")
    V.compute_advantage(data, "gigpo", trainer_penalty=0.1)
    np.testing.assert_allclose(per_row(data), want, atol=1e-5)


def test_success_from_a_threshold_and_enum_names():
    groups = chain_groups(seed=5)
    data = data_proto(groups, np.random.default_rng(5), with_success=False)
    V.add_step_index(data)
    with pytest.raises(KeyError, match="no field 'success'"):
        V.compute_advantage(data, "crbc")

    class AdvantageEstimator(str, enum.Enum):  # noqa: UP042  (verl-agent's enum, extended by the recipe)
        CRBC = "crbc"

    V.compute_advantage(data, AdvantageEstimator.CRBC, success_threshold=10.0)
    got = per_row(data)
    ref = data_proto(groups, np.random.default_rng(5))
    V.add_step_index(ref)
    V.compute_advantage(ref, "crbc")
    np.testing.assert_array_equal(got, per_row(ref))


def test_missing_fields_are_named():
    groups = chain_groups(seed=6)
    data = data_proto(groups, np.random.default_rng(6), with_actions=False)
    with pytest.raises(KeyError, match="no field 'step_index'.*add_step_index"):
        V.compute_advantage(data, "gigpo")
    V.add_step_index(data)
    with pytest.raises(KeyError, match="no field 'action'"):
        V.compute_advantage(data, "crbc")
    V.compute_advantage(data, "gigpo")  # gigpo needs no actions
    with pytest.raises(ValueError, match="either a config or parameters"):
        V.compute_advantage(data, "gigpo", config=object(), mode="mean_norm")


def test_dropped_rows_and_inconsistent_copies_are_refused():
    groups = chain_groups(seed=8)
    rng = np.random.default_rng(8)
    data = data_proto(groups, rng)
    V.add_step_index(data)
    # adjust_batch(mode="delete") drops rows: a trajectory loses a middle step
    idx = data.non_tensor_batch["step_index"]
    keep = np.ones(len(data), dtype=bool)
    keep[int(np.nonzero(idx == 1)[0][0])] = False
    with pytest.raises(ValueError, match="step_index of a trajectory must be 0, 1, 2"):
        V.compute_advantage(data.select_idxs(np.nonzero(keep)[0]), "crbc")
    # a copy whose anchor differs from its original is not a copy
    bad = DataProto.concat([data, data.select_idxs(np.array([0]))])
    bad.non_tensor_batch["anchor_obs"][-1] = "elsewhere"
    with pytest.raises(ValueError, match="same step .* differ in anchor_obs"):
        V.compute_advantage(bad, "crbc")


def test_step_index_is_kept_and_reordering_after_it_changes_nothing():
    groups = chain_groups(seed=9)
    rng = np.random.default_rng(9)
    data = data_proto(groups, rng)
    V.add_step_index(data)
    before = data.non_tensor_batch["step_index"].copy()
    V.add_step_index(data)
    np.testing.assert_array_equal(data.non_tensor_batch["step_index"], before)
    V.compute_advantage(data, "crbc")
    a = dict(zip(data.non_tensor_batch["test_key"], per_row(data), strict=True))
    perm = torch.as_tensor(rng.permutation(len(data)))
    data.reorder(perm)
    V.compute_advantage(data, "crbc")
    b = dict(zip(data.non_tensor_batch["test_key"], per_row(data), strict=True))
    assert a.keys() == b.keys()
    np.testing.assert_allclose([b[k] for k in a], list(a.values()), atol=1e-6)


def test_a_config_object_equals_its_parameters():
    from crbc.estimators.registry import get

    groups = chain_groups(seed=10)
    a = data_proto(groups, np.random.default_rng(10))
    b = data_proto(groups, np.random.default_rng(10))
    for d in (a, b):
        V.add_step_index(d)
    V.compute_advantage(a, "crbc", get("crbc").config(beta=0.9, w_step=2.0))
    V.compute_advantage(b, "crbc", beta=0.9, w_step=2.0)
    np.testing.assert_array_equal(per_row(a), per_row(b))
    V.compute_advantage(b, "crbc")
    assert not np.array_equal(per_row(a), per_row(b))


def test_advantage_and_credits_is_compute_advantage_with_its_credits():
    groups = chain_groups(seed=7)
    a = data_proto(groups, np.random.default_rng(7))
    b = data_proto(groups, np.random.default_rng(7))
    V.add_step_index(a)
    V.add_step_index(b)
    _, credits = V.advantage_and_credits(a, "crbc", beta=0.95)
    V.compute_advantage(b, "crbc", beta=0.95)
    np.testing.assert_array_equal(per_row(a), per_row(b))
    assert credits.estimator == "crbc" and credits.params["beta"] == 0.95
    assert credits.process.n_steps == sum(len(r.steps) for g in groups for r in g.rollouts)
