"""Small synthetic training runs for the Training runs page and the reports."""

from __future__ import annotations

from pathlib import Path

import crbc.io.run_writer as RW
from crbc.io.records import Rollout, RolloutGroup, Step
from crbc.io.rollouts import read_rollouts
from crbc.io.runs import read_run
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
RARE = ROOT / "sample_rollouts" / "rare-route.jsonl"


def write_runs(root: Path) -> None:
    """Three crbc.run/1 runs under ``root`` (grpo seed 0, crbc seeds 0 and 1), three iterations
    each on the worked-example and rare-route groups, with success curves and diagnostics."""
    groups = read_rollouts(WORKED) + read_rollouts(RARE)
    for est, seed, curve in (("grpo", 0, (0.2, 0.3, 0.3)), ("crbc", 0, (0.2, 0.5, 0.7)),
                             ("crbc", 1, (0.1, 0.4, 0.6))):
        w = RW.RunWriter.create(root / f"{est}-s{seed}", {"name": f"{est}-s{seed}",
                                                         "config": {"estimator": est, "seed": seed}})
        for it, s in enumerate(curve):
            w.write_rollouts(it, groups)
            w.append_metrics({"iteration": it, "success_rate": s, "loss": 0.1, "kl": 0.01,
                              "diag.step_credit_share": 0.4, "diag.multi_action_anchors": 3,
                              "diag.mean_abs_step_adv": 0.5, "diag.rank_crbc_gigpo": 0.3,
                              "diag.rank_crbc_visit_local": 0.9, "diag.rare_route_disagreements": 1})


#: the first anchor key of :func:`keyed_run`
FIRST_KEY = r"Current Board: (\S+)$"


def keyed_run(path):
    """A run recorded with the anchor key FIRST_KEY, whose steps kept their transcripts (obs)."""
    def step(t, board):
        return Step(anchor=board, action="up", obs=f"turn {t} of a long history\nCurrent Board: {board}")

    group = RolloutGroup("g", (Rollout("g", 0, (step(0, "B1"), step(1, "B2")), True),
                               Rollout("g", 1, (step(0, "B1"), step(1, "C2")), False)))
    w = RW.RunWriter.create(path, {"name": "p/e", "config": {"estimator": "trainer", "anchor_key": FIRST_KEY}})
    w.write_rollouts(0, [group])
    w.append_metrics({"iteration": 0})
    return read_run(path)


#: the rows :func:`write_doctor_runs` has the recorder's doctor flag: (run, check) -> per iteration
DOCTOR_FLAGS = {("rec-s0", "singleton_groups"): (0, 4, 2), ("rec-s1", "singleton_groups"): (1, 3, 0),
                ("rec-s1", "no_shared_anchors"): (0, 0, 5)}


def write_doctor_runs(root: Path) -> None:
    """Under ``root``: two grpo runs whose metrics carry the recorder's doctor counts
    (``crbc/doctor/<check>`` for every check, 0 unless :data:`DOCTOR_FLAGS` says otherwise) and one
    (``plain-s0``) that never recorded them; three iterations each, with their rollouts."""
    from crbc.doctor.findings import CHECKS

    groups = read_rollouts(WORKED)
    for name in ("rec-s0", "rec-s1", "plain-s0"):
        w = RW.RunWriter.create(root / name, {"name": name, "config": {"estimator": "grpo",
                                                                       "seed": int(name[-1])}})
        for it in range(3):
            w.write_rollouts(it, groups)
            doctor = {} if name == "plain-s0" else {
                f"crbc/doctor/{c}": float(DOCTOR_FLAGS.get((name, c), (0, 0, 0))[it]) for c in CHECKS}
            w.append_metrics({"iteration": it, "success_rate": 0.2 + 0.1 * it, **doctor})
