"""ui/core/session_reaper: the server's session store drops an expired session when asked (the
memory thread asks every 30 s), not only when another session is saved, and Streamlit builds
that store once it is installed."""

from __future__ import annotations

import gc
import time
import types
import weakref

from streamlit.runtime import memory_session_storage as mss

from ui.core import session_reaper


class _Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id


def _info(session_id: str):
    return types.SimpleNamespace(session=_Session(session_id))


def test_an_expired_session_goes_when_reaped_and_not_before():
    store = session_reaper.ReapingSessionStorage(ttl_seconds=0.2)
    info = _info("a")
    store.save(info)
    alive = weakref.ref(info.session)
    del info
    assert store.get("a") is not None and store.reap() == 1
    time.sleep(0.3)
    gc.collect()
    assert alive() is not None  # expired, but Streamlit's cache still holds it until counted or written
    assert store.reap() == 0
    gc.collect()
    assert alive() is None


def test_a_live_session_stays_and_every_store_is_reaped():
    store = session_reaper.ReapingSessionStorage(ttl_seconds=60)
    store.save(_info("b"))
    assert session_reaper.reap() >= 1 and store.get("b") is not None
    store.delete("b")
    assert store.get("b") is None and store.list() == []


def test_installed_it_is_the_store_streamlit_builds():
    original = mss.MemorySessionStorage
    try:
        assert session_reaper.install() and session_reaper.install()  # idempotent
        assert mss.MemorySessionStorage is session_reaper.ReapingSessionStorage
        from streamlit.runtime.memory_session_storage import (
            MemorySessionStorage,  # as starlette_app imports it
        )

        assert isinstance(MemorySessionStorage(ttl_seconds=1), session_reaper.ReapingSessionStorage)
    finally:
        mss.MemorySessionStorage = original
