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

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

import crbc.io.runs as R  # noqa: E402
from crbc.cli.main import main  # noqa: E402
from crbc.train.checkpoint import deferred_interrupt  # noqa: E402
from crbc.train.loop import TrainConfig, train, train_seeds  # noqa: E402

VOLATILE = ("seconds", "seconds_eval", "seconds_rollout", "seconds_advantage", "seconds_update",
            "seconds_diagnostics")


@pytest.fixture(scope="module")
def tiny_model(make_tiny_model) -> str:
    return str(make_tiny_model(seed=0, layers=1, heads=2))


def small(model: str, **kw) -> TrainConfig:
    base = dict(model=model, iterations=2, groups=2, group_size=2, max_steps=4, minibatches=2,
                eval_every=1, eval_seeds=2, eval_group_size=1, threads=1, lr=1e-3, kl_coef=0.05)
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
    assert len(run.meta["final_eval"]["eval_level_success"]) == 2  # per held-out level, for paired tests
    assert {"code_commit", "code_dirty"} <= set(run.meta)  # the code a run came from (None outside git)
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
    assert "kl" not in run.metrics[0]  # kl_coef 0 (the default): no reference pass, no KL reported
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


# ---- the policy-gradient step: sign, log-prob alignment, temperature ----------------------------

BOARDS = ("######\n#_O_##\n#___##\n#_X###\n#___P#\n######",  # 6x6
          "#####\n#P_X#\n#####")  # a shorter prompt: the batch needs padding


def _policy(model: str):
    from crbc.policy import load_policy

    return load_policy(model)


def test_ppo_step_raises_positive_and_lowers_negative_advantage_pairs(tiny_model):
    """One optimiser step: log pi of the +1 pair goes up, of the -1 pair goes down (also when both
    pairs share a minibatch with a duplicate step and a padded, shorter prompt)."""
    from crbc.train.ppo import Batch, ppo_update

    def score(p):
        with torch.no_grad():
            return p.response_logprobs(obs, resp, 0.7)

    pol, ref = _policy(tiny_model), _policy(tiny_model)
    obs, resp = [BOARDS[0], BOARDS[1]], ["left<eos>", "up<eos>"]
    batch = Batch(np.array([1.0, 1.0, -1.0]), np.array([0, 0, 1]), obs, resp)
    before = score(pol)
    opt = torch.optim.AdamW(pol.model.parameters(), lr=1e-3)
    cfg = TrainConfig(model=tiny_model, temperature=0.7, kl_coef=0.0, ppo_epochs=1, minibatches=1)
    m = ppo_update(pol, ref, opt, batch, cfg, torch.Generator().manual_seed(0))
    after = score(pol)
    assert m["optimizer_steps"] == 1 and m["ratio_dev"] < 1e-6  # first minibatch: ratio 1
    assert after[0] > before[0] and after[1] < before[1]
    # the frozen reference did not move
    assert torch.equal(score(ref), before)


def test_response_logprobs_score_the_distribution_act_samples_from(tiny_model):
    """response_logprobs (right-padded, whole sequence) equals log softmax(logits / T) of the
    left-padded, position-shifted forward that act() samples from, token by token incl. <eos>."""
    pol = _policy(tiny_model)
    T = 0.7
    ids, mask = pol.encode_prompts(list(BOARDS))  # exactly act()'s prompt batch
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        first = torch.log_softmax(pol.model(input_ids=ids, attention_mask=mask, position_ids=pos)
                                  .logits[:, -1].double() / T, -1)
        word = pol.tokenizer.convert_tokens_to_ids("left")
        eos = pol.tokenizer.eos_token_id
        ids2 = torch.cat([ids, torch.full_like(ids[:, :1], word)], 1)
        mask2 = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
        pos2 = (mask2.cumsum(-1) - 1).clamp(min=0)
        second = torch.log_softmax(pol.model(input_ids=ids2, attention_mask=mask2, position_ids=pos2)
                                   .logits[:, -1].double() / T, -1)
        scored = pol.response_logprobs(list(BOARDS), ["left<eos>"] * 2, T).double()
        scored_word = pol.response_logprobs(list(BOARDS), ["left"] * 2, T).double()
    torch.testing.assert_close(scored_word, first[:, word], atol=1e-5, rtol=0)
    torch.testing.assert_close(scored, first[:, word] + second[:, eos], atol=1e-5, rtol=0)
    # and act() really samples from that distribution (empirical check on the first token)
    n = 3000
    gens = [torch.Generator().manual_seed(i) for i in range(n)]
    out = pol.act([BOARDS[1]] * n, T, gens)
    freq = sum(r.startswith("left") for _, r in out) / n
    p = float(first[1, word].exp())
    assert abs(freq - p) < 4 * (p * (1 - p) / n) ** 0.5 + 1e-3


