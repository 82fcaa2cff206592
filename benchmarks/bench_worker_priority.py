"""Where a bounded job's worker takes its CPU from, with its priority lowered as the studio's
workers lower it (:func:`crbc.jobs.worker.lowest_priority`) or with ``nice`` alone. Prints JSON.

    python -m benchmarks.bench_worker_priority [--seconds 15] [--repeats 2]

Three stand-ins share the machine, each started in its own session as a desktop starts programs:
``browser`` (one busy process per core in one session, as a browser's processes are: the
students' browsers on the same machine), ``server``
(a fixed piece of Python work, then a pause of the same length, over and over: a server that
waits on its clients part of the time) and a ``worker`` the server forked, busy all the time.
Per arm: the cores each used, and the server's time for its fixed piece of work (median and
p95, against the same piece alone). Under autogroup scheduling a worker at ``nice`` 19 in the
server's session still runs as an equal of the browsers whenever the server pauses; in its own
session at the same niceness it takes only what nobody else wants.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

from crbc.jobs.worker import NICENESS, lowest_priority

WORK = 150_000  # sum(range(WORK)): about 2 ms of one core


def _piece() -> float:
    t = time.perf_counter()
    sum(range(WORK))
    return time.perf_counter() - t


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(10_000))


def _cores(usage_before, usage_after, seconds: float) -> float:
    return round((usage_after.ru_utime - usage_before.ru_utime + usage_after.ru_stime
                  - usage_before.ru_stime) / seconds, 3)


def _server(arm: str, seconds: float, pipe_w: int) -> None:
    """The server stand-in (in its own session): fork the worker, then work and pause."""
    worker = os.fork()
    if worker == 0:
        if arm == "lowest_priority":
            lowest_priority()
        else:
            os.nice(NICENESS)
        _busy(seconds)
        os._exit(0)
    before, times, end = resource.getrusage(resource.RUSAGE_SELF), [], time.monotonic() + seconds
    while time.monotonic() < end:
        times.append(_piece())
        time.sleep(times[-1])
    after = resource.getrusage(resource.RUSAGE_SELF)
    _, _, worker_usage = os.wait4(worker, 0)
    times.sort()
    os.write(pipe_w, json.dumps({
        "server_cores": _cores(before, after, seconds),
        "worker_cores": round((worker_usage.ru_utime + worker_usage.ru_stime) / seconds, 3),
        "server_piece_ms": {"median": round(1e3 * statistics.median(times), 2),
                            "p95": round(1e3 * times[int(0.95 * (len(times) - 1))], 2), "n": len(times)},
    }).encode())


def _in_session(fn, *args) -> int:
    pid = os.fork()
    if pid == 0:
        os.setsid()
        try:
            fn(*args)
        finally:
            os._exit(0)
    return pid


def _browser(seconds: float) -> None:
    """The browser stand-in (in its own session): one busy process per core."""
    kids = []
    for _ in range(os.cpu_count() or 1):
        pid = os.fork()
        if pid == 0:
            _busy(seconds)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)


def arm(name: str, seconds: float) -> dict:
    browser = _in_session(_browser, seconds)
    r, w = os.pipe()
    server = _in_session(_server, name, seconds, w)
    os.close(w)
    out = json.loads(os.read(r, 1 << 16).decode())
    os.close(r)
    os.waitpid(server, 0)
    _, _, usage = os.wait4(browser, 0)  # its children's time is counted in its own (waited for)
    return {"arm": name, "browser_cores": round((usage.ru_utime + usage.ru_stime) / seconds, 3), **out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args(argv)
    alone = sorted(_piece() for _ in range(200))
    autogroup = "/proc/sys/kernel/sched_autogroup_enabled"
    runs = [arm(name, a.seconds) for _ in range(a.repeats) for name in ("nice_only", "lowest_priority")]
    print(json.dumps({"cpus": os.cpu_count(), "load_before": [round(x, 2) for x in os.getloadavg()],
                      "autogroup": open(autogroup).read().strip() if os.path.exists(autogroup) else None,
                      "piece_alone_ms": round(1e3 * statistics.median(alone), 2), "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
