"""A run recorded the way a verl-agent user records one: textarena Sokoban episodes, packed into
real ``verl.DataProto`` batches as verl-agent's rollout loop gathers them, put through the
trainer's steps (``add_step_index``, copies, ``_balance_batch``'s reorder), advantages from
``crbc.integrations.verl.compute_advantage`` on the raw observations, then
``RunRecorder.record`` (Parquet). The observation of a step is textarena's
``LLMObservationWrapper`` transcript: it carries the whole history, so the run needs an anchor
key (:data:`BOARD`) before its rollouts merge beyond the first step.

    python -m devtools.textarena_run OUT [--iterations 4] [--groups 8] [--rollouts 8]

Needs textarena, verl and torch (requirements-dev.txt, requirements-verl.txt).
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import numpy as np

BOARD = r"(?s)(Current Board:.*?Available Moves:[^\n]*)"  #: the last board of a transcript: the key
MOVE = r"\[(up|down|left|right)\]"
MOVES = ["up", "down", "left", "right"]
#: how a sampled LLM words a move: every response differs, so no two transcripts repeat after step 0
PHRASES = ["Let me push [{m}] ({c:.3f})", "[{m}] #{c:.4f}", "I think [{m}] is best (confidence {c:.2f})",
           "Moving [{m}] now, step score {c:.3f}.", "Hmm. {c:.3f}... I am not sure what to do"]
MAX_STEPS = 6


def play(level: int, episode: int, seed: int) -> dict:
    """One scripted episode of textarena's Sokoban-v0 (one box) on ``level``: the transcript the
    policy saw at each step, its response, the outcome."""
    import textarena as ta

    env = ta.make("Sokoban-v0", num_boxes=1)
    env.reset(num_players=1, seed=level)
    rng, steps, done = random.Random(seed * 100_003 + 1000 * level + episode), [], False
    while not done and len(steps) < MAX_STEPS:
        _, history = env.get_observation()
        text = rng.choice(PHRASES).format(m=rng.choice(MOVES), c=rng.random())
        done, _ = env.step(action=text)
        steps.append({"history": history, "response": text})
    rewards, _info = env.close()
    score = float(rewards[0]) if rewards else 0.0
    return {"uid": f"sokoban-level-{level}", "traj_uid": f"sokoban-{level}-it{seed}-ep{episode}", "steps": steps,
            "score": score, "success": score == 1.0}


def _action(text: str) -> str | None:
    m = re.findall(MOVE, text)
    return m[-1] if m else None


def pack(episodes: list[dict], rng: np.random.Generator, anchor: str = "history", extra: dict | None = None):
    """verl-agent's rows after gather_rollout_data (rollout_loop.py:247-275): env-major, steps in
    order, episode fields on every row, plus ``action`` and ``success`` (docs/VERL.md);
    ``anchor_obs`` each step's ``anchor`` field (the transcript by default); ``extra`` more
    columns, one value per row."""
    import torch
    from verl import DataProto

    rows = [(e, t, s) for e in episodes for t, s in enumerate(e["steps"])]
    b, prompt, resp = len(rows), 8, 6
    n_tok = rng.integers(1, resp + 1, size=b)
    attn = torch.zeros((b, prompt + resp), dtype=torch.long)
    attn[:, :prompt] = 1
    tok = torch.zeros((b, resp))
    for i, (e, _t, _) in enumerate(rows):
        attn[i, prompt:prompt + n_tok[i]] = 1
        tok[i, n_tok[i] - 1] = e["score"]
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    last = [t == len(e["steps"]) - 1 for e, t, _ in rows]
    return DataProto.from_single_dict({
        "prompts": torch.ones((b, prompt), dtype=torch.long), "responses": torch.ones((b, resp), dtype=torch.long),
        "attention_mask": attn, "token_level_rewards": tok,
        "uid": obj([e["uid"] for e, _, _ in rows]), "traj_uid": obj([e["traj_uid"] for e, _, _ in rows]),
        "anchor_obs": obj([s[anchor] for _, _, s in rows]),
        "data_source": obj(["textarena/sokoban"] * b),
        "is_action_valid": np.array([_action(s["response"]) is not None for _, _, s in rows]),
        "action": obj([_action(s["response"]) or "invalid" for _, _, s in rows]),
        "rewards": obj([e["score"] if lt else 0.0 for (e, _, _), lt in zip(rows, last, strict=True)]),
        "active_masks": obj([True] * b),
        "episode_rewards": obj([np.float32(e["score"]) for e, _, _ in rows]),
        "episode_lengths": obj([np.float32(len(e["steps"])) for e, _, _ in rows]),
        "success": np.array([e["success"] for e, _, _ in rows]),
        **(extra or {}),
    })


def record_run(out: str | Path, iterations: int = 4, groups: int = 8, rollouts: int = 8,
               estimator: str = "gigpo", levels: tuple[int, ...] | None = None, anchor: str | None = None,
               trainer_config: dict | None = None) -> Path:
    """Record ``iterations`` batches of ``groups`` levels x ``rollouts`` episodes into ``out``;
    ``anchor``: the recorder's anchor key (None: the transcripts as they are), ``trainer_config``:
    a verl-like config for the recorder (its project, experiment and seed name the run)."""
    import torch
    from verl import DataProto

    from crbc.integrations import verl as V

    levels = levels or tuple(range(1, groups + 1))
    rec = V.RunRecorder(out, {"env": "textarena/Sokoban-v0", "config": {"estimator": estimator}}, anchor=anchor,
                        trainer_config=trainer_config)
    rng = np.random.default_rng(0)
    for it in range(iterations):
        eps = [play(level, i, it) for level in levels[:groups] for i in range(rollouts)]
        data = pack(eps, rng)
        V.add_step_index(data)
        dup = rng.choice(len(data), size=4, replace=False)
        data = DataProto.concat([data, data.select_idxs(dup)])  # adjust_batch(mode="copy")
        data.reorder(torch.as_tensor(rng.permutation(len(data))))  # _balance_batch
        V.compute_advantage(data, estimator)
        adv = data.batch["advantages"]
        rec.record(data, it, {"episode/success_rate": float(np.mean([e["success"] for e in eps])),
                              "critic/advantages/mean": float(adv.mean()), "critic/advantages/max": float(adv.max())})
    return Path(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--rollouts", type=int, default=8)
    args = ap.parse_args()
    print(record_run(args.out, args.iterations, args.groups, args.rollouts))


if __name__ == "__main__":
    main()
