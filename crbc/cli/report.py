"""``python -m crbc report SRC -o REPORT.html``: a self-contained HTML report (docs/FORMATS.md).

SRC is a rollout file (JSON Lines, gzip or the recorder's Parquet: a report of one group,
``--group`` by id or 0-based index, default the first group that mixes successes and failures)
or a ``crbc.run/1`` folder (the audit's curves, the trainer's metrics and the groups worth a look
of ``--iteration``, default the last with saved rollouts; with ``--group``, that group's report).
The anchor key: ``--anchor``, else the run's ``config.anchor_key``, else the exact text. The file is written atomically: on bad input nothing is left behind.
"""

from __future__ import annotations

import argparse
import sys

from crbc.cli.anchor_args import add_similarity_argument

__all__ = ["add_arguments", "run"]


def _depth(text: str):
    if text in ("inf", "none", "None"):
        return None
    k = int(text)
    if k < 0:
        raise argparse.ArgumentTypeError("depth K must be >= 0 or inf")
    return k


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="SRC", nargs="+",
                   help="a crbc.rollout/1 file or a crbc.run/1 folder; several run folders: one report of "
                        "them all (curves overlaid, what carried no signal, every iteration's groups)")
    p.add_argument("-o", "--output", metavar="REPORT.html", required=True, help="the HTML file to write")
    p.add_argument("--group", default=None,
                   help="group id or 0-based index: that group's report (of --iteration on a run folder)")
    p.add_argument("--iteration", type=int, default=None, help="iteration whose groups are shown (runs)")
    p.add_argument("--anchor", default=None, metavar="REGEX",
                   help="anchor key: the last match of REGEX (its first group if it has one); default the "
                        "run's config.anchor_key, else the exact text")
    add_similarity_argument(p)
    p.add_argument("--compare-at", default=None, metavar="ANCHOR",
                   help="the anchor of the backups side by side in a group's report: its id (the report's "
                        "Anchors section), label or exact text (default: the most visited anchor with two "
                        "or more actions)")
    p.add_argument("--estimators", default=None,
                   help="comma-separated registered names (default: all for a group, crbc,gigpo for a run)")
    p.add_argument("--beta", type=float, default=0.98, help="discount beta (0.98)")
    p.add_argument("--sigma-min", type=float, default=0.1, help="sigma_min of the step normalisation (0.1)")
    p.add_argument("--depth", type=_depth, default=None, metavar="K|inf", help="crbc depth (inf: the closure)")
    p.add_argument("--top", type=int, default=5, help="groups written out in full in a run report (5)")
    p.add_argument("--no-truth", action="store_true", help="do not compute the exact truth of toy groups")
    p.add_argument("--by-run", action="store_true",
                   help="several runs: every run its own curve (default: the seeds of one experiment as a "
                        "mean with its band)")
    p.add_argument("--band", choices=("minmax", "std", "ci"), default="minmax",
                   help="several runs: the band over seeds (min-max, +-1 sd, the 95%% t interval of the mean)")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")


def _estimator_names(text: str | None) -> list[str] | None:
    """``--estimators a,b``: the names, each registered (UnknownEstimatorError, a ValueError, exit 2)."""
    from crbc.estimators import registry

    if not text:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        registry.get(n)
    return names


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from crbc.errors import UsageError

    try:  # the report's tables and curves; a trainer's environment may have pyarrow only
        import pandas  # noqa: F401
    except ImportError:
        raise UsageError('a report needs pandas, which the library alone does not install: '
                         'pip install "crbc[report]" (or pip install pandas)') from None
    from crbc.report import report

    names = _estimator_names(args.estimators)
    if not 0.0 < args.beta <= 1.0:
        raise UsageError(f"--beta must be in (0, 1], got {args.beta}")
    if args.top < 0:
        raise UsageError(f"--top must be >= 0, got {args.top}")
    if len(args.src) > 1:
        return _several(args)
    src = Path(args.src[0])
    if not src.exists():
        raise UsageError(f"{src}: no such file or folder")
    anchor = args.anchor.strip() if args.anchor and args.anchor.strip() else None
    if anchor:
        from crbc.io.anchor_keys import compile_regex

        compile_regex(anchor)  # RegexError (a ValueError) naming the pattern, before any work
    params = {"beta": args.beta, "sigma_min": args.sigma_min, "depth": args.depth}
    if src.is_dir() and args.group is None:
        if args.compare_at is not None:
            raise UsageError("--compare-at is for one group's report: name the group with --group")
        if not (src / "run.json").is_file():
            raise UsageError(f"{src}: a folder must be a crbc.run/1 run (no run.json in it)")
        from crbc.report import run_report

        text = run_report(src, estimators=tuple(names or ("crbc", "gigpo")), iteration=args.iteration,
                          params=params, top=args.top, anchor=anchor, anchor_similarity=args.anchor_similarity)
    else:
        text = report(src, group=args.group, iteration=args.iteration, estimators=names, params=params,
                      truth=not args.no_truth, anchor=anchor, anchor_similarity=args.anchor_similarity,
                      compare_at=args.compare_at)
    return _write(args, text)


def _write(args: argparse.Namespace, text: str) -> int:
    from crbc.io.rollouts import atomic_write_chunks

    data = text.encode("utf-8")
    atomic_write_chunks(args.output, [data])
    if not args.quiet:
        print(f"wrote {args.output} ({len(data) / 1e6:.2f} MB)", file=sys.stderr)
    return 0


def _several(args: argparse.Namespace) -> int:
    """``crbc report RUN RUN ... -o REPORT.html``: one file of several run folders."""
    from pathlib import Path

    from crbc.errors import UsageError

    for src in args.src:
        if not (Path(src) / "run.json").is_file():
            raise UsageError(f"{src}: with several SRC, each must be a crbc.run/1 folder (no run.json in it)")
    if args.group is not None or args.iteration is not None:
        raise UsageError("--group and --iteration are for one run; a report of several runs lists every "
                         "iteration's groups (click a point of a curve)")
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise UsageError('a report needs pandas: pip install "crbc[report]" (or pip install pandas)') from None
    from crbc.report.runs import runs_report

    return _write(args, runs_report(args.src, aggregate=not args.by_run, band=args.band))
