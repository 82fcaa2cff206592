"""Small synthetic training runs for the Training runs page and the reports."""

from __future__ import annotations

from pathlib import Path

import crbc.io.run_writer as RW
from crbc.io.rollouts import read_rollouts
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
