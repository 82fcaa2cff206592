"""The Step credits downloads: one long table (a row per (estimator, step), with the evidence,
the interval and the trainer's own advantage of every step) and ``crbc.credit/1`` JSON Lines.

Columns, in order: ``estimator, group, rollout, step, anchor, action, success, value, q, credit,
step_advantage, group_advantage, advantage, lo, hi, evidence, trainer_advantage``.

``step`` is numbered from 0 inside its rollout, as ``crbc.rollout/1`` files, verl's
``step_index`` and the run recorder number it (``Process.step_t - 1``). ``value``, ``q``,
``credit`` are NaN for an estimator without a value function. ``lo``, ``hi`` are the
:func:`crbc.credit_intervals` interval of the step's (anchor, action) credit and ``evidence`` its
class (``sure``: the interval excludes 0, ``unsure``, ``none``: 0 by construction), empty where
the estimator was given no intervals (no step signal, e.g. grpo). ``trainer_advantage`` is the
advantage the user's trainer gave the step (``Step.trainer_advantage``), NaN where none was
recorded; the same on every estimator's row of a step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crbc.estimators.registry import Credits
from crbc.io.creditfile import encoded_chunks

COLUMNS = ("estimator", "group", "rollout", "step", "anchor", "action", "success", "value", "q", "credit",
           "step_advantage", "group_advantage", "advantage", "lo", "hi", "evidence", "trainer_advantage")


def credit_table(all_credits: Mapping[str, Credits], intervals: Mapping[str, object] | None = None,
                 trainer_N: np.ndarray | None = None) -> pd.DataFrame:
    """The long table of the module docstring. ``all_credits``: estimator -> Credits, all on one
    process (N steps); ``intervals``: estimator -> :class:`crbc.estimators.bootstrap.CreditIntervals`
    (``lo_N``, ``hi_N``, ``evidence_N``) on the same process; ``trainer_N``: (N,) or None."""
    intervals = intervals or {}
    frames = []
    for name, c in all_credits.items():
        p = c.process
        n = p.n_steps
        nan = np.full(n, np.nan)
        ci = intervals.get(name)
        frames.append(pd.DataFrame({
            "estimator": name,
            "group": np.asarray(p.group_ids, dtype=object)[p.rollout_group[p.step_rollout]],
            "rollout": p.rollout_index[p.step_rollout],
            "step": p.step_t - 1,
            "anchor": np.asarray(p.state_anchor, dtype=object)[p.step_state],
            "action": np.asarray(p.action_names, dtype=object)[p.sa_action[p.step_sa]],
            "success": p.rollout_success[p.step_rollout].astype(bool),
            "value": nan if c.value_N is None else c.value_N,
            "q": nan if c.q_N is None else c.q_N,
            "credit": nan if c.credit_N is None else c.credit_N,
            "step_advantage": c.step_advantage_N,
            "group_advantage": c.group_advantage_R[p.step_rollout],
            "advantage": c.advantage_N,
            "lo": nan if ci is None else ci.lo_N,
            "hi": nan if ci is None else ci.hi_N,
            "evidence": np.full(n, "", dtype=object) if ci is None else np.asarray(ci.evidence_N, dtype=object),
            "trainer_advantage": nan if trainer_N is None else np.asarray(trainer_N, dtype=float),
        }, columns=list(COLUMNS)))
    return pd.concat(frames, ignore_index=True)


def credits_jsonl(c: Credits, intervals: Any = None) -> str:
    """``crbc.credit/1`` JSON Lines of one estimator (one line per rollout); with ``intervals``
    (its :class:`crbc.estimators.bootstrap.CreditIntervals` on the same process) each line also
    carries ``credit_interval`` and ``evidence`` per step (docs/FORMATS.md)."""
    if intervals is not None:
        return b"".join(encoded_chunks(c, intervals)).decode()
    return "".join(json.dumps(rec) + "\n" for rec in c.records())
