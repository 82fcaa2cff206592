"""The pre-registered report of docs/prereg-sokoban-n64-fresh.md, from shipped run folders.

    python -m experiments.prereg_report sample_rollouts/runs/sokoban-6x6-prereg \
        [--token-mean sample_rollouts/runs/sokoban-6x6-prereg-token-mean] [--expect-seeds 8]

Writes ``prereg.json`` and ``prereg.md`` into the experiment folder: the primary test (crbc -
gigpo, crbc - grpo; exact sign flips over seeds, Holm at 0.05), the secondary comparisons, the
same at evaluation temperature 0.4 (``eval-t0.4.json`` of each run), and the loss-aggregation
factor. With fewer finished seeds than ``--expect-seeds`` per arm the report says so on top and
draws no conclusion (the plan: no claim from a partial set).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from crbc.io.runs import find_runs, read_run
from crbc.run_analysis.training_stats import by_estimator
from crbc.train import prereg

PRIMARY = [("crbc", "gigpo"), ("crbc", "grpo")]
SECONDARY = [("visit_local", "grpo"), ("crbc", "visit_local"), ("gigpo", "grpo")]
FACTOR = [("crbc", "gigpo"), ("crbc", "grpo"), ("gigpo", "grpo")]


def _runs(folder: Path) -> list:
    return [r for r in (read_run(p) for p in find_runs(folder)) if "final_eval" in r.meta]


def _record(run, temperature: float, folder: Path) -> dict | None:
    """The run's extra evaluation at ``temperature`` (``eval-t<T>.json``), or None."""
    path = folder / run.name / f"eval-t{temperature:g}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _at(temperature: float, folder: Path):
    """(metric, count) reading the run's extra evaluation at ``temperature`` (None where absent):
    the rounded success rate, and the exact (successes, episodes) the test uses."""
    def metric(run) -> float | None:
        rec = _record(run, temperature, folder)
        return None if rec is None else rec["eval_success_rate"]

    def count(run) -> tuple[int, int] | None:
        rec = _record(run, temperature, folder)
        return None if rec is None else prereg.final_count(run, rec)
    return metric, count


def temperature_tables(runs: list, folder: Path, temperatures=(0.4,)) -> dict[str, Any]:
    """The plan's test at T = 1 (run.json ``final_eval``) and at each extra temperature, keyed
    ``temperature_<T>``; every p from integer success counts when the runs carry them."""
    out = {"temperature_1": prereg.preregistered(runs, PRIMARY, SECONDARY)}
    for t in temperatures:
        metric, count = _at(t, folder)
        out[f"temperature_{t:g}"] = prereg.preregistered(runs, PRIMARY, SECONDARY, metric=metric, count=count)
    return out


def token_mean_table(runs: list, token_mean: Path) -> dict[str, Any]:
    """The loss-aggregation factor (descriptive): token-mean runs' comparisons and means."""
    tm = _runs(token_mean)
    return {
        "finished_seeds": {e: sorted(r.seed for r in rs) for e, rs in by_estimator(tm).items()},
        "comparisons": prereg.preregistered(tm, [], FACTOR)["secondary"],
        "mean_final": {e: sum(prereg.final_metric(r) for r in rs) / len(rs) for e, rs in by_estimator(tm).items()},
        "episode_mean_final_same_seeds": {
            e: _mean_on(runs, e, {r.seed for r in by_estimator(tm).get(e, [])}) for e in by_estimator(tm)},
    }


def report(folder: Path, token_mean: Path | None = None, expect_seeds: int = 8) -> dict[str, Any]:
    runs = _runs(folder)
    seeds = {est: sorted(r.seed for r in rs) for est, rs in by_estimator(runs).items()}
    complete = bool(seeds) and all(len(s) >= expect_seeds for s in seeds.values()) and len(seeds) >= 4
    out: dict[str, Any] = {"folder": str(folder), "finished_seeds": seeds, "complete": complete,
                           "expected_seeds_per_arm": expect_seeds,
                           "primary_metric": "final_eval.eval_success_rate (64 levels x 4, T = 1); "
                                             "tested on the integer success counts 4 * sum(eval_level_success)",
                           **temperature_tables(runs, folder)}
    if token_mean is not None and token_mean.is_dir():
        out["token_mean"] = token_mean_table(runs, token_mean)
    return out


