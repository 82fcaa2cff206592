"""The studio's state: the data source, the chosen group, rollout and estimator, cached results.

Every page starts with one call::

    ctx = state.page_context()     # PageContext; with nothing loaded: a hint and st.stop()

and only renders what ``ctx`` and ``crbc.viz`` give it; only ``app.py`` draws the sidebar
(:func:`ui.core.sidebar.sidebar`), which is where the state is set. Pages never do math.

    Source(key, label, groups)     a loaded data source (frozen): ``key`` is a content hash
                                   (``sample:<file>:<sha1>``, ``upload:<sha1>``, ``gen:<sha1>``,
                                   ``run:<sha1>``) that caches use; ``label`` is for people
    current_source() -> Source | None        what the sidebar loaded on this run
    page_context(require=True) -> PageContext the chosen group, rollout, estimator, parameters,
        and every result a page draws, each cached once (:mod:`ui.core.context`): ``ctx.process``,
        ``ctx.credits``, ``ctx.intervals``, ``ctx.sweep``, ``ctx.disagreement``, ...

Session keys: ``_crbc_source`` (Source), ``_crbc_opened`` (Source from ui.core.run_source.open_groups: a .zip run's
iteration), ``_crbc_open_request`` (widget values the sidebar applies on its next run, e.g. source,
run, run_iter, group), ``_crbc_error`` (a refused upload's message), ``_crbc_run_view`` (the run
the Training runs page reviews, :class:`ui.core.run_source.RunView`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.estimators.params import Param
from crbc.io.importers.native import parse_with_report
from crbc.io.rollouts import RolloutFormatError, RolloutGroup, showcase_group
from ui.core import params, routing
from ui.core.context import PageContext, Source, server

ROOT = Path(__file__).resolve().parents[2]  # the repository (ui/core/state.py)
#: the shipped samples; ``CRBC_SAMPLES_DIR`` points the studio at another folder (the browser
#: benchmark serves generated user-like files that way)
SAMPLES_DIR = Path(os.environ.get("CRBC_SAMPLES_DIR") or ROOT / "sample_rollouts")
#: the studio's own teaching files (the Lesson's worked example, Sokoban levels): always the
#: shipped folder, whatever ``CRBC_SAMPLES_DIR`` says
SHIPPED_DIR = ROOT / "sample_rollouts"
MODELS_DIR = ROOT / "models"
MAX_UPLOAD_MB = 20  #: MB = 10**6 bytes, as the file uploader counts them (and crbc.io.budgets)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 10**6
SAMPLE_ORDER = ("sokoban-weak.jsonl", "sokoban-strong.jsonl", "gridworld.jsonl", "worked-example.jsonl")
NOTHING_LOADED = ("No rollout group is loaded. Choose a data source in the sidebar: a shipped sample, "
                  "an upload (crbc.rollout/1, a run's iteration file, step tables, dumps), a live "
                  "generation, or a run folder (*Run folder*, then pick the run or type its path).")




def sample_files() -> list[Path]:
    """Shipped ``.jsonl`` samples, Sokoban first, the worked example after the known ones. Listed
    again only when the folder's modification time changes (a file added, removed or renamed),
    kept by the server's context: the sidebar asks on every run, and a listing is a system call
    per file, each a point where a busy server's script thread waits to take the GIL back
    (ui/core/nav_pages.py)."""
    try:
        mtime = SAMPLES_DIR.stat().st_mtime_ns
    except OSError:
        return []
    folder = SAMPLES_DIR
    return list(server().kept("listing", ("sample_files", str(folder), mtime), lambda: _list_samples(folder)))


def _list_samples(folder: Path) -> tuple[Path, ...]:
    if not folder.is_dir():
        return ()
    files = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
    rank = {n: i for i, n in enumerate(SAMPLE_ORDER)}
    return tuple(sorted(files, key=lambda p: (rank.get(p.name, len(rank)), p.name)))


def model_dirs() -> list[Path]:
    if not MODELS_DIR.is_dir():
        return []
    return sorted(p for p in MODELS_DIR.iterdir() if p.is_dir() and not p.name.startswith("."))


def load_upload(name: str, data: bytes) -> tuple[list[RolloutGroup] | None, str | None]:
    """Validate a rollout file's bytes: ``(groups, None)`` or ``(None, error message)``; all or
    nothing. Nothing is kept here (a shipped sample is kept by :func:`load_sample`; an upload is
    read in a worker, ui/core/upload.py)."""
    if len(data) > MAX_UPLOAD_BYTES:
        return None, (f"{name}: the file is {len(data) / 10**6:.2f} MB; the limit is "
                      f"{MAX_UPLOAD_MB} MB. Split it into smaller files.")
    try:
        return list(parse_with_report(data, source=name)), None
    except RolloutFormatError as e:  # the native importer's report: every bad line, up to a limit
        return None, str(e)


def digest(data: bytes) -> str:
    """Short content hash of a file's bytes (part of a Source key)."""
    return hashlib.sha1(data).hexdigest()[:16]


def load_sample(path: Path) -> tuple[str, list[RolloutGroup] | None, str | None]:
    """A samples-folder file as ``(content hash, groups, None)`` or ``("", None, message)``;
    read and hashed again only when its size or modification time changed."""
    st_ = path.stat()
    return server().kept("file", ("sample", str(path), st_.st_size, st_.st_mtime_ns), lambda: _sample(path))


def _sample(path: Path) -> tuple[str, list[RolloutGroup] | None, str | None]:
    data = path.read_bytes()
    groups, err = load_upload(path.name, data)
    return ("", None, err) if err else (digest(data), groups, None)


def current_source() -> Source | None:
    """The source the sidebar loaded on this run (None when nothing is loaded)."""
    return st.session_state.get("_crbc_source")


def group_index(source: Source) -> int:
    """The chosen group of ``source`` (the ``group`` widget; else the showcase group)."""
    ids = [g.group for g in source.groups]
    chosen = st.session_state.get("group")
    return ids.index(chosen) if chosen in ids else showcase_group(source.groups)


def _value(meta: Param, x: Any) -> Any:
    """A widget's value as the config wants it (the depth selectbox holds text such as "inf")."""
    if x is None or (meta.none is not None and x == meta.none):
        return None
    return meta.kind(x) if meta.choices is None else x


def shared_params() -> dict[str, Any]:
    """This session's value of every shared estimator parameter (:mod:`ui.core.params`), as the
    estimators take it (the depth's "inf" is None)."""
    vals = params.values()
    return {name: _value(meta, vals[name]) for name, (meta, _default) in params.specs().items()}


def _int_or_zero(x: Any, n: int) -> int:
    try:
        r = int(x)
    except (TypeError, ValueError):
        return 0
    return r if 0 <= r < n else 0


def page_context(require: bool = True) -> PageContext | None:
    """The state every page starts from. Nothing loaded: with ``require``, a hint on the page and
    ``st.stop()``; without, ``None``."""
    routing.ensure_navigation()
    src = current_source()
    if src is None or not src.groups:
        if not require:
            return None
        st.info(NOTHING_LOADED)
        st.stop()
    i = group_index(src)
    name = st.session_state.get("estimator", "crbc")
    return PageContext(
        source=src, index=i,
        rollout=_int_or_zero(st.session_state.get("rollout", 0), len(src.groups[i])),
        estimator=name if name in estimators.names() else "crbc",
        params=shared_params())
