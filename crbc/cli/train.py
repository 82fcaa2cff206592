"""The ``train`` command: one flag per ``TrainConfig`` field, resume rules, a progress bar.

    python -m crbc train --estimator crbc --iterations 20 --out runs/crbc-s0
    python -m crbc train --out runs/crbc-s0 --resume --iterations 30
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from crbc.cli.progress import ProgressBar
from crbc.io.runs import read_run
from crbc.train.loop import TrainConfig, flag_fields, train

__all__ = ["add_arguments", "add_config_arguments", "config_from_args", "config_from_dict", "run"]

_FLAGS = flag_fields()


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
    from crbc.errors import UsageError

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
    from crbc.errors import UsageError

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
