"""The server gives freed memory back to the machine.

Four things keep a finished computation's memory after nobody can reach it:

- **Cycles wait for a full collection.** A Streamlit session is a ring of references (its
  script runner, the runner's thread and run context, the session state, the page's functions
  and their globals), so when Streamlit drops a closed tab's session (its disconnected-session
  TTL has passed), reference counting frees none of it: the upload's rollouts and everything its
  pages kept wait for CPython's next full (generation 2) collection. On a quiet server that never
  comes, because collections are triggered by new allocations: a studio that served a 20,000-anchor
  upload stayed at 819 MB with the upload's 100,000 steps alive, and one ``gc.collect()`` freed
  108,200 objects and took it to 558 MB (measured: ``docs/results/benchmarks/shared-studio.md``).
- **The C allocator keeps freed pages.** CPython frees large objects into glibc's ``malloc``,
  which keeps most pages mapped: a shared studio that served one large upload stayed 400 MB larger
  for the rest of its life.
- **The C allocator mixes large blocks with small ones.** glibc's default mmap threshold rises
  each time a mapped block is freed, so after one large upload the next ones' arrays and lists
  are carved out of the heap among small long-lived blocks, which pin those pages even after a
  trim; and it keeps up to 8 heaps per core, one for each of Streamlit's script threads.
  :func:`tune_allocator` (``studio.py``, before any thread) fixes the threshold at 128 KiB and
  the heaps at 2: in the soak, what the server kept after the attacks fell from 170 MB to 93 MB
  above its level after the baseline (``docs/results/benchmarks/shared-studio.md``).
- **Arrow's own allocator keeps what script threads freed.** pyarrow allocates its buffers (an
  upload's groups read back from the worker's Parquet, every table Streamlit sends) from
  mimalloc, which gives each thread its own pages; a script thread's pages, freed when the thread
  ends, stay resident until some later thread happens to reclaim them (28 MB after ten threads
  that each sent a 200,000-row table, in ``tests/app/test_memory_trim.py``, against 6-9 MB with
  the system pool; 39 MB in the server after four large uploads). :func:`tune_allocator` points
  Arrow at the system allocator (``ARROW_DEFAULT_MEMORY_POOL=system``), so those buffers follow
  glibc's tuned rules above.

A background thread does the collection and the trim every :data:`INTERVAL_S` seconds (:func:`collect_and_trim`), after
dropping the closed tabs' sessions whose TTL has passed (:mod:`ui.core.session_reaper`): a
full ``gc.collect()`` (41-53 ms with 148,000 tracked objects, the size of that server; it holds
the GIL like any collection CPython starts by itself) and then glibc's ``malloc_trim(0)``, which
returns the free pages at the top of each heap and every whole free page inside it to the
operating system without touching a Python object (it releases the GIL while it runs). Not on
glibc (macOS, musl): the collection still runs, the trim does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import threading

__all__ = ["arrow_system_pool", "collect_and_trim", "INTERVAL_S", "start", "trim", "tune_allocator"]

INTERVAL_S = 30.0  #: seconds between two collections and trims
_STARTED = threading.Event()


def _find_libc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        lib = ctypes.CDLL(name)
        return lib if hasattr(lib, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _find_libc()  # find_library runs ldconfig: once, at import


# glibc mallopt(3) parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 128 * 1024  #: bytes: a block this large or larger gets its own mapping, unmapped when freed
ARENA_MAX = 2  #: heaps that threads share (glibc's default: 8 per core)


def tune_allocator() -> bool:
    """Make glibc's ``malloc`` give large blocks back when they are freed; call it first thing,
    before any thread starts. False where there is no glibc (nothing changed).

    - ``M_MMAP_THRESHOLD`` = :data:`MMAP_THRESHOLD`. By default the threshold starts at 128 KiB
      and *rises* (up to 32 MiB) each time a mapped block is freed, so after one large upload
      the next large arrays and lists land inside the heap, among small long-lived blocks that
      pin their pages: freed, they stay resident. Setting the threshold fixes it (no rise).
    - ``M_ARENA_MAX`` = :data:`ARENA_MAX`. Streamlit runs each session's script in its own
      thread and glibc gives threads up to 8 heaps per core; every heap keeps its own free
      pages. Two heaps serve two cores.
    - Arrow's default memory pool is the system's (:func:`arrow_system_pool`), also where there
      is no glibc."""
    arrow_system_pool()
    lib = _LIBC
    if lib is None or not hasattr(lib, "mallopt"):
        return False
    ok = lib.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    return lib.mallopt(_M_ARENA_MAX, ARENA_MAX) == 1 and ok


def arrow_system_pool() -> None:
    """Arrow's buffers from the system allocator, not from its per-thread mimalloc/jemalloc pool:
    set ``ARROW_DEFAULT_MEMORY_POOL=system`` (unless the environment names a pool), which pyarrow
    reads when it first needs its pool; if pyarrow is already loaded, set its pool now."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    pa = sys.modules.get("pyarrow")
    if pa is not None and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system":
        pa.set_memory_allocator(pa.system_memory_pool())


def trim() -> bool:
    """Return the allocator's free memory to the system now; False where there is no glibc."""
    lib = _LIBC
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True


def collect_and_trim() -> int:
    """Expired sessions dropped (:func:`ui.core.session_reaper.reap`), a full collection of
    unreachable cycles, then :func:`trim`; the number of objects the collection freed."""
    from ui.core import session_reaper

    session_reaper.reap()
    freed = gc.collect()
    trim()
    return freed


def start(interval_s: float = INTERVAL_S) -> bool:
    """Start the collecting and trimming thread (once per process); False where there is no
    glibc (the thread then only collects)."""
    if not _STARTED.is_set():
        _STARTED.set()

        def loop() -> None:
            while True:
                threading.Event().wait(interval_s)
                collect_and_trim()

        threading.Thread(target=loop, name="crbc-memory", daemon=True).start()
    return _LIBC is not None

