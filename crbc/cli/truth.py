"""The ``truth`` and ``accuracy`` commands (docs/FORMATS.md): crbc.truth/1 files and the accuracy lab.

    python -m crbc truth ROLLOUTS.jsonl [-o TRUTH.jsonl] [--beta 0.98] [--model DIR]
    python -m crbc truth ROLLOUTS.jsonl --mc 128 [--mc-seed 0]    # Monte Carlo, with standard errors
    python -m crbc accuracy --env sokoban-6x6-v0 --model DIR --seeds 1000000-1000099 \\
        [--group-sizes 2,4,8,16,32] [--estimators all] [--depths 0,1,3,inf] [-o ACCURACY.json]

Bad input exits 2 with one line naming the file, line and field; nothing is written then.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from crbc.cli.anchor_args import add_similarity_argument
from crbc.errors import os_reason
from crbc.io.rollouts import RolloutFormatError, atomic_write_lines, iter_rollouts

__all__ = [
    "add_accuracy_arguments", "add_truth_arguments", "read_with_lines", "run_accuracy_cmd", "run_truth"
]


def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return x


def _depth(text: str) -> int | None:
    if text.lower() in ("inf", "infinity", "none"):
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"depth must be a non-negative integer or 'inf', got {text!r}")
    return int(text)


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# truth


def add_truth_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rollouts", metavar="ROLLOUTS.jsonl", help="crbc.rollout/1 file made by generate")
    p.add_argument("-o", "--output", metavar="TRUTH.jsonl",
                   help="output file (crbc.truth/1); standard output when omitted")
    p.add_argument("--beta", type=_number, default=0.98, help="discount of the return (0.98)")
    p.add_argument("--model", metavar="DIR", help="model folder overriding meta.policy")
    p.add_argument("--max-states", dest="max_states", type=int, default=200_000,
                   help="cap on reachable states per level (200000)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1)")
    p.add_argument("--mc", type=int, default=0, metavar="N",
                   help="estimate the truth by Monte Carlo with N continuations per step and "
                        "action, with standard errors (no state enumeration, no state cap)")
    p.add_argument("--mc-seed", dest="mc_seed", type=int, default=0, help="seed of --mc (0)")


class _Lines:
    """A file's lines, remembering the number of the last one read."""

    def __init__(self, f):
        self.f, self.line = f, 0

    def __iter__(self):
        for raw in self.f:
            self.line += 1
            yield raw


