"""The size flags of the benchmarks that time one batch or run of G groups x n rollouts x T steps
(bench_audit, bench_doctor, bench_recorder, bench_verl): ``--groups G --group-size n --steps T``."""

from __future__ import annotations

import argparse


def batch_parser(doc: str, groups: int = 16) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with ``--groups`` (default ``groups``),
    ``--group-size`` (8) and ``--steps`` (50); a benchmark adds its own flags after them."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--groups", type=int, default=groups)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    return ap
