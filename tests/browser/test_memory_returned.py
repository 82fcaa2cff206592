"""A closed tab's upload leaves the server (issue 57.3): once Streamlit has dropped the tab's
session (its disconnected-session TTL, 2 s here, has passed and a new session came), the
session's ring of references (script runner, thread, run context, session state, the page's
functions and globals) holds the upload's rollouts until a full collection. The server's memory
thread (ui/core/memory.py, every 2 s here) collects it and gives the pages back, so the server
gives back most of what the upload took. Measured on this test's group (about 106 MB over the
baseline while the tab is open): 30 s after the session went, 44 MB of it remained with the
collection, 78 MB without it (the same test with the interval at 10,000 s, run by hand); the
threshold, 60 %, sits between them. In the soak's setting the same fault kept 260 MB
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
        _visit(browser, f"{base}/rollouts")  # drops the first session
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
        assert loaded > before + 80, (before, loaded)  # the upload is big enough to see
        time.sleep(TTL_S + 1)
        _visit(browser, f"{base}/rollouts")  # a new session: Streamlit drops the expired one now
        deadline = time.monotonic() + 30
        while (now := _own_mb(proc.pid)) > before + 0.6 * (loaded - before) and time.monotonic() < deadline:
            time.sleep(1)
        assert now <= before + 0.6 * (loaded - before), (before, loaded, now, rss_mb(proc.pid))
