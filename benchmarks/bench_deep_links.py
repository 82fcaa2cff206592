"""Warm deep links (issue 57.6): seconds from opening a page's link in a new tab of a browser
that has shown the studio before (its HTTP and code caches warm, the server's shared store warm,
a new Streamlit session) to the page ready; per page, every repeat and the median. Prints JSON.

    python -m benchmarks.bench_deep_links [--repeats 5] [--pages lesson,runs,rollouts]

The shipped samples, loopback only. Timing starts once the server has finished starting (its
background imports of the model stack: no CPU used for 2 s, ``server_idle_after_s``); the first
visit of each page (cold server and browser caches) is reported apart and not in the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from benchmarks import bench_browser as B
from benchmarks.bench_classroom import cpu_seconds
from devtools.apprunner import launch, running_server

TITLES = {slug or "rollouts": (slug, title) for slug, title in B.PAGES}


def wait_idle(pid: int, quiet_s: float = 2.0, timeout_s: float = 90.0) -> float:
    """Seconds until process ``pid`` used no CPU for ``quiet_s`` seconds (at most ``timeout_s``)."""
    t0 = time.perf_counter()
    last, since = cpu_seconds([pid]), time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        time.sleep(0.25)
        now = cpu_seconds([pid])
        if now - last > 0.02:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet_s:
            break
    return round(time.perf_counter() - t0, 1)


def measure(pages: list[str], repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {"load_before": [round(x, 2) for x in os.getloadavg()], "pages": {}}
    with running_server() as (base, proc), sync_playwright() as pw:
        out["server_idle_after_s"] = wait_idle(proc.pid)
        browser = launch(pw)
        ctx = B.new_context(browser)
        for name in pages:
            slug, title = TITLES[name]
            first = B.new_tab(ctx, base, slug, title)
            times = [B.new_tab(ctx, base, slug, title) for _ in range(max(repeats, 1))]
            out["pages"][name] = {"first_s": round(first, 3), "warm_s": [round(t, 3) for t in times],
                                  "warm_median_s": round(statistics.median(times), 3)}
        ctx.close()
        browser.close()
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pages", default="lesson,runs", help=f"comma-separated, of {', '.join(TITLES)}")
    a = ap.parse_args(argv)
    print(json.dumps(measure([p.strip() for p in a.pages.split(",") if p.strip()], a.repeats), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
