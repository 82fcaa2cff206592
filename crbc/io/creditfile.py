"""Writing ``crbc.credit/1`` JSON Lines fast, atomically and in bounded memory.

The records are those of :meth:`crbc.estimators.registry.Credits.records` (same keys, same order, same
values); only the encoder differs: ``msgspec`` writes a chunk of records per call instead of
``json.dumps`` per record. Floats are written in their shortest round-tripping form, so a reader
gets bit-identical numbers (``1e-05`` may appear as ``0.00001``; tested against ``json.dumps``).

Memory: the per-step arrays are turned into Python lists ``CHUNK_ROLLOUTS`` rollouts at a time and
encoded chunk by chunk into the temporary file, so the output is never held whole.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import IO

import msgspec
import numpy as np

from crbc.io.rollouts import atomic_write_chunks

__all__ = ["check_finite", "CHUNK_ROLLOUTS", "CREDIT_SCHEMA", "encoded_chunks", "in_order", "write_credits"]

CREDIT_SCHEMA = "crbc.credit/1"  #: the version string of every line this module writes
CHUNK_ROLLOUTS = 512

_ENCODER = msgspec.json.Encoder()
_OPEN = b'{"schema":' + _ENCODER.encode(CREDIT_SCHEMA) + b',"group":'
_PER_STEP = ("value", "q", "credit", "step_advantage", "advantage")


def _columns(credits) -> dict[str, np.ndarray | None]:
    return {"value": credits.value_N, "q": credits.q_N, "credit": credits.credit_N,
            "step_advantage": credits.step_advantage_N, "advantage": credits.advantage_N}


def check_finite(credits) -> None:
    """Refuse NaN and infinities before anything is written (``json.dumps(allow_nan=False)``'s
    rule), naming the field. One exception: NaN in ``q`` means "no next state" (``rewardflow`` on
    a truncated rollout's last step) and is written as null."""
    fields = {**_columns(credits), "group_advantage": credits.group_advantage_R}
    for name, a in fields.items():
        if a is None:
            continue
        bad = np.isinf(a) if name == "q" else ~np.isfinite(a)
        if bad.any():
            raise ValueError(f"Out of range float values are not JSON compliant (field {name!r}, "
                             f"{int(bad.sum())} value(s){_where(credits, name, bad)})")


def _where(credits, name: str, bad: np.ndarray) -> str:
    """``; first at group G rollout R step T; the input's largest |reward| ... |score| ...``:
    where the first bad value is and the input magnitudes that overflowed (float64 ends near
    1.8e308, and a sum or a square of rewards near it does not fit)."""
    p = credits.process
    try:
        i = int(np.flatnonzero(bad)[0])
        if name == "group_advantage":
            r, step = i, None
        else:
            r, step = int(p.step_rollout[i]), int(p.step_t[i])
        g = p.group_ids[int(p.rollout_group[r])]
        at = f"group {g!r} rollout {int(p.rollout_index[r])}" + ("" if step is None else f" step {step}")
        rw = np.abs(p.step_reward[np.isfinite(p.step_reward)])
        sc = np.abs(p.rollout_score[np.isfinite(p.rollout_score)])
        mags = f"steps[].reward up to {rw.max():.3g}" if rw.size else "no steps[].reward"
        mags += f", score up to {sc.max():.3g}" if sc.size else ""
        return f"; first at {at}; estimator {credits.estimator!r} overflows on the input's {mags}"
    except (AttributeError, IndexError, TypeError, ValueError):
        return ""


def _cut(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> tuple[bytes, list[int], list[int]]:
    """``values`` encoded as one JSON array, and the byte span of each run ``first[r]..last[r]``.

    Returns ``(text, lo, hi)``: ``text[lo[r]:hi[r]]`` is elements ``first[r]`` to ``last[r]`` with
    their separating commas. The commas are found in one vectorised pass (numbers have none).
    """
    text = _ENCODER.encode(values.tolist())
    commas = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 44)  # b","
    start = np.concatenate([[1], commas + 1])
    end = np.concatenate([commas, [len(text) - 1]])
    return text, start[first].tolist(), end[last].tolist()


def encoded_chunks(credits, intervals=None) -> Iterator[bytes]:
    """The ``crbc.credit/1`` lines of ``credits`` as byte chunks (each ends with a newline).

    Records: one per rollout, in the process's rollout order, keys as docs/FORMATS.md lists them;
    with ``intervals`` (a :class:`crbc.estimators.bootstrap.CreditIntervals` on the same process)
    each record ends with ``credit_interval`` (per step ``[lo, hi]`` or null) and ``evidence``.
    Each per-step column of a chunk is encoded as one JSON array and cut at the rollout
    boundaries, so the per-record Python work is a join of byte slices.
    """
    p = credits.process
    cols = _columns(credits)
    off = p.rollout_offsets
    n_r = len(off) - 1
    enc = _ENCODER.encode
    head = [enc(g)[:-1] for g in p.group_ids]  # b'"name' without the closing quote
    mid = b'","rollout":'
    after_idx = b',"estimator":' + enc(credits.estimator) + b',"params":' + enc(credits.params)
    for r0 in range(0, n_r, CHUNK_ROLLOUTS):
        r1 = min(r0 + CHUNK_ROLLOUTS, n_r)
        s0, s1 = int(off[r0]), int(off[r1])
        first, last = off[r0:r1] - s0, off[r0 + 1:r1 + 1] - s0 - 1
        runs = {k: None if a is None else _cut(a[s0:s1], first, last) for k, a in cols.items()}
        ag_text, ag_lo, ag_hi = _cut(credits.group_advantage_R[r0:r1], np.arange(r1 - r0), np.arange(r1 - r0))
        group_R = p.rollout_group[r0:r1].tolist()
        index_R = p.rollout_index[r0:r1].tolist()
        pieces: list[bytes] = []
        for i in range(r1 - r0):
            pieces += [_OPEN, head[group_R[i]], mid, str(index_R[i]).encode(),
                       after_idx]
            for key in ("value", "q", "credit", "step_advantage"):
                run = runs[key]
                pieces += [_KEY[key], b"null"] if run is None else \
                    [_KEY[key], b"[", run[0][run[1][i]:run[2][i]], b"]"]
            run = runs["advantage"]
            pieces += [b',"group_advantage":', ag_text[ag_lo[i]:ag_hi[i]],
                       b',"advantage":[', run[0][run[1][i]:run[2][i]], b"]"]
            if intervals is not None:
                extra = intervals.record_fields(r0 + i)
                pieces += [b',"credit_interval":', enc(extra["credit_interval"]),
                           b',"evidence":', enc(extra["evidence"])]
            pieces.append(b"}\n")
        yield b"".join(pieces)


_KEY = {k: b',"' + k.encode() + b'":' for k in _PER_STEP}


def in_order(chunks: Iterator[bytes], order: np.ndarray) -> Iterator[bytes]:
    """The lines of ``chunks`` (one per process rollout) rearranged so that output line ``i`` is
    process rollout ``order[i]``. Holds every line in memory, so it is used only when the input
    interleaved its groups (the process lays rollouts out group after group)."""
    lines = b"".join(chunks).split(b"\n")[:-1]  # JSON text has no raw newline
    yield b"".join(lines[int(j)] + b"\n" for j in order)


def write_credits(credits, out: str | os.PathLike | IO[bytes] | IO[str],
                  order: np.ndarray | None = None, intervals=None) -> None:
    """Write ``credits`` as ``crbc.credit/1`` to a path (atomically: a temporary file in the same
    folder, then a rename; never half-written) or to an open stream (binary or text).

    ``order`` (optional, (R,) ints): write process rollout ``order[i]`` as line ``i``, to give the
    lines in the input file's order when that differs from the process's (see
    :meth:`crbc.io.columns.Columns.process_order`). ``intervals``: also write each step's
    ``credit_interval`` and ``evidence`` (see :func:`encoded_chunks`; non-finite bounds are null)."""
    check_finite(credits)
    chunks = encoded_chunks(credits, intervals)
    if order is not None:
        chunks = in_order(chunks, order)
    if isinstance(out, (str, os.PathLike)):
        atomic_write_chunks(out, chunks)
        return
    if hasattr(out, "buffer"):  # a text stream over bytes (sys.stdout): write the bytes below it
        out.flush()
        out = out.buffer
    elif isinstance(out, io.TextIOBase):  # a text stream without bytes below (io.StringIO)
        for chunk in chunks:
            out.write(chunk.decode("utf-8"))
        return
    for chunk in chunks:
        out.write(chunk)
    out.flush()
