"""A real environment no one here wrote, end to end: textarena's Sokoban (0.7.4, pure Python,
offline) played by a scripted policy, groups of 4 on two levels.

Road 1, as verl-agent would run it: the steps packed into a real ``verl.DataProto`` the way
verl-agent's rollout loop packs them (one row per step, ``uid``/``traj_uid``/``anchor_obs`` =
the raw board, ``is_action_valid``, ``rewards``, ``episode_rewards``), then ``add_step_index``,
copies and a reorder as the trainer does, ``compute_advantage``, the ``RunRecorder``, the run
folder, ``crbc.read_run`` and ``crbc.compute``. Road 2: the same steps as a table whose
observations carry the whole history (``LLMObservationWrapper``: two envs in lockstep, the
wrapped one and ``-raw``), through ``python -m crbc import --anchor-regex``. Both roads must give
the same groups and the same credits.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import crbc  # noqa: E402
from crbc.cli.main import main  # noqa: E402
from crbc.integrations import verl as V  # noqa: E402
from crbc.process import merge_stats  # noqa: E402
from tests.support.textarena_play import BOARD, GROUP, LEVELS, pack, play  # noqa: E402
from tests.support.verl_batches import trainer_pipeline  # noqa: E402

MOVE = r"\[(up|down|left|right)\]"


@pytest.fixture(scope="module")
def episodes() -> list[dict]:
    return [play(level, i) for level in LEVELS for i in range(GROUP)]


def projected(text: str) -> str | None:
    m = re.findall(MOVE, text)
    return m[-1] if m else None


def table(episodes: list[dict]) -> list[dict]:
    return [{"uid": e["uid"], "traj_uid": e["traj_uid"], "step_index": t, "observation": s["history"],
             "response": s["response"], "rewards": e["score"] if t == len(e["steps"]) - 1 else 0.0,
             "episode_rewards": e["score"], "success": e["success"]}
            for e in episodes for t, s in enumerate(e["steps"])]


def summary(groups):
    return [(g.group, [([s.anchor for s in r.steps], [s.action for s in r.steps], [s.reward for s in r.steps],
                        r.success, r.score) for r in g]) for g in groups]


def test_textarena_sokoban_both_roads_give_the_same_groups_and_credits(tmp_path, episodes):
    assert any(e["success"] for e in episodes) and not all(e["success"] for e in episodes)
    assert any(projected(s["response"]) is None for e in episodes for s in e["steps"])  # invalid turns
    # road 1: DataProto -> trainer -> recorder -> run folder -> read_run -> compute
    rng = np.random.default_rng(0)
    data = trainer_pipeline(pack(episodes, rng), rng)
    V.compute_advantage(data, "crbc")
    V.RunRecorder(tmp_path / "run", {"env": "textarena/Sokoban-v0"}).record(data, 1, {"actor/kl": 0.0})
    recorded = crbc.read_run(tmp_path / "run").rollouts(1)
    credits = crbc.compute("crbc", recorded)
    np.testing.assert_allclose([s.trainer_advantage for g in recorded for r in g for s in r.steps],
                               credits.advantage_N, rtol=1e-6, atol=1e-6)
    # road 2: the transcripts as a table -> import --anchor-regex -> the same groups and credits
    src = tmp_path / "steps.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in table(episodes)), encoding="utf-8")
    out = tmp_path / "imported.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["import", str(src), "-o", str(out), "--map", "anchor=observation", "--map", "action=response",
                   "--anchor-regex", BOARD, "--action-regex", MOVE])
    assert rc == 0, err.getvalue()
    imported = crbc.read_rollouts(out)
    assert summary(imported) == summary(recorded)
    np.testing.assert_allclose(crbc.compute("crbc", imported).advantage_N, credits.advantage_N, atol=1e-12)
    # the transcripts merge (almost) nothing as exact text; the key is what makes them merge
    exact = crbc.io.importers.read_source("steps", [src], columns=crbc.io.importers.parse_columns_map(
        ["anchor=observation", "action=response"]))[None]
    assert merge_stats(exact).shared_step_share < merge_stats(imported).shared_step_share
    assert merge_stats(imported) == merge_stats(recorded)
