"""The sidebar's upload: crbc.rollout/1 files and the importers' inputs (step tables, other trainers' dumps).

:func:`upload_source` draws the format choice, the file uploader, the anchor regex and the
success threshold, reads the files all or nothing (``crbc.io.importers.read_uploads``; a
``crbc.rollout/1`` file through :func:`ui.state.load_upload`) and returns
``(Source | None, error | None)``; a run's Parquet iteration file (``iter-NNNN.parquet``) reads as
the crbc.rollout/1 groups it holds. The anchor key is the sidebar's (:mod:`ui.anchor_key`). A
refused upload's message names the file, row and column (``crbc.FormatError``), never a traceback. An import with several iterations keeps them all in
the session (``_crbc_imported``: key, label, {iteration: groups}) for the Training runs page; the
sidebar serves the chosen iteration.
"""

from __future__ import annotations

import hashlib
import re

import streamlit as st

from crbc.errors import FormatError
from crbc.io.anchor_keys import AnchorKeyError, rekey
from crbc.io.parquet_rollouts import read_parquet_rollouts
from crbc.io.runs import ITER_RE
from ui import state
from ui.state import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, Source

#: format key -> (label, file types, importer source or None for crbc.rollout/1)
FORMATS = {
    "rollout": ("crbc.rollout/1 (.jsonl), or a run's iteration file (iter-NNNN.parquet)", ["jsonl", "parquet"], None),
    "steps": ("step table (JSONL, CSV, Parquet)", ["jsonl", "csv", "parquet"], "steps"),
    "verl": ("verl rollout_data_dir dump ({step}.jsonl)", ["jsonl"], "verl"),
    "rllm": ("rLLM episode logs (.json)", ["json", "jsonl"], "rllm"),
    "art": ("ART trajectories (.parquet)", ["parquet"], "art"),
}


@st.cache_resource(show_spinner="Reading the upload...", max_entries=8)
def _imported(key: str, source: str, _files: dict[str, bytes], regex: str | None,
              threshold: float | None) -> dict:
    from crbc.io.importers import read_uploads

    return read_uploads(source, _files, anchor=regex, success_threshold=threshold)


def _read(kind: str, files: dict[str, bytes], regex: str | None, threshold: float | None,
          key: str) -> tuple[dict | None, str | None]:
    """``({iteration: groups}, None)`` or ``(None, message)``; nothing is half-loaded."""
    total = sum(len(d) for d in files.values())
    if total > MAX_UPLOAD_BYTES:
        return None, (f"{', '.join(files)}: {total / 2**20:.1f} MB in all; the limit is "
                      f"{MAX_UPLOAD_MB} MB. Split the upload.")
    if regex:
        try:
            re.compile(regex)
        except re.error as e:
            return None, f"anchor regex {regex!r}: not a regular expression ({e})"
    source = FORMATS[kind][2]
    try:
        if source is None:
            out: dict = {}
            for name, data in files.items():
                if name.endswith(".parquet"):  # a run's iteration (RunRecorder, crbc import)
                    groups = read_parquet_rollouts(name, data)
                else:
                    groups, err = state.load_upload(name, data)
                    if err:
                        return None, err
                out.setdefault(None, []).extend(rekey(groups, regex or None))
            return out, None
        return _imported(key, source, files, regex or None, threshold), None
    except (FormatError, AnchorKeyError, ValueError, OSError) as e:
        msg = str(e)
        if source is not None and any(ITER_RE.match(n) for n in files):
            msg += (" (a run's iteration file iter-NNNN: choose the format crbc.rollout/1, or open "
                    "its run folder as the source)")
        return None, msg


def upload_source(regex: str = "") -> tuple[Source | None, str | None]:
    """The upload widgets; ``(source, None)``, ``(None, None)`` (no file yet) or ``(None, error)``.
    ``regex``: the sidebar's anchor key (:mod:`ui.anchor_key`), applied while reading."""
    sb = st.sidebar
    kind = sb.selectbox("Format", list(FORMATS), key="upload_kind",
                        format_func=lambda k: FORMATS[k][0],
                        help="crbc.rollout/1, or what other trainers write (docs/FORMATS.md, "
                             "`python -m crbc import`): read the same way as the command.")
    label, types, source = FORMATS[kind]
    n = st.session_state.get("_upload_n", 0)
    ups = sb.file_uploader(f"Files ({', '.join('.' + t for t in types)}, at most {MAX_UPLOAD_MB} MB)",
                           type=types, accept_multiple_files=True, key=f"upload_file_{kind}_{n}",
                           max_upload_size=MAX_UPLOAD_MB)  # the widget's own "... MB per file" agrees
    with sb.expander("Success from the score", expanded=False):
        use_thr = source is not None and st.checkbox("Success from the score", key="upload_use_thr",
                                                     help="A rollout succeeds when its score is at "
                                                          "least the threshold (else: the file's success).")
        threshold = st.number_input("Success threshold", value=1.0, step=0.1, key="upload_thr",
                                    disabled=not use_thr) if source is not None else None
    if not ups:
        st.session_state.pop("_crbc_imported", None)
        sb.caption("crbc.rollout/1: one JSON object per line (group, steps, success). Step tables "
                   "and dumps: see docs/FORMATS.md.")
        return None, None
    files = {u.name: u.getvalue() for u in ups}
    digest = hashlib.sha1(b"".join(hashlib.sha1(d).digest() for d in files.values())).hexdigest()[:16]
    thr = float(threshold) if use_thr else None
    key = f"upload:{kind}:{digest}:{regex}:{thr}"
    imported, err = _read(kind, files, regex, thr, key)
    if err:
        st.session_state.pop("_crbc_imported", None)
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
    return Source(f"{key}#{it}", f"upload {shown}{suffix}", groups), None
