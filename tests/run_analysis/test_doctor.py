"""The advantage doctor on hand-made groups, its crbc.doctor/1 records, the command line, and no
false alarm on anything the repository ships (docs/FORMATS.md, "An advantage doctor")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crbc.cli.main import main
from crbc.doctor import (
    CHECKS,
    Finding,
    diagnose,
    diagnose_all,
    exit_status,
    from_dict,
    from_groups,
)
from crbc.doctor.findings import FIELDS, SCHEMA
from crbc.doctor.sources import read_batches
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.io.runs import find_runs
from tests.support.paths import ROOT


def group(name, walks, scores=None, adv=None, rewards=None):
    """A group of rollouts, one per walk (a list of anchors); ``adv``/``rewards`` per walk per step."""
    rs = []
    for i, walk in enumerate(walks):
        steps = tuple(Step(a, "go", reward=None if rewards is None else rewards[i][t],
                           trainer_advantage=None if adv is None else adv[i][t]) for t, a in enumerate(walk))
        s = None if scores is None else scores[i]
        rs.append(Rollout(name, i, steps, bool(s) if s is not None else i % 2 == 0, False, s))
    return RolloutGroup(name, tuple(rs))


def checks(groups, **kw):
    return {f.check: f for f in diagnose(from_groups(groups, 3), **kw)}


def test_a_finding_is_one_crbc_doctor_line_with_exactly_the_fields():
    f = Finding("singleton_groups", 3, 7, 0.5, (9, 1, 2, 3, 4, 5, 6), "a sentence.")
    d = json.loads(f.to_json())
    assert list(d) == list(FIELDS) and d["format"] == SCHEMA == "crbc.doctor/1"
    assert d["severity"] == "error" and d["iteration"] == 3
    assert d["examples"] == [{"row": r, "group": None, "rollout": None, "step": None} for r in (9, 1, 2, 3, 4)]
    assert from_dict(d) == f.__class__(**{**f.__dict__, "examples": (9, 1, 2, 3, 4)})
    placed = f.located(lambda r: ("task-7", 2, r - 1) if r > 1 else None)
    d = placed.to_dict()
    assert d["examples"][0] == {"row": 9, "group": "task-7", "rollout": 2, "step": 8}
    assert d["examples"][1] == {"row": 1, "group": None, "rollout": None, "step": None}
    assert from_dict(json.loads(placed.to_json())) == placed
    with pytest.raises(ValueError, match="without 'row'"):
        from_dict({**d, "examples": [{"group": "g"}]})
    assert [CHECKS[c] for c in ("zero_variance_groups", "estimator_mismatch", "advantage_shifted")] == [
        "info", "warning", "error"]
    with pytest.raises(ValueError, match="unknown doctor check"):
        Finding("nope", None, 0, 0.0, (), "")
    assert exit_status([Finding("zero_variance_groups", None, 1, 0.1, (), "")]) == 0
    assert exit_status([Finding("step_rewards_sum", None, 1, 0.1, (), "")]) == 1


def test_singleton_groups_by_hand():
    alone = [group(f"g{k}", [["s0", "s1"]], scores=[float(k % 2)]) for k in range(3)]
    pair = group("p", [["s0"], ["s0"]], scores=[1.0, 0.0])
    f = checks([*alone, pair])["singleton_groups"]
    assert (f.rows, f.example_rows, f.share) == (6, (0, 1, 2, 3, 4), pytest.approx(6 / 8))
    assert [(e.group, e.rollout, e.step) for e in f.examples] == [
        ("g0", 0, 0), ("g0", 0, 1), ("g1", 0, 0), ("g1", 0, 1), ("g2", 0, 0)]
    assert "singleton_groups" not in checks([alone[0], pair, group("q", [["a"], ["b"]], scores=[1.0, 0.0])])


def test_a_row_is_located_in_its_group_rollout_and_step():
    b = from_groups([group("g", [["a", "b"], ["a"]]), group("h", [["c", "d", "e"]])], first_row=10)
    assert [b.locate(r) for r in (10, 12, 15, 99)] == [("g", 0, 0), ("g", 1, 0), ("h", 0, 2), None]


def test_zero_step_advantage_by_hand():
    walks = [["a", "b", "c"], ["a", "c"], ["a", "b"]]
    bad = group("g", walks, scores=[1.0, 0.0, 1.0], adv=[[0.0, 0.0, 0.8], [0.0, -1.1], [0.0, 0.5]])
    f = checks([bad])["zero_step_advantage"]
    assert (f.rows, f.example_rows) == (4, (0, 1, 3, 5))
    ok = group("g", walks, scores=[1.0, 0.0, 1.0], adv=[[0.8] * 3, [-1.1] * 2, [0.5] * 2])
    assert "zero_step_advantage" not in checks([ok])


def test_length_weighted_baseline_by_hand():
    """Scores 1, 0, 0 on walks of 1, 1, 4 steps: the trajectory mean is 1/3, the row mean 1/6."""
    walks, s = [["a"], ["a"], ["a", "b", "c", "d"]], np.array([1.0, 0.0, 0.0])
    lens = np.array([1, 1, 4])
    for mean, fires in ((np.average(s, weights=lens), True), (s.mean(), False)):
        a = s - mean
        f = checks([group("g", walks, scores=list(s), adv=[[x] * n for x, n in zip(a, lens, strict=True)])])
        assert ("length_weighted_baseline" in f) is fires


def test_step_rewards_sum_follows_the_run():
    walks = [["a", "b"]] * 4
    sums = [[0.5, 0.5], [0.0, 1.0], [0.2, 0.0], [0.0, 0.0]]
    g = group("g", walks, scores=[1.0, 1.0, 0.7, 0.0], rewards=sums)  # three agree, one does not
    f = checks([g])["step_rewards_sum"]
    assert (f.rows, f.example_rows, f.severity) == (2, (4, 5), "warning")
    shaped = group("g", walks, scores=[1.0, 0.0, 1.0, 0.0], rewards=[[-0.1, -0.1]] * 4)  # a score by design
    assert "step_rewards_sum" not in checks([shaped])


def test_no_shared_anchors_and_zero_variance():
    walks = [["start", f"t{i}-1", f"t{i}-2"] for i in range(4)]
    f = checks([group("g", walks, scores=[1.0, 0.0, 1.0, 0.0])])
    assert f["no_shared_anchors"].rows == 8 and f["no_shared_anchors"].severity == "warning"
    flat = checks([group("g", [["a", "b"]] * 3, scores=[1.0] * 3)])
    assert flat["zero_variance_groups"].severity == "info" and flat["zero_variance_groups"].rows == 6


def test_estimator_mismatch_recomputes_the_named_estimator():
    import crbc

    g = group("g", [["a", "b"], ["a", "c"], ["a", "b", "c"]], scores=[1.0, 0.0, 1.0])
    right = crbc.compute("grpo", [g]).advantage_N
    wrong = right[::-1] + 1.0
    for adv, fires in ((right, False), (wrong, True)):
        it = iter(adv.tolist())
        walks = [[s.anchor for s in r.steps] for r in g.rollouts]
        gg = group("g", walks, scores=[1.0, 0.0, 1.0], adv=[[next(it) for _ in w] for w in walks])
        assert ("estimator_mismatch" in checks([gg], expect="grpo")) is fires
        assert "estimator_mismatch" not in checks([gg])  # only when asked


def test_the_command_line_exit_status_and_bad_input(tmp_path, capsys):
    src = tmp_path / "rows.jsonl"
    rows = [{"uid": f"t{k}", "traj_uid": f"{k}", "step_index": 0, "anchor_obs": "s", "success": k % 2,
             "advantages": 0.0} for k in range(4)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["doctor", str(src), "--format", "json"]) == 1
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert out[0]["check"] == "singleton_groups" and out[0]["rows"] == 4
    src.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "step_index": "x"}) + "\n")
    assert main(["doctor", str(src)]) == 2
    err = capsys.readouterr().err
    assert str(src) in err and "row 2" in err and "step_index" in err and len(err.splitlines()) == 1
    assert main(["doctor", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["doctor", "sample_rollouts/worked-example.jsonl", "--expect", "nope"]) == 2
    assert main(["doctor", "sample_rollouts/worked-example.jsonl", "--anchor", "("]) == 2
    capsys.readouterr()
    assert main(["doctor", "sample_rollouts/worked-example.jsonl"]) == 0
    assert "every check silent" in capsys.readouterr().out


# ---------------------------------------------------------------- no false alarm on what we ship

SAMPLES = sorted((ROOT / "sample_rollouts").glob("*.jsonl"))
TEST_DATA = [(ROOT / "tests/data/importers/verl_agent_rows/step-0003.jsonl", None),
             (ROOT / "tests/data/importers/verl_rollout_dump", None),
             (ROOT / "tests/data/importers/verl_rollout_dump_single_output", None),
             (ROOT / "tests/data/importers/rllm_episode_log/episodes", "rllm"),
             (ROOT / "tests/data/importers/art/trajectories", "art")]


def serious(batches):
    return [f.to_dict() for f in diagnose_all(batches) if f.serious]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_no_warning_on_a_shipped_sample(path):
    assert serious(read_batches(path)) == []


@pytest.mark.parametrize("path, source", TEST_DATA, ids=lambda x: getattr(x, "name", str(x)))
def test_no_warning_on_the_tests_data(path, source):
    assert serious(read_batches(path, source=source)) == []


def test_no_warning_on_the_last_iteration_of_every_shipped_run():
    """The last iteration of each of the shipped runs (every iteration, as `crbc doctor RUN` checks
    them: tests/run_analysis/test_doctor_sweep.py)."""
    import crbc
    from crbc.doctor.sources import batches_of

    runs = find_runs(ROOT / "sample_rollouts" / "runs")
    assert len(runs) >= 100
    for run_dir in runs:
        run = crbc.read_run(run_dir)
        if not run.iterations_with_rollouts:  # a run that saved its metrics only
            continue
        last = max(run.iterations_with_rollouts)
        assert serious(batches_of({last: run.rollouts(last)}, None)) == [], run_dir


def test_the_audit_has_a_column_per_check_in_the_doctors_order():
    from crbc.io.audit_reader import DOCTOR_COLUMNS

    assert DOCTOR_COLUMNS == tuple(f"doctor/{c}" for c in CHECKS)


def test_the_audit_counts_the_doctors_rows(tmp_path):
    """A run whose groups are single rollouts: every row of every iteration is a singleton's;
    the trainer's advantage is grpo's, so only grpo's row has no estimator mismatch."""
    pytest.importorskip("pandas")
    import crbc
    from crbc.audit import audit_run
    from crbc.io.run_writer import RunWriter

    w = RunWriter.create(tmp_path / "run", {"name": "t", "config": {"estimator": "grpo"}})
    for it in range(2):
        groups = [group(f"g{k}", [["a", "b"]], scores=[float(k % 2)]) for k in range(4)]
        adv = crbc.compute("grpo", groups).advantage_N + 0.5 * np.arange(8) * 0  # grpo: the raw score
        it_adv = iter(adv.tolist())
        groups = [group(g.group, [["a", "b"]], scores=[g.rollouts[0].score],
                        adv=[[next(it_adv), next(it_adv)]]) for g in groups]
        w.write_rollouts(it, groups)
        w.append_metrics({"iteration": it})
    frame = audit_run(tmp_path / "run", ("grpo", "crbc"), workers=1)
    assert (frame["doctor/singleton_groups"] == 8).all()
    assert (frame["doctor/zero_step_advantage"] == 0).all()
    by = frame.groupby("estimator")["doctor/estimator_mismatch"].max()
    assert by["grpo"] == 0


def test_a_group_report_of_a_file_carries_the_doctors_findings(tmp_path):
    from crbc.io.rollouts import write_rollouts
    from crbc.report.build import report

    alone = [group(f"g{k}", [["s0", "s1"]], scores=[float(k % 2)]) for k in range(3)]
    write_rollouts(tmp_path / "r.jsonl", alone)
    html = report(tmp_path / "r.jsonl", truth=False, estimators=["grpo"])
    section = html[html.index('id="doctor"'):]
    assert "singleton_groups" in section and "error" in section
    quiet = report(ROOT / "sample_rollouts" / "worked-example.jsonl", truth=False, estimators=["grpo"])
    assert "No warning and no error on worked-example.jsonl" in quiet
