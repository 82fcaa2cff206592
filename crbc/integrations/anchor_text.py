"""The anchor key of one ``anchor_obs`` value of a trainer's batch, whatever its type: text as it
is, bytes decoded (or hashed), an array (an image observation) as a content hash with a note of
its shape and a small thumbnail, which the recorder keeps in ``run.json``."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from crbc.integrations.step_rows import stable_key

__all__ = ["THUMB", "anchor_text", "thumbnail"]

THUMB = 8  #: thumbnails of array anchors are at most THUMB x THUMB pixels


def thumbnail(a: np.ndarray) -> dict[str, Any]:
    """Shape, dtype and (for an (H, W) or (H, W, C) array) a strided thumbnail of at most
    THUMB x THUMB pixels as base64 uint8 bytes."""
    note: dict[str, Any] = {"shape": list(a.shape), "dtype": str(a.dtype)}
    if a.ndim in (2, 3) and a.dtype != object:
        sy, sx = max(1, -(-a.shape[0] // THUMB)), max(1, -(-a.shape[1] // THUMB))
        small = np.ascontiguousarray(a[::sy, ::sx])
        if small.dtype.kind == "f" and small.size and float(np.nanmax(small)) <= 1.0:
            small = small * 255.0  # a [0, 1] float picture
        small = np.clip(np.nan_to_num(small), 0, 255).astype(np.uint8)
        note["thumb_shape"] = list(small.shape)
        note["thumb"] = base64.b64encode(small.tobytes()).decode()
    return note


def anchor_text(x: Any, notes: dict[str, dict[str, Any]]) -> str:
    """The anchor key of one ``anchor_obs`` value; array anchors add a note to ``notes``."""
    if isinstance(x, str):
        return x
    if isinstance(x, (bytes, bytearray)):
        try:
            return bytes(x).decode("utf-8")
        except UnicodeDecodeError:
            return "bytes:" + stable_key(bytes(x)).hex()
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            x = np.asarray(x.tolist())
        key = f"array:{'x'.join(map(str, x.shape))}:{stable_key(x).hex()}"
        if key not in notes:
            notes[key] = thumbnail(x)
        return key
    if isinstance(x, np.generic):
        x = x.item()
    return str(x)
