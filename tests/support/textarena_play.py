"""textarena's Sokoban (0.7.4, pure Python, offline) played by a scripted policy in two lockstep
envs (the transcript one and ``-raw``), and the episodes packed as verl-agent packs them.

Importing this module skips the importing test module when textarena, torch or verl is missing
(under CI=true a missing textarena fails instead)."""

from __future__ import annotations

import random

import numpy as np

from tests.support.requires import importable

ta = importable("textarena", "pip install -r requirements-dev.txt")
ObservationType = importable("textarena.core", "pip install -r requirements-dev.txt").ObservationType

from devtools import textarena_run  # noqa: E402
from tests.support.verl_batches import DataProto  # noqa: E402

LEVELS, GROUP, MAX_STEPS = (3, 5), 4, 6
BOARD = r"(?s)(Current Board:.*?Available Moves:[^\n]*)"  # the last board of a transcript
TALK = ["Let me push [right]", "[up]", "[down]", "[left]", "I am not sure what to do"]


def play(level: int, episode: int) -> dict:
    """One scripted episode in two lockstep envs: the transcript one and the raw one."""
    env, raw = ta.make("Sokoban-v0", num_boxes=1), ta.make("Sokoban-v0-raw", num_boxes=1)
    env.reset(num_players=1, seed=level)
    raw.reset(num_players=1, seed=level)
    rng, board, steps, done = random.Random(100 * level + episode), None, [], False
    while not done and len(steps) < MAX_STEPS:
        _, history = env.get_observation()
        _, msgs = raw.get_observation()
        boards = [m[1] for m in msgs if m[2] == ObservationType.GAME_BOARD]
        board = boards[-1] if boards else board  # an invalid move shows no new board
        text = rng.choice(TALK)
        done, _ = env.step(action=text)
        done_raw, _ = raw.step(action=text)
        assert done == done_raw
        steps.append({"history": history, "board": board, "response": text})
    rewards, info = env.close()
    assert (rewards, info) == raw.close()
    score = float(rewards[0]) if rewards else 0.0
    return {"uid": f"sokoban-{level}", "traj_uid": f"sokoban-{level}-ep{episode}", "steps": steps,
            "score": score, "success": score == 1.0}


def pack(episodes: list[dict], rng: np.random.Generator) -> DataProto:
    """verl-agent's rows (devtools/textarena_run.py) with the raw board as ``anchor_obs`` and the
    level's position as ``index``."""
    rows = [e for e in episodes for _ in e["steps"]]
    index = np.array([LEVELS.index(int(e["uid"].split("-")[1])) for e in rows], dtype=object)
    return textarena_run.pack(episodes, rng, anchor="board", extra={"index": index})