def test_truth_advantages_are_the_exact_advantage_of_each_step(tmp_path):
    """The oracle (advantages = "truth") feeds the update the exact A_t of the current policy, in
    the estimators' step order; a group the truth cannot solve (an unparsable action) gets 0."""
    from dataclasses import replace

    from crbc.io.rollouts import Step
    from crbc.policy import load_policy
    from crbc.policy.generate import generate_groups
    from crbc.train.loop import truth_advantages
    from crbc.truth import level_truth
    from crbc.truth.space import action_index

    shipped = ROOT / "models" / "sokoban-tiny-weak"
    policy = load_policy(shipped)
    groups = generate_groups("sokoban-6x6-v0", [3, 8], 3, policy, 1.0, 6, rng=1)
    bad = groups[1]
    r0 = bad.rollouts[0]
    s0 = r0.steps[0]
    broken = replace(r0, steps=(Step("not a board", s0.action, s0.obs, s0.response, 0.0),) + r0.steps[1:])
    groups[1] = replace(bad, rollouts=(broken,) + bad.rollouts[1:])
    adv, solved = truth_advantages(policy, groups)
    assert solved == 1 and len(adv) == sum(len(r.steps) for g in groups for r in g.rollouts)
    n0 = sum(len(r.steps) for r in groups[0].rollouts)
    assert not adv[n0:].any()
    lt = level_truth("sokoban-6x6-v0", 3, policy, max_steps=6)
    index = lt.space.index()
    k = 0
    for r in groups[0].rollouts:  # slow twin: look each step up in the level's solution
        for t, s in enumerate(r.steps):
            a = action_index([s.action])[0]
            assert adv[k] == pytest.approx(lt.advantage_TSA[t, index[s.anchor], a], abs=1e-9)
            k += 1


@pytest.mark.slow
def test_experiment_trains_every_run_compresses_rollouts_and_skips_finished_runs(tiny_model, tmp_path, capsys):
    out = tmp_path / "exp"
    argv = ["experiment", "--estimators", "grpo", "crbc", "--seeds", "2", "--jobs", "2", "--out", str(out),
            "--model", tiny_model, "--iterations", "1", "--groups", "2", "--group-size", "2",
            "--max-steps", "3", "--eval-seeds", "2", "--eval-group-size", "1", "--keep-rollouts-seeds", "1"]
    assert main(argv) == 0
    runs = {p.name: R.read_run(p) for p in R.find_runs(out)}
    assert sorted(runs) == ["crbc-s0", "crbc-s1", "grpo-s0", "grpo-s1"]
    for name, run in runs.items():
        assert "final_eval" in run.meta and not (out / name / "checkpoint").exists()
        if name.endswith("s0"):  # kept and compressed
            assert [p.name for p in (out / name / "rollouts").iterdir()] == ["iter-0000.jsonl.gz"]
            assert run.rollouts(0)[0].rollouts[0].meta["iteration"] == 0
        else:
            assert run.iterations_with_rollouts == ()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] and len(summary["table"]) == 2
    before = {p: p.stat().st_mtime_ns for p in out.rglob("metrics.jsonl")}
    assert main(argv) == 0  # everything finished: nothing is trained again
    assert before == {p: p.stat().st_mtime_ns for p in out.rglob("metrics.jsonl")}


