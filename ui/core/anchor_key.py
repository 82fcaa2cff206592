"""The anchor key of every data source: one sidebar field, the merge line under it, the warning.

The field (``anchor_key``, bound to the URL) holds a regex; empty means the exact text. It applies
to whatever the sidebar loaded: a shipped sample, a live group, a run folder's iteration (through
:func:`keyed`, i.e. :func:`crbc.io.anchor_keys.rekey`: each anchor becomes the last match of the
regex, its first group if it has one), and an upload (the importers take it themselves, so a
refused row is named by file and row). The pattern is anyone's input (a link carries it), so
:func:`check` bounds its size and nesting before anything runs, and :func:`keyed` keys in a worker
process under an upload's budgets (:mod:`crbc.jobs.keying`), never on the server's interpreter;
every ending is a notice quoting at most 60 characters of the pattern; at most :data:`AT_ONCE`
keyings run at once on the server, others wait for a place. The keyed groups are kept
per session (:data:`KEEP` of them, by source and pattern), so a rerun never keys twice. :func:`merge_line` shows, under the source, the
:class:`crbc.process.MergeProfile` of the keyed groups ("anchors, steps at shared
anchors, steps beyond the first at shared anchors") and warns when almost nothing beyond the
first step merges.
"""

from __future__ import annotations

import hashlib
import threading
import time

import streamlit as st

from crbc.io.anchor_keys import SHOWN_CHARS, RegexError, compile_regex, effective_key, key_to_apply, shown
from crbc.jobs.keying import KeyJob
from crbc.process import MergeProfile, merge_profile
from ui.core import widgets
from ui.core.context import Keyed, NotKept
from ui.core.state import Source
from ui.core.widgets import code, text

KEY = "anchor_key"
SIM_KEY = "anchor_similarity"
SIM_HELP = ("Merge similar observations as verl-agent's GiGPO does (`enable_similarity`, "
            "`similarity_thresh`): within a group, a step joins the first anchor whose first "
            "observation has difflib ratio >= TAU with its own (after the anchor key above). "
            "0 < TAU < 1, e.g. 0.9. Empty: no merging. A merge buys shared anchors and pays with "
            "bias: two different states averaged as one.")
EXAMPLE = r"(?s)(Current Board:.*?)(?:Available Moves|$)"
HELP = ("Observations that carry their history never repeat, so their rollouts never merge. The "
        "key of each observation is then the **last** match of this regex (its first group if it has "
        "one), e.g. `Current state:(.*)$`. Empty: the exact text. Applies to every source: samples, "
        "uploads, imports, run folders, live groups.")


def key_field() -> str:
    """The sidebar's anchor-key field; its text, stripped ("" for the exact text)."""
    return st.sidebar.text_input("Anchor key (regex, optional)", key=KEY, bind="query-params",
                                 placeholder="exact text", help=HELP).strip()


def similarity_field() -> float | None:
    """The sidebar's anchor-similarity field: TAU, or None when empty; a value outside (0, 1)
    is said under the field and nothing is merged."""
    from crbc.io.similarity import SimilarityError, check_similarity

    raw = st.sidebar.text_input("Anchor similarity TAU (optional)", key=SIM_KEY, bind="query-params",
                                placeholder="off (e.g. 0.9)", help=SIM_HELP).strip()
    if not raw:
        return None
    try:
        return check_similarity(raw, "Anchor similarity")
    except SimilarityError as e:
        st.sidebar.error(text(str(e)), icon=":material/error:")
        return None


def similarity() -> float | None:
    """The TAU the sidebar holds now (None: off or not a valid TAU), for sources keyed later
    (a run's other iterations)."""
    from crbc.io.similarity import SimilarityError, check_similarity

    raw = str(st.session_state.get(SIM_KEY) or "").strip()
    try:
        return check_similarity(raw) if raw else None
    except SimilarityError:
        return None


def check(regex: str) -> str | None:
    """None when ``regex`` is usable as an anchor key, else a one-line message quoting at most its
    start: too long, nested too deep (checked before compiling), or refused by RE2."""
    if not regex:
        return None
    try:
        compile_regex(regex, "The anchor key")
    except Exception as e:  # RegexError, or the regex engine's own error: never a traceback
        return text(str(e).splitlines()[0] if str(e) else f"The anchor key: refused ({type(e).__name__})")
    return None


def quoted(regex: str) -> str:
    """A pattern as Markdown shows it exactly: a code span of at most 60 characters (then its start
    and its length)."""
    if len(regex) <= SHOWN_CHARS:
        return code(regex)
    return f"{code(regex[:SHOWN_CHARS - 20] + '…')} ({len(regex):,} characters)"


