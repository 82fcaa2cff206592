"""A run folder as the sidebar's data source: where runs are looked for, which paths a link may
open, the run and iteration pickers, and the run's view for the Training runs page.

Allowed roots (:func:`roots`): ``sample_rollouts/runs`` (the samples folder's ``runs``),
``./runs`` (the folder the studio was started from), and every folder in the environment variable
``CRBC_RUNS_DIRS`` (``os.pathsep``-separated; ``studio.py --runs-dir DIR`` sets it). A run is named
in the URL by its path (relative to the repository when it is inside it, else absolute), and a
path is opened only when it resolves, symlinks followed, to a folder holding ``run.json`` under
one of the roots: a link never opens any other server path. The path field takes the same rule.
A path longer than any file system takes (:data:`MAX_PATH_CHARS`, or a folder name beyond 255
bytes) is refused as such, before the operating system is asked, and messages quote at most
80 characters of it.

:func:`run_source` draws ``run`` (kept in the URL as the run's path, and shown by its run.json
name: :func:`labels`), the path field and ``run_iter`` (bound), and
returns the chosen iteration's groups keyed by the anchor key as a :class:`ui.core.state.Source`;
:func:`run_view` is what the Training runs page reviews (a run folder, or an upload that carries
several iterations).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import crbc.io.runs as R
from crbc.errors import FormatError, path_limit_reason
from crbc.io.anchor_keys import effective_key, key_to_apply, recorded_key
from ui.core import anchor_key, state, url, widgets
from ui.core.context import Source, server

ENV = "CRBC_RUNS_DIRS"
OPENED = "(a .zip run opened from Training runs)"  #: a run that lives only in this session


def roots() -> list[Path]:
    """The folders runs may be opened from (module docstring), resolved, without repeats."""
    cands = [state.SAMPLES_DIR / "runs", Path.cwd() / "runs", state.ROOT / "runs"]
    cands += [Path(p).expanduser() for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    out: list[Path] = []
    for c in cands:
        r = c.resolve()
        if r not in out:
            out.append(r)
    return out


def roots_text() -> str:
    """The roots as people read them, for messages."""
    return ", ".join(f"`{value(r)}`" for r in roots())


def value(path: Path) -> str:
    """The URL text of a path: relative to the repository when inside it, else absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(state.ROOT))
    except ValueError:
        return str(p)


MAX_PATH_CHARS = 1024  #: the longest run path a field or a link may name (Linux: 4,096; a name: 255)


def too_long(text: str) -> bool:
    """A path no file system takes (longer than :data:`MAX_PATH_CHARS`, or a part beyond 255
    bytes): said as such, before the operating system refuses it with ``OSError``."""
    return len(text) > MAX_PATH_CHARS or any(len(part.encode(errors="replace")) > 255 for part in text.split("/"))


def shown(text: str) -> str:
    """A path as a message quotes it: at most 80 characters."""
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text):,} characters)"


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def resolve(text: str) -> Path | None:
    """The run folder that ``text`` names, when it is under an allowed root and holds run.json."""
    if not text or "\x00" in text or too_long(text):
        return None
    p = Path(text).expanduser()
    try:
        p = (p if p.is_absolute() else state.ROOT / p).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if not any(p == r or p.is_relative_to(r) for r in roots()):
        return None
    return p if _is_file(p / R.RUN_FILE) else None


def _found(root_list: tuple[str, ...]) -> list[str]:
    """The runs under the roots (listed again at most every 30 s)."""
    return server().kept("listing", ("found", root_list), lambda: _find(root_list))


