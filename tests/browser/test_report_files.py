"""crbc report files in headless Chromium, opened from disk: no request to any host (a loopback
listener named in hostile user strings receives nothing), no console or page error, every
drawing has a size, and the backups slider recolours the graph. Screenshots go to
``test-artifacts/report-*.png``."""

from __future__ import annotations

import http.server
import json
import re
import threading

import pytest

import crbc
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.report import group_report, report, run_report
from devtools.report_check import open_report
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def listener():
    """A loopback HTTP server that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


def _clean(opened) -> None:
    assert opened.requests == [], opened.requests
    assert opened.console_errors == [] and opened.page_errors == [], (opened.console_errors, opened.page_errors)
    assert opened.ready, "the report's script did not run"
    assert opened.svgs > 0 and opened.svgs_shown == opened.svgs, (opened.svgs, opened.svgs_shown)


def test_hostile_strings_stay_text_and_reach_no_host(browser, listener, tmp_path, artifacts_dir):
    port, hits = listener
    attacks = [f"<img src=http://127.0.0.1:{port}/img onerror=alert(1)>",
               f"![x](http://127.0.0.1:{port}/leak)",
               f"<link rel=stylesheet href=http://127.0.0.1:{port}/css>",
               f"<svg><image href=http://127.0.0.1:{port}/svg /></svg>",
               f"</script><script>fetch('http://127.0.0.1:{port}/js')</script>"]
    name = "g/" + attacks[0]
    rs = tuple(Rollout(name, i, tuple(Step(f"room {i % 2} " + attacks[(i + t) % 5], attacks[(i * t) % 5])
                                      for t in range(4)), i % 2 == 0) for i in range(6))
    path = tmp_path / "hostile.html"
    path.write_text(group_report(RolloutGroup(name, rs), truth=False))
    got = {}

    def look(pg):
        got["text"] = pg.inner_text("body")

    opened = open_report(browser, path, artifacts_dir / "report-hostile.png", page_hook=look)
    _clean(opened)
    assert hits == [], hits
    assert f"![x](http://127.0.0.1:{port}/leak)" in got["text"]
    assert "onerror=alert(1)" in got["text"]


def test_slider_recolours_the_anchors_from_visit_local_to_the_closure(browser, tmp_path, artifacts_dir):
    g = crbc.read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")[1]  # mixed outcomes
    path = tmp_path / "sokoban-group.html"
    html = group_report(g, truth=False)
    path.write_text(html)
    data = json.loads(re.search(r'class="crbc-sweep-data">(.*?)</script>', html, re.S).group(1))
    seen = {}

    def drag(pg):
        fills = "() => Array.from(document.querySelectorAll('#backups svg.crbc-graph g[data-pick] circle')).map(c => c.getAttribute('fill'))"
        seen["last"] = pg.evaluate(fills)
        pg.locator("#backups input.crbc-k").fill("0")
        seen["zero"] = pg.evaluate(fills)
        seen["out"] = pg.inner_text("#backups .crbc-k-out")

    opened = open_report(browser, path, artifacts_dir / "report-slider-k0.png", page_hook=drag)
    _clean(opened)
    pal = data["palette"]

    def expect(k):
        return [pal[round(max(0, min(1, v)) * 100)] if v is not None else "#d5d8dc" for v in data["values"][k]]

    assert seen["last"] == expect(len(data["values"]) - 1)
    assert seen["zero"] == expect(0) and seen["zero"] != seen["last"]
    assert seen["out"] == "K = 0"


def test_a_users_long_text_group(browser, tmp_path, artifacts_dir):
    from devtools.user_like import alfworld_group

    path = tmp_path / "alfworld.html"
    path.write_text(group_report(alfworld_group(0), truth=False))
    opened = open_report(browser, path, artifacts_dir / "report-alfworld.png")
    _clean(opened)


def test_a_recorded_run(browser, tmp_path, artifacts_dir):
    run = ROOT / "sample_rollouts" / "runs" / "sokoban-6x6" / "crbc-s0"
    path = tmp_path / "run.html"
    path.write_text(run_report(run, top=2))
    opened = open_report(browser, path, artifacts_dir / "report-run.png")
    _clean(opened)


@pytest.mark.slow
def test_a_shipped_toy_group_with_its_exact_truth(browser, tmp_path, artifacts_dir):
    path = tmp_path / "sokoban.html"
    html = report(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")
    assert 'data-panel="truth"' in html
    path.write_text(html)
    opened = open_report(browser, path, artifacts_dir / "report-sokoban-weak.png")
    _clean(opened)