AT_ONCE = 2  #: keying workers the whole server runs at once (every tab of every session together)
WAIT_S = 60.0  #: how long a keying waits for a free worker before it says the server is busy
_SLOTS = threading.BoundedSemaphore(AT_ONCE)


def _in_worker(groups: tuple, regex: str, tau: float | None = None) -> tuple[list | None, str | None]:
    """Key ``groups`` in a worker (crbc.jobs.keying) once one of the server's :data:`AT_ONCE`
    places is free, showing the wait and the time; a rerun (leaving the page, another choice)
    interrupts the wait and the worker is killed in ``finally``."""
    slot = st.empty()
    waited = time.monotonic()
    while not _SLOTS.acquire(timeout=0.25):
        if time.monotonic() - waited > WAIT_S:
            slot.empty()
            return None, (f"the server is busy keying for others ({AT_ONCE} at a time); nothing was keyed, "
                          "try again in a minute")
        slot.caption(f"Waiting for a keying worker ({AT_ONCE} at a time on this server)...")
    job = None
    try:
        job = KeyJob(groups, regex, similarity=tau)
        while not job.poll(0.25):
            what = (f"the anchor key {shown(regex)}" if regex else "") + (
                f"{' and ' if regex else ''}similarity {tau:g}" if tau is not None else "")
            slot.caption(f"Applying {what} in a worker ({job.elapsed:.0f} s of at "
                         f"most {job.limits.seconds:.0f} s)...")
        return job.result()
    except RegexError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 (never a traceback on the page)
        return None, f"the anchor key could not be applied ({type(e).__name__})"
    finally:
        if job is not None:
            job.cancel()
        _SLOTS.release()
        slot.empty()


def keyed(src: Source, regex: str, tau: float | None | str = "sidebar") -> tuple[Source | None, str | None]:
    """``src`` with every anchor keyed by ``regex`` and then merged at similarity ``tau`` (the
    sidebar's by default; ``(src, None)`` when both are empty), or ``(None, message)``: a bad
    regex, a budget, or a step it does not match (named by group, rollout, step). Keyed in a
    worker; the outcome, refusals too, kept for this session."""
    if tau == "sidebar":
        tau = similarity()
    if not regex and tau is None:
        return src, None
    err = check(regex)
    if err:
        return None, err
    def build() -> tuple[Source | None, str | None]:
        groups, err = _in_worker(src.groups, regex, tau)
        if err:
            if err.endswith(("cancelled; nothing was keyed", "try again in a minute")):
                raise NotKept((None, text(f"Anchor key: {err}")))  # the next rerun tries again
            return None, text(f"Anchor key: {err}")
        tag = hashlib.sha1(f"{regex}\x00{tau}".encode()).hexdigest()[:10]
        return Source(f"{src.key}|key:{tag}", src.label, tuple(groups), src.recorded_key, private=src.private), None

    # what a user typed is theirs: the outcome is kept in this session only
    return Keyed(src.key, private=True).kept("keyed", (regex, tau), build)


def profile(src: Source) -> MergeProfile:
    """The merge profile of a source (kept by its context)."""
    groups = list(src.groups)
    return Keyed(src.key, bool(src.private)).kept("profile", (), lambda: merge_profile(groups))


def used(src: Source | None, regex: str) -> str:
    """The key the source's anchors are keyed with: the sidebar's ``regex``, or the key a run was
    recorded with when the field is empty or holds that key (:func:`crbc.io.anchor_keys.effective_key`)."""
    return effective_key(regex, src.recorded_key if src is not None else "")


def to_apply(src: Source, regex: str) -> str:
    """The regex still to apply to ``src``: "" when its anchors already carry it (a run recorded
    with that key, :func:`crbc.io.anchor_keys.key_to_apply`)."""
    return key_to_apply(regex, src.recorded_key)


def merge_line(src: Source, regex: str) -> None:
    """Under the data source: the merge line, which key made it when the run was recorded with
    one, and a warning when almost nothing beyond the first step merges (every credit after step
    0 would be 0)."""
    mp = profile(src)
    key = used(src, regex)
    recorded = src.recorded_key and key == src.recorded_key
    tau = similarity()
    st.sidebar.caption(mp.line() + (" · anchors keyed when the run was recorded, with "
                                    f"{widgets.code(src.recorded_key)} (run.json)" if recorded else "")
                       + (f" · similar observations merged at difflib ratio >= {tau:g}" if tau is not None else ""))
    if mp.merges_nothing:
        what = f"The key {quoted(key)} merges" if key else "Exact text merges"
        st.sidebar.warning(f"{what} almost nothing beyond the first step ({mp.later_share:.0%} of "
                           "later steps at shared anchors), so every step credit after step 0 is "
                           "about 0. If the observations carry their history, set an anchor key "
                           "above: a regex whose last match is the current state.",
                           icon=":material/call_split:")
