"""Soak benchmark on loopback (not a test): students keep working while three hostile sessions
attack the same server. Prints JSON.

Students walk Lesson -> Anchor graph -> Bellman backups -> Step credits -> Rollouts over and over
until ``--minutes`` are up: ``--students`` headless Chromium contexts on 127.0.0.1 (a page is
ready when it is drawn), and ``--wire-students`` sessions speaking Streamlit's websocket
protocol without a browser (:mod:`benchmarks.wire_client`: a page is ready when the server has
sent all of it; on a 2-core machine thirty browsers would measure the browsers, not the server). After
``--calm`` of the time, three hostile sessions upload through the sidebar, as a person would:

- ``regex``: a step table whose observations are 29 ``x``, with the anchor regex ``(x+x+)+y``
  (Python's ``re`` backtracks for about a minute on it);
- ``bomb``: a 0.6 MB Parquet step table whose dictionary-encoded observation column decodes to
  6 GB (3,000,000 rows of one 2,000-character string);
- ``largest``: the largest valid upload, a 19.5 MB step table of about 55,000 tiny groups;

and the second round (:mod:`benchmarks.soak_attacks`): the hostile ``anchor_key`` link in
``--hostile-tabs`` tabs, the ``--audit-tabs``-tab audit burst on one run folder, the
``--archive-iterations`` run archive, while ``--players`` students press Play on Bellman backups;
then the third round (:mod:`benchmarks.soak_round3`, ``--round3 on``, the default; ``only``: it
alone, after the calm): the worst-shape uploads of issue 57 with Step credits and Bellman
backups, a Lesson link nested 1,000 deep, a 200,000-character address and a tab closed while its
worker computes, one phase each, the students working on until the last has ended.

Reported: students' page-ready times (median, p95, max) before the attacks and while they
run (from the first upload until the last attacker has its answer, plus 5 s), every error any
student saw, whether a student's sidebar ever showed an upload (another session's data), the
attackers' messages and times, per phase (:mod:`benchmarks.soak_phases`: the baseline, rounds 1
and 2, each round-3 attack, after) the students' times over the baseline's, Play and memory, the
server's resident memory (the server process alone, and its
worker processes) at start, peak and end (and "settled": once every browser has closed and
Streamlit's disconnected-session TTL has passed; "after_next_visit": once one more session has
come and gone), and with ``--burst N`` the time for N new sessions
opening the Lesson at the same moment (on the wire, plus ``--burst-browsers`` Chromium
sessions at the same moment). Bounded: every wait has a timeout, the run stops by
itself, only 127.0.0.1 is contacted.

Usage: .venv/bin/python -m benchmarks.bench_soak [--students 10 --minutes 2]   (short mode)
       .venv/bin/python -m benchmarks.bench_soak --students 1 --wire-students 2 --players 1 \
           --minutes 1 --round3 only                                          (round 3 alone)
       .venv/bin/python -m benchmarks.bench_soak ... --round3 none     (a control: the students alone)
       .venv/bin/python -m benchmarks.bench_soak --students 4 --wire-students 26 --minutes 10 \
           --burst 30 --burst-browsers 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import soak_attacks as SA
from benchmarks import soak_cpu as SC
from benchmarks import soak_phases as SP
from benchmarks import soak_round3 as SR
from benchmarks.wire_client import open_session
from devtools.apprunner import CHROMIUM, CHROMIUM_ARGS, READY, RUN_NO, running_server

WALK = [("graph", "Anchor graph"), ("backups", "Bellman backups"), ("credits", "Step credits"),
        ("rollouts", "Rollouts"), ("lesson", "Lesson")]
ERRORS = """() => Array.from(document.querySelectorAll(
  '[data-testid=stException], [data-testid=stAlertContentError]')).map(e => e.innerText.slice(0, 300))"""
#: the server's own time for the last script run (app.py's hidden marker), in ms
SCRIPT_MS = ("() => { const m = Array.from(document.querySelectorAll('.crbc-run')).pop();"
             " return m ? +m.dataset.scriptMs || 0 : 0; }")




def attack_files(folder: Path) -> dict[str, tuple[Path, str | None]]:
    """The three hostile uploads: name -> (file, anchor regex)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    regex = folder / "xs.jsonl"
    regex.write_text("\n".join(json.dumps({"uid": "g", "traj_uid": str(i), "anchor_obs": "x" * 29, "action": "a",
                                           "success": i % 2}) for i in range(6)) + "\n")
    n = 3_000_000
    bomb = folder / "bomb.parquet"
    obs = pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array(["x" * 2000]))
    pq.write_table(pa.table({"uid": pa.array(["g"] * n).dictionary_encode(),
                             "traj_uid": pa.array(["t"] * n).dictionary_encode(), "anchor_obs": obs,
                             "success": pa.array([True] * n)}), bomb, compression="zstd")
    largest = folder / "largest.jsonl"
    with open(largest, "w") as f:
        g = 0
        while f.tell() < 19_500_000:
            for r in range(2):
                for t in range(2):
                    f.write(json.dumps({"uid": f"task-{g}", "traj_uid": f"{g}-{r}", "step_index": t,
                                        "anchor_obs": f"room {t} of task {g % 500}", "action": "go",
                                        "success": r == 0}) + "\n")
            g += 1
    return {"regex": (regex, r"(x+x+)+y"), "bomb": (bomb, None), "largest": (largest, None)}


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": round(statistics.median(xs), 2),
            "p95": round(xs[min(len(xs) - 1, int(0.95 * (len(xs) - 1) + 0.5))], 2), "max": round(xs[-1], 2)}


