"""Streamlit AppTest for every page: runs without exception and the widgets drive the state."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import chosen_group
from tests.support.paths import ROOT

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ui.core import state  # noqa: E402

PAGES = ["pages/rollouts.py", "pages/graph.py", "pages/backups.py", "pages/credits.py"]


SHARED = ("beta", "depth", "sigma_min", "w_group", "w_step")  # in the sidebar's Parameters fold


def _set(at: AppTest, kind: str, key: str, value) -> AppTest:
    """Set a widget's value (as a user would: opening the Parameters fold first) and rerun."""
    if key in SHARED and not at.session_state["params_open"]:
        at.session_state["params_open"] = True
        at.run()
    getattr(at, kind)(key=key).set_value(value)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [s.value for s in at.subheader] + \
            [c.value for c in at.caption] + [t.value for t in at.title]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("page", PAGES)
def test_page_runs(app, page):
    at = app(page)
    assert not at.error
    assert at.session_state["_crbc_source"].groups, "a shipped sample is loaded on first run"


def test_default_source_is_a_sample(app):
    at = app()
    assert at.radio(key="source").value == "sample"
    assert at.selectbox(key="sample").value.endswith(".jsonl")


def test_rollout_and_step_widgets_drive_the_rollouts_page(app):
    at = app()
    n = len(at.selectbox(key="rollout").options)
    target = n - 1
    _set(at, "selectbox", "rollout", target)
    assert f"Rollout {target}:" in _texts(at)
    _set(at, "slider", "step", 2)
    assert at.session_state["step"] == 2
    assert [m.value for m in at.metric][0]  # the action of step 2 is shown


def test_estimator_choice_changes_the_credit_shown(app):
    at = app()
    _set(at, "selectbox", "estimator", "gigpo")
    assert any("A_S (gigpo)" in m.label for m in at.metric)
    _set(at, "selectbox", "estimator", "grpo")
    assert any("A_S (grpo)" in m.label for m in at.metric)


def test_depth_slider_and_play_drive_the_backups_page(app):
    at = app("pages/backups.py")
    assert "Credit table at K = 0" in _texts(at)
    _set(at, "slider", "K", 1)
    assert "Credit table at K = 1" in _texts(at)
    at.button(key="play").click().run()
    assert at.session_state["playing"] is True
    at.button(key="play").click().run()
    assert at.session_state["playing"] is False
    assert not at.exception


def test_a_links_maximum_depth_opens_the_backups_page_and_play_stops_there(app):
    at = app("pages/backups.py", K="0", kmax="3")
    assert [n.value for n in at.number_input if n.label == "Maximum depth shown"] == [3]
    assert at.slider(key="K").max == 3
    at.button(key="play").click().run()
    for _ in range(6):  # the fragment's timer, one round per run, then the stop at K = 3
        if not at.session_state["playing"]:
            break
        at.run()
    assert at.session_state["K"] == 3 and at.session_state["playing"] is False
    assert not at.exception


def test_play_over_a_deep_range_takes_bounded_steps_and_ends_at_the_maximum(app):
    from ui.backups.at_depth import PLAY_STEPS, play_stride

    assert [play_stride(k) for k in (1, PLAY_STEPS, PLAY_STEPS + 1, 171, 400)] == [1, 1, 2, 3, 7]
    at = app("pages/backups.py", K="0", kmax="171")
    at.button(key="play").click().run()
    seen = [at.session_state["K"]]
    for _ in range(PLAY_STEPS + 2):
        if not at.session_state["playing"]:
            break
        at.run()
        seen.append(at.session_state["K"])
    assert at.session_state["playing"] is False and seen[-1] == 171
    assert len(seen) <= PLAY_STEPS + 2 and max(b - a for a, b in zip(seen, seen[1:], strict=False)) == 3, seen


def _heatmap(at: AppTest, name: str) -> list[float]:
    """The values of estimator ``name``'s heatmap cells on the Step credits page (SVG, one panel
    per estimator; each cell's tooltip names its value to 3 decimals), row by row."""
    from tests.support.heatmap_cells import app_svg, panels

    return [c.value for c in panels(app_svg(at, "heat_credits"))[name]]


def test_beta_drives_the_backups_page(app):
    from crbc.estimators.closure import depth_sweep
    from crbc.process import merge

    at = app("pages/backups.py")
    before = at.dataframe[0].value
    _set(at, "slider", "beta", 0.9)
    assert "β = 0.9" in _texts(at)
    table = at.dataframe[0].value
    # the closure columns are the closure at beta = 0.9 (not at the default 0.98)
    sw = depth_sweep(merge([chosen_group(at)]), 0.9, 1)
    assert sorted(table["Q closure"]) == pytest.approx(sorted(np.round(sw.q_SA, 4)))
    assert sorted(before["Q closure"]) != pytest.approx(sorted(table["Q closure"]))


def test_credits_page_field_and_parameters(app):
    from crbc.estimators.registry import compute

    at = app("pages/credits.py")
    _set(at, "radio", "field", "credit")
    assert any("no value function" in i.value for i in at.info)  # grpo has no Q - V
    _set(at, "radio", "field", "advantage")
    default = _heatmap(at, "crbc")
    _set(at, "selectbox", "depth", "0")
    _set(at, "number_input", "w_step", 2.0)
    _set(at, "number_input", "sigma_min", 0.5)
    grp = chosen_group(at)
    want = compute("crbc", [grp], beta=0.98, depth=0, sigma_min=0.5, w_group=1.0, w_step=2.0)
    assert _heatmap(at, "crbc") == pytest.approx(want.advantage_N.tolist(), abs=6e-4)
    assert default != pytest.approx(_heatmap(at, "crbc"), abs=6e-4)
    # GiGPO shares w_group but keeps its own omega = 1 (the sidebar's w_S is the CRBC family's)
    assert _heatmap(at, "gigpo") == pytest.approx(compute("gigpo", [grp]).advantage_N.tolist(), abs=6e-4)


