"""The studio's state: the data source, the chosen group, rollout and estimator, cached results.

Every page starts with one call::

    ctx = common.page_context()     # PageContext; with nothing loaded: a hint and st.stop()

and only renders what ``ctx`` and ``crbc.viz`` give it; only ``app.py`` draws the sidebar
(:func:`pages._sidebar.sidebar`), which is where the state is set. Pages never do math.

State API

    Source(key, label, groups)     a loaded data source (frozen): ``key`` is a content hash
                                   (``sample:<file>:<sha1>``, ``upload:<sha1>``, ``gen:<sha1>``,
                                   ``run:<sha1>``) that caches use; ``label`` is for people
    current_source() -> Source | None        what the sidebar loaded on this run
    page_context(require=True) -> PageContext the chosen group etc. (None if nothing is loaded
                                   and ``require`` is False; otherwise a hint and st.stop())
    PageContext fields: source, index (chosen group), group, rollout (0-based index of the chosen
        rollout), estimator (registry name), params (every shared sidebar parameter: beta,
        depth (None = closure), sigma_min, w_group, w_step, ...); ``key`` (cache key of the
        chosen group, never parsed), ``process`` (merged, cached),
        ``estimator_params(name)`` (the shared parameters estimator ``name`` takes),
        ``credits(name=None, params=None)`` (cached crbc.estimators.compute; defaults: the
        chosen estimator and its sidebar parameters), ``sweep(beta, k_max)`` (cached
        crbc.closure.depth_sweep)
    open_groups(source, group_index)         make ``source`` (e.g. a training-run iteration) the
                                   current source "run"; the sidebar applies it on the next run

Session keys: ``_crbc_source`` (Source), ``_crbc_opened`` (Source from open_groups),
``_crbc_open_request`` (group id to choose), ``_crbc_error`` (a refused upload's message).

URL query parameters (widget keys): ``source`` (sample|upload|generate|run), ``sample`` (file name),
``seed``, ``group``, ``rollout``, ``estimator``, and one per shared estimator parameter
(``beta``, ``depth``, ``sigma_min``, ``w_group``, ``w_step``; the registry says which); pages
add their own (``K`` on Bellman backups, ``step`` on Rollouts). The page itself is the URL path
(st.navigation). Deep links are routed through ``app.py`` by :mod:`pages._routing`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from crbc import closure, estimators
from crbc.coverage import Coverage, coverage
from crbc.linecheck import bad_lines
from crbc.params import Param
from crbc.process import Process, merge
from crbc.rollouts import RolloutFormatError, RolloutGroup, parse_rollouts
from pages import _routing

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_rollouts"
MODELS_DIR = ROOT / "models"
MAX_UPLOAD_MB = 20
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
SAMPLE_ORDER = ("sokoban-weak.jsonl", "sokoban-strong.jsonl", "gridworld.jsonl", "worked-example.jsonl")
NOTHING_LOADED = ("No rollout group is loaded. Choose a data source in the sidebar: a shipped sample, "
                  "an uploaded `.jsonl` file (format `crbc.rollout/1`), or a live generation.")


# --------------------------------------------------------------------------------------------
# loading (pure helpers, testable without a running app)


def selected_customdata(key: str) -> list[Any]:
    """The ``customdata`` of the points selected on the plotly chart with widget ``key`` (read in
    its ``on_select`` callback; the selection is a dict or an attribute object by Streamlit
    version), in click order; [] when nothing usable is selected."""
    sel = st.session_state.get(key)
    try:
        points = sel["selection"]["points"] if isinstance(sel, dict) else sel.selection.points
    except (AttributeError, KeyError, TypeError):
        return []
    return [pt.get("customdata") for pt in points or [] if isinstance(pt.get("customdata"), list | tuple)]


def pre(text: str, container: Any = None) -> None:
    """Monospace text that keeps its line breaks and wraps long lines: a board, a response, the
    arithmetic of a backup. Plain HTML, where ``st.code`` would make a fresh browser session load
    and run Streamlit's 1.5 MB syntax highlighter (about 0.5 s of a 2-core laptop) for text that
    has no syntax to highlight."""
    import html

    (container or st).html(f'<pre class="crbc-pre" style="white-space: pre-wrap; margin: 0 0 0.5rem; '
                           f'padding: 0.6rem 0.8rem; background: #f6f7f9; border-radius: 0.4rem; '
                           f'font-size: 0.85rem; line-height: 1.35">{html.escape(text)}</pre>')


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
        return None, (f"{name}: the file is {len(data) / 2**20:.1f} MB; the limit is "
                      f"{MAX_UPLOAD_MB} MB. Split it into smaller files.")
    try:
        return _parse(data, name), None
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


@st.cache_data(show_spinner=False, max_entries=32)
def _parse(data: bytes, name: str) -> list[RolloutGroup]:
    return parse_rollouts(data, source=name)


# --------------------------------------------------------------------------------------------
# the state objects


@dataclass(frozen=True, eq=False)
class Source:
    """A loaded data source. key: content-hash cache key. label: for people. groups: its groups."""

    key: str
    label: str
    groups: tuple[RolloutGroup, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))


@st.cache_resource(show_spinner=False, max_entries=64)
def _process(key: str, _group: RolloutGroup) -> Process:
    return merge([_group])


@st.cache_resource(show_spinner=False, max_entries=256)
def _credits(key: str, name: str, params: tuple, _process: Process) -> estimators.Credits:
    return estimators.compute(name, _process, **dict(params))


@st.cache_resource(show_spinner=False, max_entries=32)
def _sweep(key: str, beta: float, k_max: int, _process: Process) -> closure.DepthSweep:
    return closure.depth_sweep(_process, beta, k_max)


@st.cache_resource(show_spinner=False, max_entries=32)
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
        return _process(self.key, self.group)

    def estimator_params(self, name: str) -> dict[str, Any]:
        """The shared sidebar parameters that estimator ``name`` takes (the others keep defaults)."""
        return estimators.get(name).shared(dict(self.params))

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
        """Evidence coverage C^(K)(s) for K = 0..k_max (crbc.coverage; cached)."""
        return _coverage(self.key, int(k_max), self.process)


# --------------------------------------------------------------------------------------------
# reading the state


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
    _routing.ensure_navigation()
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


def drop_invalid(key: str, options: list) -> None:
    """Forget a remembered widget value that is not among the current options."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def open_groups(source: Source, group_index: int = 0) -> None:
    """Make ``source`` (e.g. one iteration of a saved training run) the current source of every
    page, with group ``group_index`` chosen. Call it from a page, then switch page: the sidebar
    applies the request on the next run (source "run")."""
    st.session_state["_crbc_opened"] = source
    st.session_state["_crbc_open_request"] = source.groups[group_index].group


