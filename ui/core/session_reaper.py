"""Closed tabs' sessions leave the server on time, not when the next visitor comes.

Streamlit keeps a closed tab's session for ``server.disconnectedSessionTTL`` seconds (120 by
default) so that a tab that reconnects finds its state. Its store, a TTL cache, only drops an
expired session when another session is saved or the store is counted, so on a server nobody
visits after a class, the last sessions (and any upload they hold) stay for good.
:func:`install` makes the server's session store a :class:`ReapingSessionStorage`, which does
the same, plus :func:`reap`, which the server's memory thread (:mod:`ui.core.memory`) calls
every 30 s: it drops the expired sessions, whose memory the collection after it then frees. Every
use of the store holds one lock, since the memory thread reaps while the server's event loop
saves and reads. Call :func:`install` before the server starts (``studio.py``).
"""

from __future__ import annotations

import threading
import weakref

from streamlit.runtime import memory_session_storage as mss

__all__ = ["install", "reap", "ReapingSessionStorage"]

_STORES: weakref.WeakSet = weakref.WeakSet()


class ReapingSessionStorage(mss.MemorySessionStorage):
    """Streamlit's in-memory session store (same TTL and size), thread-safe, with :meth:`reap`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        _STORES.add(self)

    def get(self, session_id):
        with self._lock:
            return super().get(session_id)

    def save(self, session_info) -> None:
        with self._lock:
            super().save(session_info)

    def delete(self, session_id) -> None:
        with self._lock:
            super().delete(session_id)

    def list(self):
        with self._lock:
            return super().list()

    def reap(self) -> int:
        """Drop every expired session now; how many sessions the store still keeps."""
        with self._lock:
            kept = getattr(self, "_cache", None)  # Streamlit's TTL map drops expired entries when counted
            return len(kept) if kept is not None else 0


def reap() -> int:
    """:meth:`ReapingSessionStorage.reap` on every store of this process; the sessions kept."""
    return sum(store.reap() for store in list(_STORES))


def install() -> bool:
    """Make Streamlit build its session store as a :class:`ReapingSessionStorage`. Idempotent;
    False when this Streamlit keeps sessions elsewhere (then nothing changes)."""
    if not hasattr(mss, "MemorySessionStorage"):
        return False
    if mss.MemorySessionStorage is not ReapingSessionStorage:
        mss.MemorySessionStorage = ReapingSessionStorage
    import sys

    server = sys.modules.get("streamlit.web.server.server")  # binds the name when it is imported
    if server is not None and hasattr(server, "MemorySessionStorage"):
        server.MemorySessionStorage = ReapingSessionStorage
    return True
