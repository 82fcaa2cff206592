"""ui/session_memo: what an upload computes stays in its session; the rest is shared."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("own_session_ids")  # AppTests as separate sessions


def _script(calls: list, keys: list) -> None:
    import streamlit as st

    from ui.session_memo import memo

    @memo(max_entries=64)
    def square(key: str, x: int, _ignored: object) -> int:
        calls.append((key, x))
        return x * x

    for k in keys:
        st.write(square(k, 3, object()))


def test_an_uploads_results_stay_in_its_session_and_samples_are_shared():
    calls: list = []
    keys = ["upload:steps:abc#None#0", "sample:x.jsonl:def#0"]
    first = AppTest.from_function(_script, args=(calls, keys)).run()
    assert not first.exception
    assert sorted(calls) == sorted((k, 3) for k in keys)
    first.run()  # a rerun of the same session: both cached
    assert len(calls) == 2
    second = AppTest.from_function(_script, args=(calls, keys)).run()  # another session
    assert not second.exception
    assert [k for k, _ in calls[2:]] == [keys[0]]  # recomputes the upload's, shares the sample's


def test_a_session_keeps_its_most_recent_upload_results_per_function():
    import ui.session_memo as M

    calls: list = []
    keys = [f"upload:u{i}" for i in range(M.SESSION_ENTRIES + 5)]
    at = AppTest.from_function(_script, args=(calls, keys)).run()
    assert not at.exception and len(calls) == len(keys)
    kept = keys[5:]
    keys[:] = kept  # the same session asks again for the most recent ones: all held
    at.run()
    assert len(calls) == M.SESSION_ENTRIES + 5
    keys[:] = ["upload:u0"]  # the least recently used was dropped: computed again
    at.run()
    assert [k for k, _ in calls[-1:]] == ["upload:u0"] and len(calls) == M.SESSION_ENTRIES + 6
