"""The studio's side of the server's job queue (:mod:`crbc.jobs.jobqueue`): who asks, and a
run's audit asked for, waited for and ended.

:func:`owner` names the person behind a session: every tab of one browser shares Streamlit's XSRF
cookie, whose token (the cookie's masked value decoded) is the same in all of them; without the
cookie (a script, a test) each session is its own owner. A queue that gives each owner one live
job gives every student a fair share however many tabs they open.

:func:`ask_audit` queues a run's audit under an anchor key; the worker writes it to the studio's
cache keyed by the run's files and the key (:func:`crbc.io.audit_reader.keyed_cache`), never
into the run's folder (a shared run's ``audit.parquet`` is not one session's, and students never
write into ``sample_rollouts/runs``). The page's fragment calls :func:`waiting` once a second,
the heartbeat; while it beats, or while the session's tab is still connected (it went on to
another page), the job lives; a closed tab ends it within the queue's heartbeat time.
"""

from __future__ import annotations

import binascii
import hashlib
import uuid
from pathlib import Path

import streamlit as st

from crbc.io.audit_reader import keyed_cache
from crbc.jobs.jobqueue import JobQueue, Ticket, server_queue

XSRF_COOKIE = "_streamlit_xsrf"
_HELD = "_audit_job"


def _token(cookie: str) -> bytes:
    """The token of an XSRF cookie: version 2 is ``2|mask|masked|time`` (the token XOR the mask,
    a new mask per response); version 1 is the token itself."""
    value = cookie.strip("\"'")
    if value.startswith("2|"):
        try:
            _, mask, masked, _ = value.split("|")
            m, x = binascii.a2b_hex(mask), binascii.a2b_hex(masked)
            return bytes(a ^ b for a, b in zip(x, m * (len(x) // max(len(m), 1) + 1), strict=False))
        except (ValueError, binascii.Error):
            return value.encode()
    return value.encode()


def session_id() -> str:
    """This session's (tab's) id: a random one kept in its state (the runtime's own id is one
    constant under AppTest)."""
    return st.session_state.setdefault("_crbc_session_id", uuid.uuid4().hex)


def owner() -> str:
    """Who asks: a digest of the browser's XSRF token (shared by its tabs), else this session."""
    try:
        cookie = st.context.cookies.get(XSRF_COOKIE)
    except Exception:  # noqa: BLE001 (no request context: a test, bare mode)
        cookie = None
    if isinstance(cookie, str) and cookie:
        return "browser:" + hashlib.sha256(_token(cookie)).hexdigest()[:16]
    return "session:" + session_id()


def address() -> str | None:
    """The asking browser's network address (None on loopback, in a test, in bare mode)."""
    try:
        return st.context.ip_address
    except Exception:  # noqa: BLE001 (no request context)
        return None


def _connection():
    """A check that this session's tab is still connected to the server (Streamlit's runtime
    knows; None outside a server, e.g. under AppTest: then the heartbeat alone decides)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    runtime, sid = Runtime.instance(), ctx.session_id
    return lambda: runtime.is_active_session(sid)


def queue() -> JobQueue:
    return server_queue()


def ask_audit(view_key: str, folder: Path, regex: str, bootstrap: int, apply: str | None = None) -> str | None:
    """Queue the audit of ``folder`` under ``regex`` for this session (kept in its state); None,
    or the line saying why not (another tab of this person has a job). ``apply``: the key still to
    apply to the run's anchors (default ``regex``; "" for a run recorded with that key already)."""
    from crbc.run_analysis.audit_job import start_audit

    out = keyed_cache(folder, regex)
    q = queue()

    def start():
        out.parent.mkdir(parents=True, exist_ok=True)
        return start_audit(folder, bootstrap=bootstrap, anchor=regex if apply is None else apply, out=out)

    ticket, why = q.submit(owner(), session_id(), (str(folder), regex), f"the audit of {folder.name}", start,
                           done_already=out.is_file, connected=_connection(), address=address())
    if ticket is None:
        return why
    st.session_state[_HELD] = (view_key, regex, ticket)
    return None


def held(view_key: str, regex: str) -> Ticket | None:
    """This session's audit ticket for the run and key, if any."""
    h = st.session_state.get(_HELD)
    return h[2] if h is not None and h[:2] == (view_key, regex) else None


def waiting(ticket: Ticket) -> None:
    """The heartbeat: this session still waits for ``ticket``."""
    queue().beat(ticket)


def cancel(ticket: Ticket) -> str:
    """Cancel ``ticket``; the line to show."""
    queue().cancel(ticket)
    st.session_state.pop(_HELD, None)
    return (ticket.outcome or {}).get("error", f"{ticket.what}: cancelled")


def forget() -> None:
    st.session_state.pop(_HELD, None)
