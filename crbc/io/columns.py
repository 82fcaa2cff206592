"""Rollouts as flat arrays: the columnar batch, its typed ``crbc.rollout/1`` decoder, conversions.

A :class:`Columns` holds a whole rollout file as integer and float arrays (one entry per step or
per rollout, in file order) plus the interned anchor and action texts. The process builder
(:func:`crbc.process.from_columns`) takes it directly; :class:`~crbc.io.rollouts.RolloutGroup`
objects for the app and the Python API are built from it on demand, and back.

Decoding: each line goes through a ``msgspec`` decoder typed with the ``crbc.rollout/1`` schema,
which checks syntax, types, required fields, non-empty ``steps``, ``rollout >= 0``, the schema
string and finiteness in C (JSON has no NaN, and msgspec refuses numbers beyond the
float range, which ``json.loads`` would turn into infinities). The few rules that span fields or lines (success with truncated,
duplicate pairs, default indices) are checked here per record. Any line the typed decoder does
not take (a bad line, but also a legal one it is stricter about: unknown fields, a lone surrogate,
odd whitespace) goes to the reference validator :func:`crbc.io.rollouts.validate_line`, which either
accepts it or raises the docs/FORMATS.md error with file, line and field. So the error messages are
the reference's by construction, and the typed decoder only ever speeds up lines it accepts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from crbc.errors import os_reason
from crbc.io import budgets
from crbc.io.gc_pause import gc_paused
from crbc.io.records import (
    MAX_TEXT_CHARS,
    SCHEMA,
    Rollout,
    RolloutFormatError,
    RolloutGroup,
    Step,
    reference_parse_rollouts,
    validate_line,
)

__all__ = ["CHUNK_ROLLOUTS", "Columns", "decode_lines", "parse_columns", "read_columns"]

CHUNK_ROLLOUTS = 512  # decoded records are turned into arrays every this many rollouts


class _StepRec(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    anchor: str
    action: str
    obs: str | None = None
    response: str | None = None
    reward: float | None = None
    trainer_advantage: float | None = None


class _RolloutRec(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    group: str
    steps: Annotated[list[_StepRec], msgspec.Meta(min_length=1)]
    success: bool
    schema: Literal["crbc.rollout/1"] = SCHEMA
    rollout: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] | None = None
    truncated: bool = False
    score: float | None = None
    meta: dict[str, Any] | None = None


_DECODER = msgspec.json.Decoder(_RolloutRec)  # refuses numbers beyond the float range (1e999)
_ANCHOR, _ACTION, _REWARD = attrgetter("anchor"), attrgetter("action"), attrgetter("reward")
_OBS, _RESPONSE = attrgetter("obs"), attrgetter("response")
_ADV = attrgetter("trainer_advantage")


@dataclass(frozen=True, eq=False)
class Columns:
    """A batch of rollouts as flat arrays, in file order (``N`` steps, ``R`` rollouts, ``G`` groups).

    group_ids: (G,) group names in order of first appearance. rollout_group: (R,) int64 index
    into ``group_ids``. rollout_index: (R,) int64 index inside the group (defaults filled in).
    rollout_offsets: (R + 1,) int64 step offsets. success, truncated: (R,) bool as written.
    score: (R,) float, NaN where the file gave none. anchor_code, action_code: (N,) int64 indices
    into ``anchor_texts`` and ``action_names`` (interned in order of first appearance).
    reward: (N,) float, NaN where the step gave none. obs, response: (N,) texts or None, and
    meta: (R,) dicts; all three are ``None`` when the reader was asked not to keep them.
    trainer_advantage: (N,) float, NaN where the step gave none (None: no step gave one).
    """

    group_ids: tuple[str, ...]
    rollout_group: np.ndarray
    rollout_index: np.ndarray
    rollout_offsets: np.ndarray
    success: np.ndarray
    truncated: np.ndarray
    score: np.ndarray
    anchor_code: np.ndarray
    action_code: np.ndarray
    anchor_texts: tuple[str, ...]
    action_names: tuple[str, ...]
    reward: np.ndarray
    obs: list[str | None] | None = None
    response: list[str | None] | None = None
    meta: list[dict[str, Any]] | None = None
    trainer_advantage: np.ndarray | None = None

    @property
    def n_rollouts(self) -> int:
        return len(self.rollout_group)

    @property
    def n_steps(self) -> int:
        return len(self.anchor_code)

    def process_order(self) -> np.ndarray | None:
        """(R,) for each rollout in file order, its position in the process that
        :func:`crbc.process.from_columns` builds (group after group); None when the file already
        lists its groups one after another (the two orders agree)."""
        g_R = self.rollout_group
        if not np.any(g_R[1:] < g_R[:-1]):
            return None
        perm_R = np.argsort(g_R, kind="stable")  # process position -> file position
        pos = np.empty_like(perm_R)
        pos[perm_R] = np.arange(len(perm_R))
        return pos

    def effective_score(self) -> np.ndarray:
        """(R,) the score of A_G: as written, else 1.0 for a success and 0.0 otherwise."""
        return np.where(np.isnan(self.score), self.success.astype(float), self.score)

    def to_groups(self) -> list[RolloutGroup]:
        """:class:`RolloutGroup` objects: groups by first appearance, rollouts in file order."""
        anchors, actions = self.anchor_texts, self.action_names
        a_N, x_N = self.anchor_code.tolist(), self.action_code.tolist()
        rw_N = [None if math.isnan(x) else x for x in self.reward.tolist()]
        n = self.n_steps
        obs = self.obs if self.obs is not None else [None] * n
        resp = self.response if self.response is not None else [None] * n
        adv = self.trainer_advantage
        adv_N = [None] * n if adv is None else [None if math.isnan(x) else x for x in adv.tolist()]
        steps = [Step(anchors[a], actions[x], o, r, w, v)
                 for a, x, o, r, w, v in zip(a_N, x_N, obs, resp, rw_N, adv_N, strict=True)]
        off = self.rollout_offsets.tolist()
        score = [None if math.isnan(s) else s for s in self.score.tolist()]
        meta = self.meta if self.meta is not None else [{} for _ in range(self.n_rollouts)]
        by_group: list[list[Rollout]] = [[] for _ in self.group_ids]
        for r, (g, idx, ok, trunc) in enumerate(zip(self.rollout_group.tolist(), self.rollout_index.tolist(),
                                                    self.success.tolist(), self.truncated.tolist(), strict=True)):
            by_group[g].append(Rollout(self.group_ids[g], idx, tuple(steps[off[r]:off[r + 1]]), ok, trunc,
                                       score[r], meta[r]))
        return [RolloutGroup(name, tuple(rs)) for name, rs in zip(self.group_ids, by_group, strict=True)]

    @classmethod
    def from_groups(cls, groups: Sequence[RolloutGroup], keep_text: bool = False) -> Columns:
        """The columns of a list of groups; group ``k`` of the list gets code ``k`` (names are
        not merged, as :func:`crbc.process.merge` has always done)."""
        rollouts = [r for g in groups for r in g.rollouts]
        steps = list(chain.from_iterable([r.steps for r in rollouts]))
        anchors: dict[str, int] = {}
        actions: dict[str, int] = {}
        lengths = np.fromiter(map(len, [r.steps for r in rollouts]), dtype=np.int64, count=len(rollouts))
        offsets = np.zeros(len(rollouts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(
            group_ids=tuple(g.group for g in groups),
            rollout_group=np.repeat(np.arange(len(groups), dtype=np.int64), [len(g.rollouts) for g in groups]),
            rollout_index=np.asarray([r.rollout for r in rollouts], dtype=np.int64).reshape(-1),
            rollout_offsets=offsets,
            success=np.asarray([r.success for r in rollouts], dtype=bool).reshape(-1),
            truncated=np.asarray([r.truncated for r in rollouts], dtype=bool).reshape(-1),
            score=np.asarray([r.score for r in rollouts], dtype=float).reshape(-1),
            anchor_code=_intern(anchors, list(map(_ANCHOR, steps))),
            action_code=_intern(actions, list(map(_ACTION, steps))),
            anchor_texts=tuple(anchors),
            action_names=tuple(actions),
            reward=np.asarray(list(map(_REWARD, steps)), dtype=float).reshape(-1),
            obs=list(map(_OBS, steps)) if keep_text else None,
            response=list(map(_RESPONSE, steps)) if keep_text else None,
            meta=[r.meta for r in rollouts] if keep_text else None,
            trainer_advantage=_optional(list(map(_ADV, steps))),
        )


def _optional(values: list[float | None]) -> np.ndarray | None:
    """(N,) float with NaN for None; None when every value is None."""
    if all(v is None for v in values):
        return None
    return np.asarray(values, dtype=float).reshape(-1)


def _intern(table: dict[str, int], items: list[str]) -> np.ndarray:
    """Codes of ``items`` in ``table``, adding new texts in order of first appearance."""
    for k in dict.fromkeys(items):  # the distinct items, first appearance order, in C
        if k not in table:
            table[k] = len(table)
    return np.fromiter(map(table.__getitem__, items), dtype=np.int64, count=len(items))


class _Builder:
    """Accumulates decoded records into column chunks (bounded number of live record objects)."""

    def __init__(self, keep_text: bool):
        self.keep_text = keep_text
        self.groups: dict[str, int] = {}
        self.anchors: dict[str, int] = {}
        self.actions: dict[str, int] = {}
        self.pending: list[tuple[_RolloutRec, int]] = []
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in (
            "rollout_group", "rollout_index", "length", "success", "truncated", "score",
            "anchor_code", "action_code", "reward", "trainer_advantage")}
        self.obs: list[str | None] = []
        self.response: list[str | None] = []
        self.meta: list[dict[str, Any]] = []

    def add(self, rec: _RolloutRec, index: int) -> None:
        self.pending.append((rec, index))
        if len(self.pending) >= CHUNK_ROLLOUTS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        recs = [r for r, _ in self.pending]
        n_r = len(recs)
        steps = list(chain.from_iterable([r.steps for r in recs]))
        groups = self.groups
        for g in dict.fromkeys([r.group for r in recs]):
            if g not in groups:
                groups[g] = len(groups)
        parts = self.parts
        parts["rollout_group"].append(np.fromiter([groups[r.group] for r in recs], np.int64, n_r))
        parts["rollout_index"].append(np.fromiter([i for _, i in self.pending], np.int64, n_r))
        parts["length"].append(np.fromiter([len(r.steps) for r in recs], np.int64, n_r))
        parts["success"].append(np.fromiter([r.success for r in recs], bool, n_r))
        parts["truncated"].append(np.fromiter([r.truncated for r in recs], bool, n_r))
        parts["score"].append(np.asarray([r.score for r in recs], dtype=float).reshape(-1))
        parts["anchor_code"].append(_intern(self.anchors, list(map(_ANCHOR, steps))))
        parts["action_code"].append(_intern(self.actions, list(map(_ACTION, steps))))
        parts["reward"].append(np.asarray(list(map(_REWARD, steps)), dtype=float).reshape(-1))
        parts["trainer_advantage"].append(np.asarray(list(map(_ADV, steps)), dtype=float).reshape(-1))
        if self.keep_text:
            self.obs.extend(map(_OBS, steps))
            self.response.extend(map(_RESPONSE, steps))
            self.meta.extend({} if r.meta is None else r.meta for r in recs)
        self.pending = []

    def finish(self) -> Columns:
        self.flush()
        cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in self.parts.items()}
        offsets = np.zeros(len(cat["length"]) + 1, dtype=np.int64)
        np.cumsum(cat["length"], out=offsets[1:])
        adv = cat["trainer_advantage"].astype(float, copy=False)
        return Columns(
            group_ids=tuple(self.groups),
            rollout_group=cat["rollout_group"].astype(np.int64, copy=False),
            rollout_index=cat["rollout_index"].astype(np.int64, copy=False),
            rollout_offsets=offsets,
            success=cat["success"].astype(bool, copy=False),
            truncated=cat["truncated"].astype(bool, copy=False),
            score=cat["score"].astype(float, copy=False),
            anchor_code=cat["anchor_code"].astype(np.int64, copy=False),
            action_code=cat["action_code"].astype(np.int64, copy=False),
            anchor_texts=tuple(self.anchors),
            action_names=tuple(self.actions),
            reward=cat["reward"].astype(float, copy=False),
            obs=self.obs if self.keep_text else None,
            response=self.response if self.keep_text else None,
            meta=self.meta if self.keep_text else None,
            trainer_advantage=adv if adv.size and not np.isnan(adv).all() else None,
        )


def decode_lines(lines: Iterable[bytes], source: str = "<input>", keep_text: bool = True) -> Columns:
    """Validate ``crbc.rollout/1`` JSON Lines (bytes, one line each) into :class:`Columns`.

    All or nothing: the first bad line raises :class:`RolloutFormatError` (file:line: field),
    exactly as the reference reader :func:`crbc.io.rollouts.iter_rollouts` would. An input without
    any rollout gives empty columns (the public readers refuse it).
    """
    with gc_paused():  # millions of short-lived, acyclic objects: the cyclic collector only costs here
        return _decode_lines(lines, source, keep_text)


def _decode_lines(lines: Iterable[bytes], source: str, keep_text: bool) -> Columns:
    decode = _DECODER.decode
    seen: set[tuple[str, int]] = set()
    order: dict[str, int] = {}
    out = _Builder(keep_text)
    meter = budgets.meter()  # decoded bytes and rows of untrusted input (crbc.io.budgets)
    for lineno, raw in enumerate(lines, start=1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark (Windows)
            raw = raw[3:]
        if not raw or raw.isspace():
            continue
        meter.add_bytes(len(raw), source)
        meter.add_rows(1, source)
        try:
            rec = decode(raw)
        except ValueError:  # msgspec's DecodeError and ValidationError are ValueErrors
            rec = None
        if rec is not None:
            group, idx = rec.group, rec.rollout
            if idx is None:
                idx = order.get(group, 0)
            key = (group, idx)
            too_long = len(raw) > MAX_TEXT_CHARS and any(
                len(s.anchor) > MAX_TEXT_CHARS or len(s.action) > MAX_TEXT_CHARS for s in rec.steps)
            if not (rec.success and rec.truncated) and key not in seen and not too_long:
                seen.add(key)
                order[group] = order.get(group, 0) + 1
                out.add(rec, idx)
                continue
        # the reference decides (and names the error): it raises, or accepts a legal line that
        # the typed decoder is stricter about
        r = validate_line(raw, source, lineno, seen, order)
        if r is not None:
            out.add(_record_of(r), r.rollout)
    return out.finish()


def _record_of(r: Rollout) -> _RolloutRec:
    steps = [_StepRec(s.anchor, s.action, s.obs, s.response, s.reward, s.trainer_advantage)
             for s in r.steps]
    return _RolloutRec(r.group, steps, r.success, SCHEMA, r.rollout, r.truncated, r.score, r.meta)


def parse_columns(data: str | bytes, source: str = "<input>", keep_text: bool = True) -> Columns:
    """Columns of a whole JSON Lines document (e.g. an upload); lines split as
    :func:`crbc.io.rollouts.parse_rollouts` splits them."""
    if isinstance(data, bytes):
        lines = data.splitlines()
    else:
        try:
            lines = data.encode("utf-8").split(b"\n")
        except UnicodeEncodeError:  # lone surrogates: the reference reader takes the text itself
            return Columns.from_groups(reference_parse_rollouts(data, source), keep_text)
    return _nonempty(decode_lines(lines, source, keep_text), source, "the input is empty")


def read_columns(path: str | os.PathLike, keep_text: bool = True) -> Columns:
    """Read and validate a ``crbc.rollout/1`` file into :class:`Columns`. All or nothing.

    The file is streamed line by line (a gzip file, ``.jsonl.gz``, by its magic bytes, through
    :meth:`crbc.io.budgets.Meter.gunzip_lines`); decoded records become arrays every
    ``CHUNK_ROLLOUTS`` rollouts, so the live memory is the columns plus one chunk.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"  # .jsonl.gz (docs/FORMATS.md): streamed, a line at a time
            f.seek(0)
            lines = budgets.meter().gunzip_lines(f, str(path), charge=False) if gz else f
            cols = decode_lines(lines, str(path), keep_text)
    except OSError as e:
        raise RolloutFormatError(f"cannot read file ({os_reason(e)})", str(path)) from None
    return _nonempty(cols, str(path), "the file is empty")


def _nonempty(cols: Columns, source: str, why: str) -> Columns:
    if cols.n_rollouts == 0:
        raise RolloutFormatError(f"no rollouts found ({why})", source, None, None)
    return cols
