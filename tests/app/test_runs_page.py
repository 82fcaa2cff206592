"""AppTest: the Training runs page on synthetic runs (curves, table, diagnostics, drill-down, and
opening an iteration's group in the other pages). The charts are server-built SVG
(ui/core/svg_view.py), read here from the component's data; the browser tests click them."""

from __future__ import annotations

import html
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

import crbc.io.run_writer as RW  # noqa: E402
import crbc.io.runs as R
from crbc.io.rollouts import read_rollouts
from tests.support.paths import ROOT
from tests.support.runs import write_runs
from ui.core import context, state  # noqa: E402

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"


def _svgs(at: AppTest, key: str) -> list[str]:
    """The SVGs the page showed through ui.core.svg_view under widget key ``key``."""
    return [json.loads(e.proto.json)["svg"] for e in at.get("bidi_component") if e.proto.id.endswith(key)]


@pytest.fixture()
def page(app, tmp_path, monkeypatch) -> AppTest:

    write_runs(tmp_path / "runs")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    return _open_drill(at)


def _open_drill(at: AppTest) -> AppTest:
    """Open the folded drill-down (ui/runs/drilldown.py), as the reader's click on it does."""
    at.session_state["runs_drill_open"] = True
    return at.run()


def test_the_drill_down_is_folded_until_a_click_or_a_link_asks_for_it(app, tmp_path, monkeypatch):
    write_runs(tmp_path / "runs")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "runs_run"] and not _svgs(at, "runs_diag")
    at.session_state["_runs_click"] = (2, "crbc-s1")  # a click on a curve's point
    at.run()
    assert at.selectbox(key="runs_run").value == "crbc-s1" and at.selectbox(key="runs_iter").value == 2
    linked = app("pages/runs.py", runs_iter="1")  # a link into an iteration opens it too
    assert not linked.exception and linked.selectbox(key="runs_iter").value == 1
    linked.session_state["runs_drill_open"] = False  # the reader folds it: it stays folded
    linked.run()
    assert not [s for s in linked.selectbox if s.key == "runs_iter"]
    at.session_state["runs_drill_open"] = False  # after a click too
    at.run()
    assert not [s for s in at.selectbox if s.key == "runs_run"]


def test_runs_page_shows_curves_table_and_diagnostics(page):
    assert page.title[0].value == "Training runs"
    assert set(page.multiselect(key="runs").value) == {"grpo-s0", "crbc-s0", "crbc-s1"}
    page.session_state["runs_summary_open"] = True  # the folded table is built once opened
    page.selectbox(key="runs_threshold").set_value(0.5).run()
    table = page.dataframe[0].value
    assert table["estimator"].tolist() == ["grpo", "crbc"]
    assert table["seeds"].tolist() == [1, 2]
    assert "not reached (0/1)" in table.iloc[0].to_string()
    assert "1.5 ± 0.5 (2/2)" in table.iloc[1].to_string()  # crbc: iterations 1 and 2 reach 50%
    metrics = {m.label: m for m in page.metric}
    assert metrics["rare-route disagr."].value == "1"
    assert "rare-route disagreements with shortest_path" in metrics["rare-route disagr."].help


def test_drill_down_opens_a_group_in_the_other_pages(page):
    page.selectbox(key="runs_run").set_value("crbc-s1").run()
    page.selectbox(key="runs_iter").set_value(2).run()
    assert not page.exception
    table = next(h.proto.body for h in page.get("html") if ">no signal<" in h.proto.body)
    from crbc.run_analysis.no_signal import group_rows, worst_first

    groups = R.read_run(state.SAMPLES_DIR / "runs" / "crbc-s1").rollouts(2)
    order = [r["group"] for r in worst_first(group_rows(groups), "success")]  # worst first by the curve's metric
    assert [table.index(f">{g}<") for g in order] == sorted(table.index(f">{g}<") for g in order)
    page.selectbox(key="runs_group").set_value("rare-route").run()
    page.button(key="runs_open_credits").click().run()
    assert not page.exception, page.exception
    # the sidebar now serves the run's iteration, with the chosen group selected
    assert page.radio(key="source").value == "run"
    assert page.selectbox(key="group").value == "rare-route"
    assert any("run crbc-s1 iteration 2" in c.value or "rare-route" in c.value for c in page.sidebar.caption)


def test_runs_page_without_runs(app, tmp_path, monkeypatch):

    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    assert any("No run selected" in i.value for i in at.info)


