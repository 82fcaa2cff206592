"""AppTest for users' own runs and for how sure a credit is: the sidebar's merge line, the
upload's importers (their refusals), the Training runs review of a run that is not ours, the
Inspector's intervals and observation, Step credits' evidence marks."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts  # noqa: E402
from devtools.textworld import alfworld_like_group, alfworld_like_run  # noqa: E402
from tests.support.html_tables import numeric, tables
from ui.core import state, upload  # noqa: E402


def _merge_captions(at: AppTest) -> list[str]:
    return [c.value for c in at.sidebar.caption if c.value.startswith("anchors ")]


@pytest.mark.slow
def test_sidebar_merge_line_and_the_merges_nothing_warning(app, tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    history = RolloutGroup("h", tuple(Rollout("h", i, tuple(Step(f"turn {t} of chat {i}: room {t}", "a")
                                                            for t in range(3)), i % 2 == 0) for i in range(4)))
    write_rollouts(tmp_path / "history.jsonl", [history])
    at = app(samples=tmp_path)
    line = _merge_captions(at)
    assert len(line) == 1 and "steps at shared anchors 100%" in line[0]
    assert not [w for w in at.sidebar.warning if "almost nothing" in w.value]
    at.selectbox(key="sample").set_value("history.jsonl").run()
    assert _merge_captions(at) == ["anchors 12 · steps at shared anchors 0% · steps beyond the first at "
                                   "shared anchors 0%"]
    assert any("almost nothing beyond the first step" in w.value and "anchor key" in w.value
               for w in at.sidebar.warning)
    # the same key field serves every source: here a sample
    at.text_input(key="anchor_key").set_value(r"room (\d+)$").run()
    assert not at.exception
    assert _merge_captions(at) == ["anchors 3 · steps at shared anchors 100% · steps beyond the first at "
                                   "shared anchors 100%"]
    assert not [w for w in at.sidebar.warning if "almost nothing" in w.value]
    at.text_input(key="anchor_key").set_value("(").run()  # a bad regex: one line, nothing loaded
    assert not at.exception
    assert [e.value for e in at.error if "'('" in e.value][0].startswith(
        "The anchor key '(': not a valid regular expression")
    assert len(at.error) == 1 and not at.sidebar.error  # one alert, on the page
    at.text_input(key="anchor_key").set_value("nomatch").run()  # names the step it does not match
    assert any("group 'h' rollout 0 step 0" in e.value for e in at.error)


def test_the_upload_offers_every_importer(app, tmp_path, monkeypatch):
    at = app(samples=tmp_path)
    at.radio(key="source").set_value("upload").run()
    assert not at.exception
    assert at.selectbox(key="upload_kind").options == [label for label, _t, _s in upload.formats().values()]
    at.selectbox(key="upload_kind").set_value("steps").run()
    assert not at.exception and at.sidebar.text_input(key="anchor_key") is not None


def test_a_run_iteration_parquet_uploads_as_what_it_is(tmp_path):
    run = alfworld_like_run(tmp_path / "run", iterations=1, groups=2, format="parquet")
    name = "iter-0000.parquet"
    data = (run / "rollouts" / name).read_bytes()
    got, err = upload._read("rollout", {name: data}, None, None, "p1")
    assert err is None and [len(g) for g in got[None]] == [8, 8]
    _, err = upload._read("steps", {name: data}, None, None, "p2")  # as a step table: refused, with the way out
    assert "uid" in err and "choose the format crbc.rollout/1" in err


def test_refused_uploads_name_file_row_and_column():
    _, err = upload._read("steps", {"mine.csv": b"uid,traj_uid,anchor_obs\n1,2,x\n"}, None, None, "t1")
    assert err.startswith("mine.csv: row 1: column 'success'") and "Traceback" not in err
    _, err = upload._read("rollout", {"bad.jsonl": b'{"group": "g"}\n'}, None, None, "t2")
    assert err.startswith("bad.jsonl:1:")
    _, err = upload._read("steps", {"mine.csv": b"x"}, "(", None, "t3")
    assert "not a valid regular expression" in err
    rows = [{"uid": "g", "traj_uid": f"t{i}", "step_index": t, "anchor_obs": f"chat ... Now: room {t}",
             "action": "go", "success": i == 0, "advantages": 0.5 - i} for i in range(2) for t in range(3)]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    got, err = upload._read("steps", {"steps.jsonl": data}, r"Now: (.*)$", None, "t4")
    assert err is None
    (groups,) = got.values()
    assert [s.anchor for s in groups[0].rollouts[0].steps] == ["room 0", "room 1", "room 2"]
    assert groups[0].rollouts[1].steps[0].trainer_advantage == -0.5


@pytest.mark.slow
def test_runs_page_reviews_the_sidebars_run(app, tmp_path, monkeypatch):
    path = alfworld_like_run(tmp_path / "runs" / "alf-verl-agent", iterations=3, groups=3)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app(run_folder=path)
    from crbc.io.runs import read_run

    label = read_run(path).label  # run.json's name and its seed (Run.label)
    assert label.startswith("alf-verl-agent")
    assert any(m.value == f"Loaded: **run {label} · iteration 0**" for m in at.sidebar.markdown)
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    assert at.segmented_control(key="runs_kind").value == "any"  # a run is open: its review first
    assert at.button(key="review_all").label == "Review the 3 iteration(s) here (about a second each; kept for this session)"
    at.button(key="review_all").click().run()
    assert not at.exception
    assert at.button(key="review_open_iter").label == "Groups worth a look in iteration 0"
    at.button(key="review_open_iter").click().run()
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"success", "steps at shared anchors", "evidence coverage", "sure steps", "groups"}
    assert metrics["groups"] == "3" and metrics["steps at shared anchors"].endswith("%")
    agree = at.dataframe[0].value
    assert "crbc" in agree["estimator"].tolist() and agree["Spearman ρ with the trainer"].notna().any()
    groups = at.dataframe[1].value
    assert sorted(groups["group"]) == ["alfworld/task-0", "alfworld/task-1", "alfworld/task-2"]
    first = groups["group"].iloc[0]
    at.button(key="review_open_credits").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="source").value == "run" and at.selectbox(key="group").value == first
    assert at.selectbox(key="run_iter").value == 0


@pytest.mark.slow
def test_a_run_folder_outside_the_roots_is_refused(app, tmp_path, monkeypatch):
    alfworld_like_run(tmp_path / "elsewhere" / "alf", iterations=1, groups=1)
    at = app(samples=tmp_path)
    at.radio(key="source").set_value("run").run()
    at.sidebar.text_input(key="run_path").set_value(str(tmp_path / "elsewhere" / "alf")).run()
    assert not at.exception
    assert any("not a run folder under the studio's run folders" in e.value for e in at.sidebar.error)
    monkeypatch.setenv("CRBC_RUNS_DIRS", str(tmp_path / "elsewhere"))  # --runs-dir adds a root
    at.sidebar.text_input(key="run_path").set_value(str(tmp_path / "elsewhere" / "alf") + "/").run()
    assert not at.exception and not at.sidebar.error
    from crbc.io.runs import read_run

    label = read_run(tmp_path / "elsewhere" / "alf").label  # its folder in front of a bare name, its seed
    assert label.startswith("elsewhere/alf")
    assert any(m.value == f"Loaded: **run {label} · iteration 0**" for m in at.sidebar.markdown)


def test_inspector_intervals_and_the_observation(app, tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    at = app(samples=tmp_path, page="pages/inspector.py")
    assert any("How sure is each action's credit here" in m.value for m in at.markdown)
    table = tables(at)[0].value
    assert {"q", "q_lo", "q_hi", "Q − V", "Q − V lo", "Q − V hi", "evidence"} <= set(table.columns)
    assert set(table["evidence"]) <= {"sure", "unsure", "none"}
    ok = numeric(table, ["Q − V", "Q − V lo", "Q − V hi"]).dropna(subset=["Q − V lo"])
    assert (ok["Q − V lo"] <= ok["Q − V"] + 1e-9).all() and (ok["Q − V"] <= ok["Q − V hi"] + 1e-9).all()
    assert any("toy tasks" in c.value for c in at.caption)  # the level is the measured one
    assert any(m.value.startswith("**The observation**") for m in at.markdown)


def test_step_credits_evidence_marks_and_sure_only(app, tmp_path, monkeypatch):
    write_rollouts(tmp_path / "alf.jsonl", [alfworld_like_group(seed=1)])
    at = app(samples=tmp_path, page="pages/credits.py")
    assert at.toggle(key="credits_marks").value is True
    at.toggle(key="credits_sure_only").set_value(True).run()
    assert not at.exception
    at.toggle(key="credits_marks").set_value(False).run()
    assert not at.exception and at.toggle(key="credits_sure_only").disabled


def test_lesson_section_on_intervals_as_the_group_grows(app):
    at = app(run=False)
    at.run()
    at.switch_page("pages/lesson.py").run()
    at.segmented_control(key="lesson_part").set_value("9-10").run()
    assert not at.exception, at.exception
    assert any(h.value.startswith("How sure is a credit") for h in at.subheader)
    rows = next(t.value for t in tables(at) if "covers the truth" in t.value.columns)
    assert rows["G"].tolist()[0] == "2" or rows["G"].tolist()[0] == 2
    assert any("toy tasks" in c.value for c in at.caption)  # the level is the measured one


def _audit_rows(iterations: int) -> list[dict]:
    return [{"iteration": i, "estimator": e, "groups": 3, "rollouts": 24, "steps": 300, "success_rate": 0.3,
             "shared_step_share": 0.7, "anchors_per_group": 20.0, "none_share": 0.5, "sure_share": 0.1,
             "trainer_spearman": 0.4, "trainer_sign_agreement": 0.8, "seconds": 0.1}
            for i in range(iterations) for e in ("crbc", "gigpo")]


def _finish_audit(at) -> None:
    """Wait for the audit the page queued (the server's queue starts its worker, which writes
    the file), then let the page's progress fragment see the end (AppTest does not run a
    fragment's timer)."""
    import time

    ticket = at.session_state["_audit_job"][2]
    deadline = time.monotonic() + 150
    while ticket.live and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ticket.job is not None, "a job in a worker, not a computation in the page"
    assert "done" in ticket.outcome, ticket.outcome
    at.run()
    assert not at.exception


