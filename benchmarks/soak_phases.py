"""The soak's numbers per phase, for bench_soak.py: the calm baseline, rounds 1 and 2 together,
each round-3 attack (:mod:`benchmarks.soak_round3`) and the time after the attacks.

Per phase: the students' page-ready times (browser and wire: median, p95, max, and each over
the baseline's), ``within_1_5x`` (median and p95 both at most 1.5 times the baseline's, browser
and wire), the Play times, and the server's memory (:func:`sample`: the server process alone and
its workers) at its peak during the phase and at its end plus the settling pause, and where the
machine's CPU went (:mod:`benchmarks.soak_cpu`).
"""

from __future__ import annotations

import time

from benchmarks import soak_cpu as SC

#: a phase's "after" memory: the last sample this long after its end
AFTER_S = 5.0
WITHIN = 1.5


def sample(series: list, server_mb: float, workers: list[float]) -> None:
    """One memory sample: (time, the server's MB, its workers' MB, how many workers)."""
    series.append((time.perf_counter(), server_mb, sum(workers), len(workers)))


def windows(out: dict) -> dict[str, tuple[float, float]]:
    """Phase name -> (start, end) on the perf_counter clock."""
    s, e = out["attack_start"], out["attack_end"]
    w = {"baseline": (out["t0"], s)}
    r3 = out.get("round3", {})
    first3 = min((r["started"] for r in r3.values()), default=e)
    if first3 > s + 1:
        w["rounds_1_2"] = (s, first3)
    w |= {f"round3_{k}": (r["started"], r["ended"]) for k, r in r3.items()}
    w["after_attacks"] = (e, float("inf"))
    return w


def _ratios(now: dict, base: dict) -> dict:
    return {f"{k}_over_baseline": round(now[k] / base[k], 2) if base.get(k) and now.get(k) else None
            for k in ("median", "p95", "max")}


def _memory(series: list, a: float, b: float) -> dict:
    during = [x for x in series if a <= x[0] < b]
    after = [x for x in series if b <= x[0] < b + AFTER_S]
    out = {"server_peak_mb": round(max((x[1] for x in during), default=0.0), 1),
           "workers_peak_mb": round(max((x[2] for x in during), default=0.0), 1),
           "workers_max": max((x[3] for x in during), default=0)}
    if after:
        out |= {"server_after_mb": round(after[-1][1], 1), "workers_after_mb": round(after[-1][2], 1),
                "workers_after": after[-1][3]}
    return out


def report(out: dict, series: list, cpu: list | None = None) -> dict:
    """Every phase's numbers (module docstring)."""
    from benchmarks.bench_soak import summary

    phases, base = {}, {}
    for name, (a, b) in windows(out).items():
        row = {"seconds": round(min(b, time.perf_counter()) - a, 1)}
        for key, rows in (("browser", out["pages"]), ("wire", out["wire_pages"])):
            s = summary([d for t, d, _ in rows if a <= t < b])
            base.setdefault(key, s)
            row[f"{key}_page_ready_s"] = s | _ratios(s, base[key])
        seen = [r for k in ("browser", "wire") for q in ("median", "p95")
                if (r := row[f"{k}_page_ready_s"].get(f"{q}_over_baseline")) is not None]
        row["within_1_5x"] = all(r <= WITHIN for r in seen) if seen else None  # None: no page in it
        row["play_s"] = summary([d for t, d in out.get("plays", []) if a <= t < b and d != float("inf")])
        row["play_unfinished"] = sum(d == float("inf") for t, d in out.get("plays", []) if a <= t < b)
        row["memory"] = _memory(series, a, b)
        row["cpu"] = SC.phase(cpu or [], out.get("loop_lag", []), a, b, out.get("server_answer", []))
        phases[name] = row
    return phases


def attacks(out: dict) -> dict:
    """The round-3 records without their clocks."""
    return {k: {x: v for x, v in r.items() if x not in ("started", "ended")} for k, r in out.get("round3", {}).items()}
