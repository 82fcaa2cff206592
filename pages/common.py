"""Shared state of the studio: the data-source sidebar and cached access to crbc results.

Every page imports from here (``from pages.common import ...``); only ``app.py`` calls
:func:`sidebar`. Pages never do math: they call the cached helpers below and render what
``crbc.viz`` builds.

State API (all read ``st.session_state``; widget keys are bound to the URL query string, so a
view can be shared as a link)

    sidebar() -> None                      render the sidebar (data source, group, rollout,
                                           estimator and its parameters); app.py calls it once
    current_groups() -> list[RolloutGroup] the groups of the current source ([] if none loaded)
    current_group() -> RolloutGroup        the chosen group (call require_group() first on a page)
    require_group() -> RolloutGroup        the chosen group, or an info message and st.stop()
    group_key() -> str                     hashable key of the chosen group ("<source>#<index>")
    current_rollout() -> int               index of the chosen rollout inside the group (0-based)
    current_estimator() -> str             the estimator chosen in the sidebar (registry name)
    shared_params() -> dict                every parameter the registry marks shared (beta, depth
                                           (None = closure), sigma_min, w_group, w_step, ...)
    estimator_params(name) -> dict         the shared parameters that estimator ``name`` takes
    process(group_key) -> Process          cached merge of the group
    credits(group_key, name, params) -> Credits      cached crbc.estimators.compute
    sweep(group_key, beta, k_max) -> DepthSweep       cached crbc.closure.depth_sweep
    source_label() -> str                  human-readable name of the current source
    open_groups(key, label, groups, i)     make groups (e.g. a training-run iteration) the
                                           current source "run"; applied on the next run

URL query parameters (widget keys): ``source`` (sample|upload|generate|run), ``sample`` (file name),
``seed``, ``group``, ``rollout``, ``estimator``, ``beta``, ``depth``, ``sigma_min``, ``w_group``,
``w_step``; pages add their own (``K`` on Bellman backups, ``step`` on Rollouts). The page itself
is the URL path (st.navigation).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import streamlit as st

from crbc import closure, estimators
from crbc.params import Param
from crbc.process import Process, merge
from crbc.rollouts import RolloutFormatError, RolloutGroup, parse_rollouts


def _ensure_navigation() -> None:
    """Make sure a page never runs without app.py (and so without the shared sidebar).

    Streamlit remembers that ``pages/`` exists and, until some script has called st.navigation,
    runs a page file directly (legacy multipage mode), bypassing app.py: on a deep link (e.g.
    ``/graph``) as the first request after the server starts, and on every AppTest rerun. When
    that happens we switch the legacy mode off and rerun, so app.py runs and routes the page.
    Called on import and by every state accessor.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # pragma: no cover - internal module moved
        return
    ctx = get_script_run_ctx()
    if ctx is None or ctx.page_script_hash == ctx.pages_manager.main_script_hash:
        return  # app.py itself is running: it calls st.navigation
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


_ensure_navigation()

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_rollouts"
MODELS_DIR = ROOT / "models"
MAX_UPLOAD_MB = 20
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
SAMPLE_ORDER = ("sokoban-weak.jsonl", "sokoban-strong.jsonl", "gridworld.jsonl", "worked-example.jsonl")
SOURCES = {"sample": "Shipped sample", "upload": "Upload a .jsonl", "generate": "Generate live",
           "run": "Training run iteration"}


# --------------------------------------------------------------------------------------------
# loading (pure helpers, testable without a running app)


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
    except RolloutFormatError as e:
        return None, str(e)


def _digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


@st.cache_data(show_spinner=False, max_entries=32)
def _parse(data: bytes, name: str) -> list[RolloutGroup]:
    return parse_rollouts(data, source=name)


@st.cache_resource(show_spinner=False)
def _store() -> dict[str, list[RolloutGroup]]:
    """source key -> groups; keys are content hashes, so sessions can share them safely."""
    return {}


def _register(key: str, groups: list[RolloutGroup]) -> str:
    _store()[key] = groups
    return key


@st.cache_resource(show_spinner="Loading the model...")
def _policy(path: str):
    from crbc.policy import load_policy

    return load_policy(path)


# --------------------------------------------------------------------------------------------
# cached results


def _groups_of(gkey: str) -> tuple[list[RolloutGroup], int]:
    source, _, index = gkey.rpartition("#")
    return _store()[source], int(index)