@pytest.mark.slow
def test_an_audit_under_another_key_is_named_and_recomputed_with_the_sidebars(app, tmp_path, monkeypatch):
    from crbc.io.audit_reader import audit_key, read_audit

    path = alfworld_like_run(tmp_path / "runs" / "alf", iterations=2, groups=2)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    import pandas as pd

    from crbc.io.audit_reader import keyed_cache

    monkeypatch.setenv("CRBC_CACHE_DIR", str(tmp_path / "cache"))
    pd.DataFrame(_audit_rows(2)).to_parquet(path / "audit.parquet")  # a CLI audit, on the exact text
    before = (path / "audit.parquet").read_bytes()
    at = app("pages/runs.py", run_folder=path, anchor_key="(?s)(.*)")
    assert not at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "computed with the anchor key the exact text" in warn and "`(?s)(.*)`" in warn
    go = at.button(key="runs_audit_go")
    assert go.label == "Recompute the audit with the key `(?s)(.*)`"  # a code span: its * never italics
    go.click().run()
    _finish_audit(at)
    # the session's key goes to the studio's cache by run and key: the run's own audit stays
    assert (path / "audit.parquet").read_bytes() == before
    assert audit_key(read_audit(keyed_cache(path, "(?s)(.*)"))) == "(?s)(.*)"
    assert sorted(p.name for p in path.iterdir()) == ["audit.parquet", "metrics.jsonl", "rollouts", "run.json"]
    assert not [w for w in at.warning if "computed with the anchor key" in w.value]
    assert any("computed with the anchor key `(?s)(.*)`" in c.value and "studio's cache" in c.value
               for c in at.caption)
    assert not [b for b in at.button if b.key == "runs_audit_go"]


