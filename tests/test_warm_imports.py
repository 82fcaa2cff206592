"""ui.warm_imports: the model stack imported in the background, and the wait before first use."""

from __future__ import annotations

import threading
import time

from ui import warm_imports


def test_wait_returns_at_once_when_the_imports_were_never_started(monkeypatch):
    monkeypatch.setattr(warm_imports, "_thread", None)
    t = time.perf_counter()
    warm_imports.wait()
    assert time.perf_counter() - t < 0.1


def test_wait_blocks_until_the_background_imports_have_finished(monkeypatch):
    done = threading.Event()

    def slow() -> None:
        time.sleep(0.3)
        done.set()

    monkeypatch.setattr(warm_imports, "_imports", slow)
    monkeypatch.setattr(warm_imports, "_thread", None)
    warm_imports.start()
    first = warm_imports._thread
    warm_imports.start()  # once per process
    assert warm_imports._thread is first
    warm_imports.wait()
    assert done.is_set() and not first.is_alive()