@st.cache_resource(show_spinner=False, max_entries=64)
def process(gkey: str) -> Process:
    """The merged empirical process of one group (read-only)."""
    groups, i = _groups_of(gkey)
    return merge([groups[i]])


def _params_tuple(params: dict[str, Any] | tuple) -> tuple:
    return tuple(sorted(params.items())) if isinstance(params, dict) else tuple(params)


@st.cache_resource(show_spinner=False, max_entries=256)
def _credits(gkey: str, name: str, params: tuple) -> estimators.Credits:
    return estimators.compute(name, process(gkey), **dict(params))


def credits(gkey: str, name: str, params: dict[str, Any] | tuple | None = None) -> estimators.Credits:
    """Credits of the group under estimator ``name`` (cached by group, name and parameters)."""
    if params is None:
        params = estimator_params(name)
    return _credits(gkey, name, _params_tuple(params))


@st.cache_resource(show_spinner=False, max_entries=32)
def sweep(gkey: str, beta: float, k_max: int) -> closure.DepthSweep:
    """V^(K), Q^(K), A^(K) for K = 0..k_max and the closure (cached)."""
    return closure.depth_sweep(process(gkey), float(beta), int(k_max))


# --------------------------------------------------------------------------------------------
# state accessors


def _source() -> tuple[str, str, list[RolloutGroup]] | None:
    _ensure_navigation()
    return st.session_state.get("_crbc_source")


def current_groups() -> list[RolloutGroup]:
    src = _source()
    return list(src[2]) if src else []


def source_label() -> str:
    src = _source()
    return src[1] if src else "nothing loaded"


def _group_index() -> int:
    src = _source()
    if not src:
        return 0
    ids = [g.group for g in src[2]]
    chosen = st.session_state.get("group")
    return ids.index(chosen) if chosen in ids else showcase_group(src[2])


def showcase_group(groups: list[RolloutGroup]) -> int:
    """The group a file opens on: the first one that mixes successes and failures (a group whose
    rollouts all fail, or all succeed, has no step credit to show), else the first."""
    for i, g in enumerate(groups):
        if 0.0 < g.success_rate < 1.0:
            return i
    return 0


def current_group() -> RolloutGroup:
    groups = current_groups()
    if not groups:
        raise LookupError("no rollout group is loaded")
    return groups[_group_index()]


def require_group() -> RolloutGroup:
    """The chosen group; when nothing is loaded, say why on the page and stop rendering it."""
    if not current_groups():
        st.info("No rollout group is loaded. Choose a data source in the sidebar: a shipped sample, "
                "an uploaded `.jsonl` file (format `crbc.rollout/1`), or a live generation.")
        st.stop()
    return current_group()


def group_key() -> str:
    src = _source()
    if not src:
        raise LookupError("no rollout group is loaded")
    return f"{src[0]}#{_group_index()}"


def current_rollout() -> int:
    n = len(current_group())
    r = st.session_state.get("rollout", 0)
    try:
        r = int(r)
    except (TypeError, ValueError):
        r = 0
    return r if 0 <= r < n else 0


def current_estimator() -> str:
    name = st.session_state.get("estimator", "crbc")
    return name if name in estimators.names() else "crbc"


def _value(meta: Param, x: Any) -> Any:
    """A widget's value as the config wants it (the depth selectbox holds text such as "inf")."""
    if x is None or (meta.none is not None and x == meta.none):
        return None
    return meta.kind(x) if meta.choices is None else x


def shared_params() -> dict[str, Any]:
    """The sidebar's value of every shared estimator parameter (the registry marks them shared)."""
    ss = st.session_state
    return {name: _value(meta, ss.get(name, default))
            for name, (meta, default) in estimators.shared_params().items()}


def estimator_params(name: str) -> dict[str, Any]:
    """The shared sidebar parameters that estimator ``name`` takes (the others keep defaults)."""
    return estimators.get(name).shared(shared_params())


# --------------------------------------------------------------------------------------------
# the sidebar


def _set_source(key: str, label: str, groups: list[RolloutGroup]) -> None:
    _register(key, groups)
    st.session_state["_crbc_source"] = (key, label, groups)


def _clear_source() -> None:
    st.session_state.pop("_crbc_source", None)


def open_groups(key: str, label: str, groups: list[RolloutGroup], group_index: int = 0) -> None:
    """Make ``groups`` (e.g. one iteration of a saved training run) the current source of every
    page, with group ``group_index`` chosen. Call it from a page, then switch page: the sidebar
    applies the request on the next run (source "run")."""
    _register(key, groups)
    st.session_state["_crbc_opened"] = (key, label, groups)
    st.session_state["_crbc_open_request"] = groups[group_index].group


