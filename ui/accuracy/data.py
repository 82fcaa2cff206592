"""What the Estimator accuracy page draws from: the shipped results, the reliability figure and a
small live run, each computed or read once and kept in the server's store (:mod:`ui.core.context`:
shared by every session, since none is a user's data: the live run's inputs are a shipped
environment, a shipped model and seed numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from crbc.viz.reliability import reliability_svg
from ui.core import warm_imports
from ui.core.context import server


def _shipped(path: Path) -> dict:
    """A shipped JSON file, read again when it changes."""
    def build() -> dict:
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    return server().kept("file", ("accuracy_json", str(path), path.stat().st_mtime), build)


def similarity_table(path: Path) -> dict | None:
    """The shipped similarity table (experiments/results/similarity-table.json), or None."""
    return _shipped(path) if path.is_file() else None


def shipped_result(path: Path) -> dict:
    """The ``crbc.accuracy`` JSON of a shipped results file (re-read when the file changes)."""
    return _shipped(path)


def reliability(report: dict) -> str:
    """The reliability figure (nominal against measured coverage) of a calibration report."""
    return server().kept("figure", ("reliability", json.dumps(report, sort_keys=True)),
                         lambda: reliability_svg(report))


def _policy(folder: str):
    def build():
        warm_imports.wait()  # the model stack may still be importing in the background
        from crbc.truth.policies import load_tiny_checked

        return load_tiny_checked(folder)

    return server().kept("model", ("tiny_checked", folder), build)


def live_accuracy(env: str, model: str, seeds: tuple[int, ...], sizes: tuple[int, ...]) -> dict:
    """``crbc accuracy`` on a few levels (``seeds``) and group sizes, with a progress bar; the
    same arguments give the kept result."""
    return server().kept("accuracy", (env, model, seeds, sizes), lambda: _live(env, model, seeds, sizes))


def _live(env: str, model: str, seeds: tuple[int, ...], sizes: tuple[int, ...]) -> dict:
    warm_imports.wait()
    from crbc.truth.accuracy import AccuracyConfig, run_accuracy

    bar = st.progress(0.0, text="Reading the policy's probabilities…")

    def progress(phase: str, done: int, total: int) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{phase}: {done}/{total}")

    from crbc.policy.uniform import UNIFORM

    uniform = model.endswith("/" + UNIFORM) or model == UNIFORM
    cfg = AccuracyConfig(env=env, model=UNIFORM if uniform else model, seeds=seeds, group_sizes=sizes,
                         n_boot=500)
    out = run_accuracy(cfg, policy=None if uniform else _policy(model), progress=progress).to_json()
    bar.empty()
    return out
