"""What one graph drawing of a big group costs (the Bellman backups' and Inspector's SVG, the
Anchor graph's vis-network page): per worst shape (:mod:`benchmarks.bench_worst_shapes`), the
group's anchors, how many are drawn, the seconds to build the drawing (its layout included, once
per process as in the studio: the first call) and its size in bytes; cut at
``crbc.viz.core.graph_layout.MAX_DRAWN`` anchors as shipped, and whole (``--whole``: the cap
lifted, what every drawing was before it) for comparison. Prints JSON.

    python -m benchmarks.bench_graph_drawing [--shapes random:20000,ring:3000,hub:100000] [--whole]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_worst_shapes import write_case
from crbc.io.rollouts import read_rollouts
from crbc.process import merge
from crbc.viz.anchor_graph import anchor_graph_html
from crbc.viz.core import graph_layout as GL
from crbc.viz.graph import graph_svg


def _group(path: Path):
    got = read_rollouts(path)
    first = got[0] if isinstance(got, list) else got
    return getattr(first, "groups", [first])[0]


def measure(shape: str, size: int, whole: bool) -> dict:
    """One shape: build both drawings once on a fresh process (layout not memoised yet)."""
    with tempfile.TemporaryDirectory(prefix="crbc-graph-bench-") as tmp:
        p = merge([_group(write_case(Path(tmp), shape, size, 0))])
    values = np.random.default_rng(0).random(p.n_states)
    out: dict = {"shape": shape, "size": size, "anchors": int(p.n_states),
                 "drawn": int(p.n_states if whole else min(p.n_states, GL.MAX_DRAWN))}
    for name, draw in (("svg", lambda: graph_svg(p, values, highlight_rollout=0, delta_S=values * 0.01,
                                                 shown_width_px=680)),
                       ("vis_network", lambda: anchor_graph_html(p, values, highlight_rollout=0,
                                                                 assets_url="/app/static"))):
        t = time.perf_counter()
        text = draw()
        out[name] = {"seconds": round(time.perf_counter() - t, 3), "bytes": len(text.encode())}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="random:20000,ring:3000,hub:100000",
                    help="comma-separated shape:size of benchmarks.bench_worst_shapes")
    ap.add_argument("--whole", action="store_true", help="lift the cap: draw every anchor")
    a = ap.parse_args(argv)
    if a.whole:
        GL.MAX_DRAWN = 10**9
    rows = [measure(s.split(":")[0], int(s.split(":")[1]), a.whole) for s in a.shapes.split(",") if s]
    print(json.dumps({"cap": GL.MAX_DRAWN, "load_before": [round(x, 2) for x in os.getloadavg()], "rows": rows},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
