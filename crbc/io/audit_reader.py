"""The one reader of a run's ``crbc.audit/1`` table (``python -m crbc audit``; docs/FORMATS.md).

The audit of a run folder sits beside it as ``RUN_DIR/audit.parquet`` (or ``audit.csv``,
``audit.jsonl``), or, when the studio computed it for a folder it cannot write, in the cache
folder :func:`cache_folder` (``$CRBC_CACHE_DIR`` or ``~/.cache/crbc``, then ``audits/`` and a hash
of the folder's resolved path). One row per (iteration, estimator) with ``iteration, estimator,
groups, rollouts, steps, success_rate, shared_step_share, anchors_per_group, none_share,
sure_share, trainer_spearman, trainer_sign_agreement, seconds`` and, since release 0.3, the
optional ``anchor_key``: the regex the anchors were keyed with (the same on every row; empty or
absent: the exact text). :func:`find_audits` lists the files, :func:`read_audit` reads and checks
one: a ``.parquet`` whose metadata names another schema, or ``.jsonl`` lines whose ``schema`` is
not ``crbc.audit/1``, are refused; ``iteration`` whole numbers >= 0, ``estimator`` text, every
other known column numeric (NaN allowed: an iteration without a trainer advantage has no
Spearman), ``groups, rollouts, steps`` integers when whole, ``anchor_key`` one text for the file;
unknown columns kept. A bad file raises :class:`crbc.errors.FormatError` naming the file, the
row (1-based) and the column. :mod:`crbc.audit` writes these files.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from crbc.errors import FormatError, shown_value

__all__ = [
    "AUDIT_FILES", "audit_key", "AUDIT_SCHEMA", "cache_folder", "COUNTS", "DOCTOR_COLUMNS",
    "find_audit", "find_audits", "KEY_COLUMN", "keyed_cache", "NUMERIC", "read_audit", "run_fingerprint"
]

if TYPE_CHECKING:  # pandas is imported when a file is read: `import crbc` stays light
    import pandas as pd

AUDIT_SCHEMA = "crbc.audit/1"
AUDIT_FILES = ("audit.parquet", "audit.csv", "audit.jsonl")
#: the doctor's columns (crbc.doctor.CHECKS, in its order; crbc.doctor.registry): rows each check flags
DOCTOR_COLUMNS = tuple(f"doctor/{c}" for c in (
    "singleton_groups", "zero_step_advantage", "length_weighted_baseline", "step_rewards_sum",
    "advantage_off_mask", "advantage_shifted", "no_shared_anchors", "zero_variance_groups",
    "estimator_mismatch", "all_zero_advantage", "empty_response_in_group", "per_turn_baseline",
    "row_weighted_loss"))
NUMERIC = ("groups", "rollouts", "steps", "success_rate", "shared_step_share", "anchors_per_group",
           "none_share", "sure_share", "trainer_spearman", "trainer_sign_agreement", *DOCTOR_COLUMNS,
           "seconds")
COUNTS = ("groups", "rollouts", "steps", *DOCTOR_COLUMNS)
KEY_COLUMN = "anchor_key"


def cache_folder(run_dir: str | os.PathLike) -> Path:
    """Where the audit of a run folder goes when the folder is not writable:
    ``$CRBC_CACHE_DIR`` (default ``~/.cache/crbc``) ``/audits/<first 16 hex of sha256 of the
    folder's resolved path>``."""
    root = Path(os.environ.get("CRBC_CACHE_DIR") or Path.home() / ".cache" / "crbc")
    digest = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]
    return root / "audits" / digest


def run_fingerprint(run_dir: str | os.PathLike) -> str:
    """What a run's audit depends on, as a hex digest: the folder's resolved path and, of
    ``run.json`` and every ``rollouts/iter-NNNN.*``, the name, size and modification time (a run
    that grows, or is rewritten, gets a new fingerprint)."""
    from crbc.io.runs import ITER_RE, ROLLOUTS_DIR, RUN_FILE

    folder = Path(run_dir).resolve()
    h = hashlib.sha256(str(folder).encode())
    files = [folder / RUN_FILE]
    try:
        files += sorted(p for p in (folder / ROLLOUTS_DIR).iterdir() if ITER_RE.match(p.name))
    except OSError:
        pass
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"\0{p.name}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


def keyed_cache(run_dir: str | os.PathLike, key: str) -> Path:
    """Where the studio keeps the audit of a run under the anchor key ``key`` (``""``: the exact
    text): ``$CRBC_CACHE_DIR`` (default ``~/.cache/crbc``) ``/audits/keyed/<24 hex of sha256 of
    the run's fingerprint and the key>/audit.parquet``. Never the run's own folder: a shared run's
    ``audit.parquet`` is not one session's to replace, and audits under different keys never
    share a file (nor a ``.partial`` sidecar)."""
    root = Path(os.environ.get("CRBC_CACHE_DIR") or Path.home() / ".cache" / "crbc")
    digest = hashlib.sha256(f"{run_fingerprint(run_dir)}\0{key}".encode()).hexdigest()[:24]
    return root / "audits" / "keyed" / digest / AUDIT_FILES[0]


