"""The studio's sidebar: data source, group and rollout pickers, the estimator and its parameters.

Only ``app.py`` calls :func:`sidebar`; it sets the state that :func:`pages.common.page_context`
reads. The parameter widgets are built from the estimator registry (shared parameters only).
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from crbc import estimators
from crbc.params import Param
from crbc.rollouts import RolloutGroup
from pages import common
from pages.common import MAX_UPLOAD_MB, Source, current_source, drop_invalid, load_upload, model_dirs

SOURCES = {"sample": "Shipped sample", "upload": "Upload a .jsonl", "generate": "Generate live",
           "run": "Training run iteration"}


@st.cache_resource(show_spinner="Loading the model...")
def _policy(path: str):
    from crbc.policy import load_policy

    return load_policy(path)


def _set_source(source: Source) -> None:
    st.session_state["_crbc_source"] = source


def _clear_source() -> None:
    st.session_state.pop("_crbc_source", None)


def _opened_source() -> None:
    opened = st.session_state.get("_crbc_opened")
    if not opened:
        st.sidebar.info("Open an iteration's group from the Training runs page.")
        _clear_source()
        return
    _set_source(opened)


def _sample_source() -> None:
    files = common.sample_files()
    if not files:
        st.sidebar.warning("No shipped samples found in `sample_rollouts/`.")
        _clear_source()
        return
    names = [p.name for p in files]
    drop_invalid("sample", names)
    name = st.sidebar.selectbox("Sample", names, key="sample", bind="query-params",
                                help="Rollout groups shipped with the project (sample_rollouts/).")
    data = (common.SAMPLES_DIR / name).read_bytes()
    groups, err = load_upload(name, data)
    if err:
        st.sidebar.error(err)
        _clear_source()
        return
    _set_source(Source(f"sample:{name}:{common.digest(data)}", f"sample {name}", groups))


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
    _set_source(Source(f"upload:{common.digest(data)}", f"upload {up.name}", groups))


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
    drop_invalid("gen_model", ckpts)
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
            policy = _policy(str(common.MODELS_DIR / model))
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
    _set_source(Source(key, f"live {env} seed {seed} ({model})", done[params]))


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

    src = current_source()
    groups = src.groups if src else ()
    if groups:
        ids = [g.group for g in groups]
        if len(ids) > 1:
            drop_invalid("group", ids)
            if "group" not in st.session_state and "group" not in st.query_params:
                st.session_state["group"] = ids[common.showcase_group(groups)]
            sb.selectbox(f"Group ({len(ids)} in this file)", ids, key="group", bind="query-params",
                         help="A group is G rollouts of the same task; anchors are merged only "
                              "inside a group.")
        grp = groups[common.group_index(src)]
        n = len(grp)
        drop_invalid("rollout", list(range(n)))
        r = sb.selectbox("Rollout", list(range(n)), key="rollout", bind="query-params",
                         help="Index of the rollout inside the group (0-based).")
        sb.caption(_rollout_label(grp, r))
        sb.caption(f"{grp.group}: {n} rollouts, {grp.n_steps} steps, "
                   f"{grp.success_rate:.0%} succeeded.")

    sb.header("Estimator")
    names = estimators.names()
    drop_invalid("estimator", names)
    sb.selectbox("Estimator", names, key="estimator", bind="query-params",
                 index=names.index("crbc") if "crbc" in names else 0,
                 help="Used for the per-step credit on the Rollouts page.")
    chosen = st.session_state.get("estimator", "crbc")
    sb.caption(estimators.get(chosen if chosen in names else "crbc").summary)
    with sb.expander("Parameters", expanded=page == "credits"):
        for name, (meta, default) in estimators.shared_param_specs().items():
            _param_widget(name, meta, default)

    err = st.session_state.get("_crbc_error")
    if err:
        st.error(f"**The uploaded file was refused; nothing was loaded.**\n\n`{err}`")


def _param_widget(name: str, meta: Param, default: Any) -> None:
    """The sidebar widget of one shared estimator parameter, built from its registry metadata."""
    kw = dict(key=name, bind="query-params", help=meta.help)
    label = meta.label or name
    if meta.choices is not None or (meta.kind is int and meta.none is not None):
        if meta.choices is not None:
            options = list(meta.choices)
        else:  # an integer that may be None (depth): the None text, then lo..ui_max
            options = [meta.none] + [str(k) for k in range(int(meta.lo or 0), int(meta.ui_max or 64) + 1)]
        shown = meta.none if default is None else str(default)
        drop_invalid(name, options)
        st.selectbox(label, options, index=options.index(shown), **kw)
    elif meta.kind is bool:
        st.checkbox(label, value=bool(default), **kw)
    else:
        lo = meta.ui_min if meta.ui_min is not None else (None if meta.lo_open else meta.lo)
        hi = meta.ui_max if meta.ui_max is not None else (None if meta.hi_open else meta.hi)
        step = meta.step if meta.step is not None else (1 if meta.kind is int else 0.1)
        if meta.slider:
            st.slider(label, lo, hi, default, step, format=meta.fmt, **kw)
        else:
            st.number_input(label, lo, hi, default, step, format=meta.fmt, **kw)


def _rollout_label(grp: RolloutGroup, i: int) -> str:
    r = grp.rollouts[i]
    outcome = "success" if r.success and not r.truncated else ("truncated" if r.truncated else "failure")
    return f"rollout {r.rollout}: {len(r.steps)} steps, {outcome}"
