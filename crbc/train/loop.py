"""The training loop: group-based policy optimisation with a pluggable step-credit estimator.

Each iteration (the loop of CRBC Sec. 5.1, in miniature on a CPU):

1. **Rollouts**: ``groups`` x ``group_size`` episodes from the current policy on fresh training
   levels. Level seeds come from a seeded stream below ``HELD_OUT_SEED`` (1_000_000), so they
   never meet the held-out evaluation levels (:mod:`crbc.policy.heldout`).
2. **Advantages**: ``crbc.estimators.registry.compute(estimator, groups, **estimator_params)``; each step
   gets ``A_final(i,t)`` (for ``grpo`` the trajectory advantage A_G on every step).
3. **Update**: step-level PPO-clip with a KL penalty to the frozen starting policy,
   ``ppo_epochs`` passes of ``minibatches`` optimiser steps (:mod:`crbc.train.ppo`).
4. **Evaluation** every ``eval_every`` iterations (before the update, so it measures the same
   policy as that iteration's rollouts) and once after the last update, on fixed held-out levels
   with a fixed sampling seed (common random numbers across estimators and seeds).

``train`` is three steps: start or resume the run folder, iterate, finish (final evaluation and
policy). The run folder (``crbc.run/1``, :mod:`crbc.io.runs`): ``run.json``, ``metrics.jsonl`` (one
line per completed iteration), ``rollouts/iter-NNNN.jsonl``, ``checkpoint/`` (rewritten after
every iteration, :mod:`crbc.train.checkpoint`) and ``policy/`` (the final policy). Ctrl-C stops between
writes; ``--resume`` continues from the last checkpoint and gives the same result as an
uninterrupted run (everything random is derived from (seed, iteration)).

    python -m crbc train --estimator crbc --iterations 20 --out runs/crbc-s0
    python -m crbc train --out runs/crbc-s0 --resume --iterations 30
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from crbc.io.rollouts import RolloutGroup
from crbc.io.run_writer import RunWriter
from crbc.io.runs import read_run
from crbc.policy.heldout import HELD_OUT_SEED, evaluate
from crbc.train.checkpoint import (
    CHECKPOINT,
    POLICY,
    checkpoint_iteration,
    deferred_interrupt,
    load_checkpoint,
    save_checkpoint,
    save_policy,
    weights_digest,
)
from crbc.train.ppo import LOSS_AGG_MODES, flatten, ppo_update
from crbc.train.provenance import code_version

__all__ = [
    "Diagnostics", "EVAL_RNG", "flag_fields", "train", "train_seeds", "TrainConfig", "TrainResult",
    "truth_advantages"
]

EVAL_RNG = 20_260_901  #: sampling seed of every evaluation (common random numbers)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (stored in run.json).

    The defaults suit a 0.66 M-parameter policy on a CPU and are not the paper's (CRBC Sec. 5.1
    trains a 1.5-7 B model: lr 1e-6, KL 0.01, N = 16, the step-averaged loss, evaluation at
    temperature 0.4); docs/results/training.md says how each was chosen. Kept from the paper: G = 8, the
    clip 0.2 and every estimator's own defaults.
    """

    env: str = "sokoban-6x6-v0"  #: environment id (1 box, optimal solutions 2-10 moves)
    model: str = "models/sokoban-tiny-weak"  #: starting policy folder (also the frozen KL reference)
    estimator: str = "crbc"  #: registered estimator name (crbc.estimators.registry.names())
    estimator_params: dict[str, Any] = field(default_factory=dict)  #: e.g. {"depth": 3}; {} = the estimator's defaults
    iterations: int = 30  #: training iterations
    groups: int = 64  #: groups (levels) per iteration, N (the paper's 16 is too few for this model: docs/results/training.md)
    group_size: int = 8  #: rollouts per group, G (the paper's 8)
    max_steps: int = 15  #: episode step limit (a time-out is a failure); the pretraining's limit
    temperature: float = 1.0  #: sampling temperature of training rollouts (log-probabilities use the same)
    lr: float = 6e-4  #: AdamW learning rate (constant)
    weight_decay: float = 0.0  #: AdamW weight decay (none: the runs are short)
    ppo_epochs: int = 1  #: passes over the iteration's steps (1: each sample used once)
    minibatches: int = 4  #: optimiser steps per epoch, each on whole groups (crbc.train.ppo.minibatches); 4 steps per iteration
    loss_agg: str = "episode"  #: how step rows are weighted in the loss (crbc.train.ppo.step_weights): "episode" (each episode weighs 1), "step" (CRBC Eq. 15), or verl's "token-mean", "seq-mean-token-mean", "seq-mean-token-sum" over step rows
    advantages: str = "estimator"  #: what the update uses: "estimator" (the estimator's A_final) or "truth" (an oracle ceiling: the exact advantage A_t of the current policy at every step, crbc.truth; 0 on groups the truth cannot solve). The estimator still runs for its diagnostics
    clip: float = 0.2  #: PPO clip epsilon (the common 0.2; the paper's)
    kl_coef: float = 0.0  #: weight of the k3 KL penalty to the frozen start (the paper: 0.01); 0 skips the reference forward pass
    max_grad_norm: float = 1.0  #: gradient clipping (before AdamW)
    eval_every: int = 10  #: evaluate on held-out levels every this many iterations (0: never); plus once after the last update
    eval_seeds: int = 64  #: held-out levels per evaluation (seeds 1_000_000 ...), the same for every run
    eval_group_size: int = 4  #: rollouts per held-out level
    eval_temperature: float = 1.0  #: sampling temperature of the held-out evaluation (1: the trained policy itself; the paper: 0.4)
    seed: int = 0  #: seeds level sampling, episode sampling and minibatch order
    threads: int = 1  #: torch CPU threads (not part of the result on one machine)
    diagnostics: bool = True  #: compute the estimator diagnostics (crbc.run_analysis.diagnostics) per iteration
    truth_groups: int = 0  #: groups per scored iteration whose estimator credits are compared with the exact advantage (crbc.run_analysis.truth_accuracy; 0: off)
    truth_every: int = 2  #: score against exact advantages every this many iterations

    def validate(self) -> None:
        from crbc.envs import env_ids
        from crbc.estimators.registry import get

        checks = [
            (self.iterations >= 1, "iterations must be >= 1"), (self.groups >= 1, "groups must be >= 1"),
            (self.group_size >= 1, "group_size must be >= 1"), (self.max_steps >= 1, "max_steps must be >= 1"),
            (self.temperature > 0, "temperature must be > 0 (sampling)"), (self.lr > 0, "lr must be > 0"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"), (self.ppo_epochs >= 1, "ppo_epochs must be >= 1"),
            (self.minibatches >= 1, "minibatches must be >= 1"), (0 < self.clip < 1, "clip must be in (0, 1)"),
            (self.kl_coef >= 0, "kl_coef must be >= 0"), (self.max_grad_norm > 0, "max_grad_norm must be > 0"),
            (self.eval_every >= 0, "eval_every must be >= 0"), (self.eval_seeds >= 0, "eval_seeds must be >= 0"),
            (self.eval_group_size >= 1, "eval_group_size must be >= 1"), (self.seed >= 0, "seed must be >= 0"),
            (self.eval_temperature >= 0, "eval_temperature must be >= 0 (0: greedy)"),
            (self.threads >= 1, "threads must be >= 1"), (self.truth_groups >= 0, "truth_groups must be >= 0"),
            (self.truth_every >= 1, "truth_every must be >= 1"),
            (self.loss_agg in LOSS_AGG_MODES, f"loss_agg must be one of {', '.join(LOSS_AGG_MODES)}"),
            (self.advantages in ("estimator", "truth"), "advantages must be estimator or truth"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        for name in ("temperature", "eval_temperature", "lr", "clip", "kl_coef", "max_grad_norm", "weight_decay"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite")
        if self.env not in env_ids():
            raise ValueError(f"unknown env {self.env!r} (known: {', '.join(env_ids())})")
        get(self.estimator).config(**self.estimator_params)  # unknown names / bad values raise

    def result_fields(self) -> dict[str, Any]:
        """The fields that determine the result (all but ``iterations`` and ``threads``)."""
        d = asdict(self)
        d.pop("iterations")
        d.pop("threads")
        return d


# --------------------------------------------------------------------------------------------
# seeds



def flag_fields() -> list:
    """The ``TrainConfig`` fields that are command-line flags (all but the parameter dict and
    the diagnostics switch): the one list the ``train`` and ``experiment`` commands share."""
    return [f for f in fields(TrainConfig) if f.name not in ("estimator_params", "diagnostics")]


def train_seeds(seed: int, iteration: int, n: int) -> list[int]:
    """Fresh training level seeds of one iteration: distinct, below ``HELD_OUT_SEED``."""
    rng = np.random.default_rng([seed, 1, iteration])
    return [int(s) for s in rng.choice(HELD_OUT_SEED, size=n, replace=False)]


def _derived(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 2)


# --------------------------------------------------------------------------------------------
# the loop


def _batch_stats(groups: Sequence[RolloutGroup]) -> dict[str, float]:
    rs = [r for g in groups for r in g.rollouts]
    rates = np.array([g.success_rate for g in groups])
    steps = [s for r in rs for s in r.steps]
    return {
        "success_rate": float(np.mean([r.success for r in rs])),
        "mean_return": float(np.mean([r.effective_score for r in rs])),
        "mean_length": float(np.mean([len(r.steps) for r in rs])),
        "invalid_share": float(np.mean([s.action == "invalid" for s in steps])),
        "mixed_group_share": float(np.mean((rates > 0) & (rates < 1))),
        "steps": len(steps),
    }


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    completed: int  #: iterations completed in total
    interrupted: bool


#: diagnostics(policy, groups, credits, iteration) -> {name: number}; stored as ``diag.<name>``
Diagnostics = Callable[[Any, Sequence[RolloutGroup], Any, int], dict[str, float]]


@dataclass
class _Session:
    """What one ``train`` call holds: the policies, the optimiser and the writer."""

    cfg: TrainConfig
    out: Path
    policy: Any
    ref_policy: Any
    optimizer: Any
    writer: RunWriter | None = None
    start: int = 0


def _load(cfg: TrainConfig, out: Path) -> _Session:
    import torch

    from crbc.policy import load_policy

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    policy, ref_policy = load_policy(cfg.model), load_policy(cfg.model)
    for p in ref_policy.model.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    return _Session(cfg, out, policy, ref_policy, optimizer)


def _resume(s: _Session, log: Callable[[str], None]) -> None:
    """Continue ``s.out`` after its checkpoint (same result fields required)."""
    run = read_run(s.out)
    mine = json.loads(json.dumps(s.cfg.result_fields()))
    theirs = {k: run.config.get(k) for k in mine}
    diff = sorted(k for k in mine if mine[k] != theirs[k])
    if diff:
        raise ValueError(f"cannot resume {s.out}: its config differs in {', '.join(diff)}")
    if checkpoint_iteration(s.out) is None:
        raise ValueError(f"cannot resume {s.out}: no checkpoint/ (was it shipped without one?)")
    ck = load_checkpoint(s.out, s.policy, s.optimizer)
    s.writer = RunWriter.open(s.out)
    if run.partial_tail is not None:
        log(f"dropping a half-written metrics line: {run.partial_tail[:60]!r}...")
    s.writer.truncate(ck)
    v = code_version()
    s.writer.update_meta(config=asdict(s.cfg), resumed_at=_now(), resumed_code_commit=v["code_commit"],
                         resumed_code_dirty=v["code_dirty"])
    s.start = ck + 1
    log(f"resuming {s.out} after iteration {ck}")


def _create(s: _Session) -> None:
    import torch

    cfg = s.cfg
    meta = {"name": s.out.name, "config": asdict(cfg), "model": cfg.model,
            "model_sha256": weights_digest(cfg.model), "created_at": _now(),
            "env": cfg.env, "estimator": cfg.estimator, "seed": cfg.seed,
            "held_out_seeds": f"{HELD_OUT_SEED}-{HELD_OUT_SEED + max(cfg.eval_seeds, 1) - 1}",
            "train_seeds": f"< {HELD_OUT_SEED}, numpy default_rng([seed, 1, iteration])",
            "torch": torch.__version__, **code_version()}
    s.writer = RunWriter.create(s.out, meta)


def _evaluate(s: _Session) -> dict[str, Any]:
    cfg = s.cfg
    ev = evaluate(s.policy, cfg.env, cfg.eval_seeds, cfg.eval_group_size, cfg.max_steps,
                  cfg.eval_temperature, rng=EVAL_RNG)
    return {"eval_success_rate": ev["success_rate"], "eval_mean_return": ev["mean_return"],
            "eval_mean_length": ev["mean_length"], "eval_level_success": ev["level_success"]}


def _iterate(s: _Session, it: int, diagnostics: Diagnostics | None) -> dict[str, Any]:
    """One iteration: evaluate (when due), roll out, estimate, diagnose, update; its metrics."""
    import torch

    from crbc.estimators.registry import compute
    from crbc.policy.base import NextTokenMemo
    from crbc.policy.generate import generate_groups

    cfg = s.cfg
    t0 = time.perf_counter()
    record: dict[str, Any] = {"iteration": it}
    if cfg.eval_every and cfg.eval_seeds and it % cfg.eval_every == 0:
        record.update(_evaluate(s))
    t1 = time.perf_counter()
    seeds = train_seeds(cfg.seed, it, cfg.groups)
    memo = NextTokenMemo()  # the logits the rollout drew from: the update's old log-probabilities
    groups = generate_groups(cfg.env, seeds, cfg.group_size, s.policy, cfg.temperature,
                             cfg.max_steps, rng=_derived(cfg.seed, 2, it), memo=memo)
    for g in groups:
        for r in g.rollouts:
            r.meta["iteration"] = it
    t2 = time.perf_counter()
    credits = compute(cfg.estimator, groups, **cfg.estimator_params)
    t3 = time.perf_counter()
    diag: dict[str, Any] = {}
    if cfg.diagnostics:
        from crbc.run_analysis.diagnostics import iteration_diagnostics

        diag.update(iteration_diagnostics(credits.process))
    if diagnostics is not None:
        diag.update(diagnostics(s.policy, groups, credits, it))
    advantage_N = credits.advantage_N
    if cfg.advantages == "truth":
        advantage_N, solved = truth_advantages(s.policy, groups)
        record["truth_solved_groups"] = solved
    t4 = time.perf_counter()
    upd = ppo_update(s.policy, s.ref_policy, s.optimizer, flatten(groups, advantage_N), cfg,
                     torch.Generator().manual_seed(_derived(cfg.seed, 3, it)), rollout_memo=memo)
    t5 = time.perf_counter()
    record.update(_batch_stats(groups))
    record.update({
        **upd,
        "step_credit_share": float(np.mean(np.abs(credits.step_advantage_N) > 1e-12)),
        "mean_abs_advantage": float(np.mean(np.abs(advantage_N))),
        **{f"diag.{k}": v for k, v in diag.items()},
        "seconds_eval": t1 - t0, "seconds_rollout": t2 - t1, "seconds_advantage": t3 - t2,
        "seconds_diagnostics": t4 - t3, "seconds_update": t5 - t4, "train_seeds": seeds,
    })
    with deferred_interrupt():
        s.writer.write_rollouts(it, groups)
        record["seconds"] = time.perf_counter() - t0
        s.writer.append_metrics(record)
    save_checkpoint(s.out / CHECKPOINT, s.policy, s.optimizer, it)
    return record


def truth_advantages(policy, groups: Sequence[RolloutGroup]) -> tuple[np.ndarray, int]:
    """The exact advantage A_t(s_t, a_t) of ``policy`` at every step, in the estimators' order
    (group, rollout, step), and how many groups were solved; a group the truth cannot solve (an
    unparsable action, a level above the state cap) gets 0 on its steps (the oracle ceiling of
    ``TrainConfig.advantages = "truth"``)."""
    from crbc.truth import TruthCache, TruthError, TruthInputError, group_truth, scorable_policy

    cache = TruthCache(resolver=lambda name, t: scorable_policy(policy, t))
    parts, solved = [], 0
    for g in groups:
        try:
            parts.append(np.concatenate([st.advantage for st in group_truth(g, cache=cache)]))
            solved += 1
        except (TruthError, TruthInputError):
            parts.append(np.zeros(sum(len(r.steps) for r in g.rollouts)))
    return (np.concatenate(parts) if parts else np.zeros(0)), solved


def _finish(s: _Session) -> None:
    """The final held-out evaluation and the final policy."""
    final = _evaluate(s) if s.cfg.eval_seeds else {}
    with deferred_interrupt():
        save_policy(s.policy, s.out / POLICY)
        s.writer.update_meta(final_eval={"after_iteration": s.cfg.iterations - 1, **final},
                             finished_at=_now())


def train(cfg: TrainConfig, out: str | os.PathLike, resume: bool = False,
          progress: Callable[[int, str], None] | None = None, log: Callable[[str], None] | None = None,
          stop_after: int | None = None, diagnostics: Diagnostics | None = None) -> TrainResult:
    """Run (or resume) training into the run folder ``out``. See the module docstring.

    ``diagnostics``: an extra per-iteration hook (e.g. agreement with exact advantages), its
    values stored as ``diag.<name>`` and its time counted in ``seconds_diagnostics``.
    ``stop_after``: stop (as if Ctrl-C) after that many iterations of this call (for tests).
    Returns how many iterations are complete; a KeyboardInterrupt is caught and reported as
    ``interrupted`` with everything written so far intact.
    """
    cfg.validate()
    out = Path(out)
    log = log or (lambda msg: None)
    s = _load(cfg, out)
    if resume and (out / "run.json").exists():
        _resume(s, log)
    else:
        _create(s)
    diagnostics = diagnostics or _truth_hook(cfg)
    interrupted = False
    try:
        for done_now, it in enumerate(range(s.start, cfg.iterations)):
            if stop_after is not None and done_now >= stop_after:
                raise KeyboardInterrupt
            rec = _iterate(s, it, diagnostics)
            if progress:
                progress(it + 1, f"success {rec['success_rate']:.0%} loss {rec['loss']:+.3f} "
                                 f"{rec['seconds']:.1f}s/it")
        _finish(s)
    except KeyboardInterrupt:
        interrupted = True
        log(f"interrupted: {read_run(out).last_iteration + 1} iterations complete in {out}; "
            "continue with --resume")
    return TrainResult(out, read_run(out).last_iteration + 1, interrupted)


def _truth_hook(cfg: TrainConfig) -> Diagnostics | None:
    if not cfg.truth_groups:
        return None
    from crbc.run_analysis.truth_accuracy import truth_diagnostics

    return truth_diagnostics(cfg.truth_groups, cfg.truth_every)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