def test_a_broken_run_is_refused_on_the_page(app, tmp_path, monkeypatch):

    write_runs(tmp_path / "runs")
    bad = tmp_path / "runs" / "crbc-s1" / "metrics.jsonl"
    lines = bad.read_text().splitlines()
    bad.write_text("\n".join([lines[0], "{oops", lines[2]]) + "\n")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    assert any("metrics.jsonl:2" in e.value for e in at.error)


def test_experiments_are_shown_one_at_a_time(app, tmp_path, monkeypatch):
    """Two experiment folders whose run names repeat (grpo-s0 in each): the page shows one folder's
    runs at a time, so seeds of different experiments are never averaged and every run name in
    the pickers is unique."""

    write_runs(tmp_path / "runs" / "exp-a")
    w = RW.RunWriter.create(tmp_path / "runs" / "exp-b" / "grpo-s0",
                           {"name": "grpo-s0", "config": {"estimator": "grpo", "seed": 0}})
    w.write_rollouts(0, read_rollouts(WORKED))
    w.append_metrics({"iteration": 0, "success_rate": 0.9})
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = _open_drill(app("pages/runs.py"))
    assert at.selectbox(key="runs_exp").options == ["exp-b", "exp-a"]  # the newest first
    assert at.selectbox(key="runs_exp").value == "exp-b"
    at.selectbox(key="runs_exp").set_value("exp-a").run()
    assert sorted(at.multiselect(key="runs").value) == ["exp-a/crbc-s0", "exp-a/crbc-s1",
                                                                    "exp-a/grpo-s0"]
    (tmp_path / "runs" / "exp-a" / "prereg.json").write_text("{}")  # a pre-registered report
    context.clear_shared()  # the folder list is kept for 30 s
    at = app(run=False)
    at.run()
    at.switch_page("pages/runs.py").run()
    _open_drill(at)
    assert at.selectbox(key="runs_exp").options == ["exp-a", "exp-b"]  # opens on it, newer or not
    assert at.selectbox(key="runs_run").options == ["exp-a/grpo-s0", "exp-a/crbc-s0", "exp-a/crbc-s1"]
    at.session_state["runs_summary_open"] = True  # the folded table is built once opened
    at.selectbox(key="runs_exp").set_value("exp-b").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="runs").value == ["exp-b/grpo-s0"]
    assert at.selectbox(key="runs_run").options == ["exp-b/grpo-s0"]  # named by experiment, run and seed
    assert at.dataframe[0].value["seeds"].tolist() == [1]


def test_a_renamed_run_keeps_its_data(tmp_path):
    write_runs(tmp_path)
    run = R.read_run(tmp_path / "crbc-s1")
    other = R.renamed(run, "crbc-s1 (upload.zip)")
    assert other.name == "crbc-s1 (upload.zip)" and run.name == "crbc-s1"
    assert other.metrics == run.metrics and other.estimator == "crbc" and other.seed == 1
    assert [g.group for g in other.rollouts(2)] == [g.group for g in run.rollouts(2)]


def test_an_experiment_with_evaluations_opens_on_held_out_success_with_its_statistics(app, tmp_path, monkeypatch):
    """Runs that evaluated on held-out levels: the page opens on held-out success with 95% bands,
    shows the comparison with intervals and the paired test, and the credit-accuracy curves."""

    groups = read_rollouts(WORKED)
    for est, seed, (e0, e1, acc) in (("grpo", 0, (0.3, 0.35, 0.3)), ("grpo", 1, (0.3, 0.33, 0.32)),
                                     ("crbc", 0, (0.3, 0.45, 0.8)), ("crbc", 1, (0.3, 0.41, 0.78))):
        w = RW.RunWriter.create(tmp_path / "runs" / "exp" / f"{est}-s{seed}",
                               {"name": f"{est}-s{seed}", "config": {"estimator": est, "seed": seed}})
        for it in range(2):
            w.write_rollouts(it, groups)
            rec = {"iteration": it, "success_rate": 0.3, f"diag.truth_spearman.{est}": acc}
            if it == 0:
                rec["eval_success_rate"] = e0
            w.append_metrics(rec)
        w.update_meta(final_eval={"after_iteration": 1, "eval_success_rate": e1,
                                  "eval_level_success": [e1, e1, e1 - 0.1, e1 + 0.1]})
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    assert at.selectbox(key="runs_metric").value == "eval_success_rate"
    assert at.radio(key="runs_band").value == "ci"
    text = "\n".join(m.value for m in at.markdown)
    assert "| crbc | 2 | 2 | 30.0 [30.0, 30.0] | 43.0 [" in text  # start and final held-out success
    assert "| +13.0 [" in text  # crbc's gain in points
    assert "| crbc - grpo | +9.0 [" in text  # the paired difference
    # the accuracy curves are folded: no chart until the fold is opened
    assert not _svgs(at, "runs_truth")
    assert any(e.label.startswith("Credit accuracy during training") for e in at.expander)
    at.session_state["runs_accuracy_open"] = True
    at.run()
    assert not at.exception, at.exception
    (truth,) = _svgs(at, "runs_truth")
    assert "crbc (n=2)" in truth and "polygon" in truth  # a mean curve with its 95% band
    assert not at.get("plotly_chart")  # the page loads no plotly.js
    assert "Spearman correlation with the exact advantage" in "\n".join(m.value for m in at.markdown)


