"""The soak's third round of attacks (issue 57), for bench_soak.py; one phase each, in turn.

- ``random``, ``ring``, ``hub``: one valid group of a worst shape
  (:func:`benchmarks.bench_worst_shapes.rollout_lines`: 4,000 rollouts over 20,000 random anchors,
  3.5 MB; a ring of 3,000 anchors; a hub of self-loops, 3.8 MB) uploaded through the sidebar, then
  Step credits and Bellman backups opened from the sidebar: each page's answer (``result``, or the
  notice, which for a large upload names the budget and says "Run it whole on your machine:")
  and its seconds;
- ``small``: 250,000 groups of two rollouts, then Step credits (uploaded as a run's
  ``iter-0000.parquet``, 2.1 MB: as JSON Lines they are 51 MB, over the upload's limit);
- ``lesson_nested``: Lesson links whose ``ls`` value is JSON nested about 1,000 deep (arrays) and
  690 deep (objects): the page's notice, or the generic error page;
- ``long_url``: a 200,000-character address of the Lesson: the HTTP status a plain request gets,
  what the browser gets (status and the page's notice, or its text) and whether the server still answers
  its health check;
- ``tab_close``: a tab that starts the credits of a large upload in a worker and is closed: the
  server's worker processes before, at the close, and the seconds until none is left.

Each record says what the attacker saw (cut to 300 characters), the seconds until it was
answered, and, from :func:`run`, the phase's start and end (for :mod:`benchmarks.soak_phases`)
and the students' errors during it. Only 127.0.0.1 is contacted; every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks.soak_attacks import ANSWER, UPLOAD_WAIT_S
from devtools.apprunner import READY, RUN_NO

#: the uploads: name -> (shape, size, seed, pages opened after it)
UPLOADS = {"random": ("random", 20000, 0, ("Step credits", "Bellman backups")),
           "ring": ("ring", 3000, 0, ("Step credits", "Bellman backups")),
           "hub": ("hub", 100000, 0, ("Step credits", "Bellman backups")),
           "small": ("small", 250000, 0, ("Step credits",)),
           "tab_close": ("random", 20000, 1, ())}  # another seed: nothing of it is kept yet
ATTACKS = ("random", "ring", "hub", "small", "lesson_nested", "long_url", "tab_close")
#: a page waits at most this long for its answer (each bounded job: 60 s for a turn, 60 s of work)
PAGE_WAIT_S = 300
#: a phase stops after this long, whatever it waits for
PHASE_LIMIT_S = 900
#: the pause between two phases (the memory "after" a phase is read at its end)
SETTLE_S = 5.0
#: seconds a closed tab's worker may take to go
WORKER_GONE_S = 30.0
LONG_URL_CHARS = 200_000
#: what a page answered: the generic error page, a traceback, an error, the notice of a bounded
#: computation (ui.core.bounded.show's hourglass icon, or "run it whole on your machine") or of an
#: ignored link, or "result" when the page
#: titled ``title`` is drawn without one by a script run that ended (its number above ``before``:
#: the title is drawn while the script still runs, and a page's run-marker comes last)
ANSWER_ON = """({title, before}) => {
  const body = document.body ? document.body.innerText : '';
  if (body.includes('This app has encountered an error')) return 'APP ERROR: ' + body.slice(0, 300);
  const e = document.querySelector('[data-testid=stException]');
  if (e) return 'EXCEPTION: ' + e.innerText.slice(0, 300);
  const main = document.querySelector('[data-testid=stMain]');
  const h1 = main && main.querySelector('h1');
  if (!h1 || !h1.textContent.startsWith(title)) return null;
  for (const a of main.querySelectorAll('[data-testid=stAlertContentError], [data-testid=stAlertContentWarning]')) {
    const t = a.innerText;
    if (a.dataset.testid === 'stAlertContentError' || /hourglass_disabled|run it whole on your machine|Ignored URL parameter/i.test(t))
      return t.slice(0, 300);
  }
  return (RUN_NO_FN)() > before && (READY_FN)(title) ? 'result' : null;
}""".replace("READY_FN", READY).replace("RUN_NO_FN", RUN_NO)
#: the server's seconds for the page's last finished script run (app.py's marker)
SCRIPT_S = ("() => { const m = Array.from(document.querySelectorAll('.crbc-run')).pop();"
            " return m ? (+m.dataset.scriptMs || 0) / 1000 : null; }")
#: a large job is running: the caption bounded.compute shows while it waits or computes
COMPUTING = """() => {
  const m = document.querySelector('[data-testid=stMain]');
  return !!m && /Computing .* in a worker|waits for a worker/.test(m.innerText);
}"""


def files(folder: Path) -> dict[str, Path]:
    """The uploads of :data:`UPLOADS`, written once into ``folder``."""
    from benchmarks.bench_worst_shapes import rollout_lines

    out = {}
    for name, (shape, size, seed, _) in UPLOADS.items():
        path = out[name] = folder / f"r3-{name}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in rollout_lines(shape, size, seed))
    out["small"] = _as_parquet(out["small"])
    return out


def _as_parquet(path: Path) -> Path:
    """The groups of ``path`` as a run's iteration file (the upload reads it as crbc.rollout/1):
    250,000 groups are 51 MB of JSON Lines, over the upload's 20 MB, and 2.1 MB of Parquet."""
    from crbc.io.parquet_rollouts import write_parquet_rollouts
    from crbc.io.rollout_files import read_rollouts

    (folder := path.with_suffix("")).mkdir()
    out = write_parquet_rollouts(folder / "iter-0000.parquet", read_rollouts(path))
    path.unlink()
    return out


