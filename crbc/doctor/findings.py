"""What the doctor says: :class:`Finding`, one ``crbc.doctor/1`` JSON line each (docs/FORMATS.md).

A finding names one check that fired on one iteration (or on a batch without one):

    format     "crbc.doctor/1"
    check      the check's name (:data:`CHECKS`: :mod:`crbc.doctor.registry`)
    severity   "error" | "warning" | "info" (fixed per check)
    iteration  int, or null
    rows       how many input rows it concerns (int >= 0)
    share      rows / the rows the check looked at, in [0, 1]
    examples   up to :data:`MAX_EXAMPLES` objects ``{"row", "group", "rollout", "step"}`` (rows
               ascending): the row number of the input (:class:`Example`) and where it sits,
               group id, rollout index in the group and step t from 0 (null where unknown: a
               trainer's token tensors without step rows, a count the recorder logged)
    message    one sentence: what is wrong, what it does to training, how to fix it

Rows are numbered the same way everywhere: a trainer's batch by its ``DataProto`` row; a file, a
run iteration or a recorder's ``iter-NNNN.parquet`` from 0 within each iteration, in reading order
(groups in order of first appearance, their rollouts, their steps), which is the order
:func:`crbc.doctor.batch.from_groups` lays out and the report and the studio read.

Exit status of ``python -m crbc doctor`` (:func:`exit_status`): 1 when some finding is a warning
or an error, else 0 (bad input is 2, decided by the command line).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from crbc.doctor.registry import CHECKS, SEVERITIES

__all__ = [
    "CHECKS", "Example", "exit_status", "FIELDS", "Finding", "finding", "from_dict", "MAX_EXAMPLES", "SCHEMA",
    "SEVERITIES", "table"
]

SCHEMA = "crbc.doctor/1"
MAX_EXAMPLES = 5
FIELDS = ("format", "check", "severity", "iteration", "rows", "share", "examples", "message")


@dataclass(frozen=True)
class Example:
    """One example row of a finding: ``row`` the input row (module docstring), ``group`` the group
    id, ``rollout`` the rollout's index in its group, ``step`` the step t from 0; None where the
    source does not say."""

    row: int
    group: str | None = None
    rollout: int | None = None
    step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "group": self.group, "rollout": self.rollout, "step": self.step}

    def __str__(self) -> str:
        if self.group is None:
            return f"row {self.row}"
        return f"row {self.row} (group {self.group}, rollout {self.rollout}, step {self.step})"


def _example(x: Any) -> Example:
    """An :class:`Example` from itself, a row number, or a record ``{"row", "group", "rollout", "step"}``."""
    if isinstance(x, Example):
        return x
    if isinstance(x, dict):
        if "row" not in x:
            raise ValueError(f"{SCHEMA} example without 'row': {x!r}")
        opt = lambda k, f: None if x.get(k) is None else f(x[k])  # noqa: E731
        return Example(int(x["row"]), opt("group", str), opt("rollout", int), opt("step", int))
    return Example(int(x))


@dataclass(frozen=True)
class Finding:
    """One check that fired (module docstring). ``examples``: :class:`Example` rows (row numbers
    and records are accepted and turned into them)."""

    check: str
    iteration: int | None
    rows: int
    share: float
    examples: tuple[int, ...]
    message: str
    severity: str = field(default="")

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"unknown doctor check {self.check!r} (checks: {', '.join(CHECKS)})")
        if not self.severity:
            object.__setattr__(self, "severity", CHECKS[self.check])
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")
        share = float(self.share)
        object.__setattr__(self, "share", 0.0 if not math.isfinite(share) else min(max(share, 0.0), 1.0))
        object.__setattr__(self, "rows", int(self.rows))
        object.__setattr__(self, "examples", tuple(_example(x) for x in self.examples)[:MAX_EXAMPLES])

    @property
    def example_rows(self) -> tuple[int, ...]:
        """The example rows' numbers."""
        return tuple(e.row for e in self.examples)

    def located(self, locate: Callable[[int], tuple[str, int, int] | None]) -> Finding:
        """This finding with each example row placed by ``locate(row) -> (group, rollout, step)``
        (:meth:`crbc.doctor.batch.Batch.locate`); rows it cannot place stay as they are."""
        out = []
        for e in self.examples:
            where = locate(e.row) if e.group is None else None
            out.append(e if where is None else Example(e.row, str(where[0]), int(where[1]), int(where[2])))
        return replace(self, examples=tuple(out))

    @property
    def serious(self) -> bool:
        """A warning or an error (what makes the command exit 1)."""
        return self.severity in ("error", "warning")

    def to_dict(self) -> dict[str, Any]:
        """The ``crbc.doctor/1`` record: exactly :data:`FIELDS`, in that order."""
        return {"format": SCHEMA, "check": self.check, "severity": self.severity,
                "iteration": None if self.iteration is None else int(self.iteration),
                "rows": self.rows, "share": round(self.share, 6), "examples": [e.to_dict() for e in self.examples],
                "message": self.message}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)


def finding(check: str, iteration: int | None, flagged_rows: np.ndarray | Sequence[int], total: int,
            message: str) -> Finding:
    """A :class:`Finding` from the row numbers a check flags: ``rows`` = how many distinct ones,
    ``share`` = rows / ``total``, ``examples`` = the smallest :data:`MAX_EXAMPLES`."""
    r = np.unique(np.asarray(flagged_rows, dtype=np.int64))
    return Finding(check, iteration, len(r), len(r) / total if total else 0.0,
                   tuple(r[:MAX_EXAMPLES].tolist()), message)


def from_dict(obj: Any) -> Finding:
    """A :class:`Finding` from its ``crbc.doctor/1`` record (ValueError naming the field); an
    example may be a bare row number (records written before examples said where the row sits)."""
    if not isinstance(obj, dict) or obj.get("format") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} record")
    for k in FIELDS:
        if k not in obj:
            raise ValueError(f"{SCHEMA} record without {k!r}")
    return Finding(obj["check"], obj["iteration"], obj["rows"], obj["share"], tuple(obj["examples"]),
                   str(obj["message"]), obj["severity"])


def exit_status(findings: Iterable[Finding]) -> int:
    """1 when some finding is a warning or an error, else 0."""
    return 1 if any(f.serious for f in findings) else 0


def table(findings: Sequence[Finding], checked: int = 1, notes: Sequence[str] = ()) -> str:
    """The findings as a text table for a terminal: one line each, then its example rows (row
    number, group, rollout, step) and its message; ``checked``: how many iterations or batches
    were examined, named in the last line; ``notes``: lines printed before it (what could not be
    checked)."""
    lines = []
    if findings:
        head = f"{'severity':<8}  {'check':<24}  {'iter':>5}  {'rows':>7}  {'share':>6}"
        lines += [head, "-" * len(head)]
    for f in findings:
        it = "-" if f.iteration is None else str(f.iteration)
        lines.append(f"{f.severity:<8}  {f.check:<24}  {it:>5}  {f.rows:>7}  {f.share:>6.1%}")
        lines += [f"          e.g. {e}" for e in f.examples]
        lines.append(f"          {f.message}")
    lines += list(notes)
    if not findings:
        lines.append(f"no finding: {checked} batch(es) examined, every check silent")
        return "\n".join(lines)
    n_err = sum(f.severity == "error" for f in findings)
    n_warn = sum(f.severity == "warning" for f in findings)
    lines.append(f"{n_err} error(s), {n_warn} warning(s), {len(findings) - n_err - n_warn} info "
                 f"over {checked} batch(es)")
    return "\n".join(lines)
