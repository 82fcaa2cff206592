"""The server gives freed memory back to the machine.

CPython frees the objects of a finished computation (an upload's arrays, a session's kept values
once its tab is gone) into the C allocator, which keeps most of those pages mapped: a shared
studio that served one large upload stayed 400 MB larger for the rest of its life. A background
thread calls glibc's ``malloc_trim(0)`` every :data:`INTERVAL_S` seconds, which returns the free
pages at the top of each heap and every whole free page inside it to the operating system. It
touches no Python object and takes no lock Python code holds (it releases the GIL while it runs,
as every foreign call does), so pages keep being served while it works. Not on glibc (macOS,
musl): nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading

__all__ = ["INTERVAL_S", "start", "trim"]

INTERVAL_S = 30.0  #: seconds between two trims
_STARTED = threading.Event()


def _libc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        lib = ctypes.CDLL(name)
        return lib if hasattr(lib, "malloc_trim") else None
    except OSError:
        return None


def trim() -> bool:
    """Return the allocator's free memory to the system now; False where there is no glibc."""
    lib = _libc()
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True


def start(interval_s: float = INTERVAL_S) -> bool:
    """Start the trimming thread (once per process); False where there is no glibc."""
    if _libc() is None:
        return False
    if _STARTED.is_set():
        return True
    _STARTED.set()

    def loop() -> None:
        while True:
            threading.Event().wait(interval_s)
            trim()

    threading.Thread(target=loop, name="crbc-malloc-trim", daemon=True).start()
    return True
