"""The report of docs/prereg-rewardflow.md: the RewardFlow arm against the shipped arms, by seed.

    python -m experiments.prereg_rewardflow sample_rollouts/runs/sokoban-6x6-prereg-rewardflow \
        --base sample_rollouts/runs/sokoban-6x6-prereg [--expect-seeds 8]

Writes ``prereg.json`` and ``prereg.md`` into the RewardFlow folder. The plan's comparisons
(crbc - rewardflow, rewardflow - gigpo) are tested on integer held-out success counts (exact
sign flips over the seeds both arms finished, Holm over these two); rewardflow - grpo and
rewardflow - visit_local are secondary. With fewer than ``--expect-seeds`` finished RewardFlow runs
the report lists them and computes nothing (the plan: no claim from a partial set).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crbc.train import prereg
from experiments.prereg_report import _at, _runs, parser, write

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
    # the extra evaluation file lives beside each run: the RewardFlow folder's or the base's
    rf_at, base_at = _at(0.4, folder), _at(0.4, base)
    at = {True: rf_at, False: base_at}
    out["temperature_0.4"] = prereg.preregistered(
        runs, PRIMARY, SECONDARY, metric=lambda r: at[r.estimator == "rewardflow"][0](r),
        count=lambda r: at[r.estimator == "rewardflow"][1](r))
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
    ap = parser(__doc__)
    ap.add_argument("--base", type=Path, required=True)
    a = ap.parse_args()
    rep = report(a.folder, a.base, a.expect_seeds)
    write(a.folder, rep, markdown(rep))


if __name__ == "__main__":
    main()
