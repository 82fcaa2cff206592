"""ui/session_memo: what an upload computes stays in its session; the rest is shared."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script(calls: list, keys: tuple) -> None:
    import streamlit as st

    from ui.session_memo import memo

    @memo(max_entries=8)
    def square(key: str, x: int, _ignored: object) -> int:
        calls.append((key, x))
        return x * x

    for k in keys:
        st.write(square(k, 3, object()))
    st.markdown("held: " + " ".join(sorted(str(k[2]) for k in st.session_state.get("_crbc_memo", {}))))


def test_an_uploads_results_stay_in_its_session_and_samples_are_shared():
    calls: list = []
    keys = ("upload:steps:abc#None#0", "sample:x.jsonl:def#0")
    first = AppTest.from_function(_script, args=(calls, keys)).run()
    assert not first.exception
    assert sorted(calls) == sorted((k, 3) for k in keys)
    held = first.markdown[-1].value
    assert "upload:steps:abc" in held and "sample:" not in held  # only the upload's result is private
    first.run()  # a rerun of the same session: both cached
    assert len(calls) == 2
    second = AppTest.from_function(_script, args=(calls, keys)).run()  # another session
    assert not second.exception
    assert [k for k, _ in calls[2:]] == [keys[0]]  # recomputes the upload's, shares the sample's


def test_the_session_memo_keeps_its_most_recent_entries():
    import ui.session_memo as M

    calls: list = []
    keys = tuple(f"upload:u{i}" for i in range(M.SESSION_ENTRIES + 5))
    at = AppTest.from_function(_script, args=(calls, keys)).run()
    assert not at.exception and len(calls) == len(keys)
    held = at.session_state["_crbc_memo"]
    assert [k[2] for k in held] == list(keys[5:])  # the five least recently used were dropped
