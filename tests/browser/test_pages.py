"""End to end in a real browser: the studio's four views in headless Debian Chromium.

Starts ``streamlit run app.py`` on a free port of 127.0.0.1, opens every page, waits until the
SVG views and the anchor graph's canvas have drawn, drags the depth slider and checks the graph
changed, uploads a broken file and checks the error, and records every request the page makes:
any request to a host other than 127.0.0.1 fails. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from crbc.io.rollouts import dumps_rollout
from devtools.apprunner import (
    GRAPH_COLORS,
    drag_slider,
    nav_link,
    run_no,
    wait_graph_frame,
    wait_idle,
    wait_ready,
)
from devtools.synthetic import random_walk_group
from tests.support.browser_runs import open_drill_down

pytestmark = pytest.mark.browser
TIMEOUT_MS = 60_000
OWN_PAGES = {"Rollouts": "html", "Anchor graph": "vis", "Bellman backups": "svg",
             "Step credits": "svg"}
HEADINGS = {"Inspector": "Anchor inspector"}  # a page whose heading is not its navigation title


def _nav(page, title: str) -> None:
    """Click ``title`` in the sidebar and wait until that page is completely drawn (its heading
    shown, the app idle, nothing stale: devtools.apprunner.READY)."""
    n = run_no(page)
    nav_link(page, title).click()
    wait_ready(page, HEADINGS.get(title, title), TIMEOUT_MS, after_run=n)


def _no_exception(page) -> None:
    assert page.locator("[data-testid=stException]").count() == 0, page.inner_text("[data-testid=stMain]")


def _synthetic_upload(page, tmp_path) -> None:
    g = random_walk_group(16, 50, size=6, seed=0)
    f = tmp_path / "random-walk.jsonl"
    f.write_text("".join(dumps_rollout(r) + "\n" for r in g.rollouts))
    page.set_input_files("[data-testid=stFileUploaderDropzoneInput]", str(f))
    page.wait_for_selector("text=16 rollouts")
    wait_idle(page)


def test_every_page_draws(app_url, page, artifacts_dir):
    page.goto(app_url + "/")
    wait_idle(page)
    page.wait_for_selector(".crbc-step-bars .crbc-bar")  # the landing page draws plain HTML
    titles = page.eval_on_selector_all("[data-testid=stSidebarNavLink]",
                                       "els => els.map(e => e.innerText.trim().split('\\n').pop().trim())")
    assert set(OWN_PAGES) <= set(titles), titles
    for i, title in enumerate(titles):
        _nav(page, title)
        kind = OWN_PAGES.get(title)
        if kind == "svg":  # server-built drawings (ui/core/svg_view.py), no plotly.js on the page
            page.wait_for_selector(".crbc-svg-view svg .crbc-moved, .crbc-svg-view svg circle", timeout=TIMEOUT_MS)
            assert page.locator(".js-plotly-plot").count() == 0
        elif kind == "html":
            page.wait_for_selector(".crbc-step-bars .crbc-bar")
            # the steps table is folded and built when opened
            page.get_by_text("All steps of this rollout as a table").first.click()
            page.wait_for_selector(".crbc-table td", timeout=TIMEOUT_MS)
        elif kind == "vis":
            frame = wait_graph_frame(page, TIMEOUT_MS)
            assert frame.evaluate("() => document.querySelectorAll('#mynetwork canvas').length") == 1
            # vis-network comes from the studio's own /app/static (ui/core/static_assets.py), not inlined
            assert frame.evaluate("() => [...document.scripts].some(s => s.src.endsWith('/app/static/vis-network.min.js'))")
        _no_exception(page)
        page.screenshot(path=str(artifacts_dir / f"browser-{i:02d}-{title.lower().replace(' ', '-')}.png"),
                        full_page=True)


def test_depth_slider_changes_the_graph(app_url, page, artifacts_dir, tmp_path):
    page.goto(app_url + "/?source=upload")
    wait_idle(page)
    _synthetic_upload(page, tmp_path)
    _nav(page, "Bellman backups")
    page.wait_for_selector(".st-key-backup_graph [data-pick] circle")
    before = page.evaluate(GRAPH_COLORS)
    assert before
    drag_slider(page, ".st-key-K", 0.5)
    page.wait_for_function(f"(b) => {{ const c = ({GRAPH_COLORS})(); return c && c !== b; }}",
                           arg=before, timeout=TIMEOUT_MS)
    wait_idle(page)
    # the table below the graph follows the same move (under load a little after the graph)
    page.wait_for_function("() => !document.querySelector('[data-testid=stMain]').innerText"
                           ".includes('Credit table at K = 0')", timeout=TIMEOUT_MS)
    page.wait_for_function("() => location.href.includes('K=')", timeout=TIMEOUT_MS)
    assert "K=" in page.url  # the depth is in the shareable URL
    _no_exception(page)
    page.screenshot(path=str(artifacts_dir / "browser-backups-after-drag.png"), full_page=True)
    # each drawing saves as a standalone SVG file, made in the browser
    with page.expect_download() as got:
        page.locator(".st-key-conv .crbc-svg-download").click()
    path = got.value.path()
    text = Path(path).read_text(encoding="utf-8")
    assert got.value.suggested_filename == "convergence.svg"
    assert text.startswith('<svg xmlns="http://www.w3.org/2000/svg" ') and "<polyline" in text and "‖V^(K) − V‖∞" in text


def test_broken_upload_shows_the_error(app_url, page, artifacts_dir, tmp_path):
    page.goto(app_url + "/?source=upload")
    wait_idle(page)
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"group": "g", "steps": [{"anchor": "s0", "action": "a"}], "success": true}\n'
                   '{"group": "g", "steps": [{"anchor": "s0"}], "success": false}\n')
    page.set_input_files("[data-testid=stFileUploaderDropzoneInput]", str(bad))
    page.wait_for_selector("text=nothing was loaded")
    # the refused lines come in a code block drawn after the message: wait for them too
    page.wait_for_function("() => (document.querySelector('[data-testid=stMain]') || {}).innerText"
                           "?.includes('broken.jsonl:2')", timeout=TIMEOUT_MS)
    main = page.inner_text("[data-testid=stMain]")
    assert "broken.jsonl:2" in main and "action" in main
    assert "No rollout group is loaded" in main  # nothing half-loaded
    page.screenshot(path=str(artifacts_dir / "browser-broken-upload.png"), full_page=True)


def test_credit_and_figure_downloads(app_url, page, tmp_path):
    """Step credits: crbc.credit/1 JSONL download, the heatmaps and the timeline as SVG files."""
    page.goto(app_url + "/credits")
    # the timeline carries the truth line, so its final drawing waits for the model's first load
    page.wait_for_selector(".st-key-timeline .crbc-svg-view svg", timeout=2 * TIMEOUT_MS)
    wait_idle(page)
    assert page.locator(".js-plotly-plot").count() == 0  # no plotly.js for this page's charts
    with page.expect_download() as dl:
        page.click(".st-key-dl_jsonl button")
    out = tmp_path / dl.value.suggested_filename
    dl.value.save_as(out)
    import json
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs and all(r["schema"] == "crbc.credit/1" for r in recs)
    # the heatmaps as SVG: the link under the drawing (every panel, as shown) and the button
    # (one estimator's panel); each a standalone, well-formed SVG file
    import xml.etree.ElementTree as ET
    for click in (".st-key-heat_credits .crbc-svg-download", ".st-key-dl_heat button",
                  ".st-key-timeline .crbc-svg-download", ".st-key-dl_timeline button"):
        with page.expect_download() as dl:
            page.click(click)
        svg = tmp_path / dl.value.suggested_filename
        dl.value.save_as(svg)
        root = ET.fromstring(svg.read_text())
        assert svg.suffix == ".svg" and root.tag == "{http://www.w3.org/2000/svg}svg", click
        if "timeline" in click:  # a line per estimator and the truth's, on a right axis
            assert "truth (A_t, right axis)" in svg.read_text(), click
        else:
            assert len(root.findall(".//{http://www.w3.org/2000/svg}rect[@data-pick]")) >= len(recs)


def test_a_deep_link_is_the_first_request_of_a_fresh_server(fresh_app_url, page):
    """A bookmarked page opened on a server nobody has visited yet: the page runs inside app.py's
    navigation (the sidebar lists our page titles and the Data section), not in Streamlit's old
    pages/-folder mode, which ran pages/runs.py alone and listed `common` and `sidebar` as pages."""
    page.goto(f"{fresh_app_url}/runs?runs_exp=sokoban-6x6")
    wait_ready(page, "Training runs", 120_000)
    links = [t.split("\n")[-1] for t in page.locator("[data-testid=stSidebarNavLink]").all_inner_texts()]
    assert "Training runs" in links and "Lesson" in links, links
    assert not {"common", "sidebar", "runs", "app"} & set(links), links


def test_a_run_archive_uploads_through_the_worker_and_opens(app_url, page, artifacts_dir, tmp_path):
    """Training runs: a .zip of a run folder is read in the worker (crbc.jobs.run_archive);
    the run's curve and its iteration's groups appear; a broken archive is one line."""
    import io
    import zipfile

    import crbc.io.run_writer as RW
    from crbc.io.rollouts import read_rollouts
    from tests.support.paths import ROOT

    run = tmp_path / "zipped-run"
    w = RW.RunWriter.create(run, {"name": "zipped-run", "config": {"estimator": "crbc", "seed": 0}})
    for it in range(2):
        w.write_rollouts(it, read_rollouts(ROOT / "sample_rollouts" / "worked-example.jsonl"))
        w.append_metrics({"iteration": it, "success_rate": 0.4 + 0.1 * it})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(run.rglob("*")):
            if p.is_file():
                z.write(p, f"zipped-run/{p.relative_to(run)}")
    good, bad = tmp_path / "zipped-run.zip", tmp_path / "broken.zip"
    good.write_bytes(buf.getvalue())
    bad.write_bytes(b"not a zip")
    page.goto(app_url + "/runs")
    wait_ready(page, "Training runs", TIMEOUT_MS)
    open_drill_down(page, TIMEOUT_MS)
    page.locator(".st-key-runs_upload input[type=file]").set_input_files(str(good))
    choose = page.locator(".st-key-runs_run input")
    option = page.get_by_role("option", name="zipped-run · seed 0", exact=True)  # named by its run.json
    for _ in range(30):  # the run is offered once the worker has read it (about a second)
        choose.click()
        choose.fill("zipped-run")
        try:
            expect(option).to_be_visible(timeout=2_000)
            break
        except AssertionError:
            choose.press("Escape")
    choose.press("Escape")
    wait_idle(page)  # the run that read the archive has ended: its progress and Cancel are gone
    assert "Cancel reading" not in page.inner_text("[data-testid=stMain]")
    choose.click()
    choose.fill("zipped-run")
    option.click()
    page.wait_for_function("() => /zipped-run[^\\n]*, iteration/.test(document.querySelector("
                           "'[data-testid=stMain]').innerText)", timeout=TIMEOUT_MS)
    main = page.inner_text("[data-testid=stMain]")
    assert "worked-example" in main and "A run was refused" not in main
    _no_exception(page)
    page.screenshot(path=str(artifacts_dir / "browser-run-archive.png"), full_page=True)
    page.locator(".st-key-runs_upload input[type=file]").set_input_files(str(bad))
    page.wait_for_selector("text=A run was refused: broken.zip: not a zip archive")
    _no_exception(page)
    # 3,000 iterations of one tiny rollout each: refused before any of them is read
    big = tmp_path / "big.zip"
    line = b'{"group": "g", "rollout": 0, "steps": [{"anchor": "a", "action": "x"}], "success": true}\n'
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big/run.json", '{"schema": "crbc.run/1", "name": "big", "config": {}}')
        for i in range(3000):
            z.writestr(f"big/rollouts/iter-{i:04d}.jsonl", line)
    t = time.perf_counter()
    page.locator(".st-key-runs_upload input[type=file]").set_input_files(str(big))
    page.wait_for_selector("text=big.zip: more than 500 iteration files", timeout=60_000)
    assert time.perf_counter() - t < 60
    _no_exception(page)
