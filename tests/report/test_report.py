"""crbc report: the self-contained HTML file of a group or a run, its escaping, its slider data,
the run part's audit file or computed summary, the command line, and the notebook displays."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import crbc
from crbc.cli.main import main
from crbc.estimators.closure import depth_sweep
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.io.run_writer import RunWriter
from crbc.report import group_report, run_report
from crbc.report.page import asset, script_hash
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
HTML_ATTACK = "<img src=x onerror=alert(1)>"
MD_ATTACK = "![x](http://127.0.0.1:9/leak)"
SCRIPT_ATTACK = "</script><script>alert(2)</script>"


def hostile_group(name: str = "g/<b>x</b>", long_text: int = 0) -> RolloutGroup:
    """Two shared anchors whose texts and actions are markup; one success, one failure."""
    a = f"room {HTML_ATTACK} {MD_ATTACK}" + ("y" * long_text)
    b = f"hall {SCRIPT_ATTACK} & \"quotes\" 'single'"
    rs = (Rollout(name, 0, (Step(a, HTML_ATTACK), Step(b, MD_ATTACK)), True),
          Rollout(name, 1, (Step(a, MD_ATTACK), Step(b, HTML_ATTACK)), False),
          Rollout(name, 2, (Step(a, HTML_ATTACK), Step(b, HTML_ATTACK)), False))
    return RolloutGroup(name, rs)


class Tags(HTMLParser):
    """Every start tag and its attributes; the text of every <script>."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parsed(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    return t