def nested_links() -> dict[str, str]:
    """Lesson ``ls`` values whose JSON nests about 1,000 deep: arrays in ``ops``, objects in ``ans``."""
    docs = {"arrays_1000": b'{"v":1,"ops":' + b"[" * 1000 + b"]" * 1000 + b"}",
            "objects_690": b'{"v":1,"ans":' + b'{"a":' * 690 + b"1" + b"}" * 690 + b"}"}
    return {k: base64.urlsafe_b64encode(v).decode().rstrip("=") for k, v in docs.items()}


async def _tab(browser):
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(PAGE_WAIT_S * 1000)
    return ctx, page


def _failed(e: Exception) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


async def _upload(page, base: str, path: Path, rec: dict) -> bool:
    """Upload ``path`` (crbc.rollout/1) through the sidebar; True once the sidebar says it loaded."""
    await page.goto(f"{base}/rollouts?source=upload")
    box = "[class*=st-key-upload_file_rollout] input[type=file]"
    await page.wait_for_selector(box, state="attached")
    t = time.perf_counter()
    await page.locator(box).set_input_files(str(path))
    await page.wait_for_function(ANSWER, polling=250, timeout=UPLOAD_WAIT_S * 1000)
    answer = await page.evaluate(ANSWER)
    rec["upload"] = {"seconds": round(time.perf_counter() - t, 2),
                     "answer": "loaded" if answer == "LOADED" else answer[:300]}
    return answer == "LOADED"


async def _open(page, title: str, workers) -> dict:
    """Open ``title`` from the sidebar and wait for its answer (:data:`ANSWER_ON`); meanwhile,
    whether the page said it computes in a worker and the most job processes seen."""
    t = time.perf_counter()
    out = {"answer": None, "computing_caption": False, "workers_max": 0}
    arg = {"title": title, "before": await page.evaluate(RUN_NO)}
    await page.locator("[data-testid=stSidebarNavLink]").filter(has_text=title).first.click()
    try:
        while out["answer"] is None and time.perf_counter() - t < PAGE_WAIT_S:
            out["workers_max"] = max(out["workers_max"], len(workers()))
            out["computing_caption"] = out["computing_caption"] or await page.evaluate(COMPUTING)
            out["answer"] = await page.evaluate(ANSWER_ON, arg)
            await asyncio.sleep(0.1)
        if out["answer"] == "result":
            out["server_script_s"] = await page.evaluate(SCRIPT_S)
    except Exception as e:  # noqa: BLE001 (no answer in time is the finding)
        out["answer"] = f"no answer: {_failed(e)}"
    out["answer"] = (out["answer"] or f"no answer within {PAGE_WAIT_S} s")[:300]
    out["seconds"] = round(time.perf_counter() - t, 2)
    return out


async def heavy_upload(browser, base: str, path: Path, pages: tuple[str, ...], rec: dict, workers,
                       memory: list) -> None:
    """``memory``: bench_soak's samples (time, server MB, workers MB, workers): each page's peaks."""
    rec["bytes"] = path.stat().st_size
    ctx, page = await _tab(browser)
    try:
        if await _upload(page, base, path, rec):
            for title in pages:
                t = time.perf_counter()
                rec[title] = await _open(page, title, workers)
                seen = [x for x in memory if x[0] >= t]
                rec[title]["server_peak_mb"] = round(max((x[1] for x in seen), default=0.0), 1)
                rec[title]["workers_peak_mb"] = round(max((x[2] for x in seen), default=0.0), 1)
    except Exception as e:  # noqa: BLE001
        rec["failed"] = _failed(e)
    finally:
        await ctx.close()


