"""verl batches as verl-agent builds them, for the integration tests: rollout groups laid out one
row per step in a real ``verl.DataProto``, then copied and reordered as the trainer does.

Importing this module skips the importing test module when torch or verl is missing (under
CI=true it fails instead)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.requires import importable

torch = pytest.importorskip("torch")

DataProto = importable("verl", "pip install --no-deps -r requirements-verl.txt").DataProto

from crbc.integrations import verl as V  # noqa: E402
from tests.support.groups import chain_groups  # noqa: E402

PROMPT, RESPONSE = 6, 5


def image(anchor: str) -> np.ndarray:
    """A tiny RGB picture of a cell (Sokoban's anchors are images)."""
    k = int(anchor.split("-")[1])
    img = np.zeros((3, 4, 3), dtype=np.uint8)
    img[k % 3, k % 4] = (255, 10 * k, 7)
    return img


def data_proto(groups, rng: np.random.Generator, anchors: str = "text", penalty: float = 0.1,
               with_success: bool = True, with_actions: bool = True) -> DataProto:
    """verl-agent's batch after the rollout loop and the reward manager: rows trajectory after
    trajectory; the episode reward on each row's last response token, minus the penalty on
    invalid rows (apply_invalid_action_penalty)."""
    rows = []
    for g in groups:
        uid = f"uid-{g.group}"
        for r in g.rollouts:
            for t, s in enumerate(r.steps):
                rows.append(dict(uid=uid, traj_uid=f"{g.group}#{r.rollout}", anchor=s.anchor, action=s.action,
                                 valid=s.action != "invalid", reward=s.reward, episode=r.score,
                                 success=r.success, key=f"{g.group}|{r.rollout}|{t}"))
    b = len(rows)
    resp_len = rng.integers(1, RESPONSE + 1, size=b)
    attn = torch.zeros((b, PROMPT + RESPONSE), dtype=torch.long)
    attn[:, :PROMPT] = 1
    tok = torch.zeros((b, RESPONSE), dtype=torch.float32)
    for i, row in enumerate(rows):
        attn[i, PROMPT:PROMPT + resp_len[i]] = 1
        tok[i, resp_len[i] - 1] = row["episode"] - penalty * (not row["valid"])
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    if anchors == "image":
        anchor_col = np.array([image(r["anchor"]) for r in rows], dtype=object)  # (B, H, W, 3) object
    elif anchors == "bytes":
        anchor_col = obj([r["anchor"].encode() for r in rows])
    else:
        anchor_col = obj([r["anchor"] for r in rows])
    d = {
        "prompts": torch.ones((b, PROMPT), dtype=torch.long),
        "responses": torch.ones((b, RESPONSE), dtype=torch.long),
        "attention_mask": attn,
        "token_level_rewards": tok,
        "uid": obj([r["uid"] for r in rows]),
        "traj_uid": obj([r["traj_uid"] for r in rows]),
        "anchor_obs": anchor_col,
        "rewards": obj([r["reward"] for r in rows]),
        "episode_rewards": obj([np.float32(r["episode"]) for r in rows]),
        "is_action_valid": np.array([r["valid"] for r in rows], dtype=bool),
        "test_key": obj([r["key"] for r in rows]),
    }
    if with_success:
        d["success"] = np.array([r["success"] for r in rows], dtype=bool)
    if with_actions:
        d["action"] = obj([r["action"] for r in rows])
    return DataProto.from_single_dict(d)


def trainer_pipeline(data: DataProto, rng: np.random.Generator, n_copies: int = 4) -> DataProto:
    """What verl-agent's fit loop does between the rollout loop and compute_advantage."""
    V.add_step_index(data)                                  # the recipe's one added call
    dup = rng.choice(len(data), size=n_copies, replace=False)
    data = DataProto.concat([data, data.select_idxs(dup)])  # adjust_batch(mode="copy")
    data.reorder(torch.as_tensor(rng.permutation(len(data))))  # _balance_batch
    return data


def trained_batch(seed: int = 11):
    """A batch after the trainer's GiGPO advantages (4 groups of 6 chain walks, copies, reorder)."""
    rng = np.random.default_rng(seed)
    data = trainer_pipeline(data_proto(chain_groups(seed=seed, n_groups=4, group_size=6), rng), rng)
    V.compute_advantage(data, "gigpo")  # the trainer ran GiGPO; the recorder compares
    return data
