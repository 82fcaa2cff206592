"""The report of docs/prereg-rewardflow.md: the RewardFlow arm against the shipped arms, by seed.

    python -m devtools.prereg_rewardflow sample_rollouts/runs/sokoban-6x6-prereg-rewardflow \
        --base sample_rollouts/runs/sokoban-6x6-prereg [--expect-seeds 8]

Writes ``prereg.json`` and ``prereg.md`` into the RewardFlow folder. The plan's comparisons
(crbc - rewardflow, rewardflow - gigpo) are tested on integer held-out success counts (exact
sign flips over the seeds both arms finished, Holm over these two); rewardflow - grpo and
rewardflow - visit_local are secondary. With fewer than ``--expect-seeds`` finished RewardFlow runs
the report lists them and computes nothing (the plan: no claim from a partial set).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from crbc.train import prereg
from devtools.prereg_report import _at, _runs  # noqa: PLC2701 (a sibling script)

PRIMARY = [("crbc", "rewardflow"), ("rewardflow", "gigpo")]
SECONDARY = [("rewardflow", "grpo"), ("rewardflow", "visit_local")]


def report(folder: Path, base: Path, expect_seeds: int = 8) -> dict[str, Any]:
    rf = _runs(folder)
    seeds = sorted(r.seed for r in rf)
    out: dict[str, Any] = {"folder": str(folder), "base": str(base), "finished_seeds": seeds,
                           "expected_seeds": expect_seeds, "complete": len(seeds) >= expect_seeds}
    if not out["complete"]:
        return out
    runs = rf + _runs(base)
    out["temperature_1"] = prereg.preregistered(runs, PRIMARY, SECONDARY)
    tables = {}
    for t in (0.4,):
        metrics = {}
        for name, path in (("rewardflow", folder), ("base", base)):
            metrics[name] = _at(t, path)

        def metric(run, t=t, m=metrics):
            return (m["rewardflow"] if run.estimator == "rewardflow" else m["base"])[0](run)

        def count(run, t=t, m=metrics):
            return (m["rewardflow"] if run.estimator == "rewardflow" else m["base"])[1](run)
        tables[f"temperature_{t:g}"] = prereg.preregistered(runs, PRIMARY, SECONDARY, metric=metric, count=count)
    out.update(tables)
    return out


def markdown(rep: dict[str, Any]) -> str:
    lines = ["# Pre-registered RewardFlow arm (docs/prereg-rewardflow.md)", ""]
    if not rep["complete"]:
        lines += [f"**Incomplete: {len(rep['finished_seeds'])} of {rep['expected_seeds']} RewardFlow runs "
                  f"finished (seeds {', '.join(map(str, rep['finished_seeds'])) or 'none'}).** The plan "
                  "computes the test once, after all of them have finished, so no comparison is computed "
                  "here. `crbc experiment` with the plan's flags resumes the others.", ""]
        return "\n".join(lines)
    lines += [f"Finished RewardFlow seeds: {', '.join(map(str, rep['finished_seeds']))}; the other arms "
              f"are the shipped runs of `{rep['base']}`.", "",
              "## Primary metric: held-out success after the last iteration (T = 1)", "",
              prereg.markdown(rep["temperature_1"]), ""]
    if "temperature_0.4" in rep:
        lines += ["## Secondary: the same final policies evaluated at temperature 0.4", "",
                  prereg.markdown(rep["temperature_0.4"]), ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--expect-seeds", type=int, default=8)
    a = ap.parse_args()
    rep = report(a.folder, a.base, a.expect_seeds)
    (a.folder / "prereg.json").write_text(json.dumps(rep, indent=2, default=float) + "\n", encoding="utf-8")
    text = markdown(rep)
    (a.folder / "prereg.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
