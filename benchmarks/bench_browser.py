"""What the browser benchmarks share (bench_app, bench_app_users, bench_streamlit_floor): the
pages and their titles, a fresh browser context, timing a page visit, in-session navigation and an
action to the page ready again (devtools.apprunner.READY). Prints nothing.
"""

from __future__ import annotations

import time

from devtools.apprunner import READY, RUN_NO, nav_link

PAGES = [  # (url path, title the page's h1 starts with); Rollouts is the default page, at "/"
    ("", "Rollouts"), ("lesson", "Lesson"), ("graph", "Anchor graph"),
    ("backups", "Bellman backups"), ("credits", "Step credits"), ("inspector", "Anchor inspector"),
    ("disagreements", "Disagreements"), ("runs", "Training runs"),
]
NAV_LABELS = {  # url path -> its link text in the sidebar's navigation (app.PAGES)
    "": "Rollouts", "lesson": "Lesson", "graph": "Anchor graph", "backups": "Bellman backups",
    "credits": "Step credits", "inspector": "Inspector", "disagreements": "Disagreements",
    "runs": "Training runs",
}
SCRIPT_MS = "() => { const m = document.querySelector('.crbc-run[data-script-ms]'); return m ? +m.dataset.scriptMs : null; }"
TIMEOUT = 120_000
WHY_NOT_READY = """(title) => {
  const main = document.querySelector('[data-testid=stMain]');
  if (!main) return 'no main';
  const h1 = main.querySelector('h1');
  const why = [];
  if (!h1 || !h1.textContent.startsWith(title)) why.push('h1=' + (h1 ? h1.textContent.slice(0, 60) : null));
  if (document.querySelector('[data-testid=stStatusWidgetRunningIcon], [data-testid=stStatusWidgetRunningManIcon]'))
    why.push('running');
  if (main.querySelector('[data-stale=true]')) why.push('stale element');
  if (main.querySelector('[data-testid=stSkeleton]')) why.push('skeleton');
  for (const c of main.querySelectorAll('.stBidiComponent'))
    if (!c.querySelector('.crbc-svg-view > svg')) why.push('an SVG view not drawn');
  for (const f of main.querySelectorAll('iframe')) {
    let d = null;
    try { d = f.contentDocument; } catch (e) { continue; }
    if (!d || !d.body) { why.push('iframe without body'); continue; }
    if (d.querySelector('#mynetwork') && d.body.getAttribute('data-graph-ready') !== '1') why.push('anchor graph not ready');
  }
  const err = main.querySelector('[data-testid=stException], [data-testid=stAlertContentError]');
  if (err) why.push('error: ' + err.textContent.slice(0, 200));
  return why.join('; ') || 'ready now';
}"""


def new_context(browser):
    return browser.new_context(viewport={"width": 1400, "height": 1000})


def open_page(pg, base: str, path: str, title: str) -> float:
    """Seconds from ``pg`` going to ``base/path`` to the page titled ``title`` ready."""
    t = time.perf_counter()
    pg.goto(f"{base}/{path}")
    pg.wait_for_selector(".crbc-run", state="attached", timeout=TIMEOUT)
    pg.wait_for_function(READY, arg=title, timeout=TIMEOUT)
    return time.perf_counter() - t


def visit(browser, base: str, slug: str, title: str) -> tuple[float, float | None]:
    """Seconds to page ready in a fresh browser session, and the script's server time (ms)."""
    ctx = new_context(browser)
    pg = ctx.new_page()
    dt = open_page(pg, base, slug, title)
    ms = pg.evaluate(SCRIPT_MS)
    ctx.close()
    return dt, ms


def new_tab(ctx, base: str, path: str, title: str) -> float:
    """Seconds to page ready for ``path`` opened in a new tab of browser context ``ctx`` (its
    HTTP and code caches as they are; a new Streamlit session)."""
    pg = ctx.new_page()
    dt = open_page(pg, base, path, title)
    pg.close()
    return dt


def navigate(pg, slug: str, title: str) -> tuple[float, float | None]:
    """Seconds from a click on the page's sidebar link to page ready (a new run marker), within
    the session of ``pg``; and the script's server time (ms)."""
    before = pg.evaluate(RUN_NO)
    t = time.perf_counter()
    nav_link(pg, NAV_LABELS[slug]).click()
    try:
        pg.wait_for_function(f"() => ({RUN_NO})() > {before}", timeout=TIMEOUT)
        pg.wait_for_function(READY, arg=title, timeout=TIMEOUT)
    except Exception as e:  # say which page and what on it is not ready, then fail
        raise RuntimeError(f"page {slug or 'rollouts'!r} never ready: {pg.evaluate(WHY_NOT_READY, title)}") from e
    return time.perf_counter() - t, pg.evaluate(SCRIPT_MS)


def warm_navigation(browser, base: str, repeats: int, query: str = "") -> dict[str, list[tuple[float, float | None]]]:
    """Every page by the sidebar in one session: a first round (not timed) so each page has been
    seen, then ``repeats`` timed rounds. ``query`` (e.g. ``?sample=x.jsonl``) opens the session."""
    ctx = new_context(browser)
    pg = ctx.new_page()
    pg.goto(f"{base}/{PAGES[0][0]}{query}")
    pg.wait_for_selector(".crbc-run", state="attached", timeout=TIMEOUT)
    pg.wait_for_function(READY, arg=PAGES[0][1], timeout=TIMEOUT)
    out: dict[str, list[tuple[float, float | None]]] = {slug: [] for slug, _ in PAGES}
    for rnd in range(repeats + 1):
        for slug, title in PAGES:
            r = navigate(pg, slug, title)
            if rnd:
                out[slug].append(r)
    ctx.close()
    return out


#: keys pressed on the Inspector's depth slider (0, 1, ..., 64, inf): K = 0, 1, 2, the closure, 0
DEPTH_KEYS = ["Home", "ArrowRight", "ArrowRight", "End", "Home"]


def depth_key(pg, key: str) -> None:
    """Press ``key`` on the Inspector's depth slider (focused first)."""
    pg.locator(".st-key-inspect_K input[type=range], .st-key-inspect_K [role=slider]").first.focus()
    pg.keyboard.press(key)


def after(pg, title: str, action, marker: bool = True) -> float:
    """Milliseconds from ``action()`` to the page ready again after a new run."""
    before = pg.evaluate(RUN_NO)
    t = time.perf_counter()
    action()
    if marker:
        pg.wait_for_function(f"() => ({RUN_NO})() > {before}", timeout=TIMEOUT)
    pg.wait_for_function(READY, arg=title, timeout=TIMEOUT)
    return (time.perf_counter() - t) * 1000
