"""Training checkpoints: model and AdamW state as safetensors plus JSON, swapped in atomically.

A checkpoint folder holds ``model.safetensors`` (the policy's weights), ``optimizer.safetensors``
(every tensor of the AdamW state, keyed ``<param id>.<name>``) and ``state.json`` (the iteration,
the param groups and the non-tensor state). Nothing is pickled. A new checkpoint is written to
``<folder>.tmp`` and renamed into place, the previous one kept as ``<folder>.old`` until the
rename is done, so a crash at any moment leaves one complete checkpoint. Ctrl-C is held while
the renames run (:func:`deferred_interrupt`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "CHECKPOINT", "checkpoint_iteration", "deferred_interrupt", "load_checkpoint", "POLICY",
    "save_checkpoint", "save_policy", "weights_digest"
]

CHECKPOINT = "checkpoint"  #: checkpoint folder inside a run folder
POLICY = "policy"  #: final policy folder inside a run folder


@contextlib.contextmanager
def deferred_interrupt():
    """Hold SIGINT while the block runs (a write); re-raise KeyboardInterrupt after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hit: list[Any] = []
    old = signal.signal(signal.SIGINT, lambda *a: hit.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        raise KeyboardInterrupt


def save_checkpoint(folder: Path, policy, optimizer, iteration: int) -> None:
    """Model weights and AdamW state as safetensors, plus ``state.json``; swapped in atomically."""
    import torch
    from safetensors.torch import save_file, save_model

    tmp = folder.with_name(folder.name + ".tmp")
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(policy.model, str(tmp / "model.safetensors"))
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{pid}.{k}"] = v.detach().contiguous().clone()
            else:
                scalars[f"{pid}.{k}"] = v
    save_file(tensors, str(tmp / "optimizer.safetensors"))
    state = {"iteration": iteration, "param_groups": sd["param_groups"], "scalars": scalars}
    (tmp / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    with deferred_interrupt():
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)


def checkpoint_iteration(run_dir: Path) -> int | None:
    """Iteration of the run's checkpoint (None if there is none)."""
    for name in (CHECKPOINT, CHECKPOINT + ".old"):
        p = run_dir / name / "state.json"
        if p.is_file():
            return int(json.loads(p.read_text(encoding="utf-8"))["iteration"])
    return None


def load_checkpoint(run_dir: Path, policy, optimizer) -> int:
    """Restore model and optimizer from ``run_dir``'s checkpoint; returns its iteration."""
    from safetensors.torch import load_file, load_model

    folder = run_dir / CHECKPOINT
    if not (folder / "state.json").is_file():
        folder = run_dir / (CHECKPOINT + ".old")  # interrupted between the two renames
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    load_model(policy.model, str(folder / "model.safetensors"))
    tensors = load_file(str(folder / "optimizer.safetensors"))
    per: dict[int, dict[str, Any]] = {}
    for key, v in {**tensors, **state["scalars"]}.items():
        pid, k = key.split(".", 1)
        per.setdefault(int(pid), {})[k] = v
    optimizer.load_state_dict({"state": per, "param_groups": state["param_groups"]})
    return int(state["iteration"])


def save_policy(policy, folder: Path) -> None:
    """The final policy in a folder ``load_policy`` reads (tiny format when the policy has one)."""
    if hasattr(policy, "save_pretrained"):
        policy.save_pretrained(folder)
    else:
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        save_model(policy.model, str(folder / "model.safetensors"))


def weights_digest(folder: str | os.PathLike) -> str | None:
    """sha256 of a policy folder's weights (``model.safetensors``), so a run names exactly what it
    started from; None without that file."""
    import hashlib

    p = Path(folder) / "model.safetensors"
    if not p.is_file():
        return None
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
