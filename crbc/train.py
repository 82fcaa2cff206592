"""Group-based policy optimisation on CPU with a pluggable step-credit estimator; the ``train`` command.

Each iteration (CRBC Sec. 5.1 in miniature):

1. **Rollouts**: ``groups`` x ``group_size`` episodes from the current policy on fresh training
   levels. Level seeds come from a seeded stream below ``HELD_OUT_SEED`` (1_000_000), so they
   never meet the held-out evaluation levels (seeds from 1_000_000 up).
2. **Advantages**: ``crbc.estimators.compute(estimator, groups, **estimator_params)``; each step
   gets ``A_final(i,t)`` (for ``grpo`` the trajectory advantage A_G on every step).
3. **Update**: PPO-clip at step level. For step n with observation o_n and sampled response y_n
   (one action token + ``<eos>`` for the tiny model), ``log pi(y_n|o_n)`` sums the response
   tokens' log-probabilities; with ``rho_n = exp(log pi - log pi_old)`` and the frozen starting
   policy ``pi_ref``::

       L = (1/|B|) sum_{n in B} [ -min(rho_n A_n, clip(rho_n, 1-eps, 1+eps) A_n)
                                  + kl_coef * k3(pi_ref, pi)_n ]
       k3 = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1

   averaged over the steps of a minibatch B (the step-averaged objective of CRBC Eq. 15), AdamW,
   gradient clipping, ``ppo_epochs`` passes over shuffled minibatches.
4. **Evaluation** every ``eval_every`` iterations (before the update, so it measures the same
   policy as that iteration's rollouts) and once after the last update, on fixed held-out levels
   with a fixed sampling seed (common random numbers across estimators and seeds).

The run folder (``crbc.run/1``, :mod:`crbc.runs`): ``run.json``, ``metrics.jsonl`` (one line per
completed iteration), ``rollouts/iter-NNNN.jsonl``, ``checkpoint/`` (model and AdamW state as
safetensors + ``state.json``, rewritten after every iteration) and ``policy/`` (the final policy).
Ctrl-C stops between writes; ``--resume`` continues from the last checkpoint and gives the same
result as an uninterrupted run (everything random is derived from (seed, iteration)).

    python -m crbc train --estimator crbc --iterations 20 --out runs/crbc-s0
    python -m crbc train --out runs/crbc-s0 --resume --iterations 30
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .progress import ProgressBar
from .rollouts import RolloutGroup
from .runs import RunWriter, read_run

HELD_OUT_SEED = 1_000_000  #: held-out evaluation levels use seeds >= this; training levels stay below
EVAL_RNG = 20_260_901  #: sampling seed of every evaluation (common random numbers)
CHECKPOINT = "checkpoint"
POLICY = "policy"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (stored in run.json; defaults: CRBC Sec. 5.1)."""

    env: str = "sokoban-6x6-v0"  #: environment id
    model: str = "models/sokoban-tiny-weak"  #: starting policy folder (also the frozen KL reference)
    estimator: str = "crbc"  #: registered estimator name (crbc.estimators.names())
    estimator_params: dict[str, Any] = field(default_factory=dict)  #: e.g. {"depth": 3}
    iterations: int = 20  #: training iterations
    groups: int = 16  #: groups (levels) per iteration, N
    group_size: int = 8  #: rollouts per group, G
    max_steps: int = 15  #: episode step limit (a time-out is a failure)
    temperature: float = 1.0  #: sampling temperature (log-probabilities use the same)
    lr: float = 3e-4  #: AdamW learning rate (constant; 1e-3 degrades the tiny model, see docs/TRAINING.md)
    weight_decay: float = 0.0  #: AdamW weight decay
    ppo_epochs: int = 2  #: passes over the iteration's steps
    minibatch: int = 256  #: steps per optimiser step
    clip: float = 0.2  #: PPO clip epsilon
    kl_coef: float = 0.05  #: weight of the k3 KL penalty to the frozen starting policy
    max_grad_norm: float = 1.0  #: gradient clipping
    eval_every: int = 4  #: evaluate on held-out levels every this many iterations (0: never)
    eval_seeds: int = 32  #: held-out levels per evaluation (seeds 1_000_000 ...)
    eval_group_size: int = 4  #: rollouts per held-out level
    seed: int = 0  #: seeds level sampling, episode sampling and minibatch order
    threads: int = 1  #: torch CPU threads (not part of the result on one machine)
    diagnostics: bool = True  #: compute the estimator diagnostics (crbc.diagnostics) per iteration

    def validate(self) -> None:
        from .envs import env_ids
        from .estimators import get

        checks = [
            (self.iterations >= 1, "iterations must be >= 1"), (self.groups >= 1, "groups must be >= 1"),
            (self.group_size >= 1, "group_size must be >= 1"), (self.max_steps >= 1, "max_steps must be >= 1"),
            (self.temperature > 0, "temperature must be > 0 (sampling)"), (self.lr > 0, "lr must be > 0"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"), (self.ppo_epochs >= 1, "ppo_epochs must be >= 1"),
            (self.minibatch >= 1, "minibatch must be >= 1"), (0 < self.clip < 1, "clip must be in (0, 1)"),
            (self.kl_coef >= 0, "kl_coef must be >= 0"), (self.max_grad_norm > 0, "max_grad_norm must be > 0"),
            (self.eval_every >= 0, "eval_every must be >= 0"), (self.eval_seeds >= 0, "eval_seeds must be >= 0"),
            (self.eval_group_size >= 1, "eval_group_size must be >= 1"), (self.seed >= 0, "seed must be >= 0"),
            (self.threads >= 1, "threads must be >= 1"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        for name in ("temperature", "lr", "clip", "kl_coef", "max_grad_norm", "weight_decay"):
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


def train_seeds(seed: int, iteration: int, n: int) -> list[int]:
    """Fresh training level seeds of one iteration: distinct, below ``HELD_OUT_SEED``."""
    rng = np.random.default_rng([seed, 1, iteration])
    return [int(s) for s in rng.choice(HELD_OUT_SEED, size=n, replace=False)]


def _derived(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 2)


def eval_seeds(n: int) -> list[int]:
    return list(range(HELD_OUT_SEED, HELD_OUT_SEED + n))


# --------------------------------------------------------------------------------------------
# Ctrl-C: never inside a write


@contextlib.contextmanager
def deferred_interrupt():
    """Hold SIGINT while the block runs (a write); re-raise KeyboardInterrupt after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hit: list[Any] = []
    old = signal.signal(signal.SIGINT, lambda *a: hit.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        raise KeyboardInterrupt


# --------------------------------------------------------------------------------------------
# the policy-gradient step


@dataclass
class Batch:
    """Flat per-step training data of one iteration.

    Steps that share (observation, response) share their log-probability, so the model is run
    once per distinct pair: ``pair_N`` maps each step to its pair in ``pair_obs`` / ``pair_resp``.
    """

    advantages: np.ndarray
    pair_N: np.ndarray
    pair_obs: list[str]
    pair_resp: list[str]

    @property
    def n_steps(self) -> int:
        return len(self.pair_N)


def flatten(groups: Sequence[RolloutGroup], advantages_N: np.ndarray) -> Batch:
    """Steps in the estimators' order (group, rollout, step) with their advantages."""
    pairs: dict[tuple[str, str], int] = {}
    pair_N = []
    for g in groups:
        for r in g.rollouts:
            for s in r.steps:
                if s.obs is None or s.response is None:
                    raise ValueError(f"{g.group}: a step lacks obs/response; training needs both")
                pair_N.append(pairs.setdefault((s.obs, s.response), len(pairs)))
    if len(pair_N) != len(advantages_N):
        raise ValueError("advantages do not match the steps")
    return Batch(np.asarray(advantages_N, dtype=np.float64), np.asarray(pair_N, dtype=np.int64),
                 [o for o, _ in pairs], [r for _, r in pairs])


def sequence_logprobs(policy, obs: Sequence[str], responses: Sequence[str], temperature: float,
                      chunk: int = 512):
    """``log pi(response | obs)`` summed over the response tokens, shape (B,), no gradient."""
    import torch

    outs = []
    with torch.no_grad():
        for i in range(0, len(obs), chunk):
            outs.append(policy.response_logprobs(list(obs[i:i + chunk]), list(responses[i:i + chunk]),
                                                 temperature))
    return torch.cat(outs) if outs else torch.zeros(0)


def ppo_update(policy, ref_policy, optimizer, batch: Batch, cfg: TrainConfig, generator) -> dict[str, float]:
    """One iteration's PPO-clip + KL update (module docstring). Returns mean loss, kl, clip fraction."""
    import torch

    params = [p for p in policy.model.parameters() if p.requires_grad]
    old_P = sequence_logprobs(policy, batch.pair_obs, batch.pair_resp, cfg.temperature)
    ref_P = sequence_logprobs(ref_policy, batch.pair_obs, batch.pair_resp, cfg.temperature)
    adv = torch.as_tensor(batch.advantages, dtype=torch.float32)
    pair_N = torch.as_tensor(batch.pair_N)
    n = batch.n_steps
    sums = {"loss": 0.0, "policy_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "grad_norm": 0.0,
            "ratio_dev": 0.0}
    count = 0
    for _ in range(cfg.ppo_epochs):
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, cfg.minibatch):
            idx = order[start:start + cfg.minibatch]
            uniq, inv = torch.unique(pair_N[idx], return_inverse=True)
            u = uniq.tolist()
            logp_u = policy.response_logprobs([batch.pair_obs[i] for i in u],
                                              [batch.pair_resp[i] for i in u], cfg.temperature)
            logp = logp_u[inv]
            ratio = torch.exp(logp - old_P[pair_N[idx]])
            a = adv[idx]
            surr = torch.minimum(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
            d = ref_P[pair_N[idx]] - logp
            kl = torch.exp(d) - d - 1
            policy_loss = -surr.mean()
            loss = policy_loss + cfg.kl_coef * kl.mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                sums["loss"] += float(loss)
                sums["policy_loss"] += float(policy_loss)
                sums["kl"] += float(kl.mean())
                sums["clip_frac"] += float(((ratio - 1).abs() > cfg.clip).float().mean())
                sums["grad_norm"] += float(gn)
                sums["ratio_dev"] += float((ratio - 1).abs().mean())
            count += 1
    out = {k: v / max(count, 1) for k, v in sums.items()}
    out["distinct_pairs"] = len(batch.pair_obs)
    out["optimizer_steps"] = count
    return out


# --------------------------------------------------------------------------------------------
# checkpoints (safetensors + json only)


def save_checkpoint(folder: Path, policy, optimizer, iteration: int) -> None:
    """Model weights and AdamW state as safetensors, plus ``state.json``; swapped in atomically."""
    import torch
    from safetensors.torch import save_file, save_model

    tmp = folder.with_name(folder.name + ".tmp")
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(policy.model, str(tmp / "model.safetensors"))
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{pid}.{k}"] = v.detach().contiguous().clone()
            else:
                scalars[f"{pid}.{k}"] = v
    save_file(tensors, str(tmp / "optimizer.safetensors"))
    state = {"iteration": iteration, "param_groups": sd["param_groups"], "scalars": scalars}
    (tmp / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    with deferred_interrupt():
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)


def checkpoint_iteration(run_dir: Path) -> int | None:
    """Iteration of the run's checkpoint (None if there is none)."""
    for name in (CHECKPOINT, CHECKPOINT + ".old"):
        p = run_dir / name / "state.json"
        if p.is_file():
            return int(json.loads(p.read_text(encoding="utf-8"))["iteration"])
    return None


def load_checkpoint(run_dir: Path, policy, optimizer) -> int:
    """Restore model and optimizer; returns the checkpoint's iteration."""
    from safetensors.torch import load_file, load_model

    folder = run_dir / CHECKPOINT
    if not (folder / "state.json").is_file():
        folder = run_dir / (CHECKPOINT + ".old")  # interrupted between the two renames
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    load_model(policy.model, str(folder / "model.safetensors"))
    tensors = load_file(str(folder / "optimizer.safetensors"))
    per: dict[int, dict[str, Any]] = {}
    for key, v in {**tensors, **state["scalars"]}.items():
        pid, k = key.split(".", 1)
        per.setdefault(int(pid), {})[k] = v
    optimizer.load_state_dict({"state": per, "param_groups": state["param_groups"]})
    return int(state["iteration"])


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


def evaluate(policy, cfg: TrainConfig) -> dict[str, float]:
    """Success on the held-out levels (fixed seeds and sampling seed)."""
    from .generate import generate_groups

    groups = generate_groups(cfg.env, eval_seeds(cfg.eval_seeds), cfg.eval_group_size, policy,
                             cfg.temperature, cfg.max_steps, rng=EVAL_RNG)
    st = _batch_stats(groups)
    return {"eval_success_rate": st["success_rate"], "eval_mean_return": st["mean_return"],
            "eval_mean_length": st["mean_length"]}


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    completed: int  #: iterations completed in total
    interrupted: bool


def train(cfg: TrainConfig, out: str | os.PathLike, resume: bool = False,
          progress: Callable[[int, str], None] | None = None, log: Callable[[str], None] | None = None,
          stop_after: int | None = None) -> TrainResult:
    """Run (or resume) training into the run folder ``out``. See the module docstring.

    ``stop_after``: stop (as if Ctrl-C) after that many iterations of this call (for tests).
    Returns how many iterations are complete; a KeyboardInterrupt is caught and reported as
    ``interrupted`` with everything written so far intact.
    """
    import torch

    from .estimators import compute
    from .generate import generate_groups
    from .policy import load_policy

    cfg.validate()
    out = Path(out)
    log = log or (lambda msg: None)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    policy = load_policy(cfg.model)
    ref_policy = load_policy(cfg.model)
    for p in ref_policy.model.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    start = 0
    if resume and (out / "run.json").exists():
        run = read_run(out)
        stored = run.config
        mine = json.loads(json.dumps(cfg.result_fields()))
        theirs = {k: stored.get(k) for k in mine}
        diff = sorted(k for k in mine if mine[k] != theirs[k])
        if diff:
            raise ValueError(f"cannot resume {out}: its config differs in {', '.join(diff)}")
        ck = checkpoint_iteration(out)
        if ck is None:
            raise ValueError(f"cannot resume {out}: no checkpoint/ (was it shipped without one?)")
        ck = load_checkpoint(out, policy, optimizer)
        writer = RunWriter.open(out)
        if run.partial_tail is not None:
            log(f"dropping a half-written metrics line: {run.partial_tail[:60]!r}...")
        writer.truncate(ck)
        writer.update_meta(config=asdict(cfg), resumed_at=_now())
        start = ck + 1
        log(f"resuming {out} after iteration {ck}")
    else:
        meta = {"name": out.name, "config": asdict(cfg), "model": cfg.model,
                "model_sha256": _model_digest(cfg.model), "created_at": _now(),
                "env": cfg.env, "estimator": cfg.estimator, "seed": cfg.seed,
                "held_out_seeds": f"{HELD_OUT_SEED}-{HELD_OUT_SEED + max(cfg.eval_seeds, 1) - 1}",
                "train_seeds": f"< {HELD_OUT_SEED}, numpy default_rng([seed, 1, iteration])",
                "torch": torch.__version__}
        writer = RunWriter.create(out, meta)

    done_now = 0
    interrupted = False
    try:
        for it in range(start, cfg.iterations):
            if stop_after is not None and done_now >= stop_after:
                raise KeyboardInterrupt
            t0 = time.perf_counter()
            record: dict[str, Any] = {"iteration": it}
            if cfg.eval_every and cfg.eval_seeds and it % cfg.eval_every == 0:
                record.update(evaluate(policy, cfg))
            t1 = time.perf_counter()
            seeds = train_seeds(cfg.seed, it, cfg.groups)
            groups = generate_groups(cfg.env, seeds, cfg.group_size, policy, cfg.temperature,
                                     cfg.max_steps, rng=_derived(cfg.seed, 2, it))
            for g in groups:
                for r in g.rollouts:
                    r.meta["iteration"] = it
            t2 = time.perf_counter()
            credits = compute(cfg.estimator, groups, **cfg.estimator_params)
            t3 = time.perf_counter()
            diag = {}
            if cfg.diagnostics:
                from .diagnostics import iteration_diagnostics

                diag = {f"diag.{k}": v for k, v in iteration_diagnostics(credits.process).items()}
            t4 = time.perf_counter()
            batch = flatten(groups, credits.advantage_N)
            gen = torch.Generator().manual_seed(_derived(cfg.seed, 3, it))
            upd = ppo_update(policy, ref_policy, optimizer, batch, cfg, gen)
            t5 = time.perf_counter()
            record.update(_batch_stats(groups))
            a_s = credits.step_advantage_N
            record.update({
                **upd,
                "step_credit_share": float(np.mean(np.abs(a_s) > 1e-12)),
                "mean_abs_advantage": float(np.mean(np.abs(credits.advantage_N))),
                **diag,
                "seconds_eval": t1 - t0, "seconds_rollout": t2 - t1, "seconds_advantage": t3 - t2,
                "seconds_diagnostics": t4 - t3, "seconds_update": t5 - t4,
                "train_seeds": seeds,
            })
            with deferred_interrupt():
                writer.write_rollouts(it, groups)
                record["seconds"] = time.perf_counter() - t0
                writer.append_metrics(record)
            save_checkpoint(out / CHECKPOINT, policy, optimizer, it)
            done_now += 1
            if progress:
                progress(it + 1, f"success {record['success_rate']:.0%} loss {record['loss']:+.3f} "
                                 f"kl {record['kl']:.4f} {record['seconds']:.1f}s/it")
        final = {}
        if cfg.eval_seeds:
            final = evaluate(policy, cfg)
        with deferred_interrupt():
            _save_policy(policy, out / POLICY)
            writer.update_meta(final_eval={"after_iteration": cfg.iterations - 1, **final},
                               finished_at=_now())
    except KeyboardInterrupt:
        interrupted = True
        log(f"interrupted: {read_run(out).last_iteration + 1} iterations complete in {out}; "
            "continue with --resume")
    completed = read_run(out).last_iteration + 1
    return TrainResult(out, completed, interrupted)


def _save_policy(policy, folder: Path) -> None:
    if hasattr(policy, "save_pretrained"):
        policy.save_pretrained(folder)
    else:
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        save_model(policy.model, str(folder / "model.safetensors"))


def _model_digest(folder: str) -> str | None:
    """sha256 of the starting weights (model.safetensors), so a run names exactly what it used."""
    import hashlib

    p = Path(folder) / "model.safetensors"
    if not p.is_file():
        return None
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# command line


_FLAGS = [f for f in fields(TrainConfig) if f.name not in ("estimator_params", "diagnostics")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="run folder to write (crbc.run/1)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --out from its last checkpoint with its stored "
                             "config (only --iterations may change)")
    add_config_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_config_arguments(parser: argparse.ArgumentParser, skip: Sequence[str] = ()) -> None:
    """One flag per TrainConfig field (``--group-size`` ...), defaults None = the config's."""
    defaults = TrainConfig()
    for f in _FLAGS:
        if f.name in skip:
            continue
        d = getattr(defaults, f.name)
        parser.add_argument("--" + f.name.replace("_", "-"), type=type(d), default=None,
                            help=f"(default: {d})")
    if "estimator_params" not in skip:
        parser.add_argument("--estimator-params", default=None,
                            help='estimator parameters as JSON, e.g. \'{"depth": 3}\'')
    if "diagnostics" not in skip:
        parser.add_argument("--no-diagnostics", action="store_true",
                            help="skip the per-iteration estimator diagnostics")


def config_from_args(args: argparse.Namespace, base: TrainConfig | None = None) -> TrainConfig:
    """TrainConfig from parsed flags over ``base`` (UsageError on bad values)."""
    from .errors import UsageError

    base = base or TrainConfig()
    kw = {f.name: getattr(args, f.name) for f in _FLAGS
          if getattr(args, f.name, None) is not None}
    if getattr(args, "estimator_params", None) is not None:
        try:
            ep = json.loads(args.estimator_params)
        except ValueError as e:
            raise UsageError(f"--estimator-params is not valid JSON ({e})") from None
        if not isinstance(ep, dict):
            raise UsageError("--estimator-params must be a JSON object")
        kw["estimator_params"] = ep
    if getattr(args, "no_diagnostics", False):
        kw["diagnostics"] = False
    cfg = dataclasses.replace(base, **kw)
    try:
        cfg.validate()
    except (ValueError, KeyError) as e:
        raise UsageError(str(e).strip("'\"")) from None
    return cfg


def config_from_dict(d: dict[str, Any]) -> TrainConfig:
    known = {f.name for f in fields(TrainConfig)}
    return TrainConfig(**{k: v for k, v in d.items() if k in known})


def run(args: argparse.Namespace) -> int:
    """The ``train`` command."""
    from .errors import UsageError

    out = Path(args.out)
    base = None
    if args.resume:
        if not (out / "run.json").exists():
            raise UsageError(f"--resume: no run in {out}")
        base = config_from_dict(read_run(out).config)
        given = [f.name for f in _FLAGS if f.name not in ("iterations", "threads")
                 and getattr(args, f.name, None) is not None]
        if given:
            raise UsageError(f"--resume uses the stored config; do not pass --{given[0].replace('_', '-')}")
    elif (out / "run.json").exists():
        raise UsageError(f"{out} already holds a run: pass --resume to continue it, or choose another --out")
    cfg = config_from_args(args, base)
    if not Path(cfg.model).is_dir():
        raise UsageError(f"model folder not found: {cfg.model}")
    label = f"train {cfg.estimator} seed {cfg.seed}"
    bar = None if args.quiet else ProgressBar(label, cfg.iterations)

    def log(msg: str) -> None:
        print(f"\ncrbc train: {msg}" if bar else f"crbc train: {msg}", file=sys.stderr, flush=True)

    if bar and args.resume:
        bar(read_run(out).last_iteration + 1)
    res = train(cfg, out, resume=args.resume, progress=bar, log=log)
    if res.interrupted:
        return 130
    run_ = read_run(out)
    fe = run_.meta.get("final_eval", {})
    print(f"crbc train: {res.completed} iterations in {out}; last batch success "
          f"{run_.metrics[-1]['success_rate']:.1%}"
          + (f", held-out success {fe['eval_success_rate']:.1%}" if "eval_success_rate" in fe else ""),
          file=sys.stderr)
    return 0
