"""The studio's state: the data source, the chosen group, rollout and estimator, cached results.

Every page starts with one call::

    ctx = state.page_context()     # PageContext; with nothing loaded: a hint and st.stop()

and only renders what ``ctx`` and ``crbc.viz`` give it; only ``app.py`` draws the sidebar
(:func:`ui.sidebar.sidebar`), which is where the state is set. Pages never do math.

    Source(key, label, groups)     a loaded data source (frozen): ``key`` is a content hash
                                   (``sample:<file>:<sha1>``, ``upload:<sha1>``, ``gen:<sha1>``,
                                   ``run:<sha1>``) that caches use; ``label`` is for people
    current_source() -> Source | None        what the sidebar loaded on this run
    page_context(require=True) -> PageContext the chosen group, rollout, estimator, parameters;
        ``ctx.process`` (merged, cached), ``ctx.credits(name=None, params=None)`` (cached
        crbc.estimators.registry.compute), ``ctx.sweep(beta, k_max)`` (cached depth sweep)
    open_groups(source, group_index)         make ``source`` (e.g. a training-run iteration) the
                                   current source "run"; the sidebar applies it on the next run

Session keys: ``_crbc_source`` (Source), ``_crbc_opened`` (Source from open_groups: a .zip run's
iteration), ``_crbc_open_request`` (widget values the sidebar applies on its next run, e.g. source,
run, run_iter, group), ``_crbc_error`` (a refused upload's message), ``_crbc_run_view`` (the run
the Training runs page reviews, :class:`ui.run_source.RunView`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import streamlit as st

from crbc.estimators import closure
from crbc.estimators import registry as estimators
from crbc.estimators.coverage import Coverage, coverage
from crbc.estimators.params import Param
from crbc.io.linecheck import bad_lines
from crbc.io.rollouts import RolloutFormatError, RolloutGroup, parse_rollouts
from crbc.process import Process, merge
from ui import routing
from ui.session_memo import memo

ROOT = Path(__file__).resolve().parent.parent
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
    """Shipped ``.jsonl`` samples, Sokoban first, the worked example after the known ones."""
    if not SAMPLES_DIR.is_dir():
        return []
    files = sorted(p for p in SAMPLES_DIR.glob("*.jsonl") if p.is_file())
    rank = {n: i for i, n in enumerate(SAMPLE_ORDER)}
    return sorted(files, key=lambda p: (rank.get(p.name, len(rank)), p.name))


def model_dirs() -> list[Path]:
    if not MODELS_DIR.is_dir():
        return []
    return sorted(p for p in MODELS_DIR.iterdir() if p.is_dir() and not p.name.startswith("."))


def load_upload(name: str, data: bytes) -> tuple[list[RolloutGroup] | None, str | None]:
    """Validate an uploaded file: ``(groups, None)`` or ``(None, error message)``; all or nothing."""
    if len(data) > MAX_UPLOAD_BYTES:
        return None, (f"{name}: the file is {len(data) / 10**6:.2f} MB; the limit is "
                      f"{MAX_UPLOAD_MB} MB. Split it into smaller files.")
    try:
        return list(_parse(digest(data), name, data)), None
    except RolloutFormatError as first:
        errs, more = bad_lines(data, name)
        if not errs or (len(errs) == 1 and not more):
            return None, str(first)
        msg = "\n".join(str(e) for e in errs)
        if more:
            msg += f"\n... and more: only the first {len(errs)} problems are listed"
        return None, msg


def digest(data: bytes) -> str:
    """Short content hash of a file's bytes (part of a Source key)."""
    return hashlib.sha1(data).hexdigest()[:16]


@st.cache_resource(show_spinner=False, max_entries=32)
def _parse(content: str, name: str, _data: bytes) -> tuple[RolloutGroup, ...]:
    """The groups of a file, parsed once per (content hash, name) and shared by every run and
    session (the groups are frozen dataclasses; nobody edits them in place). A hit costs
    nothing: no hashing of the bytes, no copy of the groups."""
    return tuple(parse_rollouts(_data, source=name))


def load_sample(path: Path) -> tuple[str, list[RolloutGroup] | None, str | None]:
    """A samples-folder file as ``(content hash, groups, None)`` or ``("", None, message)``;
    read and hashed again only when its size or modification time changed."""
    st_ = path.stat()
    return _sample(str(path), st_.st_size, st_.st_mtime_ns)


@st.cache_resource(show_spinner=False, max_entries=16)
def _sample(path: str, size: int, mtime_ns: int) -> tuple[str, list[RolloutGroup] | None, str | None]:
    data = Path(path).read_bytes()
    groups, err = load_upload(Path(path).name, data)
    return ("", None, err) if err else (digest(data), groups, None)


@dataclass(frozen=True, eq=False)
class Source:
    """A loaded data source. key: content-hash cache key. label: for people. groups: its groups.
    recorded_key: the anchor key its anchors already carry (a run's ``config.anchor_key``; "")."""

    key: str
    label: str
    groups: tuple[RolloutGroup, ...]
    recorded_key: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))


@memo(max_entries=64)
def cached_process(key: str, _group: RolloutGroup) -> Process:
    return merge([_group])


@memo(max_entries=256)
def _credits(key: str, name: str, params: tuple, _process: Process) -> estimators.Credits:
    return estimators.compute(name, _process, **dict(params))


@memo(max_entries=8, show_spinner="Computing the credits of every group...")
def _file_credits(key: str, name: str, params: tuple, _groups: tuple) -> estimators.Credits:
    return estimators.compute(name, merge(list(_groups)), **dict(params))