async def _answer_of_link(browser, url: str, title: str) -> dict:
    ctx, page = await _tab(browser)
    t = time.perf_counter()
    try:
        resp = await page.goto(url, timeout=60_000)
        out = {"status": resp.status if resp else None}
        arg = {"title": title, "before": 0}
        await page.wait_for_function(ANSWER_ON, arg=arg, polling=250, timeout=60_000)
        out["answer"] = (await page.evaluate(ANSWER_ON, arg))[:300]
    except Exception as e:  # noqa: BLE001
        out = {"answer": _failed(e)}
        out["page_text"] = await _text(page)
    finally:
        out["seconds"] = round(time.perf_counter() - t, 2)
        await ctx.close()
    return out


async def _text(page) -> str:
    try:
        return (await page.evaluate("() => document.body ? document.body.innerText : ''"))[:300]
    except Exception as e:  # noqa: BLE001
        return _failed(e)


async def lesson_nested(browser, base: str, rec: dict) -> None:
    for name, value in nested_links().items():
        rec[name] = {"chars": len(value), **await _answer_of_link(browser, f"{base}/lesson?ls={value}", "Lesson")}


def _get(url: str) -> str:
    """A plain GET: its status, or what ended it."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code} {e.reason}"
    except OSError as e:
        return _failed(e)


async def long_url(browser, base: str, rec: dict) -> None:
    head = f"{base}/lesson?ls="
    url = head + "A" * (LONG_URL_CHARS - len(head))
    rec["chars"] = len(url)
    t = time.perf_counter()
    rec["plain_get"] = await asyncio.to_thread(_get, url)
    rec["plain_get_seconds"] = round(time.perf_counter() - t, 2)
    rec["browser"] = await _answer_of_link(browser, url, "Lesson")  # its notice, or what the tab shows
    rec["health_after"] = await asyncio.to_thread(_get, f"{base}/_stcore/health")


async def tab_close(browser, base: str, path: Path, rec: dict, workers) -> None:
    """``workers()``: the server's job processes now. The tab uploads, opens Step credits, and is
    closed once its computation runs in a worker."""
    rec["workers_before"] = len(workers())
    ctx, page = await _tab(browser)
    closed = None
    try:
        if not await _upload(page, base, path, rec):
            return
        await page.locator("[data-testid=stSidebarNavLink]").filter(has_text="Step credits").first.click()
        await page.wait_for_function(COMPUTING, polling=250, timeout=120_000)
        for _ in range(40):  # the caption comes as the worker starts: up to 10 s for its process
            if workers():
                break
            await asyncio.sleep(0.25)
        rec["workers_at_close"] = len(workers())
    except Exception as e:  # noqa: BLE001
        rec["failed"] = _failed(e)
    finally:
        closed = time.perf_counter()
        await ctx.close()
    while workers() and time.perf_counter() - closed < WORKER_GONE_S:
        await asyncio.sleep(0.25)
    rec["workers_after"] = len(workers())
    rec["seconds_until_no_worker"] = round(time.perf_counter() - closed, 2) if not rec["workers_after"] else None


async def run(browser, base: str, paths: dict[str, Path], out: dict, workers, names=ATTACKS) -> None:
    """The attacks ``names`` in turn, one phase each: ``out["round3"][name]`` with its ``started``
    and ``ended`` clocks and the students' errors seen meanwhile."""
    attacks = {name: (lambda rec, n=name: heavy_upload(browser, base, paths[n], UPLOADS[n][3], rec, workers,
                                                       out.get("memory", [])))
               for name in ("random", "ring", "hub", "small")}
    attacks["lesson_nested"] = lambda rec: lesson_nested(browser, base, rec)
    attacks["long_url"] = lambda rec: long_url(browser, base, rec)
    attacks["tab_close"] = lambda rec: tab_close(browser, base, paths["tab_close"], rec, workers)
    done = out.setdefault("round3", {})
    for name in names:
        attack = attacks[name]
        rec = done[name] = {}
        errors = len(out["errors"])
        rec["started"] = time.perf_counter()
        try:
            await asyncio.wait_for(attack(rec), PHASE_LIMIT_S)
        except TimeoutError:
            rec["failed"] = f"the phase did not end within {PHASE_LIMIT_S} s"
        rec["ended"] = time.perf_counter()
        rec["seconds"] = round(rec["ended"] - rec["started"], 2)
        await asyncio.sleep(SETTLE_S)
        rec["student_errors"] = out["errors"][errors:]
        print(json.dumps({"round3": name} | {k: v for k, v in rec.items() if k not in ("started", "ended")}),
              file=sys.stderr, flush=True)  # progress: a long run says where it is
