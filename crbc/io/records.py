"""Rollouts and rollout groups (the ``crbc.rollout/1`` records), their validation and the
reference line reader (pure Python, line by line with :func:`json.loads`).

The format is a public contract (see docs/FORMATS.md). A line is validated whole and refused with
an error naming the file, the line and the field. Nothing here executes or unpickles anything.
The fast public readers and the writers are :mod:`crbc.io.rollouts`; the typed columnar decoder
(:mod:`crbc.io.columns`) hands every line it cannot take to :func:`validate_line`.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crbc.errors import RolloutFormatError, os_reason, shown_value

__all__ = [
    "BOM", "group_rollouts", "iter_rollouts", "MAX_PROBLEMS", "MAX_TEXT_CHARS",
    "reference_parse_rollouts", "reference_read_rollouts", "Rollout", "rollout_from_dict",
    "rollout_to_dict", "RolloutGroup", "SCHEMA", "Step", "validate_line"
]

SCHEMA = "crbc.rollout/1"
BOM = "\ufeff"  #: a UTF-8 byte-order mark, accepted at the start of a file


@dataclass(frozen=True)
class Step:
    """One executed step: the anchor before acting and the semantic action executed."""

    anchor: str
    action: str
    obs: str | None = None
    response: str | None = None
    reward: float | None = None  # None: the file did not give one (GiGPO then uses the outcome)
    trainer_advantage: float | None = None  # what the user's trainer used (shown, never used here)


@dataclass(frozen=True)
class Rollout:
    """One rollout of a group. ``success`` is R_i; a truncated rollout is never a success."""

    group: str
    rollout: int
    steps: tuple[Step, ...]
    success: bool
    truncated: bool = False
    score: float | None = None  # trajectory score for A_G; None means 1.0 if success else 0.0
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def effective_score(self) -> float:
        """The score used by the group advantage A_G (docs/MATH.md section 6)."""
        if self.score is not None:
            return float(self.score)
        return 1.0 if self.success else 0.0

    def __len__(self) -> int:
        return len(self.steps)


@dataclass(frozen=True)
class RolloutGroup:
    """G rollouts of one task; anchors are matched only inside one group."""

    group: str
    rollouts: tuple[Rollout, ...]

    def __len__(self) -> int:
        return len(self.rollouts)

    def __iter__(self) -> Iterator[Rollout]:
        return iter(self.rollouts)

    @property
    def n_steps(self) -> int:
        return sum(len(r.steps) for r in self.rollouts)

    @property
    def success_rate(self) -> float:
        return sum(r.success for r in self.rollouts) / max(len(self.rollouts), 1)


# --------------------------------------------------------------------------------------------
# validation


MAX_TEXT_CHARS = 2_000_000  #: the longest anchor or action a file may hold (characters)


def _fail(msg: str, source: str, line: int | None, field_: str | None = None):
    raise RolloutFormatError(msg, source, line, field_)


MAX_PROBLEMS = 5  #: how many problems of one record its error names


def _non_finite(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(field, message) for every NaN or infinity anywhere in a record (including meta)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, f"non-finite number {shown_value(value)}"
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _non_finite(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _non_finite(v, f"{path}[{i}]")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _refuse(problems: list[tuple[str, str]], source: str, line: int | None) -> None:
    """Raise one :class:`RolloutFormatError` naming every problem of a record: its field is the
    first problem's, its message the first problem followed by "; also FIELD: MESSAGE" for up to
    ``MAX_PROBLEMS`` - 1 more (and how many were left out)."""
    (field_, msg), rest = problems[0], problems[1:]
    more = [f"also {f}: {m}" for f, m in rest[:MAX_PROBLEMS - 1]]
    if len(rest) > MAX_PROBLEMS - 1:
        more.append(f"and {len(rest) - MAX_PROBLEMS + 1} more")
    raise RolloutFormatError("; ".join([msg, *more]), source, line, field_)


def _step_problems(t: int, s: Any) -> list[tuple[str, str]]:
    """(field, message) for every way step ``t`` breaks the contract."""
    p = f"steps[{t}]"
    if not isinstance(s, dict):
        return [(p, f"must be an object, got {type(s).__name__}")]
    out = []
    for req in ("anchor", "action"):
        if req not in s:
            out.append((f"{p}.{req}", "required field is missing"))
        elif not isinstance(s[req], str):
            out.append((f"{p}.{req}", f"must be a string, got {type(s[req]).__name__}"))
        elif len(s[req]) > MAX_TEXT_CHARS:
            out.append((f"{p}.{req}", f"{len(s[req]):,} characters, more than the limit of "
                                      f"{MAX_TEXT_CHARS:,} characters for an {req}"))
    for opt in ("obs", "response"):
        if s.get(opt) is not None and not isinstance(s[opt], str):
            out.append((f"{p}.{opt}", f"must be a string, got {type(s[opt]).__name__}"))
    for num in ("reward", "trainer_advantage"):
        if s.get(num) is not None and not _is_number(s[num]):
            out.append((f"{p}.{num}", f"must be a number, got {shown_value(s[num])}"))
    return out


def _record_problems(obj: dict) -> list[tuple[str, str]]:  # noqa: C901
    """(field, message) for every way a decoded record breaks the contract, in field order."""
    out = list(_non_finite(obj))  # field names as in every other message: steps[0].reward
    if "schema" in obj and obj["schema"] != SCHEMA:
        out.append(("schema", f"unsupported schema {obj['schema']!r} (expected {SCHEMA!r})"))
    out += [(req, "required field is missing") for req in ("group", "steps", "success") if req not in obj]
    if "group" in obj and not isinstance(obj["group"], str):
        out.append(("group", f"must be a string, got {type(obj['group']).__name__}"))
    idx = obj.get("rollout")
    if idx is not None and (not isinstance(idx, int) or isinstance(idx, bool) or idx < 0):
        out.append(("rollout", f"must be a non-negative integer, got {shown_value(idx)}"))
    success, truncated = obj.get("success"), obj.get("truncated", False)
    if "success" in obj and not isinstance(success, bool):
        out.append(("success", f"must be true or false, got {shown_value(success)}"))
    if not isinstance(truncated, bool):
        out.append(("truncated", f"must be true or false, got {shown_value(truncated)}"))
    elif success is True and truncated:
        out.append(("truncated", "a truncated rollout cannot be a success (success and truncated both true)"))
    score = obj.get("score")
    if score is not None and not _is_number(score):
        out.append(("score", f"must be a number, got {shown_value(score)}"))
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        out.append(("meta", f"must be an object, got {type(meta).__name__}"))
    steps = obj.get("steps")
    if "steps" in obj and not isinstance(steps, list):
        out.append(("steps", f"must be a list, got {type(steps).__name__}"))
    elif isinstance(steps, list) and not steps:
        out.append(("steps", "must hold at least one step"))
    elif isinstance(steps, list):
        for t, st in enumerate(steps):
            out += _step_problems(t, st)
    return out


def rollout_from_dict(obj: Any, source: str = "<input>", line: int | None = None,
                      default_index: int | None = None) -> Rollout:
    """Validate one decoded JSON record and build a :class:`Rollout` (docs/FORMATS.md rules).
    A bad record raises one :class:`RolloutFormatError` that names every problem it has."""
    if not isinstance(obj, dict):
        _fail(f"expected a JSON object, got {type(obj).__name__}", source, line, "(record)")
    problems = _record_problems(obj)
    if problems:
        _refuse(problems, source, line)
    steps = tuple(Step(s["anchor"], s["action"], s.get("obs"), s.get("response"),
                       None if s.get("reward") is None else float(s["reward"]),
                       None if s.get("trainer_advantage") is None else float(s["trainer_advantage"]))
                  for s in obj["steps"])
    idx = obj["rollout"] if obj.get("rollout") is not None else default_index
    score = obj.get("score")
    return Rollout(obj["group"], idx, steps, obj["success"], obj.get("truncated", False),
                   None if score is None else float(score), obj.get("meta") or {})


def rollout_to_dict(r: Rollout) -> dict[str, Any]:
    """The JSON record of a rollout (optional fields only when they carry information)."""
    steps = []
    for s in r.steps:
        d: dict[str, Any] = {"anchor": s.anchor, "action": s.action}
        if s.obs is not None:
            d["obs"] = s.obs
        if s.response is not None:
            d["response"] = s.response
        if s.reward is not None:
            d["reward"] = s.reward
        if s.trainer_advantage is not None:
            d["trainer_advantage"] = s.trainer_advantage
        steps.append(d)
    out: dict[str, Any] = {"schema": SCHEMA, "group": r.group, "rollout": r.rollout,
                           "steps": steps, "success": r.success, "truncated": r.truncated}
    if r.score is not None:
        out["score"] = r.score
    if r.meta:
        out["meta"] = r.meta
    return out


# --------------------------------------------------------------------------------------------
# reading


def iter_rollouts(lines: Iterable[str | bytes], source: str = "<input>") -> Iterator[Rollout]:
    """Stream validated rollouts from JSON Lines. Blank lines are skipped.

    Raises :class:`RolloutFormatError` at the first bad line; the caller that wants all-or-nothing
    semantics (every public reader here) collects before using anything. This is the reference
    reader, line by line with :func:`json.loads`; the public readers use the typed columnar
    decoder of :mod:`crbc.io.columns`, which hands every line it cannot take to :func:`validate_line`.
    """
    seen: set[tuple[str, int]] = set()
    order: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        r = validate_line(raw, source, lineno, seen, order)
        if r is not None:
            yield r


def validate_line(raw: str | bytes, source: str, lineno: int, seen: set[tuple[str, int]],
                  order: dict[str, int]) -> Rollout | None:
    """Validate one line of a rollout file (``None`` for a blank line) and record its
    ``(group, rollout)`` pair in ``seen`` and the group's count in ``order`` (default indices)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            _fail(f"not valid UTF-8 ({e.reason} at byte {e.start})", source, lineno, "(line)")
    text = raw.strip()
    if lineno == 1:
        text = text.removeprefix(BOM)  # a file saved by a Windows editor; CRLF is whitespace
    if not text:
        return None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except _NonFinite as e:
        _fail(f"non-finite number {e.args[0]}", source, lineno, "(line)")
    except json.JSONDecodeError as e:
        _fail(f"not valid JSON ({e.msg} at column {e.colno})", source, lineno, "(line)")
    except RecursionError:
        _fail("nested too deeply (arrays or objects inside each other beyond Python's limit)",
              source, lineno, "(line)")
    group = obj.get("group") if isinstance(obj, dict) else None
    default_idx = order.get(group, 0) if isinstance(group, str) else None
    r = rollout_from_dict(obj, source, lineno, default_idx)
    key = (r.group, r.rollout)
    if key in seen:
        _fail(f"duplicate rollout {r.rollout} in group {r.group!r}", source, lineno, "rollout")
    seen.add(key)
    order[r.group] = order.get(r.group, 0) + 1
    return r


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str):
    raise _NonFinite(name)


def group_rollouts(rollouts: Iterable[Rollout]) -> list[RolloutGroup]:
    """Collect rollouts into groups, in order of first appearance; rollouts keep file order."""
    groups: dict[str, list[Rollout]] = {}
    for r in rollouts:
        groups.setdefault(r.group, []).append(r)
    return [RolloutGroup(g, tuple(rs)) for g, rs in groups.items()]



def reference_read_rollouts(path: str | os.PathLike) -> list[RolloutGroup]:
    """The reference reader: :func:`iter_rollouts` line by line, pure Python (tests' twin)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            groups = group_rollouts(iter_rollouts(f, str(path)))
    except OSError as e:
        raise RolloutFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    if not groups:
        raise RolloutFormatError("no rollouts found (the file is empty)", str(path))
    return groups


def reference_parse_rollouts(data: str | bytes, source: str = "<input>") -> list[RolloutGroup]:
    """The reference twin of :func:`parse_rollouts` (pure Python, line by line)."""
    lines: Iterable[str | bytes] = data.splitlines() if isinstance(data, bytes) else io.StringIO(data)
    groups = group_rollouts(iter_rollouts(lines, source))
    if not groups:
        raise RolloutFormatError("no rollouts found (the input is empty)", source, None, None)
    return groups
