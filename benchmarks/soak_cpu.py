"""Where the soak's CPU goes, for bench_soak.py: per phase, the cores used by each kind of process
on the machine, and how late the harness's own event loop runs its timers.

Kinds (from ``/proc``; a process is counted by what it is when first seen):

- ``server``: the Streamlit server process (every session's script threads share its GIL);
- ``workers``: every other descendant of the server (its bounded jobs at ``nice`` 19, the
  forkserver they start from);
- ``harness``: this benchmark's own process (the wire students, the Playwright clients);
- ``playwright``: the Playwright driver (``node``) the harness talks through;
- ``students_browser``: Chromium at normal priority (the Chromium students and players);
- ``attackers_browser``: Chromium at a lower priority (``--attackers-nice``);
- ``other``: anything else that ran (the idle machine's noise).

A kind's cores in a phase = its CPU seconds in the phase / the phase's seconds (2.0 is both cores
of this machine). ``machine_busy`` is the share of both cores that was not idle (``/proc/stat``).
The loop lag is how much later than asked a 0.1 s ``asyncio.sleep`` in the harness woke: when
it is large, a student's time also counts the harness waiting for itself, not the server.
The server's answer is how long the server takes to answer ``/_stcore/health`` (asked every
0.25 s): that handler does no work, so its time is how long the server's event loop, which also
carries every session's messages, waited for the GIL or the CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("server", "workers", "harness", "playwright", "students_browser", "attackers_browser", "other")


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(ppid, niceness, utime + stime in ticks, command name) of ``pid``, or None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    name = raw[raw.index("(") + 1:raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2:].split()  # fields from 3 (state) on
    return int(rest[1]), int(rest[16]), int(rest[11]) + int(rest[12]), name


class CpuMeter:
    """Cumulative CPU seconds per kind since it started, read by :meth:`sample`."""

    def __init__(self, server_pid: int, harness_pid: int | None = None) -> None:
        self.server_pid, self.harness_pid = server_pid, harness_pid or os.getpid()
        self.kind_of: dict[int, str] = {}
        self.last: dict[int, int] = {}
        self.totals = dict.fromkeys(KINDS, 0.0)

    def _kind(self, pid: int, ppid: int, nice: int, name: str, parents: dict[int, int]) -> str:
        if pid == self.server_pid:
            return "server"
        up, hops = ppid, 0
        while up > 1 and hops < 16:  # a descendant of the server, however deep
            if up == self.server_pid:
                return "workers"
            up, hops = parents.get(up, 0), hops + 1
        if pid == self.harness_pid:
            return "harness"
        if name == "node":  # Playwright's driver, the harness's child
            return "playwright"
        if "chrom" in name.lower():
            return "attackers_browser" if nice > 0 else "students_browser"
        return "other"

    def sample(self) -> tuple[float, dict[str, float], tuple[int, int]]:
        """(clock, CPU seconds per kind so far, (busy, total) ticks of the machine so far)."""
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := _stat(int(entry))) is not None:
                stats[int(entry)] = st
        parents = {pid: st[0] for pid, st in stats.items()}
        for pid, (ppid, nice, ticks, name) in stats.items():
            if pid not in self.kind_of:
                self.kind_of[pid] = self._kind(pid, ppid, nice, name, parents)
            kind = self.kind_of[pid]
            self.totals[kind] += max(0, ticks - self.last.get(pid, 0)) / TICK  # a new process: all of it
            self.last[pid] = ticks
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        idle = cpu[3] + cpu[4]
        return time.perf_counter(), dict(self.totals), (sum(cpu) - idle, sum(cpu))


def first_sample_baseline(meter: CpuMeter) -> None:
    """Count only what runs from now on: every process seen now starts at its present ticks."""
    meter.sample()
    meter.totals = dict.fromkeys(KINDS, 0.0)


async def loop_lag(out: list, stop_at, period: float = 0.1) -> None:
    """Append (clock, seconds late) for each ``period`` sleep until ``stop_at()`` has passed."""
    while time.perf_counter() < stop_at():
        t = time.perf_counter()
        await asyncio.sleep(period)
        out.append((t, max(0.0, time.perf_counter() - t - period)))


async def server_answer(base: str, out: list, stop_at, period: float = 0.25) -> None:
    """Append (clock, seconds to answer ``/_stcore/health``) every ``period`` until ``stop_at()``."""
    from tornado.httpclient import AsyncHTTPClient

    client = AsyncHTTPClient(force_instance=True)
    try:
        while time.perf_counter() < stop_at():
            t = time.perf_counter()
            with contextlib.suppress(Exception):
                await client.fetch(f"{base}/_stcore/health", request_timeout=60)
                out.append((t, time.perf_counter() - t))
            await asyncio.sleep(period)
    finally:
        client.close()


def _spread(xs: list) -> dict | None:
    xs = sorted(xs)
    return {"median": round(xs[len(xs) // 2], 3), "p95": round(xs[int(0.95 * (len(xs) - 1))], 3),
            "max": round(xs[-1], 3)} if xs else None


def _at(series: list, t: float):
    """The last sample at or before ``t`` (the first one if none)."""
    best = series[0]
    for s in series:
        if s[0] > t:
            break
        best = s
    return best


def phase(series: list, lags: list, a: float, b: float, answers: list = ()) -> dict:
    """Cores per kind, the machine's busy share, the harness's loop lag and the server's answer
    time between ``a`` and ``b``."""
    if len(series) < 2:
        return {}
    (t0, c0, m0), (t1, c1, m1) = _at(series, a), _at(series, b)
    with contextlib.suppress(ZeroDivisionError):
        cores = {k: round((c1[k] - c0[k]) / (t1 - t0), 2) for k in KINDS}
        return {"cores": cores, "machine_busy": round((m1[0] - m0[0]) / (m1[1] - m0[1]), 2),
                "loop_lag_s": _spread([x for t, x in lags if a <= t < b]),
                "server_answer_s": _spread([x for t, x in answers if a <= t < b])}
    return {}