async def student(browser, base: str, i: int, out: dict) -> None:
    """Walk the pages until ``out["stop_at"]`` (the attacks may move it); a page that times out is an error, then the student
    reloads the Lesson and goes on (so one slow moment does not end the measurement)."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(60_000)
    k, fresh = 0, True
    try:
        while time.perf_counter() < out["stop_at"]:
            try:
                if fresh:
                    t = time.perf_counter()
                    await page.goto(f"{base}/lesson")
                    await page.wait_for_function(READY, arg="Lesson")
                    out["pages"].append((t, time.perf_counter() - t, "lesson"))
                    out["script"].append((t, (await page.evaluate(SCRIPT_MS)) / 1000))
                    fresh = False
                    continue
                slug, title = WALK[k % len(WALK)]
                k += 1
                before = await page.evaluate(RUN_NO)
                t = time.perf_counter()
                # the default page's link is the root, so links are found by their text
                await page.locator("[data-testid=stSidebarNavLink]").filter(has_text=title).first.click()
                await page.wait_for_function(f"() => ({RUN_NO})() > {before}")
                await page.wait_for_function(READY, arg=title)
                out["pages"].append((t, time.perf_counter() - t, slug))
                out["script"].append((t, (await page.evaluate(SCRIPT_MS)) / 1000))
                seen = await page.evaluate(ERRORS)
                out["errors"].extend(f"student {i} on {slug}: {e}" for e in seen)
                if "upload" in (await page.locator("[data-testid=stSidebar]").inner_text()).split("Loaded:")[-1][:80]:
                    out["foreign"].append(f"student {i} on {slug} saw an upload in its sidebar")
                await asyncio.sleep(0.5)  # a student reads a little before the next click
            except Exception as e:  # noqa: BLE001 (a timeout is an error the class would see)
                out["errors"].append(f"student {i} at {time.perf_counter() - out['t0']:.0f} s: "
                                     f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
                fresh = True
    finally:
        await ctx.close()


async def wire_student(base: str, i: int, out: dict) -> None:
    """A student on the wire: the same walk as :func:`student`, one websocket session."""
    pages = ["lesson"] + [slug for slug, _ in WALK]
    k = 0
    session = None
    try:
        while time.perf_counter() < out["stop_at"]:
            try:
                if session is None:
                    session = await open_session(base, timeout=60)
                t = time.perf_counter()
                v = await session.visit(pages[k % len(pages)])
                k += 1
                out["wire_pages"].append((t, v.seconds, v.page))
                out["errors"].extend(f"wire student {i} on {v.page}: {e}" for e in v.errors)
                if v.upload_seen:
                    out["foreign"].append(f"wire student {i} on {v.page} saw an upload in its sidebar")
                await asyncio.sleep(0.5)
            except Exception as e:  # noqa: BLE001 (a timeout is an error the class would see)
                out["errors"].append(f"wire student {i} at {time.perf_counter() - out['t0']:.0f} s: "
                                     f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
                if session is not None:
                    session.close()
                session = None
    finally:
        if session is not None:
            session.close()


async def wire_burst(base: str, n: int) -> list[float]:
    """n new sessions on the wire ask for the Lesson at the same moment: seconds until each has it
    all (inf for a failure)."""
    async def one() -> float:
        t = time.perf_counter()
        try:
            s = await open_session(base, timeout=120)
            try:
                v = await s.visit("lesson")
            finally:
                s.close()
            return float("inf") if v.errors else time.perf_counter() - t
        except Exception:  # noqa: BLE001
            return float("inf")

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def burst(browser, base: str, n: int) -> list[float]:
    async def one() -> float:
        ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await ctx.new_page()
        try:
            t = time.perf_counter()
            await page.goto(f"{base}/lesson", timeout=120_000)
            await page.wait_for_function(READY, arg="Lesson", timeout=120_000)
            return time.perf_counter() - t
        except Exception:  # noqa: BLE001
            return float("inf")
        finally:
            await ctx.close()

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def run(base: str, a, files: dict) -> dict:
    from playwright.async_api import async_playwright

    out = {"pages": [], "wire_pages": [], "script": [], "errors": [], "foreign": [], "attacks": {}, "plays": [],
           "loop_lag": [], "server_answer": []}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        # warm-up: one session draws the Lesson once (the server's first run imports the model
        # stack and solves the truth group), before the clock starts
        ctx = await browser.new_context()
        page = await ctx.new_page()
        t = time.perf_counter()
        try:
            await page.goto(f"{base}/lesson", timeout=300_000)
            await page.wait_for_function(READY, arg="Lesson", timeout=300_000)
            out["warmup_s"] = round(time.perf_counter() - t, 1)
        except Exception as e:  # noqa: BLE001
            out["warmup_s"] = f"{type(e).__name__} after {time.perf_counter() - t:.0f} s"
        await ctx.close()
        t0 = out["t0"] = time.perf_counter()
        out["stop_at"] = t0 + 60 * a.minutes
        tasks = []
        for i in range(a.students):
            tasks.append(asyncio.create_task(student(browser, base, i, out)))
            await asyncio.sleep(0.3)
        for i in range(a.wire_students):
            tasks.append(asyncio.create_task(wire_student(base, i, out)))
            await asyncio.sleep(0.1)
        tasks += [asyncio.create_task(SA.player(browser, base, i, out)) for i in range(a.players)]
        tasks.append(asyncio.create_task(SC.loop_lag(out["loop_lag"], lambda: out["stop_at"])))
        tasks.append(asyncio.create_task(SC.server_answer(base, out["server_answer"], lambda: out["stop_at"])))
        await asyncio.sleep(max(0.0, t0 + 60 * a.minutes * a.calm - time.perf_counter()))
        out["attack_start"] = time.perf_counter()
        foe = browser if not a.attackers_nice else await pw.chromium.launch(
            executable_path=str(SA.niced_chromium(Path(files["_folder"]), a.attackers_nice)), headless=True,
            args=CHROMIUM_ARGS)
        if with_round3(a):  # the students work on until the last phase has ended, however long
            out["stop_at"] = float("inf")  # rounds 1 and 2 take (in run 20 they outlasted --minutes)
        await asyncio.gather(*rounds_1_2(foe, base, a, files, out))
        if with_round3(a):
            out["memory"] = a.memory  # each page's peak memory (soak_round3)
            await SR.run(foe, base, files["_round3"], out, a.workers, a.round3_attacks.split(","))
            out["stop_at"] = max(t0 + 60 * a.minutes, time.perf_counter() + 20)
        if foe is not browser:
            await foe.close()
        out["attack_end"] = time.perf_counter() + 5
        await asyncio.gather(*tasks)
        both = await asyncio.gather(wire_burst(base, a.burst), burst(browser, base, a.burst_browsers))
        out["burst"], out["burst_browsers"] = both
        await browser.close()
    return out


def with_rounds_1_2(a) -> bool:
    """Whether the first two rounds run (not with ``--round3 only`` or ``none``)."""
    return a.round3 not in ("only", "none")


def with_round3(a) -> bool:
    """Whether the third round runs (not with ``--round3 off`` or ``none``)."""
    return a.round3 not in ("off", "none")


def rounds_1_2(foe, base: str, a, files: dict, out: dict) -> list:
    """The tasks of the first two rounds (none without :func:`with_rounds_1_2`)."""
    if not with_rounds_1_2(a):
        return []
    hostile = [asyncio.create_task(SA.attacker(foe, base, k, *files[k], out)) for k in files
               if not k.startswith("_")]  # "_audit_run", "_folder", "_round3": the other attacks' inputs
    if a.hostile_tabs:
        hostile.append(asyncio.create_task(SA.hostile_link(foe, base, a.hostile_tabs, out)))
    if a.audit_tabs:
        hostile.append(asyncio.create_task(SA.audit_burst(foe, base, files["_audit_run"], a.audit_tabs, out,
                                                          a.workers)))
    if a.archive_iterations:
        hostile.append(asyncio.create_task(SA.big_archive(foe, base, files["_folder"], out,
                                                          a.archive_iterations)))
    return hostile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=10)
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--calm", type=float, default=0.4, help="share of the time before the attacks")
    ap.add_argument("--wire-students", type=int, default=0, help="students without a browser (the wire)")
    ap.add_argument("--burst", type=int, default=0, help="sessions opening the Lesson at once at the end (wire)")
    ap.add_argument("--burst-browsers", type=int, default=0, help="Chromium sessions joining that burst")
    ap.add_argument("--memory-budget-mb", type=float, default=2000.0, help="the server's stated memory budget")
    ap.add_argument("--hostile-tabs", type=int, default=4, help="tabs opening the hostile anchor_key link")
    ap.add_argument("--audit-tabs", type=int, default=8, help="tabs of one browser computing one run's audit")
    ap.add_argument("--archive-iterations", type=int, default=3000, help="iterations of the hostile run archive")
    ap.add_argument("--players", type=int, default=2, help="students pressing Play on Bellman backups")
    ap.add_argument("--attackers-nice", type=int, default=0,
                    help="run the attackers' Chromium this many nice steps lower (0: the students' browser)")
    ap.add_argument("--round3", choices=("on", "off", "only", "none"), default="on",
                    help="the third round (issue 57) after the first two; 'only': it alone; 'none': no "
                         "attack of any round (a control: what the students alone do to the server)")
    ap.add_argument("--settle-s", type=float, default=_session_ttl() + 15.0,
                    help="after the last browser closes, wait this long (Streamlit's disconnected-session "
                         "TTL and 15 s) and sample the server's memory again ('settled')")
    ap.add_argument("--round3-attacks", default=",".join(SR.ATTACKS),
                    help="the round-3 attacks to run, in this order (comma-separated)")
    ap.add_argument("--server-log", type=Path, default=None, help="write the server's output here")
    a = ap.parse_args()
    if not Path(CHROMIUM).exists():
        print(json.dumps({"error": f"{CHROMIUM} not found"}))
        return 2
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="crbc-soak-") as tmp:
        files = attack_files(Path(tmp)) if with_rounds_1_2(a) else {}
        files["_folder"], files["_audit_run"] = Path(tmp), SA.audit_run_folder(Path(tmp) / "runs")
        files["_round3"] = SR.files(Path(tmp)) if with_round3(a) else {}
        env = {"CRBC_RUNS_DIRS": str(Path(tmp) / "runs"), "CRBC_CACHE_DIR": str(Path(tmp) / "cache")}
        with running_server(timeout=120, log_path=a.server_log, extra_env=env) as (base, proc):
            own = lambda: rss_one(proc.pid)  # noqa: E731
            a.workers = lambda: SA.job_processes(proc.pid)  # noqa: E731
            mem = {"start": own(), "peak": 0.0, "workers_peak": 0.0}
            series = a.memory = []
            meter = SC.CpuMeter(proc.pid)
            SC.first_sample_baseline(meter)
            cpu = a.cpu = []
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    with contextlib.suppress(Exception):
                        s = own()
                        mem["peak"] = max(mem["peak"], s)
                        mem["workers_peak"] = max(mem["workers_peak"], sum(map(rss_one, children(proc.pid))))
                        SP.sample(series, s, [rss_one(p) for p in SA.job_processes(proc.pid)])
                        if len(series) % 2:
                            cpu.append(meter.sample())
                    stop.wait(0.5)

            th = threading.Thread(target=sample, daemon=True)
            th.start()
            out = asyncio.run(run(base, a, files))
            mem["end"] = own()
            # every browser is closed now; Streamlit keeps a closed tab's session (its state and
            # what its store keeps) for server.disconnectedSessionTTL seconds, in case it reconnects
            time.sleep(a.settle_s)
            mem["settled"] = own()
            # the next visitor: one new session (what still held memory and waits for a script run)
            asyncio.run(_one_visit(base))
            time.sleep(35)  # one turn of the server's memory thread (30 s)
            mem["after_next_visit"] = own()
            stop.set()
            th.join()
    s, e = out["attack_start"], out["attack_end"]
    before = [d for t, d, _ in out["pages"] if t < s]
    during = [d for t, d, _ in out["pages"] if s <= t < e]
    after = [d for t, d, _ in out["pages"] if t >= e]
    attacks = {k: {x: v for x, v in r.items() if x not in ("started", "ended")} for k, r in out["attacks"].items()}
    mb, md = summary(before).get("median"), summary(during).get("median")
    wire = {k: [d for t, d, _ in out["wire_pages"] if f(t)] for k, f in
            (("before_attacks", lambda t: t < s), ("during_attacks", lambda t: s <= t < e), ("after_attacks", lambda t: t >= e))}
    wb, wd = summary(wire["before_attacks"]).get("median"), summary(wire["during_attacks"]).get("median")
    result = {
        "students": a.students, "wire_students": a.wire_students, "minutes": a.minutes, "burst": a.burst,
        "attackers_nice": a.attackers_nice,
        "burst_browsers": a.burst_browsers, "warmup_s": out["warmup_s"],
        "page_ready_s": {"before_attacks": summary(before), "during_attacks": summary(during),
                         "after_attacks": summary(after)},
        "during_over_before_median": round(md / mb, 2) if mb and md else None,
        "wire_page_s": {k: summary(v) for k, v in wire.items()},
        "wire_during_over_before_median": round(wd / wb, 2) if wb and wd else None,
        "server_script_s": {"before_attacks": summary([d for t, d in out["script"] if t < s]),
                            "during_attacks": summary([d for t, d in out["script"] if s <= t < e]),
                            "after_attacks": summary([d for t, d in out["script"] if t >= e])},
        "attacks": attacks, "attack_window_s": round(e - s, 1), **SA.report(out, s, e),
        "round3": SP.attacks(out), "phases": SP.report(out, a.memory, a.cpu),
        "student_errors": out["errors"], "foreign_data_seen": out["foreign"],
        "server_rss_mb": {k: round(v, 1) for k, v in mem.items()}, "memory_budget_mb": a.memory_budget_mb,
        "lesson_burst_s": summary(out["burst"]) | {"all_within_10s": all(x <= 10 for x in out["burst"])}
        if a.burst else None,
        "lesson_burst_browsers_s": summary(out["burst_browsers"]) if a.burst_browsers else None,
        "loadavg_before": [round(x, 2) for x in load0], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    return 0 if not out["errors"] else 1


async def _one_visit(base: str) -> None:
    """One new session on the wire opens the Lesson and leaves."""
    s = await open_session(base, timeout=60)
    try:
        await s.visit("lesson")
    finally:
        s.close()


def _session_ttl() -> float:
    """Streamlit's ``server.disconnectedSessionTTL`` (seconds a closed tab's session is kept)."""
    from streamlit import config

    return float(config.get_option("server.disconnectedSessionTTL"))


def rss_one(pid: int) -> float:
    """Resident memory of the process ``pid`` alone, in MB (0 if gone)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                    out += kids
                    todo += kids
    return out


if __name__ == "__main__":
    sys.exit(main())