def test_estimator_params_follow_the_sidebar(app):
    """The Rollouts page shows the numbers of the estimator and parameters chosen in the sidebar."""
    from crbc.estimators.registry import compute

    at = app()
    _set(at, "slider", "beta", 0.95)
    _set(at, "selectbox", "depth", "3")
    _set(at, "number_input", "w_group", 0.5)
    grp, r = chosen_group(at), at.selectbox(key="rollout").value
    c = compute("crbc", [grp], beta=0.95, depth=3, w_group=0.5)
    i = c.rollout_slice(r).start  # step 1 of the chosen rollout
    caption = (f"V(s) = {c.value_N[i]:.3f}, Q(s,a) = {c.q_N[i]:.3f}, Q − V = {c.credit_N[i]:+.3f}; "
               f"A_final = {c.advantage_N[i]:+.3f}")
    assert caption in [x.value for x in at.caption]
    default = compute("crbc", [grp])
    assert f"A_final = {default.advantage_N[i]:+.3f}" not in caption  # the parameters mattered
    _set(at, "selectbox", "estimator", "visit_local")  # beta is shared, depth is not its parameter
    v = compute("visit_local", [grp], beta=0.95, w_group=0.5)
    assert f"V(s) = {v.value_N[i]:.3f}, Q(s,a) = {v.q_N[i]:.3f}" in "\n".join(x.value for x in at.caption)


def test_query_params_initialise_the_view(app):
    at = app(None, estimator="gigpo", rollout="2")
    assert at.selectbox(key="estimator").value == "gigpo"
    assert at.selectbox(key="rollout").value == 2


def test_upload_source_without_a_file_shows_guidance(app):
    at = app()
    _set(at, "radio", "source", "upload")
    assert any("No rollout group is loaded" in i.value for i in at.info)


def test_generate_source_never_crashes(app):
    at = app()
    _set(at, "radio", "source", "generate")  # without models/ it explains; with models it offers a Generate button


def test_group_picker_for_files_with_many_groups(app, tmp_path, monkeypatch):
    from crbc.io.rollouts import write_rollouts
    from devtools.synthetic import random_walk_group

    write_rollouts(tmp_path / "two.jsonl", [random_walk_group(4, 10, 4, seed=1, group="a"),
                                            random_walk_group(3, 10, 4, seed=2, group="b")])
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app(run=False)
    at.run()
    assert at.session_state["_crbc_source"].label == "sample two.jsonl"  # the patched folder
    _set(at, "selectbox", "group", "b")
    assert at.session_state["_crbc_source"].groups[1].group == "b"
    assert "3 rollouts" in _texts(at)


# ---- pure helpers of ui/core/state.py (no running app needed)


def test_load_upload_reports_file_line_field():
    from ui.core import state

    good = (ROOT / "sample_rollouts" / "worked-example.jsonl").read_bytes()
    groups, err = state.load_upload("ok.jsonl", good)
    assert err is None and groups[0].group == "worked-example"
    bad = good.splitlines()[0] + b'\n{"group": "g", "steps": [{"anchor": "s0"}], "success": true}\n'
    groups, err = state.load_upload("broken.jsonl", bad)
    assert groups is None
    assert "broken.jsonl:2" in err and "action" in err


def test_load_upload_size_cap():
    from ui.core import state

    groups, err = state.load_upload("big.jsonl", b" " * (state.MAX_UPLOAD_BYTES + 1))
    assert groups is None and "limit" in err


def test_sample_order_prefers_sokoban(tmp_path, monkeypatch):
    from ui.core import state

    for name in ("worked-example.jsonl", "gridworld.jsonl", "sokoban-strong.jsonl", "zzz.jsonl"):
        (tmp_path / name).write_text("")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    assert [p.name for p in state.sample_files()][:2] == ["sokoban-strong.jsonl", "gridworld.jsonl"]


def test_first_load_opens_a_mixed_sokoban_group(app):
    """The default view shows a group with both outcomes, so every estimator has credit to show."""
    at = app()
    assert at.selectbox(key="sample").value.startswith("sokoban")
    groups = at.session_state["_crbc_source"].groups
    chosen = next(g for g in groups if g.group == at.selectbox(key="group").value)
    assert 0.0 < chosen.success_rate < 1.0
    # a group given in the URL wins over the showcase choice
    first = groups[0].group
    at2 = app(group=first)
    assert at2.selectbox(key="group").value == first


def test_live_generation_from_a_shipped_model(app):
    """Sidebar "Generate live": a shipped checkpoint rolls out a fresh group that every page can use."""
    at = app(source="generate")
    assert at.selectbox(key="gen_model").value.startswith("sokoban")
    at.number_input(key="gen_size").set_value(4)
    at.number_input(key="seed").set_value(3)
    at.run()
    at.button(key="gen_go").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    groups = at.session_state["_crbc_source"].groups
    assert len(groups) == 1 and len(groups[0].rollouts) == 4
    assert groups[0].group == "sokoban-6x6-v0/seed-3"
    assert groups[0].rollouts[0].meta["policy"].endswith(at.selectbox(key="gen_model").value)
    at.switch_page("pages/credits.py").run()
    assert not at.exception, [e.message for e in at.exception]


def test_changing_the_environment_brings_its_checkpoint(app):
    at = app(source="generate")
    at.selectbox(key="gen_env").set_value("gridworld-6x6-v0")
    at.run()
    assert at.selectbox(key="gen_model").value == "gridworld-tiny"
