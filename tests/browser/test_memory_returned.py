"""A closed tab's upload leaves the server (issue 57.3). Two faults kept it: Streamlit drops a
closed tab's session only when another session is saved, even after its disconnected-session TTL
(2 s here) has passed; and the dropped session's ring of references (script runner, thread, run
context, session state, the page's functions and globals) holds the upload's rollouts until a
full collection, which a quiet server never starts. The server's memory thread (every 2 s here)
drops the expired sessions (ui/core/session_reaper.py), collects and gives the pages back
(ui/core/memory.py), so once the next visitor has come the server gives back most of what the
upload took (60 % at least, within 30 s). Measured by hand: the upload raised the server by 42-44
MB and 14 MB stayed (before Arrow's buffers came from the system allocator, ui/core/memory.py:
106 MB, and 44 MB stayed; 78 MB without the collection).

Not yet fixed, and so not asserted: with nobody visiting at all, the upload stays. Then the
session's ``AppSession`` is held by its ``ActiveSessionInfo``, which no object the garbage
collector tracks refers to; the next session's script run releases it
(docs/results/benchmarks/shared-studio.md)."""

from __future__ import annotations

import json
import random
import time

import pytest

from devtools.apprunner import rss_mb, running_server, wait_ready

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TTL_S = 2


def _big_group(path) -> None:
    """One valid group of 4,000 rollouts x 25 steps over 10,000 anchors (about 3.8 MB)."""
    rng = random.Random(0)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(4000):
            steps = [{"anchor": f"a{rng.randrange(10_000)}", "action": f"m{rng.randrange(3)}"} for _ in range(25)]
            f.write(json.dumps({"group": "big", "rollout": i, "steps": steps, "success": rng.random() < 0.3}) + "\n")


def _own_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:")) / 1024


def _visit(browser, url: str) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.goto(url)
        wait_ready(pg, "Rollouts", timeout_ms=90_000)
    finally:
        ctx.close()


def test_a_closed_tabs_upload_is_given_back_after_its_session_goes(browser, tmp_path, artifacts_dir):
    path = tmp_path / "big.jsonl"
    _big_group(path)
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(TTL_S), "CRBC_MEMORY_INTERVAL_S": "2"}
    with running_server(log_path=artifacts_dir / "browser-memory-returned.log", extra_env=env) as (base, proc):
        _visit(browser, f"{base}/rollouts")  # the shipped sample and the imports, in every session's baseline
        time.sleep(3 * TTL_S)
        _visit(browser, f"{base}/rollouts")  # a second session, as the one after the upload will be
        time.sleep(5)
        before = _own_mb(proc.pid)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        pg.goto(f"{base}/rollouts?source=upload")
        pg.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(str(path))
        pg.wait_for_function("() => document.querySelector('[data-testid=stSidebar]').innerText"
                             ".includes('steps at shared anchors')", timeout=120_000, polling=250)
        wait_ready(pg, "Rollouts", timeout_ms=120_000)
        loaded = _own_mb(proc.pid)
        ctx.close()
        assert loaded > before + 30, (before, loaded)  # the upload is big enough to see
        time.sleep(TTL_S + 1)
        _visit(browser, f"{base}/rollouts")  # the next visitor (see the module docstring)
        deadline = time.monotonic() + 30
        while (now := _own_mb(proc.pid)) > before + 0.6 * (loaded - before) and time.monotonic() < deadline:
            time.sleep(1)
        assert now <= before + 0.6 * (loaded - before), (before, loaded, now, rss_mb(proc.pid))
