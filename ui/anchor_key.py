"""The anchor key of every data source: one sidebar field, the merge line under it, the warning.

The field (``anchor_key``, bound to the URL) holds a regex; empty means the exact text. It applies
to whatever the sidebar loaded: a shipped sample, a live group, a run folder's iteration (through
:func:`keyed`, i.e. :func:`crbc.io.anchor_keys.rekey`: each anchor becomes the last match of the
regex, its first group if it has one), and an upload (the importers take it themselves, so a
refused row is named by file and row). :func:`merge_line` shows, under the source, the
:class:`crbc.explain.merge_profile.MergeProfile` of the keyed groups ("anchors, steps at shared
anchors, steps beyond the first at shared anchors") and warns when almost nothing beyond the
first step merges.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from crbc.explain.merge_profile import MergeProfile, merge_profile
from crbc.io.anchor_keys import AnchorKeyError, anchor_key, effective_key, key_to_apply, rekey
from ui import widgets
from ui.session_memo import memo
from ui.state import Source

KEY = "anchor_key"
EXAMPLE = r"(?s)(Current Board:.*?)(?:Available Moves|$)"
HELP = ("Observations that carry their history never repeat, so their rollouts never merge. The "
        "key of each observation is then the **last** match of this regex (its first group if it has "
        "one), e.g. `Current state:(.*)$`. Empty: the exact text. Applies to every source: samples, "
        "uploads, imports, run folders, live groups.")


def key_field() -> str:
    """The sidebar's anchor-key field; its text, stripped ("" for the exact text)."""
    return st.sidebar.text_input("Anchor key (regex, optional)", key=KEY, bind="query-params",
                                 placeholder="exact text", help=HELP).strip()


def check(regex: str) -> str | None:
    """None when ``regex`` is usable as an anchor key, else a one-line message naming it."""
    if not regex:
        return None
    try:
        anchor_key(regex)
    except Exception as e:  # re.error, or the regex engine's own error: never a traceback
        return widgets.text(f"Anchor key {regex!r}: not a regular expression ({str(e).splitlines()[0]})")
    return None


@memo(max_entries=16, show_spinner="Applying the anchor key...")
def _rekeyed(key: str, regex: str, _groups: tuple) -> tuple:
    return tuple(rekey(list(_groups), regex))


def keyed(src: Source, regex: str) -> tuple[Source | None, str | None]:
    """``src`` with every anchor keyed by ``regex`` (``(src, None)`` when it is empty), or
    ``(None, message)``: a bad regex, or a step it does not match (named by group, rollout, step)."""
    if not regex:
        return src, None
    err = check(regex)
    if err:
        return None, err
    try:
        groups = _rekeyed(src.key, regex, src.groups)
    except AnchorKeyError as e:
        return None, widgets.text(f"Anchor key: {e}")  # the regex and the text as typed: no Markdown
    tag = hashlib.sha1(regex.encode()).hexdigest()[:10]
    return Source(f"{src.key}|key:{tag}", src.label, groups, src.recorded_key), None


@memo(max_entries=64)
def _profile(key: str, _groups: tuple) -> MergeProfile:
    return merge_profile(list(_groups))


def profile(src: Source) -> MergeProfile:
    """The merge profile of a source (cached by its key)."""
    return _profile(src.key, src.groups)


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
    st.sidebar.caption(mp.line() + (" · anchors keyed when the run was recorded, with "
                                    f"{widgets.code(src.recorded_key)} (run.json)" if recorded else ""))
    if mp.merges_nothing:
        what = f"The key {widgets.code(key)} merges" if key else "Exact text merges"
        st.sidebar.warning(f"{what} almost nothing beyond the first step ({mp.later_share:.0%} of "
                           "later steps at shared anchors), so every step credit after step 0 is "
                           "about 0. If the observations carry their history, set an anchor key "
                           "above: a regex whose last match is the current state.",
                           icon=":material/call_split:")
