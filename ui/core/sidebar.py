"""The studio's sidebar: data source, group and rollout pickers, the estimator and its parameters.

Only ``app.py`` calls :func:`sidebar`; it sets the state that :func:`pages.state.page_context`
reads. The shared parameters' fold and their place in the address are :mod:`ui.core.params`.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.io.rollouts import RolloutGroup, showcase_group
from ui.core import anchor_key, params, run_source, state, upload, url, warm_imports, widgets
from ui.core.context import server
from ui.core.state import Source, current_source, model_dirs
from ui.core.url import drop_invalid

MAX_GEN_SIZE = 16  # rollouts per live group: one user's generation must not hold the server long
SOURCES = {"sample": "Shipped sample", "upload": "Upload files (crbc.rollout/1, step tables, dumps)", "generate": "Generate live",
           "run": "Run folder (recorded, imported or trained)"}


def _policy(path: str, env_id: str):
    """The checkpoint folder ``path``, or the built-in ``uniform`` over ``env_id``'s actions."""
    def build():
        warm_imports.wait()
        from crbc.policy import load_policy
        from crbc.policy.uniform import UNIFORM

        return load_policy(UNIFORM, env_id=env_id) if Path(path).name == UNIFORM else load_policy(path)

    return server().kept("model", (path, env_id), build, spinner="Loading the model...")


def _set_source(source: Source, regex: str = "", keyed: bool = True) -> None:
    """Make ``source`` the current one, its anchors keyed by ``regex`` unless ``keyed`` is False
    (an upload's importer applies the key itself, naming a refused row by file and row)."""
    tau = anchor_key.similarity()
    if (keyed and regex) or tau is not None:
        source, err = anchor_key.keyed(source, regex if keyed else "", tau)
        if err:
            _source_error(err)
            return
    st.session_state["_crbc_source"] = source


def _source_error(msg: str) -> None:
    """A source that cannot be shown: one alert, on the page, and a pointer to it in the sidebar
    (the same alert twice read as two problems); nothing loaded."""
    _clear_source()
    st.sidebar.caption(":material/error: Nothing loaded: see the message on the page.")
    st.error(msg)


def _clear_source() -> None:
    st.session_state.pop("_crbc_source", None)


def _sample_source(regex: str) -> None:
    files = state.sample_files()
    if not files:
        st.sidebar.warning("No shipped samples found in `sample_rollouts/`.")
        _clear_source()
        return
    names = [p.name for p in files]
    url.check_choice("sample", names, "no shipped sample has that name")
    drop_invalid("sample", names)
    name = st.sidebar.selectbox("Sample", names, key="sample", bind="query-params",
                                help="Rollout groups shipped with the project (sample_rollouts/).")
    content, groups, err = state.load_sample(state.SAMPLES_DIR / name)
    if err:
        st.sidebar.error(err)
        _clear_source()
        return
    _set_source(Source(f"sample:{name}:{content}", f"sample {name}", groups), regex)


def _upload_source(regex: str) -> None:
    # a refused file is not kept listed: the uploader gets a new key (so it starts empty) and the
    # refusal stays on the page until another file is loaded (ui/core/upload.py reads the files)
    src, err = upload.upload_source(regex)
    if err:
        _clear_source()
        st.session_state["_crbc_error"] = err
        st.session_state["_upload_n"] = st.session_state.get("_upload_n", 0) + 1
        st.rerun()
    if src is None:
        _clear_source()
        return
    st.session_state.pop("_crbc_error", None)
    _set_source(src, regex, keyed=False)
    imported = st.session_state.get("_crbc_imported")
    if imported is not None:  # several iterations: the Training runs page reviews them all
        key, label, by_it = imported
        st.session_state["_crbc_run_view"] = run_source.RunView(
            key, label, tuple(by_it), "upload_iter", None, {}, lambda i: tuple(by_it[i]))


def _run_source(regex: str) -> None:
    src, err = run_source.run_source(regex)
    if err:
        _source_error(err)
    elif src is None:
        _clear_source()
    else:
        _set_source(src, anchor_key.to_apply(src, regex))  # a run recorded with the key: not twice


class _Queue:
    """One live generation at a time on this server, first come first served: a class sharing
    one server must not have one student's generation starve the others' pages (torch would
    take every core). ``ahead()`` is how many generations are running or waiting."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = threading.Lock()
        self.n = 0

    def ahead(self) -> int:
        return self.n

    @contextlib.contextmanager
    def turn(self, on_wait):
        with self.count:
            self.n += 1
        try:
            while not self.lock.acquire(timeout=0.5):
                on_wait(self.n - 1)
            try:
                yield
            finally:
                self.lock.release()
        finally:
            with self.count:
                self.n -= 1


def _queue() -> _Queue:
    """The server's one queue of live generations."""
    return server().kept("service", ("generation_queue",), _Queue)