def find_audits(run_dir: str | os.PathLike) -> list[Path]:
    """Every audit file of ``run_dir`` that exists: :data:`AUDIT_FILES` beside it, then in its
    :func:`cache_folder`."""
    return [p for folder in (Path(run_dir), cache_folder(run_dir)) for name in AUDIT_FILES
            if (p := folder / name).is_file()]


def find_audit(run_dir: str | os.PathLike) -> Path | None:
    """The first of :func:`find_audits`, else None."""
    found = find_audits(run_dir)
    return found[0] if found else None


def audit_key(frame: pd.DataFrame) -> str:
    """The anchor key a read audit was computed with ("" for the exact text)."""
    if KEY_COLUMN not in frame.columns or frame.empty:
        return ""
    return str(frame[KEY_COLUMN].iloc[0])


def _frame(path: Path) -> pd.DataFrame:
    import pandas as pd

    src = str(path)
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            schema = (table.schema.metadata or {}).get(b"schema")
            if schema is not None and schema != AUDIT_SCHEMA.encode():
                raise FormatError(f"not a {AUDIT_SCHEMA} file (its metadata names "
                                  f"{schema.decode(errors='replace')!r})", src, field="schema")
            return table.to_pandas()
        if path.suffix == ".csv":
            return pd.read_csv(path, keep_default_na=True, dtype={KEY_COLUMN: str})
        if path.suffix == ".jsonl":
            return pd.read_json(path, lines=True, dtype=False)
    except FormatError:
        raise
    except (OSError, ValueError, ImportError) as e:
        raise FormatError(f"cannot read the audit ({str(e).splitlines()[0] if str(e) else type(e).__name__})",
                          src) from None
    except Exception as e:  # pyarrow's own errors: a broken file is bad input, not a crash
        raise FormatError(f"not a readable audit table ({type(e).__name__})", src) from None
    raise FormatError(f"an audit file ends in {', '.join(AUDIT_FILES)}", src)


def _first_bad(bad) -> int:
    return int(np.flatnonzero(bad.to_numpy())[0])


def read_audit(path: str | os.PathLike) -> pd.DataFrame:  # noqa: C901
    """The audit table of ``path`` sorted by (iteration, estimator) (module docstring)."""
    import pandas as pd

    path = Path(path)
    src = str(path)
    frame = _frame(path)
    if "schema" in frame.columns:
        bad = frame["schema"] != AUDIT_SCHEMA
        if bad.any():
            row = _first_bad(bad)
            raise FormatError(f"must be {AUDIT_SCHEMA!r}, got {shown_value(frame['schema'].iloc[row])}", src, row + 1, "schema")
        frame = frame.drop(columns="schema")
    for c in ("iteration", "estimator"):
        if c not in frame.columns:
            raise FormatError(f"column {c!r} missing (a {AUDIT_SCHEMA} table has one row per "
                              "iteration and estimator)", src, field=c)
    it = pd.to_numeric(frame["iteration"], errors="coerce")
    bad = ~(np.isfinite(it) & (it >= 0) & (it == np.floor(it)))
    if bad.any():
        row = _first_bad(bad)
        raise FormatError(f"must be a whole number >= 0, got {shown_value(frame['iteration'].iloc[row])}", src,
                          row + 1, "iteration")
    frame = frame.assign(iteration=it.astype(np.int64), estimator=frame["estimator"].astype(str))
    for c in NUMERIC:
        if c in frame.columns:
            x = pd.to_numeric(frame[c], errors="coerce")
            bad = x.isna() & frame[c].notna()
            if bad.any():
                row = _first_bad(bad)
                raise FormatError(f"must be a number, got {shown_value(frame[c].iloc[row])}", src, row + 1, c)
            whole = c in COUNTS and x.notna().all() and bool((x == np.floor(x)).all())
            frame[c] = x.astype(np.int64) if whole else x.astype(float)
    if KEY_COLUMN in frame.columns:
        keys = frame[KEY_COLUMN].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else v)
        bad = ~keys.map(lambda v: isinstance(v, str)) | (keys != keys.iloc[0] if len(keys) else keys.astype(bool))
        if bad.any():
            row = _first_bad(bad)
            raise FormatError(f"must be one text for the whole file (the anchor key the audit was "
                              f"computed with), got {shown_value(frame[KEY_COLUMN].iloc[row])}", src, row + 1, KEY_COLUMN)
        frame[KEY_COLUMN] = keys.astype(object)
    return frame.sort_values(["iteration", "estimator"], kind="stable").reset_index(drop=True)