def assert_safe(html: str) -> Tags:
    """No tag a user string could have made, no URL in any attribute, only the report's own
    script (named in the CSP by its hash) and JSON data blocks."""
    t = parsed(html)
    names = {tag for tag, _ in t.tags}
    assert "img" not in names and "iframe" not in names and "link" not in names, names
    for tag, attrs in t.tags:
        for k, v in attrs.items():
            assert not k.startswith("on"), (tag, k)
            assert not re.match(r"\s*(https?:|//|javascript:)", v or "", re.I), (tag, k, v)
    code = [s for (tag, attrs), s in zip([x for x in t.tags if x[0] == "script"], t.scripts, strict=True)
            if attrs.get("type") != "application/json"]
    assert code == [asset("report.js")], "one script: the package's own"
    policy = [a["content"] for tag, a in t.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(policy) == 1 and script_hash(asset("report.js")) in policy[0]
    assert policy[0].startswith("default-src 'none';")
    return t


def test_group_report_escapes_every_user_string_and_has_only_its_own_script():
    html = group_report(hostile_group(), truth=False)
    assert_safe(html)
    assert "alert(2)" in html and "<script>alert(2)" not in html  # text, never a tag
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert MD_ATTACK.replace('"', "&quot;") in html or "![x](http://127.0.0.1:9/leak)" in html


def test_group_report_has_every_section_and_drawing():
    g = crbc.read_rollouts(WORKED)[0]
    html = group_report(g, truth=False)
    for sid in ("graph", "credits", "backups", "side-by-side", "disagreements", "anchors"):
        assert f'id="{sid}"' in html, sid
    assert html.count('class="crbc-graph"') >= 1 and 'class="crbc-heat"' in html
    assert 'class="crbc-backup-tree"' in html and 'class="crbc-dis-bars"' in html
    for name in crbc.names():  # a panel per estimator, or the note that it is all zero
        assert f'data-panel="{name}"' in html or re.search(rf"no panel: [^<]*{name}", html), name


def test_slider_data_runs_from_visit_local_to_the_closure():
    g = crbc.read_rollouts(WORKED)[0]
    html = group_report(g, truth=False)
    block = re.search(r'<script type="application/json" class="crbc-sweep-data">(.*?)</script>', html, re.S)
    data = json.loads(block.group(1))
    p = crbc.merge([g])
    sw = depth_sweep(p, 0.98, 400)
    values = np.array(data["values"], dtype=float)
    assert values.shape == (sw.converged_at(1e-6) + 1, p.n_states)
    assert np.allclose(values[0], sw.v_KS[0], atol=1e-4)  # K = 0: visit-local
    assert np.allclose(values[-1], crbc.compute("crbc", p).value_S, atol=2e-4)  # the closure
    assert len(data["palette"]) == 101 and len(data["notes"]) == len(values)
    assert f'max="{len(values) - 1}"' in html


def test_long_anchor_text_is_cut_with_the_rest_behind_details():
    html = group_report(hostile_group(long_text=5000), truth=False)
    assert re.search(r"<details><summary>show all \(5,\d{3} characters\)</summary>", html)
    assert "y" * 4900 in html  # kept in full inside <details>
    assert_safe(html)


class FakeTruth:
    def __init__(self, n):
        self.advantage_N = np.linspace(-0.5, 0.5, n)


def test_truth_panel_where_the_truth_exists_and_the_reason_where_not():
    g = crbc.read_rollouts(WORKED)[0]
    meta = {"env": "gridworld-6x6-v0", "seed": 1, "policy": "uniform", "temperature": 1.0, "max_steps": 9}
    with_meta = RolloutGroup(g.group, tuple(Rollout(r.group, r.rollout, r.steps, r.success, r.truncated,
                                                    r.score, meta) for r in g.rollouts))
    calls = []

    def truth(group, anchors, beta):
        calls.append(beta)
        return FakeTruth(group.n_steps)

    html = group_report(with_meta, truth=truth)
    assert calls == [0.98] and 'data-panel="truth"' in html and "agrees with the truth" in html
    html = group_report(g, truth=truth)  # no meta: not called, the reason shown
    assert len(calls) == 1 and 'data-panel="truth"' not in html and "No exact truth" in html


def _run(tmp_path: Path, iterations: int = 3) -> Path:
    from devtools.synthetic import random_walk_group

    w = RunWriter.create(tmp_path / "run", {"name": "tiny <run>", "config": {"estimator": "crbc", "seed": 0}})
    for it in range(iterations):
        groups = [random_walk_group(6, 12, 3, seed=10 * it + k, group=f"lvl-{k}", bias=0.4) for k in range(4)]
        w.write_rollouts(it, groups)
        w.append_metrics({"iteration": it, "success_rate": 0.1 * (it + 1), "loss": 1.0 / (it + 1)})
    return tmp_path / "run"


AUDIT_COLUMNS = ["iteration", "estimator", "groups", "rollouts", "steps", "success_rate", "shared_step_share",
                 "anchors_per_group", "none_share", "sure_share", "trainer_spearman", "trainer_sign_agreement",
                 "seconds"]


def _audit(iterations: int) -> pd.DataFrame:
    rows = []
    for it in range(iterations):
        for k, est in enumerate(("crbc", "gigpo")):
            rows.append(dict(zip(AUDIT_COLUMNS, [it, est, 4, 24, 200, 0.25, 0.5, 7.0, 0.1 * k, 0.3, 0.2 + k * 0.1,
                                                 0.6, 0.01], strict=True)))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_run_report_reads_the_audit_file_beside_the_run(tmp_path, suffix):
    run = _run(tmp_path)
    frame = _audit(3)
    path = run / f"audit.{suffix}"
    {"csv": lambda: frame.to_csv(path, index=False), "parquet": lambda: frame.to_parquet(path),
     "jsonl": lambda: frame.to_json(path, orient="records", lines=True)}[suffix]()
    html = run_report(run, top=2)
    assert f"Source: audit.{suffix}" in html
    assert "sure steps (interval excludes 0)" in html and "Spearman ρ, trainer ~ estimator" in html
    assert ">gigpo</text>" in html  # a legend entry per estimator
    assert_safe(html)


def test_run_report_without_audit_computes_a_summary_and_links_each_group(tmp_path):
    run = _run(tmp_path)
    html = run_report(run, top=2, iteration=1)
    assert "computed from metrics.jsonl and the iteration files" in html
    assert "steps at shared anchors" in html and "Iteration 1: the groups worth a look" in html
    links = set(re.findall(r"<a href=\"#(g\d+)\">", html))
    assert len(links) == 2 and all(f'id="{k}"' in html for k in links)
    assert all(f'id="{k}-backups"' in html for k in links)
    assert "tiny &lt;run&gt;" in html and "tiny <run>" not in html
    assert_safe(html)


def test_minimal_summary_numbers(tmp_path):
    from crbc.report.audit_table import minimal_summary

    run = crbc.read_run(_run(tmp_path))
    frame = minimal_summary(run)
    assert list(frame["iteration"]) == [0, 1, 2]
    assert np.allclose(frame["success_rate"], [0.1, 0.2, 0.3])  # the trainer's own numbers
    g = run.rollouts(2)
    st = crbc.merge_stats(g)
    row = frame.iloc[2]
    assert row["groups"] == 4 and row["steps"] == st.n_steps
    assert row["shared_step_share"] == pytest.approx(st.shared_step_share)
    assert row["anchors_per_group"] == pytest.approx(st.n_anchors / 4)


def test_cli_writes_the_file_and_refuses_bad_input_leaving_nothing(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(WORKED), "-o", str(out), "-q"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    for bad in (["--group", "nope"], ["--estimators", "crbc,nope"], ["--iteration", "3"], ["--beta", "0"]):
        target = tmp_path / "bad.html"
        assert main(["report", str(WORKED), "-o", str(target), *bad]) == 2, bad
        assert not target.exists()
        err = capsys.readouterr().err.strip()
        assert err.startswith("crbc report: error:") and "\n" not in err
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "m.html")]) == 2


