"""The ``pretrain`` command: behaviour-clone a tiny policy (flags = ``PretrainConfig`` fields)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from crbc.policy.pretrain import PretrainConfig, pretrain

__all__ = ["add_arguments", "config_from_args", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    defaults = PretrainConfig()
    for f in fields(PretrainConfig):
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(flag, type=type(getattr(defaults, f.name)), default=getattr(defaults, f.name),
                            help=f"(default: {getattr(defaults, f.name)})")
    parser.add_argument("--quiet", action="store_true", help="no progress messages")


def config_from_args(args: argparse.Namespace) -> PretrainConfig:
    """The frozen config of parsed arguments, checked (UsageError on bad values)."""
    from crbc.errors import UsageError

    cfg = PretrainConfig(**{f.name: getattr(args, f.name) for f in fields(PretrainConfig)})
    checks = [(cfg.states >= 1, "--states must be >= 1"), (cfg.epochs >= 1, "--epochs must be >= 1"),
              (cfg.batch_size >= 1, "--batch-size must be >= 1"), (cfg.lr > 0, "--lr must be > 0"),
              (0 <= cfg.label_noise <= 1, "--label-noise must be in [0, 1]"),
              (0 <= cfg.optimal_prob <= 1, "--optimal-prob must be in [0, 1]"),
              (cfg.eval_seeds >= 0, "--eval-seeds must be >= 0"),
              (cfg.eval_group >= 1, "--eval-group must be >= 1"), (cfg.threads >= 1, "--threads must be >= 1"),
              (cfg.max_steps >= 1, "--max-steps must be >= 1"), (cfg.seed >= 0, "--seed must be >= 0")]
    for ok, msg in checks:
        if not ok:
            raise UsageError(msg)
    from crbc.envs import env_ids

    if cfg.env not in env_ids():
        raise UsageError(f"unknown env {cfg.env!r} (known: {', '.join(env_ids())})")
    return cfg


def run(args: argparse.Namespace) -> int:
    """The ``pretrain`` command."""
    cfg = config_from_args(args)

    def log(msg: str) -> None:
        if not args.quiet:
            print(f"pretrain: {msg}", file=sys.stderr, flush=True)

    card = pretrain(cfg, args.out, log)
    ev = card.get("evaluation", {})
    log(f"wrote {args.out} ({card['params']} params, train {card['training']['train_seconds']}s); "
        f"held-out success {ev.get('success_rate')}, mixed groups {ev.get('mixed_group_share')}")
    return 0
