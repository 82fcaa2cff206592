"""``--from art``: OpenPipe ART's trajectory logs, ``trajectories/{split}/{step:04d}.parquet``.

What ``art.Model.log`` writes (openpipe-art 0.5.18, ``art/utils/trajectory_logging.py:59-150``):
one row per trajectory with ``group_index`` (the group's position in that ``log`` call),
``reward``, ``metrics`` and ``metadata`` (JSON text) and ``messages`` (a list of ``{role,
content, tool_calls, tool_call_id, trainable}``; the model's own turns are ``trainable``).

Mapping: iteration = the file's step number, group = ``group_index`` (or ``metadata[group_key]``
when given), rollout = the row's order inside its group, one step per trainable assistant
message: action = its content, anchor = the conversation before it (:func:`transcript`; it
must end with a user or tool turn; key it with an anchor regex for the current state), score = ``reward``, success = the
first boolean of ``metrics`` among SUCCESS_METRICS, else ``reward >= success_threshold``.
Row = the trajectory's 1-based row in the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from crbc.io import budgets
from crbc.io.anchor_keys import AnchorKeySpec
from crbc.io.importers.rows import Imported, ImportFormatError, Row, build, input_files
from crbc.io.importers.steps import NESTED, check_size, parquet_rows

__all__ = ["art_rows", "COLUMNS", "read_art", "SUCCESS_METRICS", "trajectory_files", "transcript"]

SUCCESS_METRICS = ("success", "solved", "won", "is_correct", "correct")
COLUMNS = {"group": "group_index", "rollout": "row", "anchor": "messages.content", "action": "messages",
           "response": "messages", "score": "reward", "success": "metrics", "iteration": "step"}


def trajectory_files(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """``NNNN.parquet`` files under the given files and folders (sorted by path)."""
    return input_files(paths, lambda d: sorted(q for q in d.rglob("*.parquet") if q.stem.isdigit()),
                       "no {step:04d}.parquet files under this folder")


def _json_obj(text: object, r: Row, col: str) -> dict:
    if text is None or text == "":
        return {}
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except ValueError as e:
        raise ImportFormatError(f"not valid JSON ({e})", r.source, r.row, col) from None
    except RecursionError:
        raise ImportFormatError(NESTED, r.source, r.row, col) from None
    if not isinstance(obj, dict):
        raise ImportFormatError("expected a JSON object", r.source, r.row, col)
    return obj


def transcript(msgs: Sequence[dict]) -> str:
    """The conversation before a turn as text: ``role: content`` blocks, blank-line separated
    (the anchor text: key it with an anchor regex for the current state)."""
    return "\n\n".join(f"{m.get('role')}: {m.get('content') or ''}" for m in msgs if isinstance(m, dict))


def art_rows(path: Path, success_threshold: float | None, group_key: str | None = None,
             limit: int | None = None) -> Iterator[Row]:
    """One step row per trainable assistant message of every trajectory in one file."""
    check_size(path, limit)
    step = int(path.stem) if path.stem.isdigit() else None
    counts: dict[str, int] = {}
    for tr in parquet_rows(path, str(path)):
        v = tr.values
        for col in ("group_index", "reward", "messages"):
            if col not in v:
                raise ImportFormatError("required column is missing", tr.source, tr.row, col)
        meta = _json_obj(v.get("metadata"), tr, "metadata")
        metrics = _json_obj(v.get("metrics"), tr, "metrics")
        group = str(meta[group_key]) if group_key and group_key in meta else str(v["group_index"])
        k = counts[group] = counts.get(group, -1) + 1
        success = next((metrics[m] for m in SUCCESS_METRICS if isinstance(metrics.get(m), bool)), None)
        if success is None and success_threshold is None:
            raise ImportFormatError(f"no boolean {'/'.join(SUCCESS_METRICS)} in the metrics: give "
                                    "--success-threshold (success = reward >= X)", tr.source, tr.row, "metrics")
        msgs = v["messages"] or []
        n_steps = 0
        for j, m in enumerate(msgs):
            if not (isinstance(m, dict) and m.get("role") == "assistant" and m.get("trainable")):
                continue
            prev = msgs[j - 1] if j else None
            if not isinstance(prev, dict) or prev.get("role") not in ("user", "tool") or prev.get("content") is None:
                raise ImportFormatError(f"the model's turn messages[{j}] follows no user or tool message",
                                        tr.source, tr.row, "messages")
            n_steps += 1
            yield Row(tr.source, tr.row, {
                "group_index": group, "row": k, "messages.content": transcript(msgs[:j]),
                "messages": m.get("content") or m.get("tool_calls") or "", "reward": v["reward"],
                "metrics": success if success_threshold is None else None, "step": step})
        if not n_steps:
            raise ImportFormatError("no trainable assistant message (no step)", tr.source, tr.row, "messages")


def read_art(paths: Sequence[str | os.PathLike], anchor: AnchorKeySpec = None,
             success_threshold: float | None = None, action: AnchorKeySpec = None,
             limit: int | None = None, group_key: str | None = None) -> Imported:
    """``{step: [RolloutGroup]}`` of ART trajectory Parquet files (or folders holding them)."""
    with budgets.scope():
        rows = [r for p in trajectory_files(paths) for r in art_rows(p, success_threshold, group_key, limit)]
        if not rows:
            raise ImportFormatError("no rows found (the input is empty)", ", ".join(map(str, paths)))
        return build(rows, COLUMNS, anchor, success_threshold, action)