def test_curve_points_pick_their_run_and_iteration(page):
    """The curves are SVG: every seed's point carries data-pick "iteration|run" (the diagnostics
    are SVG too, with the chosen iteration marked); a pick, as the click callback stores it,
    opens that run's iteration in the drill-down."""
    from crbc.viz.run_curves import parse_pick

    (curves,) = _svgs(page, "runs_curve")
    picks = [parse_pick(html.unescape(v)) for v in re.findall(r'data-pick="([^"]*)"', curves)]
    assert (2, "crbc-s1") in picks and (0, "grpo-s0") in picks
    assert {run for _, run in picks} == {"grpo-s0", "crbc-s0", "crbc-s1"}
    (diag,) = _svgs(page, "runs_diag")
    assert "steps with non-zero step credit" in diag and diag.count("<polyline") >= 6 * 3
    page.session_state["_runs_click"] = (2, "crbc-s1")
    page.run()
    assert not page.exception, page.exception
    assert page.selectbox(key="runs_run").value == "crbc-s1" and page.selectbox(key="runs_iter").value == 2
    assert not page.get("plotly_chart")


def test_a_click_on_a_no_signal_curve_ranks_that_iterations_groups_by_it(page):
    """What carried no signal: folded, its curve and a table per run; a click on its point opens
    that run's iteration with the groups ranked by the clicked reason, worst first."""
    assert not _svgs(page, "runs_nosignal_curve")  # folded: nothing is counted until it is opened
    page.session_state["runs_nosignal_open"] = True
    page.run()
    assert not page.exception, page.exception
    (curve,) = _svgs(page, "runs_nosignal_curve")
    assert 'data-pick="1|crbc-s1"' in curve and "share of steps" in curve
    assert any(e.label.startswith("crbc-s1: the table (3 iterations)") for e in page.expander)
    page.session_state["_runs_click"] = (1, "crbc-s1", "anchor_once")
    page.run()
    assert not page.exception, page.exception
    assert page.selectbox(key="runs_run").value == "crbc-s1" and page.selectbox(key="runs_iter").value == 1
    assert page.selectbox(key="runs_sort").value == "anchor_once"
    from crbc.run_analysis.no_signal import group_rows, worst_first

    rows = worst_first(group_rows(R.read_run(state.SAMPLES_DIR / "runs" / "crbc-s1").rollouts(1)), "anchor_once")
    assert page.selectbox(key="runs_group").value == rows[0]["group"]  # the worst group is chosen
    assert any("worst first by no signal: anchor once" in c.value for c in page.caption)


def test_seeds_one_by_one_name_every_run(page):
    page.radio(key="runs_seeds").set_value("each").run()
    assert not page.exception, page.exception
    (curves,) = _svgs(page, "runs_curve")
    assert "crbc-s0 (n=1)" in curves and "crbc-s1 (n=1)" in curves and "crbc (n=2)" not in curves


def _two_experiments(tmp_path, monkeypatch) -> None:
    """exp-a: write_runs's three runs; exp-b (newer): grpo-s0 and crbc-s0 of its own."""
    write_runs(tmp_path / "runs" / "exp-a")
    for est, s in (("grpo", 0.9), ("crbc", 0.8)):
        w = RW.RunWriter.create(tmp_path / "runs" / "exp-b" / f"{est}-s0",
                               {"name": f"{est}-s0", "config": {"estimator": est, "seed": 0}})
        w.write_rollouts(0, read_rollouts(WORKED))
        w.append_metrics({"iteration": 0, "success_rate": s})
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)


