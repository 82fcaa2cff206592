"""ui/core/memory: glibc's malloc_trim gives freed memory back. A fresh interpreter frees 480 MB
of 4 KB blocks (malloc's, not pymalloc's) below live ones: freeing alone keeps the pages
resident, the trim returns them."""

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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_trim_returns_freed_memory_that_freeing_alone_keeps():
    from tests.support.paths import ROOT

    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    base, held, freed, trimmed, _ = (int(x) for x in out.stdout.split())
    assert held > base + 150, (base, held)
    assert freed > base + 150, (base, held, freed, trimmed)  # freed alone: the pages stay mapped
    assert trimmed < base + 100, (base, held, freed, trimmed)  # trimmed: given back