@pytest.mark.slow
def test_runs_page_draws_the_whole_history_from_the_audit_beside_the_run(app, tmp_path, monkeypatch):
    import pandas as pd

    from crbc.io.audit_reader import keyed_cache

    path = alfworld_like_run(tmp_path / "runs" / "alf", iterations=3, groups=2)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    monkeypatch.setenv("CRBC_CACHE_DIR", str(tmp_path / "cache"))
    at = app("pages/runs.py", run_folder=path)
    assert not at.exception
    # no audit yet: the page offers it; one click queues it for a worker and the page returns at once
    at.button(key="runs_audit_go").click().run()
    assert not at.exception
    _finish_audit(at)
    assert keyed_cache(path, "").exists() and not (path / "audit.parquet").exists()  # never into the run
    assert any("computed with the anchor key the exact text" in c.value for c in at.caption)
    keyed_cache(path, "").unlink()
    pd.DataFrame(_audit_rows(3)).to_parquet(path / "audit.parquet")  # a CLI audit beside the run
    at.run()
    assert not at.exception
    assert any("`audit.parquet` beside the run" in c.value for c in at.caption)
    assert not [b for b in at.button if b.key in ("runs_audit_go", "review_all")]  # nothing left to compute
    el = next(e for e in at.get("bidi_component") if e.proto.id.endswith("runs_audit"))
    svg = json.loads(el.proto.json)["svg"]
    assert all(f'data-pick="{i}"' in svg for i in range(3)) and ">same sign as the trainer<" in svg
    (path / "audit.parquet").write_bytes(b"broken")  # a bad audit: one line naming the file
    at.run()
    assert not at.exception and any("audit.parquet" in e.value for e in at.error)


@pytest.mark.slow
def test_disagreements_offer_the_trainer_against_every_estimator(app, tmp_path, monkeypatch):
    path = alfworld_like_run(tmp_path / "runs" / "alf", iterations=1, groups=2)
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    at = app("pages/disagreements.py", run_folder=path, dis_cmp="trainer vs crbc")
    assert not at.exception, at.exception
    assert "trainer vs gigpo" in at.selectbox(key="dis_cmp").options
    assert at.selectbox(key="dis_cmp").value == "trainer vs crbc"
    assert any(m.value.startswith("**trainer** against **crbc**") for m in at.markdown)
