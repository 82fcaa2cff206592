"""AppTest for the truth in the studio: the Estimator accuracy page, and the truth beside the
estimators on Rollouts, Step credits, Anchor graph and Bellman backups (numbers checked against
the library, not against values the test set)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.apptest import chosen_group
from tests.support.paths import ROOT

pytest.importorskip("streamlit")
pytest.importorskip("torch")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.support.html_tables import tables


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [s.value for s in at.subheader] + \
            [c.value for c in at.caption] + [t.value for t in at.title]
    return "\n".join(str(p) for p in parts)


def _truth_of(group):
    from crbc.process import merge
    from crbc.truth import TruthCache, group_truth_arrays

    p = merge([group])
    return p, group_truth_arrays(group, p.state_anchor, 0.98, TruthCache(policy_root=str(ROOT)))


def _svg(at: AppTest, key: str) -> str:
    """The SVG a page showed through ui.core.svg_view under widget key ``key``."""
    el = next(e for e in at.get("bidi_component") if e.proto.id.endswith(key))
    return json.loads(el.proto.json)["svg"]


def test_accuracy_page_opens_the_shipped_result(app):
    at = app("pages/accuracy.py")
    assert "Estimator accuracy" in _texts(at)
    assert "100 levels of `sokoban-6x6-v0`" in _texts(at)
    from crbc.estimators import registry as estimators

    def lines(key: str) -> list[str]:  # the chart's series, in the legend's order (SVG)
        return re.findall(r'<g class="crbc-series[^"]*"[^>]*><title>([^<]+)</title>', _svg(at, key))

    assert lines("shipped_est") == estimators.names()  # every registered estimator, from the file
    assert lines("shipped_depth") == ["crbc K=0", "crbc K=1", "crbc K=3", "crbc K=inf"]
    shipped = json.loads((ROOT / "sample_rollouts" / "accuracy-sokoban-weak.json").read_text())
    want = {r["G"]: r["mean"] for r in shipped["rows"] if r["estimator"] == "crbc" and r["metric"] == "spearman"
            and r["target"] == "step"}
    got = {int(g): float(m) for g, m in re.findall(r"crbc, G = (\d+): mean (-?[0-9.]+)", _svg(at, "shipped_est"))}
    assert got == pytest.approx({g: round(m, 3) for g, m in want.items()}, abs=1e-9)
    # the paired table: crbc against every other estimator of the file, the three of 2026 included
    paired = next(e for e in at.expander if e.label.startswith("Paired against crbc"))
    html = " ".join(h.proto.body for h in paired.children.values() if hasattr(h, "proto") and hasattr(h.proto, "body"))
    assert all(f"crbc − {n}" in html for n in ("graphgpo", "hgpo", "g2po", "gigpo", "rewardflow")), html[:300]
    at.radio(key="acc_metric").set_value("rmse").run()
    assert not at.exception
    # only signals in the truth's units have an RMSE: crbc and visit_local (not g2po's TD error)
    assert lines("shipped_est") == [n for n in estimators.names() if estimators.get(n).truth_scale]


def test_accuracy_page_small_live_run(app):
    at = app("pages/accuracy.py")
    at.slider(key="acc_levels").set_value(3)
    at.multiselect(key="acc_sizes").set_value([2, 4])
    at.button[0].click().run()  # the form's submit button
    assert not at.exception, [e.message for e in at.exception]
    assert "3 levels of `sokoban-6x6-v0`" in _texts(at)
    live = set(re.findall(r'<g class="crbc-series[^"]*"[^>]*><title>([^<]+)</title>', _svg(at, "live_est")))
    assert live >= {"crbc", "gigpo"}


def test_rollouts_page_shows_the_true_advantage(app):
    at = app()
    grp = chosen_group(at)
    _, gt = _truth_of(grp)
    metric = next(m for m in at.metric if m.label == "true A_t (exact)")
    r, t = int(at.session_state["rollout"] or 0), int(at.session_state["step"])
    i = sum(len(x) for x in grp.rollouts[:r]) + t  # steps are 0-based, as in the files
    assert float(metric.value) == pytest.approx(gt.advantage_N[i], abs=1e-4)


def test_credits_page_truth_row_and_agreement(app):
    from crbc.estimators import registry as estimators
    from crbc.truth import accuracy

    at = app("pages/credits.py")
    grp = chosen_group(at)
    p, gt = _truth_of(grp)
    from crbc.viz.core.scales import symmetric_range
    from crbc.viz.heatmap import credit_fill
    from tests.support.heatmap_cells import panels

    cells = panels(_svg(at, "heat_truth"))["truth"]  # SVG: a cell per step, in the process's order
    assert [c.value for c in cells] == pytest.approx(gt.advantage_N.tolist(), abs=6e-4)
    assert [c.fill for c in cells] == credit_fill(gt.advantage_N, symmetric_range(gt.advantage_N)).tolist()
    assert all(c.title.startswith("rollout r") and " · true A_t " in c.title for c in cells)
    assert cells[0].step == (0, 1)  # a click opens the step in the Inspector, as on the estimators' panels
    table = next(t.value for t in tables(at) if "Spearman" in t.value.columns)
    assert list(table.index) == estimators.names()
    creds = {n: estimators.compute(n, [grp]) for n in estimators.names()}
    want = accuracy.group_agreement(creds, gt.advantage_N)
    assert float(table.loc["crbc", "Spearman"]) == pytest.approx(want["crbc"]["spearman"], abs=5e-5)
    timeline = _svg(at, "timeline")  # the truth on its own right axis
    assert "truth (A_t, right axis)" in timeline and ">true A_t<" in timeline


def test_graph_and_backups_colour_by_truth_and_error(app):
    at = app("pages/graph.py")
    for choice in ("truth", "error"):
        at.radio(key="graph_colour").set_value(choice).run()
        assert not at.exception
    at = app("pages/backups.py")
    at.radio(key="backups_colour").set_value("error").run()
    assert not at.exception
    assert "the closure itself stays" in _texts(at)
    svg = _svg(at, "backup_graph")
    grp = chosen_group(at)
    p, gt = _truth_of(grp)
    from crbc.estimators.closure import depth_sweep
    from crbc.viz.core.scales import symmetric_range
    from crbc.viz.core.style import signed_color

    sw = depth_sweep(p, 0.98, 1)
    error = sw.v_KS[0] - gt.anchor_value_S  # coloured on the signed scale, centred on 0
    fills = re.findall(r'<g data-pick="\d+"><title>[^<]*</title><circle [^>]*fill="([^"]+)"', svg)
    assert fills == signed_color(error, symmetric_range(error))


def test_no_truth_for_a_hand_written_group(app):
    at = app("pages/credits.py", sample="worked-example.jsonl")
    assert "No exact truth" in _texts(at)
    assert not any(e.proto.id.endswith("heat_truth") for e in at.get("bidi_component"))
    assert any(e.proto.id.endswith("heat_credits") for e in at.get("bidi_component"))


def test_lesson_which_estimate_is_right(app):
    from crbc.estimators import registry as estimators
    from crbc.io.rollouts import read_rollouts
    from crbc.truth import accuracy

    at = app("pages/lesson.py", lesson_part="9-10")
    assert any("Which estimate is right?" in h.value for h in at.header)
    groups = read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")
    from crbc.io.rollouts import showcase_group

    grp = groups[showcase_group(groups)]
    assert f"`{grp.group}`" in _texts(at)
    p, gt = _truth_of(grp)
    creds = {n: estimators.compute(n, [grp]) for n in ("visit_local", "crbc", "gigpo", "shortest_path", "rewardflow")}
    agree = accuracy.group_agreement(creds, gt.advantage_N)
    last = next(t.value for t in reversed(tables(at)) if "estimator" in t.value.columns)  # section 9's agreement
    # st.table cells are Markdown: the page escapes them (ui.core.widgets.table), the reader sees plain text
    assert [e.replace("\\", "") for e in last["estimator"]] == ["visit_local", "crbc", "gigpo", "shortest_path", "rewardflow"]
    assert float(last["Spearman"].iloc[1]) == pytest.approx(agree["crbc"]["spearman"], abs=1e-3)


def test_accuracy_page_shows_the_tau_axis_of_the_shipped_similarity_table(app):
    """The TAU axis (docs/MATH.md section 14): per world, each estimator's score at each TAU and
    the anchors' shares, read from experiments/results/similarity-table.json."""
    at = app("pages/accuracy.py")
    assert not at.exception
    table = json.loads((ROOT / "experiments" / "results" / "similarity-table.json").read_text())
    world = table["worlds"][1]
    at.selectbox(key="acc_sim_world").set_value(world["env"]).run()
    assert not at.exception
    crbc_095 = next(r for r in world["rows"] if r["tau"] == "0.95")["crbc.spearman"]
    html = " ".join(str(getattr(h.proto, "body", "")) for h in at.get("html"))
    assert f"{crbc_095['mean']:.3f} [{crbc_095['lo']:.2f}, {crbc_095['hi']:.2f}]" in html
    assert "anchors mixing 2+ true states" in html