def test_cli_run_folder_and_a_bad_iteration(tmp_path):
    run = _run(tmp_path)
    out = tmp_path / "run.html"
    assert main(["report", str(run), "-o", str(out), "-q", "--top", "1"]) == 0
    assert 'id="groups"' in out.read_text()
    assert main(["report", str(run), "-o", str(tmp_path / "x.html"), "--iteration", "7"]) == 2
    assert not (tmp_path / "x.html").exists()


def _shown(obj) -> str:
    """What a notebook shows for ``obj``: IPython's HTML formatter, after ``%load_ext crbc``."""
    from IPython.core.formatters import DisplayFormatter

    class Shell:
        display_formatter = DisplayFormatter()

    shell = Shell()
    crbc.load_ipython_extension(shell)
    return shell.display_formatter.format(obj)[0]["text/html"]


def test_notebook_displays_are_inline_svg_without_script():
    pytest.importorskip("IPython")
    groups = crbc.read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")
    g = hostile_group()
    for html in (_shown(g), _shown(crbc.merge([g])), _shown(crbc.compute("gigpo", [g]))):
        assert "<svg" in html and "<script" not in html.lower()
        assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    batch = _shown(crbc.merge(groups))
    assert "The first of 16 groups" in batch and batch.count('class="crbc-graph"') == 1
    cr = _shown(crbc.compute("gigpo", groups))
    assert "Credits of gigpo" in cr and "gigpo: A_S" in cr


def test_first_group_rebuilds_the_first_group_of_a_batch():
    from crbc.report.notebook import first_group

    groups = crbc.read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")
    p = crbc.merge(groups)
    g0 = first_group(p)
    n = int(p.rollout_offsets[len(groups[0])])
    for name in ("crbc", "gigpo", "grpo"):
        assert np.allclose(crbc.compute(name, [g0]).advantage_N, crbc.compute(name, p).advantage_N[:n])


def test_run_report_reads_what_crbc_audit_writes(tmp_path):
    """The real ``crbc.audit/1`` file (crbc.audit.audit_run, one worker) drives the curves."""
    from crbc.audit import audit_run

    run = _run(tmp_path)
    frame = audit_run(run, ("crbc", "gigpo"), bootstrap=5, workers=1)
    assert (run / "audit.parquet").is_file() and len(frame) == 6
    html = run_report(run, top=1)
    assert "Source: audit.parquet" in html and "sure steps (interval excludes 0)" in html
    assert ">crbc</text>" in html and ">gigpo</text>" in html
    assert_safe(html)
