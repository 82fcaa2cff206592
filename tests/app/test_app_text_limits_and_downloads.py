"""What AppTest (or plain Python) can see of: user strings as text, huge anchors,
whole-file downloads, long-rollout heatmaps. The browser parts are in tests/browser/test_text_and_play.py."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.support.html_tables import tables
from tests.support.paths import ROOT

# ---------------------------------------------------------------- item 2: one escaping helper

@pytest.mark.parametrize("raw, shown", [
    ("![m](http://127.0.0.1:9/x.png)", "\\!\\[m\\](http:\u2060//127.0.0.1:9/x.png)"),
    ('<img src="x">', '\\<img src="x">'),
    ("click[$23.99 and $40]", "click\\[\\$23.99 and \\$40\\]"),
    ("*a*_b_", "\\*a\\*\\_b\\_"),
    ("- not a list", "\\- not a list"),
    ("1. not a list", "1\\. not a list"),
    ("s0 -b-> s1 0.4900", "s0 -b-> s1 0.4900"),
    ("a\nb", "a b"),
])
def test_text_makes_markdown_literal(raw, shown):
    from ui.core.widgets import text

    assert text(raw) == shown


def test_heatmap_hover_holds_no_html_of_the_user():
    """Hostile anchors, actions and names reach the heatmap SVG as text: the drawing parses as
    XML with no element of theirs, and each tooltip shows the characters as they are."""
    from crbc.estimators import registry as estimators
    from crbc.io.rollouts import parse_rollouts
    from crbc.process import merge
    from crbc.viz.heatmap import Panel, credit_heatmaps_svg, heatmaps_svg
    from tests.support.heatmap_cells import panels, parse

    rec = {"group": "g", "success": True,
           "steps": [{"anchor": "<a href='http://127.0.0.1:9/'>s</a>", "action": "<b>go</b>"},
                     {"anchor": "**bold** & \"q\"", "action": "<script>alert(1)</script>"}]}
    fail = dict(rec, success=False, rollout=1)
    p = merge(parse_rollouts(json.dumps(rec) + "\n" + json.dumps(fail)))
    c = estimators.compute("crbc", p, beta=0.98)
    for svg in (credit_heatmaps_svg({"crbc": c}, "credit", standalone=True),
                heatmaps_svg(p, [Panel("<img src=x onerror=alert(1)>", c.credit_N)])):
        root = parse(svg)  # well formed: nothing broke out of its escaping
        tags = {e.tag.split("}")[-1] for e in root.iter()}
        assert tags <= {"svg", "style", "defs", "linearGradient", "stop", "g", "text", "tspan", "rect", "line",
                        "title"}, tags
        assert "<script" not in svg and "<b>" not in svg and "<a " not in svg and "<img" not in svg
        cells = next(iter(panels(svg).values()))
        assert cells[0].title.startswith("rollout r0, step 0: <b>go</b> at ")  # shown as it is (steps from 0)
        assert cells[1].title.startswith("rollout r0, step 1: <script>alert(1)</script> at ")
    assert parse(credit_heatmaps_svg({"crbc": c}, "credit", standalone=True)).tag == "{http://www.w3.org/2000/svg}svg"


# ---------------------------------------------------------------- item 4: huge anchors

def _big_file(path: Path, n_chars: int) -> None:
    big = "start " + "x" * n_chars
    rows = [([(big, "a"), ("mid", "go")], True), ([(big, "b"), ("mid", "stop")], False),
            ([(big, "a"), ("mid", "go")], True), ([(big, "b"), ("end", "x")], False)]
    with open(path, "w") as f:
        for i, (steps, ok) in enumerate(rows):
            f.write(json.dumps({"schema": "crbc.rollout/1", "group": "big", "rollout": i,
                                "steps": [{"anchor": a, "action": b} for a, b in steps],
                                "success": ok}) + "\n")


def test_a_15mb_anchor_is_refused_naming_the_line_and_the_limit(tmp_path):
    from crbc.io.rollouts import MAX_TEXT_CHARS, RolloutFormatError, read_rollouts

    f = tmp_path / "huge.jsonl"
    with open(f, "w") as out:
        out.write(json.dumps({"group": "g", "steps": [{"anchor": "a", "action": "b"}], "success": True}) + "\n")
        out.write(json.dumps({"group": "g", "steps": [{"anchor": "a", "action": "b"},
                                                      {"anchor": "y" * 15_000_000, "action": "c"}],
                              "success": False}) + "\n")
    with pytest.raises(RolloutFormatError) as e:
        read_rollouts(f)
    msg = str(e.value)
    assert ":2:" in msg and "steps[1].anchor" in msg and f"{MAX_TEXT_CHARS:,}" in msg, msg


@pytest.fixture
def big_samples(tmp_path, monkeypatch):
    from ui.core import state

    for name in ("worked-example.jsonl", "rare-route.jsonl"):
        shutil.copy(state.SAMPLES_DIR / name, tmp_path / name)
    _big_file(tmp_path / "big.jsonl", 1_000_000)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", [None, "pages/inspector.py", "pages/graph.py", "pages/disagreements.py",
                                  "pages/credits.py"])
def test_a_1mb_anchor_renders_fast_and_cut(app, big_samples, page):
    at = app(run=False)
    at.query_params["sample"] = "big.jsonl"
    t0 = time.perf_counter()
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    took = time.perf_counter() - t0
    assert not at.exception, [e.message for e in at.exception]
    html = [h.proto.body for h in at.get("html")]
    if page is None:  # Rollouts: the anchor's beginning, all of it as plain text behind "show all"
        assert any("start xxxx" in h for h in html)
        assert any(len(t.value) > 1_000_000 for t in at.text)
    longest = max(len(str(e.value)) for e in [*at.markdown, *at.caption, *at.subheader, *at.info])
    assert longest < 5_000, longest  # the anchor is drawn cut, never whole in Markdown
    assert max(map(len, html)) < 50_000, max(map(len, html))
    assert took < 30, f"{page}: {took:.1f} s"


# ---------------------------------------------------------------- item 5: whole-file downloads

def test_credits_page_offers_the_whole_file_with_anchors(app):
    import io

    import pandas as pd

    from crbc.io.rollouts import read_rollouts

    at = app("pages/credits.py", sample="sokoban-weak.jsonl")
    from ui.core import state

    groups = read_rollouts(state.SAMPLES_DIR / "sokoban-weak.jsonl")
    assert len(groups) > 1
    labels = [b.proto.label for b in at.get("download_button")]
    assert any("all groups" in lab and "JSONL" in lab for lab in labels), labels
    assert any("all groups" in lab and "CSV" in lab for lab in labels), labels
    # what the two buttons give: every group, one JSONL line per rollout; the CSV with anchors
    from crbc.estimators import registry as estimators
    from crbc.process import merge
    from crbc.viz.downloads import credit_table, credits_jsonl

    c = estimators.compute("crbc", merge(groups), beta=0.98)
    lines = credits_jsonl(c).splitlines()
    assert len(lines) == sum(len(g) for g in groups)
    assert {json.loads(x)["group"] for x in lines} == {g.group for g in groups}
    df = pd.read_csv(io.StringIO(credit_table({"crbc": c}).to_csv(index=False)))
    assert "anchor" in df.columns and df["group"].nunique() == len(groups)
    first = groups[0].rollouts[0].steps[0].anchor
    assert df.loc[(df["group"] == groups[0].group) & (df["step"] == 0), "anchor"].iloc[0] == first


# ---------------------------------------------------------------- item 6: long-rollout heatmaps

def _long_process(n_rollouts: int = 4, steps: int = 3000):
    import random

    from crbc.io.rollouts import parse_rollouts
    from crbc.process import merge

    rng = random.Random(0)
    lines = [json.dumps({"group": "g", "rollout": i, "success": i % 2 == 0, "steps": [
        {"anchor": f"s{rng.randint(0, 150)}", "action": rng.choice("ab")} for _ in range(steps - steps // 60 * i)]})
        for i in range(n_rollouts)]
    return merge(parse_rollouts("\n".join(lines)))


def test_a_3000_step_heatmap_bins_steps_and_a_click_still_names_a_step():
    from crbc.estimators import registry as estimators
    from crbc.viz.core.cells import MAX_COLUMNS
    from crbc.viz.heatmap import credit_heatmaps_svg
    from tests.support.heatmap_cells import panels

    p = _long_process()
    c = estimators.compute("crbc", p, beta=0.98)
    t0 = time.perf_counter()
    svg = credit_heatmaps_svg({"crbc": c})
    assert time.perf_counter() - t0 < 5
    cells = panels(svg)["crbc"]
    assert "10 steps per cell: their mean" in svg
    assert len(cells) == sum(-(-int(n) // 10) for n in p.rollout_len) <= 4 * MAX_COLUMNS
    # each cell opens a real step of its bin (its largest |value|); its value is the bin's mean
    m = np.full((4, int(p.rollout_len.max())), np.nan)
    m[p.step_rollout, p.step_t - 1] = c.step_advantage_N
    for cell in cells[:50]:
        i, t = cell.step
        b = (t - 1) // 10
        assert 1 <= t <= int(p.rollout_len[i]) and abs(m[i, t - 1]) == np.nanmax(np.abs(m[i, b * 10:b * 10 + 10]))
        assert cell.value == pytest.approx(np.nanmean(m[i, b * 10:b * 10 + 10]), abs=6e-4)
        assert f"steps {b * 10}–" in cell.title and f"strongest: step {t - 1}: " in cell.title  # 0-based
    # a short group is drawn step by step, as before
    small = credit_heatmaps_svg({"crbc": estimators.compute("crbc", _long_process(2, 40), beta=0.98)})
    assert len(panels(small)["crbc"]) == 40 + 40 and ">step (0-based)<" in small


def test_binned_means_and_picks():
    from crbc.viz.core.cells import binned

    m = np.array([[1.0, -3.0, 2.0, np.nan, np.nan]])
    mean, pick, centre = binned(m, 2)
    assert mean[0, 0] == -1.0 and mean[0, 1] == 2.0 and np.isnan(mean[0, 2])
    assert pick[0].tolist() == [1, 2, -1] and centre.tolist() == [1.5, 3.5, 5.5]


# ---------------------------------------------------------------- items 7-8: small ones

def _lesson(app, part: str = "1-2") -> AppTest:
    return app("pages/lesson.py", lesson_start="worked example", lesson_part=part)


def test_lesson_deepest_k_keeps_the_depth_shown(app):
    at = _lesson(app, "7-8")
    at.slider(key="lesson_K").set_value(3).run()
    at.slider(key="lesson_kmax").set_value(6).run()
    assert not at.exception
    assert at.slider(key="lesson_K").value == 3


def test_lesson_edit_form_starts_empty_on_a_new_group(app):
    at = _lesson(app)
    at.session_state["lesson_edit_open"] = True  # the edit form's fold
    at.run()
    at.text_input(key="lesson_edit_action").input("zz").run()
    at.radio(key="lesson_start").set_value("rare route").run()
    assert not at.exception
    assert at.text_input(key="lesson_edit_action").value in ("", None)


def test_lesson_section_9_does_not_count_another_groups_rollouts_as_the_lessons(app):
    at = _lesson(app, "9-10")
    md = "\n".join(m.value for m in at.markdown)
    assert "a guess from the rollouts of one group" in md


def test_two_diamonds_on_one_edge_do_not_overlap():
    import re

    from crbc.io.rollouts import read_rollouts
    from crbc.process import merge
    from crbc.viz.lesson_graph import lesson_graph_svg
    from ui.core import state

    p = merge(read_rollouts(state.SAMPLES_DIR / "worked-example.jsonl"))
    svg = lesson_graph_svg(p, np.zeros(p.n_states))
    # each diamond's top vertex (x, y), in the drawing's units
    pts = sorted((float(x), float(y)) for x, y in
                 re.findall(r'data-pick="edge:[^"]*">.*?<polygon points="([-0-9.]+),([-0-9.]+) ', svg))
    close = [(a, b) for a, b in zip(pts, pts[1:], strict=False) if abs(a[0] - b[0]) < 1e-9]
    assert close and all(abs(a[1] - b[1]) >= 20 for a, b in close)


def test_upload_widgets_state_the_limit_of_their_label():
    import inspect

    import pages  # noqa: F401  (the package; its pages run only under the app)
    from ui.core import upload

    src = inspect.getsource(upload.upload_source)
    assert "max_upload_size=MAX_UPLOAD_MB" in src
    assert "max_upload_size=MAX_ZIP_MB" in (ROOT / "ui" / "runs" / "picker.py").read_text()


def test_field_names_are_the_same_in_every_message():
    from crbc.io.rollouts import RolloutFormatError, parse_rollouts

    bad = '{"group": "g", "steps": [{"anchor": "x", "action": "u", "reward": 1e999}], "success": true}'
    with pytest.raises(RolloutFormatError) as e:
        parse_rollouts(bad)
    assert "steps[0].reward" in str(e.value) and "record." not in str(e.value)


def test_lesson_on_a_big_group_prints_the_paths_once_and_folded(app):
    at = app(run=False)
    at.query_params.update(sample="sokoban-weak.jsonl", group="sokoban-6x6-v0/seed-15")
    at.run()
    at.switch_page("pages/lesson.py")
    at.run()
    at.radio(key="lesson_start").set_value("sidebar group").run()
    assert not at.exception
    # folded and not even built: a big group's page sends none of its folded tables (section 7
    # draws its own small group's paths, the worked example with retries: 5 rollouts, not 8)
    assert not [t for t in tables(at.main) if "path" in t.value.columns and len(t.value) == 8]
    assert any(ex.label.startswith("The 8 rollouts as paths") for ex in at.main.expander)
    at.session_state["lesson_fold_paths"] = True  # the reader opens the fold
    at.run()
    assert not at.exception
    with_paths = [t for t in tables(at.main) if "path" in t.value.columns and len(t.value) == 8]
    assert len(with_paths) == 1
    assert any(any(t.element is x.element for x in tables(ex)) for ex in at.main.expander for t in with_paths)
    assert not [i for i in at.info if "appear one by one" in str(i.value)]  # gone once drawn


def test_a_line_with_several_problems_names_them_all():
    from crbc.io.rollouts import RolloutFormatError, parse_rollouts

    bad = ('{"group": 7, "steps": [{"anchor": "x", "action": 3, "reward": "lots"}], '
           '"success": "yes"}')
    with pytest.raises(RolloutFormatError) as e:
        parse_rollouts(bad, source="mine.jsonl")
    msg = str(e.value)
    assert msg.startswith("mine.jsonl:1: group: must be a string"), msg
    for part in ("also success: must be true or false", "also steps[0].action: must be a string",
                 "also steps[0].reward: must be a number"):
        assert part in msg, msg
    many = '{"group": "g", "success": true, "steps": [' + ", ".join(['{"anchor": 1}'] * 9) + "]}"
    with pytest.raises(RolloutFormatError) as e:
        parse_rollouts(many)
    assert str(e.value).count("also ") == 4 and "and 13 more" in str(e.value), str(e.value)