def _find(root_list: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for r in root_list:
        for p in R.find_runs(r):
            v = value(p)
            if v not in out:
                out.append(v)
    return out


def found() -> list[str]:
    """The runs under the roots: the user's own (``./runs``, ``CRBC_RUNS_DIRS``) first, then the samples."""
    rs = roots()
    return _found(tuple(str(r) for r in rs[1:] + rs[:1]))


def _labels(options: tuple[str, ...]) -> dict[str, str]:
    """Each run's picker text (read again at most every 30 s)."""
    return server().kept("listing", ("labels", options), lambda: _read_labels(options))


def _read_labels(options: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in options:
        p = resolve(v)
        try:
            lab = R.run_label(R.read_meta(p), str(p)) if p is not None else shown(v)
        except R.RunFormatError:
            lab = shown(v)
        if lab in out.values():  # two runs of one name (the same experiment twice): their paths tell them apart
            lab = f"{lab} ({shown(v)})"
        out[v] = lab
    return out


def labels(options: list[str]) -> dict[str, str]:
    """The picker's text of each run (a path, as the URL names it): its run.json name, project/
    experiment and seed (:func:`crbc.io.runs.run_label`), never a path cut short (issue 55.1);
    a name two runs share gets the path after it."""
    return _labels(tuple(o for o in options if o != OPENED))


def stamp(path: Path) -> float:
    """When the run last changed (its metrics file; a run still being recorded is re-read)."""
    p = path / R.METRICS_FILE
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def read(path: str, when: float) -> R.Run:
    """The run folder ``path`` on the server as it was at ``when`` (its metrics' time)."""
    return server().kept("run", ("folder", path, when), lambda: R.read_run(path))


def _iteration(path: str, when: float, iteration: int, run: R.Run) -> tuple:
    return server().kept("iteration", (path, when, iteration), lambda: tuple(run.rollouts(iteration)),
                         spinner="Reading the iteration...")


def _as_keyed(groups: tuple, regex: str, recorded: str) -> tuple:
    """A keyed run's groups as another key needs them: their anchors back to the transcripts the
    recorder kept (:func:`crbc.io.runs.transcripts`) when ``regex`` is not the recorded key, so
    the new key reads the whole text (the report does the same)."""
    if recorded and key_to_apply(regex, recorded):
        return tuple(R.transcripts(list(groups)))
    return groups


def _mark(regex: str, recorded: str) -> str:
    """What a source key adds when its groups are the kept transcripts (:func:`_as_keyed`), so
    nothing cached under the stored anchors is taken for them."""
    return "~transcripts" if recorded and key_to_apply(regex, recorded) else ""


@dataclass(frozen=True, eq=False)
class RunView:
    """A run the Training runs page reviews. key: cache key; label: for people; iterations: those
    with rollouts; iter_key: the sidebar widget that chooses the iteration; folder: the run folder
    (None for an upload); metrics: the trainer's metrics by iteration; groups(i): iteration i's
    groups under the sidebar's anchor key (may raise FormatError, OSError, KeyError, ValueError);
    recorded_key: the key the run's anchors were recorded with (run.json ``config.anchor_key``)."""

    key: str
    label: str
    iterations: tuple[int, ...]
    iter_key: str
    folder: Path | None
    metrics: dict
    groups: Callable[[int], tuple]
    recorded_key: str = ""


def run_view() -> RunView | None:
    """The view the sidebar set on this run (None: the source is not a run)."""
    return st.session_state.get("_crbc_run_view")


def _why_not(v: str) -> str:
    if v == OPENED:
        return "a run uploaded as a .zip lives only in the session that uploaded it"
    if too_long(v):
        if len(v) > MAX_PATH_CHARS:
            return (f"a path of {len(v):,} characters is longer than any run folder's (at most "
                    f"{MAX_PATH_CHARS:,} characters)")
        return path_limit_reason(v) or f"a path of {len(v):,} characters names no run folder"
    return (f"not a run folder under the studio's run folders ({roots_text()}); a link never "
            "opens other paths on the server (start the studio with --runs-dir to add a folder)")


def _typed() -> None:
    """The path field's callback: a folder under the roots becomes the chosen run."""
    text = st.session_state.get("run_path", "").strip()
    st.session_state.pop("_run_path_error", None)
    if not text:
        return
    p = None
    if not too_long(text):
        here = Path.cwd() / Path(text).expanduser()
        try:
            local = not Path(text).expanduser().is_absolute() and here.exists()
        except (OSError, ValueError):
            local = False
        p = resolve(str(here) if local else text)
    if p is None:
        st.session_state["_run_path_error"] = f"{shown(text)}: {_why_not(text)}."
        return
    st.session_state["run"] = value(p)
    st.session_state.pop("run_iter", None)


def _picker_options(opened) -> list[str]:
    """The run picker's options (the runs found, a run given by path or link, the opened run),
    with the link's run checked and, the first time, put into the picker.

    The picker is not bound to the URL: a bound widget with a format_func writes its *label* into
    the link, and ``run=`` stays the run's path (links of before, run= repeated for Compare, the
    CLI's paths). The link's value (the last run=, as the comparison expects) seeds the picker, the
    choice is written back by the caller, and it outlives a page that draws no sidebar."""
    options = found()
    chosen = st.session_state.get("run", st.query_params.get("run"))
    if chosen and chosen not in options and chosen != OPENED and resolve(chosen) is not None:
        options = [chosen] + options  # a run folder given by path or link, found since
    if opened is not None:
        options = options + [OPENED]
    url.check_url("run", lambda v: v in options, _why_not(str(st.query_params.get("run"))))  # quotes 40 characters
    url.drop_invalid("run", options)
    linked = st.query_params.get_all("run")
    if "run" not in st.session_state and linked and linked[-1] in options:
        st.session_state["run"] = linked[-1]
    return options


def run_source(regex: str) -> tuple[Source | None, str | None]:  # noqa: C901
    """The run widgets; ``(source, None)``, ``(None, None)`` (no run chosen) or ``(None, message)``."""
    sb = st.sidebar
    st.session_state.pop("_crbc_run_view", None)
    opened = st.session_state.get("_crbc_opened")
    options = _picker_options(opened)
    names = labels(options)
    pick = sb.selectbox(f"Run ({len(options)} found)", options, index=None, key="run", persist_state="session",
                        format_func=lambda v: names.get(v, v),
                        placeholder="choose a run folder",
                        help=f"Run folders (crbc.run/1: RunRecorder, `crbc import`, `crbc train`) under "
                             f"{roots_text()}. Add a folder with `studio.py --runs-dir DIR` or the "
                             f"{ENV} variable.")
    sb.text_input("…or a run folder's path", key="run_path", on_change=_typed,
                  placeholder="runs/my-sokoban-run", help="A folder under the run folders above.")
    if err := st.session_state.get("_run_path_error"):
        sb.error(err)
    linked = st.query_params.get_all("run")
    if pick is not None and (not linked or linked[-1] != pick):
        st.query_params["run"] = pick  # the shared link names the run by its path
    if pick is None:
        sb.info(f"Choose a run folder: the runs under {roots_text()} are listed above.")
        return None, None
    if pick == OPENED:
        return opened, None
    path = resolve(pick)
    if path is None:
        return None, f"{shown(pick)}: {_why_not(pick)}."
    when = stamp(path)
    try:
        run = read(str(path), when)
    except (FormatError, OSError) as e:
        return None, f"The run could not be read: {e}"
    sb.caption(f"**{widgets.text(run.label)}**: {len(run.metrics)} iterations logged, "  # its name, not a cut-off path
               f"{len(run.iterations_with_rollouts)} with rollouts")
    its = list(run.iterations_with_rollouts)
    if not its:
        return None, f"{pick}: this run holds no rollouts (rollouts/ is empty)."
    url.check_url("run_iter", url.one_of(its), f"this run has iterations {its[0]} to {its[-1]}")
    url.drop_invalid("run_iter", its)
    it = sb.selectbox(f"Iteration ({len(its)} in the run)", its, key="run_iter",
                      bind="query-params", help="Every iteration at once: the Training runs page.")
    base = f"run:{hashlib.sha1(str(path).encode()).hexdigest()[:16]}:{when}"
    recorded = recorded_key(run.meta)

    def groups(i: int) -> tuple:
        src = Source(f"{base}#{i}{_mark(regex, recorded)}", "", _as_keyed(_iteration(str(path), when, i, run), regex, recorded), recorded)
        out, err = anchor_key.keyed(src, anchor_key.to_apply(src, regex))
        if err:
            raise ValueError(err)
        return out.groups

    st.session_state["_crbc_run_view"] = RunView(
        base + f"|{effective_key(regex, recorded)}", f"run {run.label}", tuple(its), "run_iter", path,
        {m["iteration"]: m for m in run.metrics}, groups, recorded)
    try:
        raw = _as_keyed(_iteration(str(path), when, it, run), regex, recorded)
    except (FormatError, OSError, KeyError) as e:
        return None, f"Iteration {it} could not be read: {e}"
    return Source(f"{base}#{it}{_mark(regex, recorded)}", f"run {run.label} · iteration {it}", raw, recorded), None


def open_run(folder: Path, iteration: int, group: str) -> None:
    """Ask the sidebar to open ``folder``'s ``iteration`` on ``group`` on its next run (then
    switch page): the choice lands in the URL like any other."""
    st.session_state["_crbc_open_request"] = {"source": "run", "run": value(folder), "run_iter": int(iteration),
                                              "group": group, "rollout": 0}


def open_groups(source: Source, group_index: int = 0) -> None:
    """Make ``source`` (an iteration of a run uploaded as a .zip, which has no folder to name in
    a link) the current source of every page, with group ``group_index`` chosen. Call it from a
    page, then switch page: the sidebar applies the request on the next run (source "run", the
    run picker's session-only entry). A run folder opens with :func:`open_run`."""
    st.session_state["_crbc_opened"] = source
    st.session_state["_crbc_open_request"] = {"source": "run", "run": OPENED,
                                              "group": source.groups[group_index].group, "rollout": 0}
