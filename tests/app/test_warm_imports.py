"""ui.core.warm_imports: the model stack imported in the background, and the wait before first use."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from tests.support.paths import ROOT
from ui.core import warm_imports


def _fresh_python(code: str, timeout: float) -> list[str]:
    """The words ``code`` prints when run in a new interpreter at the repository root."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=True).stdout.split()


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


def test_the_imported_model_stack_is_frozen_out_of_the_garbage_collector():
    """After the background imports, the objects alive then (torch's, transformers', ...) are
    exempt from collections (gc.freeze): without it every full collection walked them, 260-340
    ms per click in the studio. In a fresh interpreter, as in the server."""
    code = ("import gc\nfrom ui.core import warm_imports\n"
            "before = gc.get_freeze_count()\nwarm_imports.start()\nwarm_imports.wait()\n"
            "import torch, transformers\n"
            "print(before, gc.get_freeze_count(), sum(gc.get_count()))")
    before, frozen, tracked_young = (int(x) for x in _fresh_python(code, timeout=300))
    assert before == 0
    assert frozen > 100_000  # the model stack's objects, frozen once imported
    assert tracked_young < frozen


def test_freeze_heap_collects_garbage_before_freezing():
    """A reference cycle that is already garbage is freed, not frozen for the process's life."""
    code = ("import gc, weakref\nfrom ui.core.warm_imports import freeze_heap\n"
            "class Node: pass\n"
            "a, b = Node(), Node()\na.other, b.other = b, a\nref = weakref.ref(a)\ndel a, b\n"
            "gc.disable()\nfreeze_heap()\nprint(ref() is None, gc.get_freeze_count() > 0)")
    assert _fresh_python(code, timeout=60) == ["True", "True"]


def test_every_page_module_warmed_at_start_exists():
    """The warm list names real modules (a renamed one would silently stop being warmed)."""
    import importlib.util

    missing = [m for m in warm_imports.PAGE_MODULES if importlib.util.find_spec(m) is None]
    assert not missing, missing
