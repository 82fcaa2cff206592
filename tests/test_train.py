"""A tiny training run: the loop, the crbc.run/1 folder, Ctrl-C, resume = uninterrupted, the CLI.

Uses a freshly initialised, very small tiny-format model (built here, seconds) so the test does
not depend on the shipped checkpoints; 2 iterations x 2 groups x 2 rollouts of at most 4 steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from crbc import runs as R  # noqa: E402
from crbc.cli import main  # noqa: E402
from crbc.train import TrainConfig, deferred_interrupt, train, train_seeds  # noqa: E402

VOLATILE = ("seconds", "seconds_eval", "seconds_rollout", "seconds_advantage", "seconds_update",
            "seconds_diagnostics")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    from crbc.policy.tiny import TinyModelConfig, build_model, build_tokenizer, save_tiny

    out = tmp_path_factory.mktemp("model") / "tiny-random"
    tok = build_tokenizer()
    cfg = TinyModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2)
    save_tiny(build_model(tok, cfg, seed=0), tok, out, cfg)
    return str(out)


def small(model: str, **kw) -> TrainConfig:
    base = dict(model=model, iterations=2, groups=2, group_size=2, max_steps=4, minibatch=4,
                eval_every=1, eval_seeds=2, eval_group_size=1, threads=1, lr=1e-3)
    base.update(kw)
    return TrainConfig(**base)


def stable(metrics):
    return [{k: v for k, v in m.items() if k not in VOLATILE} for m in metrics]


def weights(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(path))


@pytest.mark.slow
def test_run_folder_interrupt_and_resume_reproduce_the_uninterrupted_run(tiny_model, tmp_path):
    cfg = small(tiny_model)
    full = train(cfg, tmp_path / "full")
    assert full.completed == 2 and not full.interrupted
    run = R.read_run(tmp_path / "full")
    assert run.meta["schema"] == "crbc.run/1" and run.meta["config"]["estimator"] == "crbc"
    assert run.meta["model"] == tiny_model and "final_eval" in run.meta
    assert [m["iteration"] for m in run.metrics] == [0, 1]
    m0 = run.metrics[0]
    for key in ("success_rate", "mean_return", "mean_length", "loss", "kl", "clip_frac",
                "step_credit_share", "seconds", "seconds_rollout", "seconds_advantage", "seconds_update",
                "eval_success_rate", "diag.multi_action_anchors", "diag.rank_crbc_gigpo"):
        assert key in m0, key
    assert all(s < 1_000_000 for s in m0["train_seeds"]) and m0["train_seeds"] == train_seeds(0, 0, 2)
    groups = run.rollouts(1)
    assert len(groups) == 2 and all(len(g) == 2 for g in groups)
    assert all(r.meta["iteration"] == 1 for g in groups for r in g)
    assert (tmp_path / "full" / "policy" / "model.safetensors").is_file()
    assert (tmp_path / "full" / "checkpoint" / "optimizer.safetensors").is_file()

    # Ctrl-C after one iteration, plus a half-written metrics line as a crash would leave it
    part = train(cfg, tmp_path / "part", stop_after=1)
    assert part.interrupted and part.completed == 1
    with open(tmp_path / "part" / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 1, "succ')
    assert R.read_run(tmp_path / "part").partial_tail is not None
    resumed = train(cfg, tmp_path / "part", resume=True)
    assert resumed.completed == 2 and not resumed.interrupted
    again = R.read_run(tmp_path / "part")
    assert again.partial_tail is None
    assert stable(again.metrics) == stable(run.metrics)
    assert (tmp_path / "part" / "rollouts" / "iter-0001.jsonl").read_text() == \
        (tmp_path / "full" / "rollouts" / "iter-0001.jsonl").read_text()
    wa = weights(tmp_path / "full" / "checkpoint" / "model.safetensors")
    wb = weights(tmp_path / "part" / "checkpoint" / "model.safetensors")
    assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)

    # resuming with a different config is refused; extending the iterations is allowed
    with pytest.raises(ValueError, match="differs in lr"):
        train(dataclasses.replace(cfg, lr=0.5), tmp_path / "part", resume=True)
    longer = train(dataclasses.replace(cfg, iterations=3, eval_every=0), tmp_path / "full2", stop_after=0)
    assert longer.completed == 0


def test_grpo_run_and_cli(tiny_model, tmp_path):
    out = tmp_path / "cli"
    argv = ["train", "--out", str(out), "--model", tiny_model, "--estimator", "grpo", "--iterations", "1",
            "--groups", "2", "--group-size", "2", "--max-steps", "3", "--eval-seeds", "0", "--quiet"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 0
    run = R.read_run(out)
    assert run.estimator == "grpo" and run.metrics[0]["step_credit_share"] == 0.0
    with contextlib.redirect_stderr(err):
        assert main(argv) == 2  # the folder already holds a run
        assert main(["train", "--out", str(out), "--resume", "--lr", "0.1"]) == 2
        assert main(["train", "--out", str(out), "--resume", "--iterations", "2", "--quiet"]) == 0
        assert main(["train", "--out", str(tmp_path / "x"), "--model", str(tmp_path / "nope")]) == 2
        assert main(["train", "--out", str(tmp_path / "x"), "--model", tiny_model, "--estimator", "nope"]) == 2
        assert main(["train", "--out", str(tmp_path / "x"), "--model", tiny_model,
                     "--estimator-params", '{"depth": -1}']) == 2
    assert R.read_run(out).last_iteration == 1
    text = err.getvalue()
    assert "already holds a run" in text and "unknown estimator 'nope'" in text and "depth" in text


def test_deferred_interrupt_holds_ctrl_c_until_the_write_is_done():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("write finished")
    assert done == ["write finished"]


def test_train_seeds_are_disjoint_from_held_out_and_deterministic():
    a = train_seeds(7, 3, 16)
    assert a == train_seeds(7, 3, 16) and a != train_seeds(7, 4, 16) and len(set(a)) == 16
    assert max(a) < 1_000_000
    assert json.dumps(a)  # plain ints
