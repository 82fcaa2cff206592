"""The sidebar's upload: crbc.rollout/1 files and the importers' inputs (step tables, other trainers' dumps).

:func:`upload_source` draws the format choice, the file uploader, the anchor regex and the
success threshold, reads the files all or nothing and returns ``(Source | None, error | None)``;
a run's Parquet iteration file (``iter-NNNN.parquet``) reads as the crbc.rollout/1 groups it holds.
The anchor key is the sidebar's one field (:mod:`ui.core.anchor_key`), which also draws the merge line.
The read (``crbc.io.importers.read_uploads``, or the ``crbc.rollout/1`` reader), the anchor key
and the merge profile run in a worker process with a time and memory limit and the studio's
decoded-size budget (:mod:`crbc.jobs.upload`), with progress and a Cancel in the sidebar, so one
upload never stalls the other sessions. A refused upload's message names the file, row and
column (``crbc.FormatError``) or the budget, never a traceback. An import with several iterations keeps them all in
the session (``_crbc_imported``: key, label, {iteration: groups}) for the Training runs page; the
sidebar serves the chosen iteration. :func:`merge_line` is the line under the data source.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from crbc.io import budgets
from crbc.io.anchor_keys import RegexError, compile_regex
from crbc.io.importers import Importer, importers
from crbc.io.runs import ITER_RE
from crbc.jobs import upload as worker
from ui.core.context import UPLOAD_PREFIX, Keyed, owned_by_session
from ui.core.state import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, Source

NATIVE = "rollout"  #: the importer of crbc.rollout/1 and a run's iter-NNNN.parquet


def formats() -> dict[str, tuple[str, list[str], Importer]]:
    """Format key -> (label, file types, importer): every importer of
    :mod:`crbc.io.importers.registry` (the native ``rollout`` first), the list ``import`` reads."""
    return {i.name: (i.label, list(i.file_types), i) for i in importers()}


READ_LIMITS = worker.Limits(seconds=180.0, memory_bytes=1500 * budgets.MB, budget=budgets.STUDIO, cpu_seconds=60.0)


def _in_worker(source: Importer | None, files: dict[str, bytes], regex: str | None,
               threshold: float | None) -> worker.ReadResult:
    """Read, key and merge the files in a worker process (crbc.jobs.upload: time and memory
    limits, the studio's decoded-size budget) while the sidebar shows progress and a Cancel.
    Cancel (or leaving the page) reruns the script, which kills the worker in ``finally``."""
    shown = ", ".join(files) if len(files) <= 2 else f"{len(files)} files"
    slot = st.sidebar.empty()  # emptied at the end (a container's .empty() would add, not clear)
    box = slot.container()
    if box.button("Cancel reading", key="upload_cancel", icon=":material/cancel:"):
        return worker.ReadResult(error=f"{shown}: reading cancelled; nothing was loaded")
    bar = box.progress(0.0, text=f"Reading {shown}...")
    job = worker.start_read(source, files, regex, threshold, READ_LIMITS)
    try:
        while not job.poll(0.25):
            p = job.progress
            bar.progress(min(job.elapsed / READ_LIMITS.seconds, 1.0),
                         text=f"Reading {shown}: {p.get('rows', 0):,} rows, {budgets.mb(p.get('bytes', 0))} "
                              f"decoded ({job.elapsed:.0f} s of at most {READ_LIMITS.seconds:.0f} s)")
        return job.result()
    finally:
        job.cancel()
        slot.empty()


def _read(kind: str, files: dict[str, bytes], regex: str | None, threshold: float | None,
          key: str) -> tuple[dict | None, str | None]:
    """``({iteration: groups}, None)`` or ``(None, message)``; nothing is half-loaded. The result
    is kept in this session only (``_crbc_upload_read``: key, groups, merge
    profiles), never in a cache that every session shares."""
    held = st.session_state.get("_crbc_upload_read")
    if held is not None and held[0] == key:
        return held[1], None
    total = sum(len(d) for d in files.values())
    if total > MAX_UPLOAD_BYTES:
        return None, (f"{', '.join(files)}: {budgets.mb(total)} in all; the limit is "
                      f"{MAX_UPLOAD_MB} MB. Split the upload.")
    if regex:
        try:
            compile_regex(regex)
        except RegexError as e:
            return None, str(e)
    try:
        res = _in_worker(formats()[kind][2], files, regex or None, threshold)
    except Exception as e:  # noqa: BLE001 (never a traceback on the page: one line, no paths)
        return None, f"{', '.join(files)}: could not be read ({type(e).__name__}); nothing was loaded"
    if res.error:
        msg = res.error
        if kind != NATIVE and any(ITER_RE.match(n) for n in files):
            msg += (" (a run's iteration file iter-NNNN: choose the format crbc.rollout/1, or open "
                    "its run folder as the source)")
        return None, msg
    st.session_state["_crbc_upload_read"] = (key, res.groups, res.profiles or {})
    return res.groups, None


def upload_source(regex: str = "") -> tuple[Source | None, str | None]:
    """The upload widgets; ``(source, None)``, ``(None, None)`` (no file yet) or ``(None, error)``.
    ``regex``: the sidebar's anchor key (:mod:`ui.core.anchor_key`), applied while reading."""
    sb = st.sidebar
    choices = formats()
    kind = sb.selectbox("Format", list(choices), key="upload_kind",
                        format_func=lambda k: choices[k][0],
                        help="crbc.rollout/1, or what other trainers write (docs/FORMATS.md, "
                             "`python -m crbc import`): read the same way as the command.")
    label, types, source = choices[kind]
    n = st.session_state.get("_upload_n", 0)
    ups = sb.file_uploader(f"Files ({', '.join('.' + t for t in types)}, at most {MAX_UPLOAD_MB} MB)",
                           type=types, accept_multiple_files=True, key=f"upload_file_{kind}_{n}",
                           max_upload_size=MAX_UPLOAD_MB)  # the widget's own "... MB per file" agrees
    with sb.expander("Success from the score", expanded=False):
        use_thr = source.takes_threshold and st.checkbox("Success from the score", key="upload_use_thr",
                                                     help="A rollout succeeds when its score is at "
                                                          "least the threshold (else: the file's success).")
        threshold = st.number_input("Success threshold", value=1.0, step=0.1, key="upload_thr",
                                    disabled=not use_thr) if source.takes_threshold else None
    if not ups:
        st.session_state.pop("_crbc_imported", None)
        st.session_state.pop("_crbc_upload_read", None)
        sb.caption("crbc.rollout/1: one JSON object per line (group, steps, success). Step tables "
                   "and dumps: see docs/FORMATS.md.")
        return None, None
    files = {u.name: u.getvalue() for u in ups}
    digest = hashlib.sha1(b"".join(hashlib.sha1(d).digest() for d in files.values())).hexdigest()[:16]
    thr = float(threshold) if use_thr else None
    key = f"{UPLOAD_PREFIX}{kind}:{digest}:{regex}:{thr}"
    imported, err = _read(kind, files, regex, thr, key)
    if err:
        st.session_state.pop("_crbc_imported", None)
        st.session_state.pop("_crbc_upload_read", None)
        return None, err
    its = sorted(imported, key=lambda i: (i is None, i if i is not None else 0))
    shown = ", ".join(files) if len(files) <= 2 else f"{len(files)} files"
    if len(its) > 1:
        st.session_state["_crbc_imported"] = (key, f"upload {shown}", {i: imported[i] for i in its})
        it = sb.selectbox(f"Iteration ({len(its)} in the upload)", its, key="upload_iter",
                          help="The Training runs page reviews every iteration.")
    else:
        st.session_state.pop("_crbc_imported", None)
        it = its[0]
    groups = imported[it]
    if not groups:
        return None, f"{shown}: no rollouts in the upload"
    suffix = "" if it is None or len(its) == 1 else f" iteration {it}"
    src = Source(f"{key}#{it}", f"upload {shown}{suffix}", groups)
    profile = st.session_state["_crbc_upload_read"][2].get(it)
    if profile is not None:  # the worker's merge profile: the sidebar's merge line needs no merge here
        Keyed.of(src.key).kept("profile", (), lambda: profile)
    return src, None


_ICONS = {"error": ":material/error:", "warning": ":material/warning:", "info": ":material/info:"}


def upload_note(src) -> None:
    """The sidebar's review of an uploaded file (one iteration): the doctor's warnings and
    errors, one line each, the message on hover; nothing when every check is silent."""
    if src is None or not owned_by_session(src.key):
        return
    from ui.core import bounded

    try:
        out = bounded.findings(Keyed.of(src.key), ("source",), src.groups, label="the advantage doctor on this file")
    except ValueError as e:
        st.sidebar.caption(f"The advantage doctor could not examine this file: {e}")
        return
    if isinstance(out, bounded.Refused):
        st.sidebar.caption(out.message)
        return
    found = [f for f in out if f.serious]
    for f in found:
        st.sidebar.warning(f"Advantage doctor: **{f.check}** ({f.severity}) on {f.rows} rows, e.g. "
                           f"{'; '.join(map(str, f.examples))}. {f.message}", icon=_ICONS[f.severity])