def _mean_on(runs, est: str, seeds: set) -> float | None:
    vals = [prereg.final_metric(r) for r in runs if r.estimator == est and r.seed in seeds]
    return sum(vals) / len(vals) if vals else None


def markdown(rep: dict[str, Any]) -> str:
    lines = ["# Pre-registered comparison (docs/prereg-sokoban-n64-fresh.md)", ""]
    seeds = ", ".join(f"{e} {len(s)}" for e, s in rep["finished_seeds"].items())
    if not rep["complete"]:
        lines += [f"**Incomplete: finished seeds per arm: {seeds} (the plan has "
                  f"{rep['expected_seeds_per_arm']}).** The plan computes the test once, after every run "
                  "of factor 1 has finished, and draws no conclusion from a partial set; so no "
                  "comparison is computed here. The finished runs are in this folder; `crbc "
                  "experiment` with the plan's flags resumes the others.", ""]
        for est, s in rep["finished_seeds"].items():
            lines.append(f"- {est}: seeds {', '.join(map(str, s))}")
        return "\n".join(lines) + "\n"
    else:
        lines += [f"Finished seeds per arm: {seeds}.", ""]
    lines += ["## Primary metric: held-out success after the last iteration (T = 1)", "",
              prereg.markdown(rep["temperature_1"]), "",
              "## Secondary: the same final policies evaluated at temperature 0.4", "",
              prereg.markdown(rep["temperature_0.4"]), ""]
    if "token_mean" in rep:
        tm = rep["token_mean"]
        done = ", ".join(f"{e} {len(v)}" for e, v in tm["finished_seeds"].items())
        lines += ["## Loss aggregation: token-mean over step rows (descriptive; planned: 5 seeds per arm)", "",
                  f"Finished seeds per arm: {done}." + ("" if all(len(v) >= 5 for v in tm["finished_seeds"].values())
                                                        else " **Incomplete: no conclusion is drawn from it.**"), "",
                  "| arm | mean final success, token-mean | same seeds, episode weighting |", "|---|---|---|"]
        for e, m in tm["mean_final"].items():
            ep = tm["episode_mean_final_same_seeds"].get(e)
            lines.append(f"| {e} | {100 * m:.1f}% | {'' if ep is None else f'{100 * ep:.1f}%'} |")
        lines += ["", prereg.markdown({"primary": [], "secondary": tm["comparisons"]}), ""]
    return "\n".join(lines) + "\n"


def write(folder: Path, rep: dict[str, Any], text: str) -> None:
    """``prereg.json`` (the report) and ``prereg.md`` (``text``) into ``folder``; ``text`` printed."""
    (folder / "prereg.json").write_text(json.dumps(rep, indent=2, default=float) + "\n", encoding="utf-8")
    (folder / "prereg.md").write_text(text, encoding="utf-8")
    print(text)


def parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a pre-registered report (described by ``doc``'s first line): the
    experiment folder and ``--expect-seeds`` (8); a report adds its own flags."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--expect-seeds", type=int, default=8)
    return ap


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--token-mean", type=Path, default=None)
    a = ap.parse_args()
    rep = report(a.folder, a.token_mean, a.expect_seeds)
    if not rep["complete"]:  # the plan: no comparison from a partial set, not even in the file
        rep = {k: v for k, v in rep.items() if k in ("folder", "finished_seeds", "complete",
                                                      "expected_seeds_per_arm", "primary_metric")}
    write(a.folder, rep, markdown(rep))


if __name__ == "__main__":
    main()