def _generate_source(regex: str) -> None:  # noqa: C901
    warm_imports.wait()
    try:
        import crbc.policy.generate  # noqa: F401
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
    ckpts = [p.name for p in models] + ["uniform"]

    def matching(env_id: str) -> str:
        """The first checkpoint named after the env (frozenlake-8x8-...), else after its family
        (sokoban-..., gridworld-...), else the built-in uniform policy."""
        for prefix in (env_id.rsplit("-", 1)[0], env_id.split("-")[0]):
            hit = next((c for c in ckpts if c.startswith(prefix)), None)
            if hit:
                return hit
        return "uniform"

    def follow_env() -> None:  # a new environment brings its own checkpoint along
        st.session_state["gen_model"] = matching(st.session_state["gen_env"])

    url.check_choice("gen_env", ids, "no such environment")
    url.check_choice("gen_model", ckpts, "no such checkpoint in models/")
    url.check_url("seed", url.int_in(0, 10**6), "a level seed is a whole number from 0 to 1000000")
    url.check_url("gen_size", url.int_in(1, MAX_GEN_SIZE),
                     f"a live group has 1 to {MAX_GEN_SIZE} rollouts")
    url.check_url("gen_temp", url.float_in(0.1, 2.0), "the temperature is between 0.1 and 2")
    env = st.sidebar.selectbox("Environment", ids, key="gen_env", bind="query-params",
                               index=ids.index("sokoban-6x6-v0") if "sokoban-6x6-v0" in ids else 0,
                               on_change=follow_env)
    preferred = [matching(env)]
    drop_invalid("gen_model", ckpts)
    model = st.sidebar.selectbox("Checkpoint", ckpts, key="gen_model", bind="query-params",
                                 index=ckpts.index((preferred or ckpts)[0]))
    seed = st.sidebar.number_input("Level seed", 0, 10**6, 17, key="seed", bind="query-params")
    size = st.sidebar.number_input("Group size", 1, MAX_GEN_SIZE, 8, key="gen_size", bind="query-params",
                                   help=f"At most {MAX_GEN_SIZE} rollouts: the server is shared.")
    temp = st.sidebar.slider("Temperature", 0.1, 2.0, 1.0, 0.1, key="gen_temp", bind="query-params")
    params = (env, model, int(seed), int(size), round(float(temp), 3))
    # live groups by their settings, shared by all sessions (at most KINDS["generated"].entries)
    made, groups = server().held("generated", params)
    if not made:
        # the click is kept in the session by a callback, so a rerun before this line (e.g. the
        # routing rerun of _ensure_navigation) cannot swallow it
        st.sidebar.button("Generate", type="primary", key="gen_go",
                          on_click=lambda: st.session_state.update(_gen_request=True))
        if not st.session_state.pop("_gen_request", False):
            busy = _queue().ahead()
            st.sidebar.caption("Choose the settings and press Generate; results are cached. "
                               f"One live generation runs at a time on this server, at most "
                               f"{MAX_GEN_SIZE} rollouts each; others wait in a queue"
                               + (f" ({busy} running or waiting now)." if busy else "."))
            _clear_source()
            return
        bar = st.sidebar.progress(0.0, text="Waiting for the generator...")
        try:
            def waiting(ahead: int) -> None:
                bar.progress(0.0, text=f"Queued: {ahead} live generation(s) ahead of yours "
                                       "(one runs at a time on this server)")

            with _queue().turn(waiting):
                bar.progress(0.0, text="Loading the model...")
                policy = _policy(str(state.MODELS_DIR / model), env)
                from crbc.policy.generate import generate_groups

                def progress(k: int, total: int) -> None:
                    bar.progress(k / max(total, 1), text=f"{k} of {total} rollouts finished")

                import torch

                torch.set_num_threads(1)  # leave the other core to everyone else's pages
                groups = server().kept("generated", params, lambda: generate_groups(
                    env, [int(seed)], int(size), policy, temperature=float(temp), progress=progress))
        except Exception as e:  # a broken checkpoint must not take the app down
            bar.empty()
            st.sidebar.error(f"Generation failed: {e}")
            _clear_source()
            return
        bar.empty()
    key = "gen:" + hashlib.sha1(repr(params).encode()).hexdigest()[:16]
    _set_source(Source(key, f"live {env} seed {seed} ({model})", groups), regex)


