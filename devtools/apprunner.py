"""Run the studio on a free local port and drive it in headless Chromium (Playwright).

Shared by the browser tests (tests/browser/conftest.py) and ``benchmarks/bench_app.py``. Chromium is Debian's
``/usr/bin/chromium`` (``playwright install`` cannot download browsers here).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_PREFIXES = ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(port: int | None = None, timeout: float = 90.0, log_path: Path | None = None,
                extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the studio (``studio.py``: ``streamlit run app.py`` with its imports begun, as ``make run``) on 127.0.0.1 and yield its base URL; stop it afterwards."""
    with running_server(port, timeout, log_path, extra_env) as (base, _proc):
        yield base


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and its children, in MB (from /proc; 0 if gone)."""
    total = 0
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                pids += [int(c) for c in f.read().split()]
    for p in pids:
        with contextlib.suppress(OSError), open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


@contextlib.contextmanager
def running_server(port: int | None = None, timeout: float = 90.0, log_path: Path | None = None,
                   extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """Like :func:`running_app`, yielding ``(base URL, server process)``."""
    port = port or free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", **(extra_env or {}))
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "studio.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with status {proc.returncode}")
            try:
                with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"the app did not answer /_stcore/health within {timeout:.0f} s")
            time.sleep(0.3)
        yield base, proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if log_path:
            log.close()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


class RequestLog:
    """Records every request and websocket a page opens; ``outside`` lists non-local ones."""

    def __init__(self, page) -> None:
        self.urls: list[str] = []
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("websocket", lambda ws: self.urls.append(ws.url))

    @property
    def outside(self) -> list[str]:
        return sorted({u for u in self.urls if not u.startswith(LOCAL_PREFIXES)})


# --------------------------------------------------------------------------------------------
# waiting for things to be drawn

def wait_idle(page, timeout_ms: int = 60000) -> None:
    """Wait until the app has finished its current run (no 'running' status widget)."""
    page.wait_for_selector("[data-testid=stApp]", timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stStatusWidget] [data-testid=stStatusWidgetRunningIcon], "
        "[data-testid=stStatusWidgetRunningManIcon]') && document.querySelector('[data-testid=stMain]')",
        timeout=timeout_ms)


def wait_graph_frame(page, timeout_ms: int = 60000):
    """Wait until the anchor graph's iframe (vis-network) has drawn its canvas; returns the frame."""
    drawn = page.wait_for_function(
        """() => {
          for (const f of document.querySelectorAll('[data-testid=stMain] iframe')) {
            let d = null;
            try { d = f.contentDocument; } catch (e) { continue; }
            if (d && d.body && d.body.getAttribute('data-graph-ready') === '1' && d.querySelector('#mynetwork canvas'))
              return f;
          }
          return null;
        }""", timeout=timeout_ms)
    return drawn.as_element().content_frame()


# the fill colours of the Bellman backups graph's anchors (its SVG, crbc.viz.graph), as one string
GRAPH_COLORS = """() => {
  const nodes = document.querySelectorAll('.st-key-backup_graph [data-pick] circle');
  return nodes.length ? Array.from(nodes, c => c.getAttribute('fill')).join(' ') : null;
}"""


def drag_slider(page, container: str, fraction: float) -> None:
    """Drag a Streamlit slider thumb inside ``container`` to ``fraction`` of its track."""
    thumb = page.locator(f"{container} div:has(> div > input[type=range])").first
    track = page.locator(f"{container} [role=group] > [data-orientation=horizontal]").first
    tb = thumb.bounding_box()
    box = track.bounding_box()
    page.mouse.move(tb["x"] + tb["width"] / 2, tb["y"] + tb["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * fraction, tb["y"] + tb["height"] / 2, steps=8)
    page.mouse.up()


# the page is ready: its title shown (h1 starts with the argument), the app idle, nothing stale,
# every SVG view and the anchor graph drawn
def nav_link(page, title: str):
    """The sidebar's navigation link to the page ``title``, with the sidebar opened first when a page
    folded it (the Lesson starts with it folded, for a projector)."""
    link = page.locator("[data-testid=stSidebarNavLink]", has_text=title).first
    folded = page.locator("[data-testid=stSidebar][data-collapsed=true]")
    if folded.count():  # a folded sidebar is still "visible", but outside the viewport
        page.locator("[data-testid=stExpandSidebarButton]").first.click()
        page.locator("[data-testid=stSidebar][data-collapsed=false]").wait_for()
    return link


READY = """(title) => {
  const main = document.querySelector('[data-testid=stMain]');
  if (!main) return false;
  const h1 = main.querySelector('h1');
  if (!h1 || !h1.textContent.startsWith(title)) return false;
  if (document.querySelector('[data-testid=stStatusWidgetRunningIcon], [data-testid=stStatusWidgetRunningManIcon]'))
    return false;
  if (main.querySelector('[data-stale=true]') || main.querySelector('[data-testid=stSkeleton]')) return false;
  // ui.core.svg_view: its script puts the server's SVG into the component after the element arrives
  // (a component that draws nothing, ui.lesson.page's, marks itself .crbc-no-drawing when mounted)
  for (const c of main.querySelectorAll('.stBidiComponent'))
    if (!c.querySelector('.crbc-svg-view > svg, .crbc-no-drawing')) return false;
  for (const f of main.querySelectorAll('iframe')) {
    let d = null;
    try { d = f.contentDocument; } catch (e) { continue; }
    if (!d || !d.body) return false;
    if (d.querySelector('#mynetwork') && d.body.getAttribute('data-graph-ready') !== '1') return false;
  }
  return true;
}"""


# the number of the last script or fragment run whose end marker (app.py's hidden ``.crbc-run``,
# or ui.core.widgets.fragment_done's inside a fragment) is on the page; 0 before the first run has finished
RUN_NO = ("() => Math.max(0, ...Array.from(document.querySelectorAll('.crbc-run'), m => +m.dataset.run || 0))")


def run_no(page) -> int:
    """The session's number of the last script run that finished on ``page`` (0: none yet)."""
    return int(page.evaluate(RUN_NO) or 0)


def wait_ready(page, title: str, timeout_ms: int = 60000, after_run: int | None = None) -> None:
    """Wait until the page titled ``title`` is completely drawn (see READY), and, with
    ``after_run``, until a script run later than that one has finished (take ``run_no(page)``
    before a click: the new page's title can be drawn while its script is still running, before
    the rest of the page exists)."""
    if after_run is not None:
        page.wait_for_function(f"() => ({RUN_NO})() > {int(after_run)}", timeout=timeout_ms)
    page.wait_for_function(READY, arg=title, timeout=timeout_ms)
