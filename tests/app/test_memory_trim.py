"""ui/core/memory: a full collection frees the rings nobody reaches (a closed session),
glibc's malloc_trim gives freed memory back, and the tuned allocator unmaps a freed large block
at once. A fresh interpreter frees 480 MB of 4 KB blocks
(malloc's, not pymalloc's) below live ones: freeing alone keeps the pages resident, the trim
returns them."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import gc
from ui.core import memory

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024

base = rss()
junk = [bytes(4000) for _ in range(120_000)]  # ~480 MB of blocks from the C allocator (above pymalloc's 512 bytes)
pin = [bytes(4000) for _ in range(100)]           # live blocks above them: the heap's top cannot shrink
held = rss()
del junk
gc.collect()
freed = rss()
memory.trim()
print(base, held, freed, rss(), len(pin))
"""


def _numbers(code: str) -> list[int]:
    """What ``code`` prints, run in a fresh interpreter (its memory is the test's measure)."""
    from tests.support.paths import ROOT

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return [int(x) for x in out.stdout.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_trim_returns_freed_memory_that_freeing_alone_keeps():
    base, held, freed, trimmed, _ = _numbers(CODE)
    assert held > base + 150, (base, held)
    assert freed > base + 150, (base, held, freed, trimmed)  # freed alone: the pages stay mapped
    assert trimmed < base + 100, (base, held, freed, trimmed)  # trimmed: given back


CYCLE = """
from ui.core import memory, session_reaper  # imported first: an import's allocations start collections

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024

class Session:  # a ring of references, as a Streamlit session is (runner <-> thread <-> state)
    pass

base = rss()
s = Session()
s.me = s
s.data = [bytes(4000) for _ in range(60_000)]  # ~240 MB only the ring holds
held = rss()
del s  # unreachable now, but reference counting cannot free a ring
dropped = rss()
freed = memory.collect_and_trim()
print(base, held, dropped, rss(), freed)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_ring_nobody_reaches_is_given_back_by_the_collection_not_by_dropping_it():
    base, held, dropped, collected, freed = _numbers(CYCLE)
    assert held > base + 150, (base, held)
    assert dropped > base + 150, (base, held, dropped)  # unreachable, still resident
    assert collected < base + 60, (base, held, dropped, collected)
    assert freed >= 1, freed  # the ring itself was found unreachable


LARGE = """
import sys
from ui.core import memory

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024

if sys.argv[1] == "tuned":
    assert memory.tune_allocator()
first = bytearray(16 << 20)  # a 16 MB block: mapped on its own
del first  # freed: glibc's default raises its mmap threshold to 16 MB here
base = rss()
blocks = [bytearray(1 << 20) for _ in range(200)]  # 200 MB of 1 MB blocks (a large upload's arrays)
pins = [bytes(2000) for _ in range(200)]  # small blocks allocated between them, alive afterwards
held = rss()
del blocks
print(base, held, rss(), len(pins))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("tuned", [True, False])
def test_large_blocks_go_back_when_freed_only_with_the_tuned_allocator(tuned):
    """After one large block was freed, glibc's default keeps the next 1 MB blocks inside its heap
    and, freed, resident until a trim; ``tune_allocator`` (studio.py, first thing) maps each on
    its own and unmaps it when freed. The untuned run is the control that shows the test can fail."""
    code = f"import sys; sys.argv = ['-', {'tuned' if tuned else 'default'!r}]\n" + LARGE
    base, held, after, _ = _numbers(code)
    assert held > base + 150, (base, held)
    if tuned:
        assert after < base + 30, (base, held, after)  # given back at once
    else:
        assert after > base + 150, (base, held, after)  # resident until malloc_trim


ARROW = """
import gc, sys, threading
from ui.core import memory
if sys.argv[1] == "tuned":
    assert memory.tune_allocator()
import numpy as np
import pyarrow as pa

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024

def script_run(i):  # what one script thread does with Arrow: a table built and serialised, then dropped
    t = pa.table({"a": [f"row {j} {i}" for j in range(200_000)], "b": np.arange(200_000) * 1.0})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().size

script_run(-1)  # Arrow's libraries and the first pages, loaded once in the main thread
gc.collect()
memory.trim()
base = rss()
for i in range(10):  # ten script threads, each ended
    th = threading.Thread(target=script_run, args=(i,))
    th.start()
    th.join()
gc.collect()
memory.trim()
print(base, rss(), pa.total_allocated_bytes(), int(pa.default_memory_pool().backend_name == "system"))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
@pytest.mark.parametrize("tuned", [True, False])
def test_arrow_buffers_freed_by_ended_threads_go_back_only_with_the_system_pool(tuned):
    """Arrow buffers of threads that ended (Streamlit's script runs): with pyarrow's default pool
    (mimalloc) their pages stay resident after a collection and a trim; ``tune_allocator`` points
    Arrow at the system pool and a trim gives them back. The untuned run is the control."""
    code = f"import sys; sys.argv = ['-', {'tuned' if tuned else 'default'!r}]\n" + ARROW
    base, after, live, system = _numbers(code)
    assert live == 0, live  # nothing of Arrow's is alive: what stays resident is the pool's
    assert system == int(tuned)
    if tuned:
        assert after < base + 15, (base, after)
    else:
        assert after > base + 20, (base, after)  # mimalloc's pages of the ended threads
