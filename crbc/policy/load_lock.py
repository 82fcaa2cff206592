"""One model load at a time in this process.

transformers builds a model on the "meta" device through process-wide state, so two threads
loading at once (two app sessions opening pages that need the truth) can get "Cannot copy out of
meta tensor; no data!". Every loader (:func:`crbc.policy.load_policy`, ``tiny.load_tiny``,
``chat.load_chat``) holds :data:`LOAD_LOCK` (re-entrant: a loader may call another).
"""

from __future__ import annotations

import threading

__all__ = ["LOAD_LOCK"]

LOAD_LOCK = threading.RLock()
