"""Warm deep links (issue 57.6): seconds from opening a page's link in a new tab of a browser
that has shown the studio before (its HTTP and code caches warm, the server's shared store warm,
a new Streamlit session) to the page ready; per page, every repeat and the median. Prints JSON.

    python -m benchmarks.bench_deep_links [--repeats 5] [--pages lesson,runs,rollouts]

The shipped samples, loopback only. The first visit of each page (cold server and browser
caches) is reported apart and not in the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from benchmarks import bench_browser as B
from devtools.apprunner import launch, running_app

TITLES = {slug or "rollouts": (slug, title) for slug, title in B.PAGES}


def measure(pages: list[str], repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {"load_before": [round(x, 2) for x in os.getloadavg()], "pages": {}}
    with running_app() as base, sync_playwright() as pw:
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