@pytest.mark.slow
def test_experiment_restarts_a_run_stopped_before_its_first_checkpoint(tiny_model, tmp_path):
    out = tmp_path / "exp"
    argv = ["experiment", "--estimators", "grpo", "--seeds", "1", "--out", str(out),
            "--model", tiny_model, "--iterations", "1", "--groups", "2", "--group-size", "2",
            "--max-steps", "3", "--eval-seeds", "2", "--eval-group-size", "1"]
    assert main(argv) == 0
    run_dir = out / "grpo-s0"
    # as if stopped right after run.json: no iteration recorded, no checkpoint
    (run_dir / "metrics.jsonl").write_text("")
    assert main(argv) == 0
    assert R.read_run(run_dir).last_iteration == 0 and "final_eval" in R.read_run(run_dir).meta
    # iterations recorded but no checkpoint: it cannot continue, and nothing is deleted
    from crbc.train.experiment import _resumable

    assert not (run_dir / "checkpoint").exists()  # a finished run's checkpoint is not kept
    with pytest.raises(RuntimeError, match="cannot be extended.*--keep-models"):
        _resumable(run_dir)
    assert (run_dir / "metrics.jsonl").read_text().strip()
    # asking the command for more iterations says why it cannot, and trains nothing
    before = (run_dir / "metrics.jsonl").read_bytes()
    more = [a if a != "1" or argv[i - 1] != "--iterations" else "2" for i, a in enumerate(argv)]
    assert main(more) != 0
    assert (run_dir / "metrics.jsonl").read_bytes() == before
    # a run stopped mid-way without a checkpoint (no final evaluation) gets the other message
    meta = json.loads((run_dir / "run.json").read_text())
    del meta["final_eval"]
    (run_dir / "run.json").write_text(json.dumps(meta))
    with pytest.raises(RuntimeError, match="has iterations but no checkpoint"):
        _resumable(run_dir)


@pytest.mark.slow
def test_experiment_takes_fresh_seeds_and_per_arm_estimator_params(tiny_model, tmp_path):
    out = tmp_path / "exp"
    argv = ["experiment", "--estimators", "grpo", "gigpo", "--seeds", "1", "--first-seed", "7",
            "--arm-params", 'gigpo={"mode": "mean_norm"}', "--out", str(out), "--model", tiny_model,
            "--iterations", "1", "--groups", "2", "--group-size", "2", "--max-steps", "3",
            "--eval-seeds", "2", "--eval-group-size", "1", "--loss-agg", "token-mean"]
    assert main(argv) == 0
    runs = {p.name: R.read_run(p) for p in R.find_runs(out)}
    assert sorted(runs) == ["gigpo-s7", "grpo-s7"]
    assert runs["gigpo-s7"].config["estimator_params"] == {"mode": "mean_norm"}
    assert runs["grpo-s7"].config["estimator_params"] == {}
    assert {r.config["loss_agg"] for r in runs.values()} == {"token-mean"}
    bad = [a if a != 'gigpo={"mode": "mean_norm"}' else 'gigpo={"mode": "median"}' for a in argv]
    assert main([*bad[:-2], "--out", str(tmp_path / "bad")]) == 2  # checked before any run starts
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow
def test_extra_evaluation_at_the_training_temperature_reproduces_the_final_one(tiny_model, tmp_path):
    out = tmp_path / "exp"
    argv = ["experiment", "--estimators", "grpo", "--seeds", "1", "--out", str(out), "--model", tiny_model,
            "--iterations", "1", "--groups", "2", "--group-size", "2", "--max-steps", "3",
            "--eval-seeds", "3", "--eval-group-size", "2", "--keep-models"]
    assert main(argv + ["--evaluate-at", "1.0"]) == 0
    extra = json.loads((out / "grpo-s0" / "eval-t1.json").read_text())
    final = R.read_run(out / "grpo-s0").meta["final_eval"]
    assert extra["eval_level_success"] == final["eval_level_success"]  # same weights, levels, numbers
    assert main(argv + ["--evaluate-at", "0.4", "--summary-only"]) == 0
    assert json.loads((out / "grpo-s0" / "eval-t0.4.json").read_text())["temperature"] == 0.4
