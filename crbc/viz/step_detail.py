"""One step under every estimator: the table the Step credits page shows under its heatmaps when
a cell is clicked (the step's credit per estimator, its evidence, and the truth where known)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crbc.estimators.registry import Credits

__all__ = ["EVIDENCE_WORDS", "parse_cell", "step_rows"]

EVIDENCE_WORDS = {"sure": "sure", "unsure": "not sure", "none": "0 by construction"}


def _signed(v: float | None) -> str:
    return "—" if v is None or not np.isfinite(v) else f"{v:+.3f}"


def step_rows(credits: Mapping[str, Credits], n: int, evidence: Mapping[str, np.ndarray] | None = None,
              truth_N: np.ndarray | None = None, trainer_N: np.ndarray | None = None) -> list[dict[str, str]]:
    """One row per estimator for step ``n`` (an index into the process's steps, 0 <= n <
    ``n_steps``): its A_S, A_final and Q − V (— where the estimator has no value function) and,
    when ``evidence`` has the estimator, the step's evidence ("sure": the step's interval at
    the default level excludes 0). With ``truth_N`` (the exact A_t per step) a last row "truth"
    carries A_t in the Q − V column, the scale it shares. With ``trainer_N`` (the advantage the
    user's trainer gave each step, NaN where none), a row "trainer" carries it in the A_final
    column: it is the advantage the policy was trained with, comparable with the estimators' A_final."""
    evidence = evidence or {}
    rows = []
    for name, c in credits.items():
        ev = evidence.get(name)
        rows.append({
            "estimator": name,
            "A_S": _signed(float(c.step_advantage_N[n])),
            "A_final": _signed(float(c.advantage_N[n])),
            "Q − V": _signed(None if c.credit_N is None else float(c.credit_N[n])),
            "evidence": "—" if ev is None else EVIDENCE_WORDS.get(str(ev[n]), str(ev[n])),
        })
    if trainer_N is not None and np.isfinite(trainer_N[n]):
        rows.append({"estimator": "trainer (its advantage)", "A_S": "—", "A_final": _signed(float(trainer_N[n])),
                     "Q − V": "—", "evidence": "recorded"})
    if truth_N is not None:
        rows.append({"estimator": "truth (exact A_t)", "A_S": "—", "A_final": "—",
                     "Q − V": _signed(float(truth_N[n])), "evidence": "exact"})
    return rows


def parse_cell(picked: str, rollout_len: np.ndarray) -> tuple[int, int] | None:
    """A heatmap cell's ``data-pick`` value "i:t" (rollout position i, 1-based step t; see
    :mod:`crbc.viz.heatmap`) as ``(i, t)``, or None when it is not two integers naming a step
    of one of the rollouts (``rollout_len[i]`` steps each)."""
    try:
        i, t = (int(x) for x in str(picked).split(":"))
    except ValueError:
        return None
    return (i, t) if 0 <= i < len(rollout_len) and 1 <= t <= int(rollout_len[i]) else None