def _opened_source() -> None:
    opened = st.session_state.get("_crbc_opened")
    if not opened:
        st.sidebar.info("Open an iteration's group from the Training runs page.")
        _clear_source()
        return
    _set_source(*opened)


def _sample_source() -> None:
    files = sample_files()
    if not files:
        st.sidebar.warning("No shipped samples found in `sample_rollouts/`.")
        _clear_source()
        return
    names = [p.name for p in files]
    _drop_invalid("sample", names)
    name = st.sidebar.selectbox("Sample", names, key="sample", bind="query-params",
                                help="Rollout groups shipped with the project (sample_rollouts/).")
    data = (SAMPLES_DIR / name).read_bytes()
    groups, err = load_upload(name, data)
    if err:
        st.sidebar.error(err)
        _clear_source()
        return
    _set_source(f"sample:{name}:{_digest(data)}", f"sample {name}", groups)


def _upload_source() -> None:
    up = st.sidebar.file_uploader(
        f"Rollout file (.jsonl, crbc.rollout/1, at most {MAX_UPLOAD_MB} MB)", type=["jsonl"],
        key="upload_file")
    if up is None:
        _clear_source()
        st.sidebar.caption("One JSON object per line: group, steps (anchor, action), success. "
                           "See FORMATS.md.")
        return
    data = up.getvalue()
    groups, err = load_upload(up.name, data)
    if err:
        _clear_source()
        st.session_state["_crbc_error"] = err
        st.sidebar.error("The file was not loaded (see the message on the page).")
        return
    _set_source(f"upload:{_digest(data)}", f"upload {up.name}", groups)


@st.cache_resource(show_spinner=False)
def _generated() -> dict[tuple, list[RolloutGroup]]:
    return {}


def _generate_source() -> None:
    try:
        import crbc.generate  # noqa: F401
        from crbc.envs import env_ids
    except ImportError as e:
        st.sidebar.info(f"Live generation is not available in this build ({e}).")
        _clear_source()
        return
    models = model_dirs()
    if not models:
        st.sidebar.info("Live generation needs a shipped model in `models/`; none was found.")
        _clear_source()
        return
    ids = list(env_ids())
    ckpts = [p.name for p in models]

    def matching(env_id: str) -> str:
        """The first checkpoint named after the env's family (sokoban-..., gridworld-...)."""
        return next((c for c in ckpts if c.startswith(env_id.split("-")[0])), ckpts[0])

    def follow_env() -> None:  # a new environment brings its own checkpoint along
        st.session_state["gen_model"] = matching(st.session_state["gen_env"])

    env = st.sidebar.selectbox("Environment", ids, key="gen_env", bind="query-params",
                               index=ids.index("sokoban-6x6-v0") if "sokoban-6x6-v0" in ids else 0,
                               on_change=follow_env)
    preferred = [matching(env)]
    _drop_invalid("gen_model", ckpts)
    model = st.sidebar.selectbox("Checkpoint", ckpts, key="gen_model", bind="query-params",
                                 index=ckpts.index((preferred or ckpts)[0]))
    seed = st.sidebar.number_input("Level seed", 0, 10**6, 17, key="seed", bind="query-params")
    size = st.sidebar.number_input("Group size", 1, 64, 8, key="gen_size", bind="query-params")
    temp = st.sidebar.slider("Temperature", 0.1, 2.0, 1.0, 0.1, key="gen_temp", bind="query-params")
    params = (env, model, int(seed), int(size), round(float(temp), 3))
    done = _generated()
    if params not in done:
        # the click is kept in the session by a callback, so a rerun before this line (e.g. the
        # routing rerun of _ensure_navigation) cannot swallow it
        st.sidebar.button("Generate", type="primary", key="gen_go",
                          on_click=lambda: st.session_state.update(_gen_request=True))
        if not st.session_state.pop("_gen_request", False):
            st.sidebar.caption("Choose the settings and press Generate; results are cached.")
            _clear_source()
            return
        bar = st.sidebar.progress(0.0, text="Loading the model...")
        try:
            policy = _policy(str(MODELS_DIR / model))
            from crbc.generate import generate_groups

            def progress(k: int, total: int) -> None:
                bar.progress(k / max(total, 1), text=f"{k} of {total} rollouts finished")

            done[params] = generate_groups(env, [int(seed)], int(size), policy,
                                           temperature=float(temp), progress=progress)
        except Exception as e:  # a broken checkpoint must not take the app down
            bar.empty()
            st.sidebar.error(f"Generation failed: {e}")
            _clear_source()
            return
        bar.empty()
    key = "gen:" + hashlib.sha1(repr(params).encode()).hexdigest()[:16]
    _set_source(key, f"live {env} seed {seed} ({model})", done[params])


