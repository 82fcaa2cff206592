"""The ``credit`` and ``estimators`` commands (numpy/scipy only)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from . import estimators
from .columns import read_columns
from .creditfile import write_credits
from .process import from_columns


def _depth(text: str) -> int | None:
    if text.lower() in ("inf", "infinity", "none"):
        return None
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or 'inf', got {text!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or 'inf', got {text!r}")
    return k


def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return x


# flag -> config field; only flags the user gave are passed to the estimator's config
_FLAGS = {"beta": "beta", "depth": "depth", "sigma_min": "sigma_min", "w_group": "w_group",
          "w_step": "w_step", "gamma": "gamma", "gamma_g": "gamma_g", "mode": "mode"}


def add_credit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rollouts", metavar="ROLLOUTS.jsonl", help="crbc.rollout/1 file")
    p.add_argument("-o", "--output", metavar="CREDITS.jsonl",
                   help="output file (crbc.credit/1); standard output when omitted")
    p.add_argument("--estimator", default="crbc", help="registered estimator name (default crbc)")
    p.add_argument("--beta", type=_number, help="discount for crbc/visit_local (default 0.98)")
    p.add_argument("--depth", type=_depth, default=argparse.SUPPRESS,
                   help="finite depth K, or 'inf' for the exact closure (default inf)")
    p.add_argument("--sigma-min", dest="sigma_min", type=_number, help="floor of sigma (default 0.1)")
    p.add_argument("--w-group", dest="w_group", type=_number, help="weight of A_G (default 1)")
    p.add_argument("--w-step", dest="w_step", type=_number,
                   help="weight of A_S (default 5 for crbc/visit_local, 1 for gigpo/shortest_path)")
    p.add_argument("--gamma", type=_number, help="gigpo step-return discount (default 0.95)")
    p.add_argument("--gamma-g", dest="gamma_g", type=_number, help="shortest_path hop decay (default 0.8)")
    p.add_argument("--mode", choices=["mean_std_norm", "mean_norm"],
                   help="gigpo/shortest_path normalisation (default mean_std_norm)")


def run_credit(args: argparse.Namespace) -> int:
    est = estimators.get(args.estimator)
    # only flags the user gave; --depth inf is a real value (None), so its absence is SUPPRESS
    params = {field: getattr(args, flag) for flag, field in _FLAGS.items()
              if hasattr(args, flag) and (flag == "depth" or getattr(args, flag) is not None)}
    cfg = est.config(**params)
    # columnar path: typed decoding into arrays, the process built from them, a chunked encoder;
    # everything is computed (and checked finite) before the first byte is written
    credits = est(from_columns(read_columns(args.rollouts, keep_text=False)), cfg)
    write_credits(credits, args.output if args.output else sys.stdout)
    return 0


def add_estimators_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", "-v", action="store_true", help="also print each summary and defaults")


def run_estimators(args: argparse.Namespace) -> int:
    for name in estimators.names():
        if args.verbose:
            est = estimators.get(name)
            defaults = json.dumps(estimators.dataclasses.asdict(est.config_cls()))
            print(f"{name}\t{est.summary}\t{defaults}")
        else:
            print(name)
    return 0