# --------------------------------------------------------------------------------------------
# URL parameters from a link: a value that does not fit falls back to the default, with a notice


def notice_box(box: Any) -> None:
    """Give the container (app.py makes it, at the top of the page) that notices go into, and
    show there the notices of the previous run again: a notice outlives one rerun (the routing
    rerun of a deep link, or the user's first click). Called at the start of every run."""
    st.session_state["_crbc_notice_box"] = box
    prev = st.session_state["_crbc_notes_shown"] = st.session_state.pop("_crbc_notes", [])
    for msg in prev:
        box.warning(msg, icon=":material/link_off:")


def url_notice(key: str, value: Any, why: str) -> None:
    """Say at the top of the page that URL parameter ``key=value`` was ignored, and why."""
    shown = str(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    msg = f"Ignored URL parameter `{key}={shown}`: {why}; using the default instead."
    notes = st.session_state.setdefault("_crbc_notes", [])
    if msg in notes or msg in st.session_state.get("_crbc_notes_shown", []):
        return
    notes.append(msg)
    box = st.session_state.get("_crbc_notice_box")
    (box if box is not None else st).warning(msg, icon=":material/link_off:")


def _from_link(key: str) -> str | None:
    """The URL's value of ``key`` unless this session already accepted it (so a later change of
    options, e.g. another sample making the old group unknown, is not reported as a bad link)."""
    v = st.query_params.get(key)
    if v is None or (key, v) in st.session_state.get("_crbc_url_ok", set()):
        return None
    return v


def check_url(key: str, valid: Callable[[str], bool], why: str) -> None:
    """If the link's ``key`` fails ``valid`` (or makes it raise): a notice, and the parameter is
    dropped from the session and the URL."""
    v = _from_link(key)
    if v is None:
        return
    try:
        good = bool(valid(v))
    except (TypeError, ValueError, OverflowError):
        good = False
    if good:
        st.session_state.setdefault("_crbc_url_ok", set()).add((key, v))
        return
    url_notice(key, v, why)
    st.session_state.pop(key, None)
    # a widget bound to the parameter clears it itself (Streamlit drops a URL value its widget
    # cannot take); an unbound one is removed here
    with contextlib.suppress(KeyError, StreamlitAPIException):
        del st.query_params[key]


def int_in(lo: int, hi: int) -> Callable[[str], bool]:
    """A validator: the text is an integer in [lo, hi]."""
    def ok(v: str) -> bool:
        x = float(v)
        return math.isfinite(x) and x == int(x) and lo <= int(x) <= hi
    return ok


def float_in(lo: float, hi: float) -> Callable[[str], bool]:
    """A validator: the text is a finite number in [lo, hi]."""
    def ok(v: str) -> bool:
        x = float(v)
        return math.isfinite(x) and lo <= x <= hi
    return ok


def one_of(options: Sequence[Any]) -> Callable[[str], bool]:
    """A validator: the text is one of ``options`` (compared as text)."""
    names = {str(o) for o in options}
    return lambda v: v in names


def check_choice(key: str, options: Sequence[Any], what: str) -> None:
    """:func:`check_url` for a choice: ``what`` names the kind of thing (e.g. "no such group")."""
    check_url(key, one_of(options), what)


# --------------------------------------------------------------------------------------------
# changing page


def switch_page(path: str) -> None:
    """``st.switch_page`` that works while widgets are bound to URL parameters.

    Plain ``st.switch_page(path)`` clears every query parameter, which Streamlit refuses while a
    widget is bound to one ("Cannot clear query parameters - the following are bound to widgets":
    the Training runs defect of issue 12). An empty mapping replaces them without that check;
    the sidebar's bound widgets then write the shared view back into the address bar, and a page
    that should open on something (an anchor, a step) is told through the session."""
    st.switch_page(path, query_params={})


# the exact truth (crbc.truth) of a group whose meta names a known env, seed and tiny policy


@st.cache_resource(show_spinner=False, max_entries=1)
def _truth_cache():
    from crbc.truth import TruthCache

    return TruthCache(policy_root=str(ROOT))  # loaded checkpoints and solved levels, shared


@st.cache_resource(show_spinner="Solving the level exactly…", max_entries=64)
def _truth(key: str, beta: float, _group: RolloutGroup, _anchors: tuple[str, ...]):
    from crbc.truth import group_truth_arrays

    try:
        return group_truth_arrays(_group, _anchors, beta, _truth_cache())
    except (ValueError, OSError) as e:  # bad meta or anchor, unscorable policy, missing folder
        return f"No exact truth for this group: {' '.join(str(e).split())}"


def truth_for_group(key: str, group: RolloutGroup, beta: float = 0.98):
    """``(GroupTruth, None)`` or ``(None, reason)`` for any group (``key``: its cache key)."""
    from crbc.truth import has_truth_meta

    if not has_truth_meta(group):
        return None, "No exact truth: the group's meta does not identify env, level and policy."
    out = _truth(key, float(beta), group, _process(key, group).state_anchor)
    return (None, out) if isinstance(out, str) else (out, None)


def truth_possible(ctx: PageContext) -> bool:
    """Cheap check (no model load): the chosen group's meta names env, seed, policy, step limit."""
    from crbc.truth import has_truth_meta

    return has_truth_meta(ctx.group)


def group_truth(ctx: PageContext):
    """``(GroupTruth, None)`` for the chosen group when its meta identifies a known env, seed and
    scorable policy (shipped samples, live generation, iteration 0 of a run), else
    ``(None, reason)``. Cached per group and beta."""
    if not truth_possible(ctx):
        return None, ("No exact truth: this group's meta does not name a known environment, level "
                      "seed, step limit and checkpoint (as `generate` writes them), or it comes from "
                      "a training iteration whose policy weights were not saved.")
    out = _truth(ctx.key, float(ctx.params.get("beta", 0.98)), ctx.group, ctx.process.state_anchor)
    return (None, out) if isinstance(out, str) else (out, None)
