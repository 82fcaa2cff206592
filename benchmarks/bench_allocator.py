"""What the tuned allocator (``ui.core.memory.tune_allocator``) costs the server's work. Prints JSON.

    python -m benchmarks.bench_allocator [--repeats 5]

Each setting (glibc's default; tuned; tuned with every Python object from glibc,
``PYTHONMALLOC=malloc``, as the studio's server runs) runs in its own fresh interpreter, and
times, as the studio's server does them:

- ``read_result``: reading the largest valid upload of the soak (19.5 MB of JSONL, about 37,000
  two-rollout groups) back from the worker's ``crbc.rollout/1`` Parquet result into groups;
- ``credits``: every estimator's credits of the shipped samples' groups (the pages' work);
- ``credits_4_threads``: the same in 4 threads at once (Streamlit runs each session's script in
  its own thread; the tuned allocator gives them 2 heaps, not 16).

Medians of ``--repeats`` runs, seconds, and the interpreter's resident memory at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("default", "tuned", "tuned+malloc")

CHILD = r"""
import json, sys, time, threading
from pathlib import Path
setting, folder, repeats = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
from ui.core import memory
if setting.startswith("tuned"):
    assert memory.tune_allocator()
from crbc.estimators import registry
from crbc.io.parquet_rollouts import read_parquet_rollouts
from crbc.io.rollouts import read_rollouts

groups = [g for p in sorted(Path("sample_rollouts").glob("*.jsonl")) for g in read_rollouts(p)][:40]

def credits():
    for name in registry.names():
        for g in groups:
            registry.compute(name, [g])

def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def in_threads():
    ts = [threading.Thread(target=credits) for _ in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]

out = {"read_result": [], "credits": [], "credits_4_threads": []}
for _ in range(repeats):
    out["read_result"].append(timed(lambda: read_parquet_rollouts(folder / "largest.parquet")))
    out["credits"].append(timed(credits))
    out["credits_4_threads"].append(timed(in_threads))
with open("/proc/self/status") as f:
    out["rss_mb"] = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024
print(json.dumps(out))
"""


def _largest_parquet(folder: Path) -> None:
    """The soak's largest valid upload (benchmarks.bench_soak.attack_files), as the worker's result."""
    from benchmarks.bench_soak import attack_files
    from crbc.io.importers import read_uploads
    from crbc.io.parquet_rollouts import write_parquet_rollouts

    largest = attack_files(folder)["largest"][0]
    imported = read_uploads("steps", {largest.name: largest.read_bytes()})  # the soak's upload kind
    write_parquet_rollouts(folder / "largest.parquet", [g for gs in imported.values() for g in gs])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    res: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        _largest_parquet(Path(tmp))
        for setting in SETTINGS:
            env = dict(os.environ, PYTHONMALLOC="malloc") if setting.endswith("+malloc") else \
                {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
            run = subprocess.run([sys.executable, "-c", CHILD, setting, tmp, str(a.repeats)], cwd=ROOT,
                                 capture_output=True, text=True, check=True, env=env)
            raw = json.loads(run.stdout)
            res[setting] = {k: round(statistics.median(v), 3) for k, v in raw.items() if isinstance(v, list)}
            res[setting]["rss_mb"] = raw["rss_mb"]
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