def sidebar(page: str | None = None) -> None:
    """The shared sidebar: data source, group and rollout pickers, estimator and its parameters.

    ``page`` is the current page's url path; on ``credits`` the parameters start expanded."""
    st.session_state.pop("_crbc_error", None)
    sb = st.sidebar
    sb.header("Data")
    request = st.session_state.pop("_crbc_open_request", None)
    if request is not None:  # open_groups() was called on the previous run
        st.session_state.update(source="run", group=request, rollout=0)
    source = sb.radio("Source", list(SOURCES), key="source", bind="query-params",
                      captions=list(SOURCES.values()))
    if source == "upload":
        _upload_source()
    elif source == "generate":
        _generate_source()
    elif source == "run":
        _opened_source()
    else:
        _sample_source()

    groups = current_groups()
    if groups:
        ids = [g.group for g in groups]
        if len(ids) > 1:
            _drop_invalid("group", ids)
            if "group" not in st.session_state and "group" not in st.query_params:
                st.session_state["group"] = ids[showcase_group(groups)]
            sb.selectbox(f"Group ({len(ids)} in this file)", ids, key="group", bind="query-params",
                         help="A group is G rollouts of the same task; anchors are merged only "
                              "inside a group.")
        grp = current_group()
        n = len(grp)
        _drop_invalid("rollout", list(range(n)))
        r = sb.selectbox("Rollout", list(range(n)), key="rollout", bind="query-params",
                         help="Index of the rollout inside the group (0-based).")
        sb.caption(_rollout_label(grp, r))
        sb.caption(f"{grp.group}: {n} rollouts, {grp.n_steps} steps, "
                   f"{grp.success_rate:.0%} succeeded.")

    sb.header("Estimator")
    names = estimators.names()
    _drop_invalid("estimator", names)
    sb.selectbox("Estimator", names, key="estimator", bind="query-params",
                 index=names.index("crbc") if "crbc" in names else 0,
                 help="Used for the per-step credit on the Rollouts page.")
    sb.caption(estimators.get(current_estimator()).summary)
    with sb.expander("Parameters", expanded=page == "credits"):
        for name, (meta, default) in estimators.shared_params().items():
            _param_widget(name, meta, default)

    err = st.session_state.get("_crbc_error")
    if err:
        st.error(f"**The uploaded file was refused; nothing was loaded.**\n\n`{err}`")


def _param_widget(name: str, meta: Param, default: Any) -> None:
    """The sidebar widget of one shared estimator parameter, built from its registry metadata."""
    common = dict(key=name, bind="query-params", help=meta.help)
    label = meta.label or name
    if meta.choices is not None or (meta.kind is int and meta.none is not None):
        if meta.choices is not None:
            options = list(meta.choices)
        else:  # an integer that may be None (depth): the None text, then lo..ui_max
            options = [meta.none] + [str(k) for k in range(int(meta.lo or 0), int(meta.ui_max or 64) + 1)]
        shown = meta.none if default is None else str(default)
        _drop_invalid(name, options)
        st.selectbox(label, options, index=options.index(shown), **common)
    elif meta.kind is bool:
        st.checkbox(label, value=bool(default), **common)
    else:
        lo = meta.ui_min if meta.ui_min is not None else (None if meta.lo_open else meta.lo)
        hi = meta.ui_max if meta.ui_max is not None else (None if meta.hi_open else meta.hi)
        step = meta.step if meta.step is not None else (1 if meta.kind is int else 0.1)
        if meta.slider:
            st.slider(label, lo, hi, default, step, format=meta.fmt, **common)
        else:
            st.number_input(label, lo, hi, default, step, format=meta.fmt, **common)


def _drop_invalid(key: str, options: list) -> None:
    """Forget a remembered widget value that is not among the current options."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def _rollout_label(grp: RolloutGroup, i: int) -> str:
    r = grp.rollouts[i]
    outcome = "success" if r.success and not r.truncated else ("truncated" if r.truncated else "failure")
    return f"rollout {r.rollout}: {len(r.steps)} steps, {outcome}"
