"""Runs uploaded as ``.zip`` archives on Training runs: read in a worker, kept in the session.

:func:`uploaded_run` reads an archive with :mod:`crbc.jobs.run_archive` (a worker process with
the studio's budgets: ``READ_LIMITS`` of :mod:`ui.core.upload`) while the page shows which iteration
it is validating and a Cancel button, then keeps the run in this session only
(``st.session_state["_crbc_run_archives"]``, by content hash, at most ``KEEP`` archives): an
upload never enters a cache that every session shares.
"""

from __future__ import annotations

import hashlib

import streamlit as st

import crbc.io.runs as R
from crbc.jobs.run_archive import ArchiveJob
from ui.core.context import UPLOAD_PREFIX, Keyed, NotKept
from ui.core.upload import READ_LIMITS


def uploaded_run(name: str, data: bytes) -> tuple[str, R.Run | None, str | None]:
    """``(key, run, None)`` or ``(key, None, message)`` for an uploaded archive; ``key`` is
    ``upload:<content hash>`` (so what the pages compute from it stays in the session too,
    :mod:`ui.core.context`)."""
    key = UPLOAD_PREFIX + hashlib.sha1(data).hexdigest()[:16]

    def build() -> tuple[R.Run | None, str | None]:
        run, err = _read(name, data)
        if err and err.endswith("cancelled; nothing was loaded"):
            raise NotKept((None, err))  # the next rerun may read it again
        return run, err

    run, err = Keyed.of(key).kept("run", ("archive",), build)  # an upload's: kept in its session
    return key, run, err


def _read(name: str, data: bytes) -> tuple[R.Run | None, str | None]:
    slot = st.empty()  # emptied at the end: the button and the bar go (a container's .empty() adds, not clears)
    box = slot.container()
    if box.button(f"Cancel reading {name}", key=f"runs_upload_cancel_{name}", icon=":material/cancel:"):
        return None, f"{name}: cancelled; nothing was loaded"
    bar = box.progress(0.0, text=f"Reading {name}...")
    job = ArchiveJob(name, data, READ_LIMITS)
    try:
        while not job.poll(0.25):
            p = job.progress
            share = p.get("iteration", 0) / max(p.get("of", 1), 1)
            bar.progress(min(share, 1.0), text=f"Reading {name}: iteration {p.get('iteration', 0)} of "
                                                f"{p.get('of', '?')} validated ({job.elapsed:.0f} s)")
        return job.result()
    except Exception as e:  # noqa: BLE001 (never a traceback on the page)
        return None, f"{name}: could not be read ({type(e).__name__}); nothing was loaded"
    finally:
        job.cancel()
        slot.empty()
