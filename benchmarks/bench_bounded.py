"""A large upload's computations in the studio (issue 57.1): seconds until each ends, with its
result or its notice, for the worst shapes as uploads (private contexts, so
:mod:`ui.core.bounded` runs them in a worker). Each (shape, computation) runs in a session of
its own (Streamlit's AppTest, in this process), so a notice that stops one page does not stop
the next. Prints JSON.

    python -m benchmarks.bench_bounded [--cases random:20000,ring:3000,hub:100000] [--what credits,intervals,sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from benchmarks.bench_worst_shapes import rollout_lines
from crbc.io.rollouts import parse_rollouts


def _session(groups, what: str, out: list) -> None:
    import time

    from ui.core import context

    src = context.Source(f"upload:bench-{what}-{id(groups)}", "bench", tuple(groups))
    ctx = context.PageContext(src, 0, 0, "crbc", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
    t = time.perf_counter()
    out.append(("steps", ctx.process.n_steps))
    try:
        {"credits": lambda: ctx.credits("crbc"), "intervals": lambda: ctx.intervals("crbc"),
         "sweep": lambda: ctx.sweep(0.98, 12), "disagreement": lambda: ctx.disagreement(
             "crbc vs gigpo", {"beta": 0.98, "depth": None, "sigma_min": 0.1})}[what]()
    finally:
        out.append(("s", time.perf_counter() - t))


def measure(cases: list[tuple[str, int]], whats: list[str]) -> dict:
    from streamlit.testing.v1 import AppTest

    out: dict = {"load_before": [round(x, 2) for x in os.getloadavg()], "runs": []}
    for case, size in cases:
        groups = parse_rollouts("\n".join(rollout_lines(case, size)) + "\n")
        for what in whats:
            log: list = []
            t = time.perf_counter()
            at = AppTest.from_function(_session, args=(groups, what, log), default_timeout=600).run()
            got = dict(log)
            notes = [w.value for w in at.warning]
            out["runs"].append({"case": case, "size": size, "steps": got.get("steps"), "what": what,
                                "s": round(got.get("s", time.perf_counter() - t), 2),
                                "ended": "notice" if notes else ("error" if at.exception else "result"),
                                "notice": notes[0][:300] if notes else None})
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="random:20000,ring:3000,hub:100000")
    ap.add_argument("--what", default="credits,intervals,sweep,disagreement")
    a = ap.parse_args(argv)
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in a.cases.split(",")]
    print(json.dumps(measure(cases, a.what.split(",")), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