def sidebar(page: str | None = None) -> None:  # noqa: C901
    """The shared sidebar: data source, group and rollout pickers, estimator and its parameters.

    ``page`` is the current page's url path; on ``credits`` the parameters start expanded."""
    sb = st.sidebar
    widgets.layout_css()  # every page: nothing of Streamlit's own pushes a page sideways
    sb.header("Data")
    url.check_choice("source", list(SOURCES), "not a data source (sample, upload, generate, run)")
    url.check_choice("estimator", estimators.names(), "no estimator has that name")
    params.check_link()
    params.adopt_link()
    request = st.session_state.pop("_crbc_open_request", None)
    if request is not None:  # open_groups() / run_source.open_run() was called on the previous run
        st.session_state.update(request)
    st.session_state.pop("_crbc_run_view", None)
    source = sb.radio("Source", list(SOURCES), key="source", bind="query-params",
                      captions=list(SOURCES.values()))
    regex = anchor_key.key_field()
    anchor_key.similarity_field()  # read by every source as it is keyed (anchor_key.keyed)
    bad_key = anchor_key.check(regex)
    if bad_key:
        _source_error(bad_key)
    elif source == "upload":
        _upload_source(regex)
    elif source == "generate":
        _generate_source(regex)
    elif source == "run":
        _run_source(regex)
    else:
        _sample_source(regex)

    src = current_source()
    groups = src.groups if src else ()
    if src is not None:
        sb.markdown(f"Loaded: **{widgets.short(src.label, 120)}**")
        anchor_key.merge_line(src, regex)
        upload.upload_note(src)
    # the pickers vary by page (the lesson on its own group has none), the parameters do not: each
    # in its own container at a fixed place, so the parameter widgets keep their place in the
    # page on every page. A bound widget that moves is drawn anew by the browser, which then drops
    # its URL binding (the Lesson lost beta from the URL)
    pickers, params_box = sb.container(), sb.container()
    sb = pickers
    # the lesson on its own group (worked example, rare route) uses none of the pickers below
    start = st.session_state.get("lesson_start", st.query_params.get("lesson_start", "worked example"))
    lesson_own = page == "lesson" and start != "sidebar group"
    if lesson_own:
        for k in ("group", "rollout", "estimator"):  # keep the other pages' choices while hidden
            if k in st.session_state:
                st.session_state[k] = st.session_state[k]
        sb.caption("The lesson runs on its own group (*Start from* on the page); the group, "
                   "rollout and estimator pickers are for the other pages. The parameters "
                   "(folded below) apply here too.")
    if groups and not lesson_own:
        ids = [g.group for g in groups]
        if len(ids) > 1:
            url.check_choice("group", ids, "this source has no group of that name")
            drop_invalid("group", ids)
            if "group" not in st.session_state and "group" not in st.query_params:
                st.session_state["group"] = ids[showcase_group(groups)]
            sb.selectbox(f"Group ({len(ids)} in this file)", ids, key="group", bind="query-params",
                         help="A group is G rollouts of the same task; anchors are merged only "
                              "inside a group.")
        grp = groups[state.group_index(src)]
        n = len(grp)
        url.check_url("rollout", url.int_in(0, n - 1), f"this group has rollouts 0 to {n - 1}")
        drop_invalid("rollout", list(range(n)))
        r = sb.selectbox("Rollout", list(range(n)), key="rollout", bind="query-params",
                         help="Index of the rollout inside the group (0-based).")
        sb.caption(_rollout_label(grp, r))
        sb.caption(f"{widgets.short(grp.group, 120)}: {n} rollouts, {grp.n_steps} steps, "
                   f"{grp.success_rate:.0%} succeeded.")

    names = estimators.names()
    params.fold(params_box, expanded=page == "credits")
    params.write_link()
    if lesson_own:
        _upload_error(source)
        return
    sb.header("Estimator")
    drop_invalid("estimator", names)
    sb.selectbox("Estimator", names, key="estimator", bind="query-params",
                 index=names.index("crbc") if "crbc" in names else 0,
                 help="Used for the per-step credit on the Rollouts page.")
    chosen = st.session_state.get("estimator", "crbc")
    sb.caption(estimators.get(chosen if chosen in names else "crbc").summary)

    _upload_error(source)


def _upload_error(source: str) -> None:
    """A refused upload's report, on the page, until another file is loaded."""
    err = st.session_state.get("_crbc_error") if source == "upload" else None
    if err:
        st.sidebar.caption(":material/error: The last file was refused: see the message on the page.")
        st.error("**The uploaded file was refused; nothing was loaded.** Fix these lines and "
                 "upload it again:")
        widgets.pre(err)


def _rollout_label(grp: RolloutGroup, i: int) -> str:
    r = grp.rollouts[i]
    outcome = "success" if r.success and not r.truncated else ("truncated" if r.truncated else "failure")
    return f"rollout {r.rollout}: {len(r.steps)} steps, {outcome}"