@memo(max_entries=64)
def _trainer(key: str, _groups: tuple):
    """(N,) the trainer's advantage per step in merge order, or None when no step carries one."""
    import numpy as np

    from crbc.explain.run_review import trainer_advantage

    adv = trainer_advantage(list(_groups))
    return adv if adv is not None and np.isfinite(adv).any() else None


@memo(max_entries=32)
def _sweep(key: str, beta: float, k_max: int, _process: Process) -> closure.DepthSweep:
    return closure.depth_sweep(_process, beta, k_max)


@memo(max_entries=32)
def _coverage(key: str, k_max: int, _process: Process) -> Coverage:
    return coverage(_process, k_max)


@dataclass(frozen=True, eq=False)
class PageContext:
    """What a page renders: the chosen group of the current source, rollout, estimator, parameters.

    source: the loaded data. index: the chosen group's position in ``source.groups``. rollout:
    the chosen rollout's index inside the group (0-based). estimator: the sidebar's estimator
    (registry name). params: every shared sidebar parameter (name -> value).
    """

    source: Source
    index: int
    rollout: int
    estimator: str
    params: Mapping[str, Any]

    @property
    def groups(self) -> tuple[RolloutGroup, ...]:
        return self.source.groups

    @property
    def group(self) -> RolloutGroup:
        return self.source.groups[self.index]

    @property
    def key(self) -> str:
        """Cache key of the chosen group (content hash of the source and the group index)."""
        return f"{self.source.key}#{self.index}"

    @cached_property
    def process(self) -> Process:
        """The merged empirical process of the chosen group (cached across runs, read-only)."""
        return cached_process(self.key, self.group)

    @property
    def trainer_N(self):
        """(N,) the advantage the user's trainer gave each step of the chosen group (NaN where a
        step has none), in the process's step order; None when the group records none."""
        return _trainer(self.key, (self.group,))

    def file_trainer_N(self):
        """:attr:`trainer_N` over every group of the source (the order of :meth:`file_credits`)."""
        return _trainer(self.source.key, tuple(self.groups))

    def estimator_params(self, name: str) -> dict[str, Any]:
        """The shared sidebar parameters that estimator ``name`` takes (the others keep defaults)."""
        return estimators.get(name).shared(dict(self.params))

    def file_credits(self, name: str) -> estimators.Credits:
        """Credits of every group of the source under ``name`` with its sidebar parameters (each
        group's anchors merged inside that group only, as everywhere); cached like :meth:`credits`."""
        params = tuple(sorted(self.estimator_params(name).items()))
        return _file_credits(self.source.key, name, params, tuple(self.groups))

    def credits(self, name: str | None = None, params: Mapping[str, Any] | None = None) -> estimators.Credits:
        """Credits of the chosen group under ``name`` (default: the sidebar's estimator) with
        ``params`` (default: its sidebar parameters); cached by group, name and parameters."""
        name = name or self.estimator
        params = self.estimator_params(name) if params is None else params
        return _credits(self.key, name, tuple(sorted(params.items())), self.process)

    def sweep(self, beta: float, k_max: int) -> closure.DepthSweep:
        """V^(K), Q^(K), A^(K) for K = 0..k_max and the closure (cached)."""
        return _sweep(self.key, float(beta), int(k_max), self.process)

    def coverage(self, k_max: int) -> Coverage:
        """Evidence coverage C^(K)(s) for K = 0..k_max (crbc.estimators.coverage; cached)."""
        return _coverage(self.key, int(k_max), self.process)


def current_source() -> Source | None:
    """The source the sidebar loaded on this run (None when nothing is loaded)."""
    return st.session_state.get("_crbc_source")


def group_index(source: Source) -> int:
    """The chosen group of ``source`` (the ``group`` widget; else the showcase group)."""
    ids = [g.group for g in source.groups]
    chosen = st.session_state.get("group")
    return ids.index(chosen) if chosen in ids else showcase_group(source.groups)


def showcase_group(groups: list[RolloutGroup]) -> int:
    """The group a file opens on: the first one that mixes successes and failures (a group whose
    rollouts all fail, or all succeed, has no step credit to show), else the first."""
    for i, g in enumerate(groups):
        if 0.0 < g.success_rate < 1.0:
            return i
    return 0


def _value(meta: Param, x: Any) -> Any:
    """A widget's value as the config wants it (the depth selectbox holds text such as "inf")."""
    if x is None or (meta.none is not None and x == meta.none):
        return None
    return meta.kind(x) if meta.choices is None else x


def shared_params() -> dict[str, Any]:
    """The sidebar's value of every shared estimator parameter (the registry marks them shared)."""
    ss = st.session_state
    return {name: _value(meta, ss.get(name, default))
            for name, (meta, default) in estimators.shared_param_specs().items()}


def depth_options() -> list[str]:
    """The depth choices every page offers (the sidebar's ``depth`` widget): the closure's text
    ("inf"), then K = lo..ui_max from the registry."""
    meta, _default = estimators.shared_param_specs()["depth"]
    return [meta.none] + [str(k) for k in range(int(meta.lo or 0), int(meta.ui_max or 64) + 1)]


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


def open_groups(source: Source, group_index: int = 0) -> None:
    """Make ``source`` (an iteration of a run uploaded as a .zip, which has no folder to name in
    a link) the current source of every page, with group ``group_index`` chosen. Call it from a
    page, then switch page: the sidebar applies the request on the next run (source "run", the
    run picker's session-only entry). A run folder opens with :func:`ui.run_source.open_run`."""
    from ui.run_source import OPENED

    st.session_state["_crbc_opened"] = source
    st.session_state["_crbc_open_request"] = {"source": "run", "run": OPENED,
                                              "group": source.groups[group_index].group, "rollout": 0}