def test_runs_of_another_experiment_can_be_added_and_are_averaged_within_their_experiment(app, tmp_path,
                                                                                           monkeypatch):
    """The Runs picker offers every experiment's runs (the chosen experiment's first): runs added
    from another experiment are compared, each experiment's seeds averaged apart (the experiment
    in the curve's name, in the table's and in the drill-down's); choosing an experiment shows its
    runs again. (The link's side: the next test; AppTest does not see a multiselect write the URL.)"""
    _two_experiments(tmp_path, monkeypatch)
    at = _open_drill(app("pages/runs.py"))
    pick = at.multiselect(key="runs")
    assert pick.value == ["exp-b/crbc-s0", "exp-b/grpo-s0"]
    assert pick.options[:2] == ["exp-b/crbc-s0", "exp-b/grpo-s0"] and len(pick.options) == 5
    at.session_state["runs_summary_open"] = True
    pick.select("exp-a/crbc-s0").select("exp-a/crbc-s1").run()
    assert not at.exception, at.exception
    (curves,) = _svgs(at, "runs_curve")
    assert "exp-a · crbc (n=2)" in curves and "exp-b · crbc (n=1)" in curves and "exp-b · grpo (n=1)" in curves
    assert "crbc (n=3)" not in curves  # never averaged across experiments
    assert 'data-pick="2|exp-a/crbc-s1"' in curves
    assert any("Runs of 2 experiments" in c.value for c in at.caption)
    assert sorted(at.dataframe[0].value["estimator"].tolist()) == ["exp-a · crbc", "exp-b · crbc", "exp-b · grpo"]
    assert set(at.selectbox(key="runs_run").options) == {"exp-b/grpo-s0", "exp-b/crbc-s0", "exp-a/crbc-s0",
                                                         "exp-a/crbc-s1"}
    at.session_state["_runs_click"] = (2, "exp-a/crbc-s1")  # a click on a point of the added experiment
    at.run()
    assert at.selectbox(key="runs_run").value == "exp-a/crbc-s1" and at.selectbox(key="runs_iter").value == 2
    at.selectbox(key="runs_exp").set_value("exp-a").run()  # choosing an experiment shows its runs
    assert sorted(at.multiselect(key="runs").value) == ["exp-a/crbc-s0", "exp-a/crbc-s1", "exp-a/grpo-s0"]


@pytest.mark.parametrize("with_exp", [False, True])
def test_a_link_to_runs_of_two_experiments_reproduces_them(app, tmp_path, monkeypatch, with_exp):
    """A shared link (``runs=`` repeated, with or without ``runs_exp=``) opens the same runs of both
    experiments; without ``runs_exp`` the experiment picker shows its first run's experiment."""
    _two_experiments(tmp_path, monkeypatch)
    at = app(run=False)
    at.query_params["runs"] = ["exp-a/crbc-s1", "exp-b/crbc-s0"]
    if with_exp:
        at.query_params["runs_exp"] = "exp-b"
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="runs").value == ["exp-a/crbc-s1", "exp-b/crbc-s0"]
    assert at.selectbox(key="runs_exp").value == ("exp-b" if with_exp else "exp-a")
    (curves,) = _svgs(at, "runs_curve")
    assert "exp-a · crbc (n=1)" in curves and "exp-b · crbc (n=1)" in curves


def test_the_doctor_folded_says_when_no_run_recorded_it(page):
    assert not _svgs(page, "runs_doctor_curve")  # folded
    page.session_state["runs_doctor_open"] = True
    page.run()
    assert not page.exception, page.exception
    assert not _svgs(page, "runs_doctor_curve")
    assert any(c.value.startswith("None of these runs recorded the advantage doctor's counts") for c in page.caption)


def test_the_doctors_counts_of_shipped_runs_are_overlaid(app, tmp_path, monkeypatch):
    """Runs whose metrics carry the recorder's doctor counts: their rows flagged per iteration as
    curves (the seeds of one estimator as a mean), points that open their run's iteration below,
    and the run without counts named."""
    from tests.support.runs import write_doctor_runs

    write_doctor_runs(tmp_path / "runs" / "doc")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/runs.py")
    at.session_state["runs_doctor_open"] = True
    at.run()
    assert not at.exception, at.exception
    (svg,) = _svgs(at, "runs_doctor_curve")
    assert "grpo (n=2)" in svg and 'data-pick="1|doc/rec-s0"' in svg
    assert any("doc/plain-s0 never recorded" in c.value for c in at.caption)
    at.session_state["_runs_click"] = (1, "doc/rec-s0", "success")  # what a click on that point stores
    at.run()
    assert at.selectbox(key="runs_run").value == "doc/rec-s0" and at.selectbox(key="runs_iter").value == 1
