"""Open a report file (``crbc report``) in headless Chromium and say what a reader would see.

Shared by the browser tests (tests/browser/test_report_files.py) and benchmarks/bench_report.py.
:func:`open_report` loads ``file://PATH`` and returns :class:`Opened`: every request other than
the file itself (there must be none), console errors and page errors, how many SVG drawings have
a visible size, the time from navigation start to the report's script having run
(``data-crbc-ready``, set at the end of the file's only script, after the page is parsed),
and an optional full-page screenshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DRAWN = """() => {
  const svgs = Array.from(document.querySelectorAll('svg'));
  const shown = svgs.filter(s => { const r = s.getBoundingClientRect(); return r.width > 20 && r.height > 20; });
  return {svgs: svgs.length, shown: shown.length,
          ready: document.documentElement.getAttribute('data-crbc-ready') === '1',
          ms: performance.now()};
}"""


@dataclass
class Opened:
    """What opening a report gave: ``requests`` (URLs other than the file), ``console_errors``,
    ``page_errors``, ``svgs`` / ``svgs_shown`` (drawings / those with a visible size),
    ``ready`` (the script ran), ``open_ms`` (navigation start to the load event, which follows
    the script's run and the drawings' layout)."""

    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    svgs: int = 0
    svgs_shown: int = 0
    ready: bool = False
    open_ms: float = float("nan")


def open_report(browser, path: str | Path, screenshot: str | Path | None = None,
                viewport: tuple[int, int] = (1300, 900), page_hook=None) -> Opened:
    """Open ``path`` in a fresh context of ``browser`` (see the module docstring); ``page_hook(page)``
    runs after the load (e.g. to move a slider) and before the screenshot."""
    url = Path(path).resolve().as_uri()
    out = Opened()
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        pg = ctx.new_page()
        pg.on("request", lambda r: None if r.url == url else out.requests.append(r.url))
        pg.on("console", lambda m: out.console_errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: out.page_errors.append(str(e)))
        pg.goto(url, wait_until="load")
        got = pg.evaluate(DRAWN)
        out.svgs, out.svgs_shown, out.ready = got["svgs"], got["shown"], got["ready"]
        out.open_ms = float(pg.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd || n.duration; }"))
        if page_hook is not None:
            page_hook(pg)
        if screenshot is not None:
            pg.screenshot(path=str(screenshot), full_page=True)
    finally:
        ctx.close()
    return out
