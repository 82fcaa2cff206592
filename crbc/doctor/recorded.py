"""Findings that travel with a run: what the recorder's doctor counted while training.

:class:`crbc.integrations.recorder.RunRecorder` runs the doctor on every batch, token tensors
included, and logs ``crbc/doctor/<check>`` = rows flagged in that iteration's line of
``metrics.jsonl``. Those counts are findings of that iteration (docs/FORMATS.md, "An advantage
doctor"): a run whose trainer saw a bug never gets an all-clear afterwards, even though the token
tensors are gone. :func:`recorded_findings` turns the counts into :class:`Finding` records (no
example rows: the recorder logged counts; its log line named them), and :func:`with_recorded`
joins them with the findings recomputed from the saved rollouts, one finding per (iteration,
check): the recomputed one where both exist (it names its rows), else the recorded one.
``crbc doctor RUN``, the run report and the studio all read a run through :func:`with_recorded`,
so they say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crbc.doctor.findings import Finding
from crbc.doctor.registry import CHECKS, WHAT

__all__ = ["METRIC_PREFIX", "recorded_counts", "recorded_findings", "with_recorded"]

METRIC_PREFIX = "crbc/doctor/"

def _count(x: Any) -> float | None:
    """A metric value as a row count (a number > 0), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not x == x or x <= 0:
        return None
    return float(x)


def recorded_counts(metrics: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, float]]:
    """``{iteration: {check: rows flagged}}`` of every check the recorder counted (> 0), from
    metrics lines (each with an int ``iteration``); checks in :data:`CHECKS` order. A later line
    of the same iteration (a resumed trainer) replaces an earlier one."""
    out: dict[int, dict[str, float]] = {}
    for m in metrics:
        it = m.get("iteration")
        if not isinstance(it, int) or isinstance(it, bool):
            continue
        hit = {c: n for c in CHECKS if (n := _count(m.get(METRIC_PREFIX + c))) is not None}
        if any(METRIC_PREFIX + c in m for c in CHECKS):
            out[it] = hit
    return {it: hit for it, hit in out.items() if hit}


def recorded_findings(metrics: Iterable[Mapping[str, Any]],
                      rows_of: Mapping[int, int] | None = None) -> list[Finding]:
    """One :class:`Finding` per (iteration, check) the recorder counted, iterations ascending.

    rows_of: ``{iteration: rows}`` where the number of rows the recorder saw is known (the saved
    iteration's steps), for ``share`` = rows flagged / rows (capped at 1); 0 where unknown."""
    rows_of = dict(rows_of or {})
    out = []
    for it, hit in sorted(recorded_counts(metrics).items()):
        for check, n in hit.items():
            total = rows_of.get(it)
            out.append(Finding(check, it, int(n), n / total if total else 0.0, (),
                               f"while training, the recorder's doctor flagged {int(n)} rows of iteration "
                               f"{it} with {WHAT[check]} ({METRIC_PREFIX}{check} in metrics.jsonl; the "
                               "trainer's log names the rows and the fix; only the trainer saw the token "
                               "tensors): fix the trainer and record the run again."))
    return out


def with_recorded(computed: Sequence[Finding], recorded: Sequence[Finding]) -> list[Finding]:
    """``computed`` and the ``recorded`` findings of the (iteration, check) pairs it lacks, sorted
    by iteration (None first) and then in :data:`CHECKS` order."""
    have = {(f.iteration, f.check) for f in computed}
    out = list(computed) + [f for f in recorded if (f.iteration, f.check) not in have]
    order = list(CHECKS)
    return sorted(out, key=lambda f: (f.iteration is not None, f.iteration or 0, order.index(f.check)))
