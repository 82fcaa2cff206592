"""Reading a run's ``crbc.audit/1`` table (``python -m crbc audit``; docs/FORMATS.md) for the studio.

The audit of a run folder sits beside it as ``RUN_DIR/audit.parquet`` (or ``audit.csv``,
``audit.jsonl``): one row per (iteration, estimator) with ``iteration, estimator, groups,
rollouts, steps, success_rate, shared_step_share, anchors_per_group, none_share, sure_share,
trainer_spearman, trainer_sign_agreement, seconds``. :func:`find_audit` finds it,
:func:`read_audit` reads and checks it: ``iteration`` whole numbers >= 0, ``estimator`` text,
every other known column numeric (NaN allowed: an iteration without a trainer advantage has no
Spearman), unknown columns kept. A bad file raises :class:`crbc.errors.FormatError` naming the
file, the row (1-based) and the column.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from crbc.errors import FormatError

AUDIT_SCHEMA = "crbc.audit/1"
AUDIT_FILES = ("audit.parquet", "audit.csv", "audit.jsonl")
NUMERIC = ("groups", "rollouts", "steps", "success_rate", "shared_step_share", "anchors_per_group",
           "none_share", "sure_share", "trainer_spearman", "trainer_sign_agreement", "seconds")


def find_audit(run_dir: str | os.PathLike) -> Path | None:
    """The first of :data:`AUDIT_FILES` that exists in ``run_dir``, else None."""
    for name in AUDIT_FILES:
        p = Path(run_dir) / name
        if p.is_file():
            return p
    return None


def read_audit(path: str | os.PathLike) -> pd.DataFrame:
    """The audit table of ``path`` sorted by (iteration, estimator) (module docstring)."""
    path = Path(path)
    src = str(path)
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif path.suffix == ".csv":
            frame = pd.read_csv(path)
        else:
            frame = pd.read_json(path, lines=True)
    except (OSError, ValueError, ImportError) as e:
        raise FormatError(f"cannot read the audit ({str(e).splitlines()[0] if str(e) else type(e).__name__})",
                          src) from None
    except Exception as e:  # pyarrow's own errors: a broken file is bad input, not a crash
        raise FormatError(f"not a readable audit table ({type(e).__name__})", src) from None
    for c in ("iteration", "estimator"):
        if c not in frame.columns:
            raise FormatError(f"column {c!r} missing (a {AUDIT_SCHEMA} table has one row per "
                              "iteration and estimator)", src, field=c)
    it = pd.to_numeric(frame["iteration"], errors="coerce")
    bad = ~(np.isfinite(it) & (it >= 0) & (it == np.floor(it)))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise FormatError(f"must be a whole number >= 0, got {frame['iteration'].iloc[row]!r}", src,
                          row + 1, "iteration")
    frame = frame.assign(iteration=it.astype(np.int64), estimator=frame["estimator"].astype(str))
    for c in NUMERIC:
        if c in frame.columns:
            x = pd.to_numeric(frame[c], errors="coerce")
            bad = x.isna() & frame[c].notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise FormatError(f"must be a number, got {frame[c].iloc[row]!r}", src, row + 1, c)
            frame[c] = x.astype(float)
    return frame.sort_values(["iteration", "estimator"], kind="stable").reset_index(drop=True)
