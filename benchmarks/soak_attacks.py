"""The soak's second round of attacks (issue 46) and the students' Play, for bench_soak.py.

- ``hostile_link``: a link whose ``anchor_key`` is ``(`` x 5000 + ``)`` x 5000 (10,000 characters
  that RE2 accepts), opened in ``tabs`` tabs of one browser at once; each tab's answer (the
  notice it shows, or the generic error page) and its time, and the same link asked by as many
  sessions on the wire (the server's own answer, without a browser's drawing);
- ``audit_burst``: ``tabs`` tabs of one browser open the same run folder on Training runs and
  press "Compute the audit" at once; recorded: what each tab shows (running, queued with its
  place, or the note that another tab of the same person has one), the server's worker processes
  while they run, then every tab is closed and the time until no worker is left (the
  heartbeat ends an audit nobody polls);
- ``big_archive``: a run archive of 3,000 iterations (one tiny rollout file each) uploaded on
  Training runs: its answer and time;
- ``attacker``: one of bench_soak's hostile uploads through the sidebar, waiting past the upload
  worker's own budget for its answer (loaded, or the notice);
- ``niced_chromium``: the attackers' browsers at a lower priority (``--attackers-nice``);
- ``player``: a student who presses Play on Bellman backups over and over and times each Play
  until the button says Play again (a Play not finished within ``PLAY_TIMEOUT_S`` is recorded
  as unfinished).

Only 127.0.0.1 is contacted; every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
import urllib.parse
import zipfile
from pathlib import Path

from devtools.apprunner import CHROMIUM, READY

HOSTILE = "(" * 5000 + ")" * 5000
PLAY_TIMEOUT_S = 120.0
#: the rounds one Play animates (a link's maximum depth; the page's own default, the convergence
#: depth, is about 125 rounds at 0.9 s each, longer than the attack window)
PLAY_DEPTH = 8
#: the first alert on the page, or the generic error page
ALERT = """() => {
  const e = document.querySelector('[data-testid=stException]');
  if (e) return 'EXCEPTION: ' + e.innerText.slice(0, 300);
  const a = document.querySelector('[data-testid=stMain] [data-testid=stAlertContentError]');
  return a ? a.innerText.slice(0, 300) : null;
}"""
#: what a tab of Training runs shows about its audit
AUDIT_STATE = """() => {
  const m = document.querySelector('[data-testid=stMain]');
  if (!m) return null;
  const t = m.innerText;
  if (t.includes('another tab of yours')) return 'refused: another tab of yours';
  const q = t.match(/Queued: (\\d+) audit/);
  if (q) return 'queued, ' + q[1] + ' ahead';
  if (t.includes('Auditing every iteration')) return 'running';
  if (m.querySelector('.st-key-runs_audit [data-pick]')) return 'done';
  return null;
}"""


def job_processes(server_pid: int) -> list[int]:
    """The server's job workers: the descendants of its direct children (the fork server forks
    every job; the fork server and the resource tracker themselves are not jobs)."""
    from benchmarks.bench_soak import children

    direct = set()
    for task in _listdir(f"/proc/{server_pid}/task"):
        try:
            with open(f"/proc/{server_pid}/task/{task}/children") as f:
                direct.update(int(c) for c in f.read().split())
        except OSError:
            pass
    return [p for p in children(server_pid) if p not in direct]


def _listdir(path: str) -> list[str]:
    import os

    try:
        return os.listdir(path)
    except OSError:
        return []


def audit_run_folder(root: Path) -> Path:
    """A run folder for the audit burst (verl-agent-like transcripts: some seconds of work each)."""
    from devtools.textworld import alfworld_like_run

    return alfworld_like_run(root / "soak-audit", iterations=60, groups=8)


def archive_bytes(iterations: int = 3000) -> bytes:
    """A run archive with ``iterations`` iteration files of one tiny rollout each."""
    line = json.dumps({"group": "g", "rollout": 0, "steps": [{"anchor": "a", "action": "x"}], "success": True})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big/run.json", json.dumps({"schema": "crbc.run/1", "name": "big", "config": {}}))
        z.writestr("big/metrics.jsonl", "".join(json.dumps({"iteration": i}) + "\n" for i in range(iterations)))
        for i in range(iterations):
            z.writestr(f"big/rollouts/iter-{i:04d}.jsonl", line + "\n")
    return buf.getvalue()


async def hostile_link(browser, base: str, tabs: int, out: dict) -> None:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    url = f"{base}/rollouts?anchor_key={urllib.parse.quote(HOSTILE)}"
    rec = out["attacks"]["hostile_link"] = {"tabs": tabs, "answers": []}

    async def one() -> None:
        page = await ctx.new_page()
        t = time.perf_counter()
        try:
            await page.goto(url, timeout=180_000)
            await page.wait_for_function(ALERT, polling=250, timeout=180_000)
            rec["answers"].append({"seconds": round(time.perf_counter() - t, 2),
                                   "answer": (await page.evaluate(ALERT))[:200]})
        except Exception as e:  # noqa: BLE001
            rec["answers"].append({"seconds": None, "answer": f"{type(e).__name__}: {str(e)[:150]}"})

    t0 = rec["started"] = time.perf_counter()
    try:
        await asyncio.gather(*(one() for _ in range(tabs)), _hostile_link_wire(base, tabs, rec))
    finally:
        rec["ended"] = time.perf_counter()
        rec["seconds"] = round(rec["ended"] - t0, 2)
        await ctx.close()


async def _hostile_link_wire(base: str, tabs: int, rec: dict) -> None:
    """The same link asked by ``tabs`` sessions on the wire at once (benchmarks.wire_client): the
    server's own answer, without the attacker's browser. Recorded in ``rec["wire"]``: seconds
    from the request to the first error alert (or to the run's end when none came), and the
    alert. The browser's time adds its own drawing, which on the soak's machine is a niced
    Chromium sharing two cores with the students' browsers."""
    from benchmarks.wire_client import open_session

    rec["wire"] = []
    query = "anchor_key=" + urllib.parse.quote(HOSTILE)

    async def one() -> None:
        try:
            session = await open_session(base, timeout=180.0)
        except Exception as e:  # noqa: BLE001
            rec["wire"].append({"seconds": None, "answer": f"{type(e).__name__}: {str(e)[:150]}"})
            return
        try:
            v = await session.visit("rollouts", query)
            seconds = v.first_error_seconds if v.first_error_seconds is not None else v.seconds
            rec["wire"].append({"seconds": round(seconds, 2), "answer": (v.errors or ["(no alert)"])[0][:200]})
        except Exception as e:  # noqa: BLE001
            rec["wire"].append({"seconds": None, "answer": f"{type(e).__name__}: {str(e)[:150]}"})
        finally:
            session.close()

    await asyncio.gather(*(one() for _ in range(tabs)))


async def audit_burst(browser, base: str, run: Path, tabs: int, out: dict, workers) -> None:
    """``workers()``: the server's worker processes now (pids)."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    url = f"{base}/runs?source=run&run={urllib.parse.quote(str(run))}"
    rec = out["attacks"]["audit_burst"] = {"tabs": tabs, "states": [], "workers_max": 0}
    pages = []
    t0 = rec["started"] = time.perf_counter()
    try:
        for _ in range(tabs):
            page = await ctx.new_page()
            page.set_default_timeout(120_000)
            await page.goto(url)
            await page.wait_for_selector(".st-key-runs_audit_go button")
            pages.append(page)
        await asyncio.gather(*(p.locator(".st-key-runs_audit_go button").click() for p in pages))
        for p in pages:
            try:
                await p.wait_for_function(AUDIT_STATE, polling=250, timeout=60_000)
                rec["states"].append(await p.evaluate(AUDIT_STATE))
            except Exception as e:  # noqa: BLE001
                rec["states"].append(f"{type(e).__name__}")
        for _ in range(20):  # 10 s of the burst: how many workers the server runs
            rec["workers_max"] = max(rec["workers_max"], len(workers()))
            await asyncio.sleep(0.5)
    finally:
        closed = time.perf_counter()
        await ctx.close()  # every tab goes: nobody waits for the audit any more
        while workers() and time.perf_counter() - closed < 200:
            await asyncio.sleep(1)
        rec["workers_left_after_200s"] = len(workers())
        rec["seconds_until_no_worker"] = round(time.perf_counter() - closed, 1)
        rec["ended"] = time.perf_counter()
        rec["seconds"] = round(rec["ended"] - t0, 2)


async def big_archive(browser, base: str, folder: Path, out: dict, iterations: int = 3000) -> None:
    path = folder / f"big-{iterations}.zip"
    path.write_bytes(archive_bytes(iterations))
    rec = out["attacks"]["big_archive"] = {"iterations": iterations, "bytes": path.stat().st_size}
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(180_000)
    rec["started"] = time.perf_counter()
    try:
        await page.goto(f"{base}/runs?runs_kind=ours")
        await page.wait_for_selector(".st-key-runs_upload input[type=file]", state="attached")
        t = time.perf_counter()
        await page.locator(".st-key-runs_upload input[type=file]").set_input_files(str(path))
        await page.wait_for_function(ALERT, polling=250)
        rec["seconds"] = round(time.perf_counter() - t, 2)
        rec["answer"] = (await page.evaluate(ALERT))[:300]
    except Exception as e:  # noqa: BLE001
        rec["answer"] = f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        rec["ended"] = time.perf_counter()
        await ctx.close()


async def player(browser, base: str, i: int, out: dict) -> None:
    """Press Play on Bellman backups until ``out["stop_at"]``; each Play's seconds (inf: not finished)."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(60_000)
    try:
        while time.perf_counter() < out["stop_at"]:
            try:
                await page.goto(f"{base}/backups?K=0&kmax={PLAY_DEPTH}")
                await page.wait_for_function(READY, arg="Bellman backups")
                button = page.locator(".st-key-play button").first
                t = time.perf_counter()
                await button.click()
                label = "() => (document.querySelector('.st-key-play button') || {}).innerText || ''"
                await page.wait_for_function(f"() => ({label})().includes('Pause')", timeout=30_000, polling=100)
                await page.wait_for_function(f"() => ({label})().includes('Play')",
                                             timeout=PLAY_TIMEOUT_S * 1000, polling=200)
                out["plays"].append((t, time.perf_counter() - t))
            except Exception as e:  # noqa: BLE001 (a Play that does not finish is what is measured)
                out["plays"].append((time.perf_counter(), float("inf")))
                out.setdefault("play_failures", []).append(  # which wait ran out, for the report
                    {"t": time.perf_counter(), "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
            await asyncio.sleep(1.0)
    finally:
        await ctx.close()


def report(out: dict, s: float, e: float) -> dict:
    """Play before and during the attacks, and the new attacks' records without their clocks."""
    from benchmarks.bench_soak import summary

    plays = out.get("plays", [])
    before = [d for t, d in plays if t < s and d != float("inf")]
    during = [d for t, d in plays if s <= t < e and d != float("inf")]
    mb, md = summary(before).get("median"), summary(during).get("median")
    failures = [{"at_s": round(f["t"] - s, 1), "error": f["error"]} for f in out.get("play_failures", [])]
    return {"play_s": {"before_attacks": summary(before), "during_attacks": summary(during),
                       "unfinished": sum(d == float("inf") for _, d in plays), "failures": failures},
            "play_during_over_before_median": round(md / mb, 2) if mb and md else None}


def niced_chromium(folder: Path, niceness: int) -> Path:
    """A launcher that runs Chromium ``niceness`` steps below normal priority: the attackers' own
    browsers, which in a class run on the attackers' machines, not on the server's cores.

    Playwright starts each browser in a session of its own, and where the kernel groups its
    scheduling by session (autogroup, ``/proc/sys/kernel/sched_autogroup_enabled``) a process's
    nice value only ranks it inside its session: the group itself competes with the server's at
    full weight. So the launcher sets its new session's group to the same nice value first
    (``/proc/self/autogroup``; ignored where the kernel has none)."""
    n = int(niceness)
    path = folder / "chromium-niced"
    path.write_text(f'#!/bin/sh\necho {n} > /proc/self/autogroup 2>/dev/null\nexec nice -n {n} {CHROMIUM} "$@"\n')
    path.chmod(0o755)
    return path


#: the answer to an upload: its error, or LOADED once the sidebar says the upload merged
ANSWER = """() => {
  const err = document.querySelector('[data-testid=stMain] [data-testid=stAlertContentError]');
  if (err) {
    const pre = document.querySelector('[data-testid=stMain] pre, [data-testid=stMain] code');
    return err.innerText + ' ' + (pre ? pre.innerText : '');
  }
  const sb = document.querySelector('[data-testid=stSidebar]');
  if (sb && sb.innerText.includes('Loaded: upload') && sb.innerText.includes('steps at shared anchors')) return 'LOADED';
  return null;
}"""
#: how long an uploading attacker waits for its answer (the upload budget's 180 s and the transfer)
UPLOAD_WAIT_S = 240


async def attacker(browser, base: str, name: str, path: Path, regex: str | None, out: dict) -> None:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    # longer than the upload worker's 180 s wall-clock budget (crbc.jobs.upload.Limits): on a busy
    # server the low-priority read waits, and its end (loaded, or stopped with a notice) is the answer
    page.set_default_timeout(UPLOAD_WAIT_S * 1000)
    rec = out["attacks"][name] = {"file": path.name, "bytes": path.stat().st_size}
    try:
        await page.goto(f"{base}/rollouts?source=upload")
        await page.wait_for_selector(".st-key-upload_kind [role=combobox]")
        box = page.locator(".st-key-upload_kind input")  # the select box, by keyboard (its list
        await box.click()                                 # may open below the window)
        await box.fill("step table")
        await box.press("Enter")
        await page.wait_for_selector("[class*=st-key-upload_file_steps] input[type=file]", state="attached")
        if regex:
            key = page.locator(".st-key-anchor_key input")
            await key.fill(regex)
            await key.press("Enter")
            await page.wait_for_timeout(1500)  # the rerun that takes the key (this page has no run marker)
        t = time.perf_counter()
        rec["started"] = t
        await page.locator("[class*=st-key-upload_file_steps] input[type=file]").set_input_files(str(path))
        await page.wait_for_function(ANSWER, polling=250)
        rec["seconds"] = round(time.perf_counter() - t, 2)
        rec["answer"] = (await page.evaluate(ANSWER))[:400]
        rec["traceback_shown"] = bool(await page.locator("[data-testid=stException]").count())
    except Exception as e:  # noqa: BLE001
        rec["answer"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        with contextlib.suppress(Exception):  # what the page said when the wait ended
            rec["page_said"] = (await page.inner_text("[data-testid=stSidebar]"))[-400:]
    finally:
        rec["ended"] = time.perf_counter()
        await ctx.close()