def read_with_lines(path: str):
    """(rollouts in file order, their 1-based line numbers); all-or-nothing validation."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise RolloutFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    with f:
        lines = _Lines(f)
        rollouts, numbers = [], []
        for r in iter_rollouts(lines, str(path)):
            rollouts.append(r)
            numbers.append(lines.line)
    if not rollouts:
        raise RolloutFormatError("no rollouts found (the file is empty)", str(path))
    return rollouts, numbers


def run_truth(args: argparse.Namespace) -> int:
    from crbc.errors import UsageError
    from crbc.truth import TruthCache, level_key, rollouts_truth, truth_record

    if not 0 < args.beta <= 1:
        raise UsageError(f"--beta must be in (0, 1], got {args.beta}")
    if args.max_states < 1:
        raise UsageError(f"--max-states must be >= 1, got {args.max_states}")
    if args.model and not Path(args.model).is_dir():
        raise UsageError(f"--model: model folder not found: {args.model}")
    rollouts, numbers = read_with_lines(args.rollouts)
    for r, n in zip(rollouts, numbers, strict=True):  # meta first: no model load for a bad file
        level_key(r, args.beta, args.model, args.rollouts, n)
    if args.mc < 0 or args.mc == 1:
        raise UsageError(f"--mc must be 0 (exact) or at least 2, got {args.mc}")
    _threads(args.threads)
    cache = TruthCache(model=args.model, max_states=args.max_states)
    keys = [level_key(r, args.beta, args.model, args.rollouts, n) for r, n in zip(rollouts, numbers, strict=True)]
    if args.mc:
        lines, n_levels = _mc_lines(rollouts, numbers, keys, cache, args)
    else:
        truths = rollouts_truth(rollouts, args.beta, cache, args.rollouts, numbers)
        lines = [json.dumps(truth_record(r, st, k), allow_nan=False)
                 for r, st, k in zip(rollouts, truths, keys, strict=True)]
        n_levels = len(cache.levels)
    if args.output:
        atomic_write_lines(args.output, lines)
        print(f"wrote the {'Monte Carlo ' if args.mc else ''}truth of {len(lines)} rollouts "
              f"({n_levels} levels) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _mc_lines(rollouts, numbers, keys, cache, args) -> tuple[list[str], int]:
    """crbc.truth/1 lines of the Monte Carlo reference (:mod:`crbc.truth.montecarlo`): one level
    object per distinct level key; rollout i draws from ``SeedSequence([mc_seed, i])``."""
    import numpy as np

    from crbc.truth import TruthError
    from crbc.truth.groups import TruthInputError
    from crbc.truth.montecarlo import MonteCarloLevel, mc_record, mc_rollout_truth

    levels: dict = {}
    lines = []
    for i, (r, line, key) in enumerate(zip(rollouts, numbers, keys, strict=True)):
        if key not in levels:
            try:
                levels[key] = MonteCarloLevel(key.env, key.seed, key.max_steps,
                                              cache.policy(key.policy, key.temperature), key.beta)
            except FileNotFoundError as e:
                raise TruthInputError(str(e), args.rollouts, line, "meta.policy") from None
            except TruthError as e:
                raise TruthInputError(str(e), args.rollouts, line, "meta") from None
        rng = np.random.default_rng(np.random.SeedSequence([args.mc_seed, i]))
        st = mc_rollout_truth(levels[key], r, args.mc, rng, args.rollouts, line)
        lines.append(json.dumps(mc_record(r, st, key), allow_nan=False))
    return lines, len(levels)


# --------------------------------------------------------------------------------------------
# accuracy


def _int_list(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"must be positive integers, got {text!r}")
    return out


def _depth_list(text: str) -> tuple[int | None, ...]:
    return tuple(_depth(x.strip()) for x in text.split(",") if x.strip())


def add_accuracy_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True, help="environment id, e.g. sokoban-6x6-v0")
    p.add_argument("--model", required=True, help="tiny checkpoint folder (the scored policy)")
    p.add_argument("--seeds", required=True, help="level seeds: 1000000-1000099, 1,5,9 or a mix")
    p.add_argument("--group-sizes", dest="group_sizes", type=_int_list, default=(2, 4, 8, 16, 32),
                   help="group sizes G (2,4,8,16,32)")
    p.add_argument("--estimators", default="all", help="comma-separated registry names or 'all'")
    p.add_argument("--depths", type=_depth_list, default=(0, 1, 3, None),
                   help="depths K of the depth sweep (0,1,3,inf)")
    p.add_argument("--temperature", type=_number, default=1.0, help="sampling temperature (1)")
    p.add_argument("--max-steps", dest="max_steps", type=int, default=None, help="step limit")
    p.add_argument("--beta", type=_number, default=0.98, help="discount of the truth (0.98)")
    p.add_argument("--rng-seed", dest="rng_seed", type=int, default=0, help="sampling seed (0)")
    p.add_argument("--sampler", choices=["table", "model"], default="table",
                   help="table: draw rollouts from the exact pi(a|s) (generate's law, fast); "
                        "model: run generate with the model (default table)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (2000)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1)")
    p.add_argument("--intervals", type=int, default=0, metavar="B",
                   help="also score credit intervals from B resamples per group (0: off)")
    p.add_argument("--interval-methods", dest="interval_methods", default="calibrated,range",
                   help="interval methods to score (calibrated,range; also bayes)")
    p.add_argument("--interval-level", dest="interval_level", type=_number, default=0.9,
                   help="central level of the intervals (0.9)")
    add_similarity_argument(p)
    p.add_argument("-o", "--output", metavar="ACCURACY.json", help="JSON results file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


class _PhaseProgress:
    """One progress line per phase on standard error."""

    def __init__(self, stream=None):
        self.stream, self.start, self.phase = stream or sys.stderr, time.perf_counter(), None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self.phase and self.phase is not None:
            self.stream.write("\n")
        self.phase = phase
        bar = "#" * int(30 * done / max(total, 1))
        self.stream.write(f"\raccuracy {phase:<8} [{bar:<30}] {done}/{total} "
                          f"{time.perf_counter() - self.start:6.1f}s")
        if phase == "score" and done >= total:
            self.stream.write("\n")
        self.stream.flush()


def run_accuracy_cmd(args: argparse.Namespace) -> int:  # noqa: C901
    from crbc.cli.generate import parse_seeds
    from crbc.envs import env_ids
    from crbc.errors import UsageError
    from crbc.estimators import registry as estimators
    from crbc.truth.accuracy import AccuracyConfig, markdown_table, run_accuracy

    if args.env not in env_ids():
        raise UsageError(f"unknown env {args.env!r} (known: {', '.join(env_ids())})")
    try:
        seeds = tuple(parse_seeds(args.seeds))
    except ValueError as e:
        raise UsageError(str(e)) from None
    names = None
    if args.estimators != "all":
        names = tuple(n.strip() for n in args.estimators.split(",") if n.strip())
        for n in names:
            estimators.get(n)  # unknown names raise with the known list
    if not Path(args.model).is_dir():
        raise UsageError(f"--model: model folder not found: {args.model}")
    if args.bootstrap < 1 or args.threads < 1:
        raise UsageError("--bootstrap and --threads must be >= 1")
    methods = tuple(m.strip() for m in args.interval_methods.split(",") if m.strip())
    if args.intervals < 0 or not methods or set(methods) - {"calibrated", "range", "bayes", "percentile"}:
        raise UsageError("--intervals must be >= 0 and --interval-methods a list of calibrated, range, bayes")
    if not 0 < args.interval_level < 1:
        raise UsageError(f"--interval-level must be in (0, 1), got {args.interval_level}")
    cfg = AccuracyConfig(env=args.env, model=args.model, seeds=seeds,
                         group_sizes=tuple(sorted(set(args.group_sizes))), estimators=names,
                         depths=args.depths, temperature=args.temperature,
                         max_steps=args.max_steps, beta=args.beta, rng_seed=args.rng_seed,
                         n_boot=args.bootstrap, sampler=args.sampler, intervals=args.intervals,
                         interval_methods=methods, interval_level=args.interval_level,
                         anchor_similarity=args.anchor_similarity)
    _threads(args.threads)
    result = run_accuracy(cfg, progress=None if args.quiet else _PhaseProgress()).to_json()
    if args.output:
        atomic_write_lines(args.output, [json.dumps(result, allow_nan=False)])
    for metric in ("spearman", "sign", "rmse"):
        print(markdown_table(result, metric) + "\n")
    if cfg.intervals:
        for metric in ("sure_share", "sure_sign", "coverage", "zero_miss"):
            print(markdown_table(result, metric, target="anchor") + "\n")
    info = result["info"]
    print(f"{info['levels']} levels, {info['states_per_level']['mean']:.0f} states per level on "
          f"average; seconds {json.dumps(info['seconds'])}; load average {info['loadavg']}")
    return 0


run_accuracy = run_accuracy_cmd  # the CLI looks up run_<command>
