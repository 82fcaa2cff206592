"""crbc.run/1 folders (crbc.io.runs): writing, the tolerant-but-explicit reader; curves, the
experiment table and paired tests (crbc.run_analysis.training_stats); the per-iteration estimator diagnostics
(crbc.run_analysis.diagnostics). No torch."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

import crbc.io.run_writer as RW  # noqa: E402
import crbc.io.run_zip as Z  # noqa: E402
import crbc.io.runs as R
import crbc.run_analysis.training_stats as A
import crbc.train.tables as T
from crbc.io.rollouts import read_rollouts
from crbc.run_analysis.diagnostics import iteration_diagnostics, rankdata, spearman
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
RARE = ROOT / "sample_rollouts" / "rare-route.jsonl"


def make_run(path: Path, estimator: str = "crbc", seed: int = 0, successes=(0.2, 0.4, 0.6),
             rollouts: bool = True) -> Path:
    w = RW.RunWriter.create(path, {"name": path.name, "config": {"estimator": estimator, "seed": seed},
                                  "model": "models/x"})
    groups = read_rollouts(WORKED)
    for it, s in enumerate(successes):
        if rollouts:
            w.write_rollouts(it, groups)
        w.append_metrics({"iteration": it, "success_rate": s, "loss": 0.1 * it,
                          "diag.step_credit_share": 0.5, "eval_success_rate": s if it % 2 == 0 else None})
    return path


def test_round_trip(tmp_path):
    run = R.read_run(make_run(tmp_path / "a"))
    assert run.meta["schema"] == "crbc.run/1" and run.estimator == "crbc" and run.seed == 0
    assert [m["iteration"] for m in run.metrics] == [0, 1, 2] and run.partial_tail is None
    assert run.iterations_with_rollouts == (0, 1, 2)
    its, vals = run.series("success_rate")
    assert its.tolist() == [0, 1, 2] and vals.tolist() == [0.2, 0.4, 0.6]
    assert run.series("eval_success_rate")[0].tolist() == [0, 2]  # nulls skipped
    groups = run.rollouts(1)
    assert groups[0].group == "worked-example" and len(groups[0]) == 5
    assert (tmp_path / "a" / "rollouts" / "iter-0001.jsonl").is_file()
    with pytest.raises(FileExistsError):
        RW.RunWriter.create(tmp_path / "a", {})


def test_half_written_last_line_is_reported_not_merged(tmp_path):
    path = make_run(tmp_path / "a")
    with open(path / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 3, "success_rate": 0.9}')  # complete JSON but no newline yet
    run = R.read_run(path)
    assert run.last_iteration == 2
    assert run.partial_tail == '{"iteration": 3, "success_rate": 0.9}'
    with open(path / "metrics.jsonl", "a") as f:
        f.write(', "lo')  # and a truly broken tail
    assert R.read_run(path).partial_tail.endswith('"lo')


def test_bad_line_in_the_middle_is_refused_with_file_and_line(tmp_path):
    path = make_run(tmp_path / "a")
    lines = (path / "metrics.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-5]
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(R.RunFormatError, match=r"metrics.jsonl:2: \(line\)"):
        R.read_run(path)
    lines[1] = '{"iteration": 0}'
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(R.RunFormatError, match=r"metrics.jsonl:2: iteration: iteration 0 does not follow 0"):
        R.read_run(path)


def test_bad_run_json(tmp_path):
    path = make_run(tmp_path / "a")
    meta = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**meta, "schema": "crbc.run/9"}))
    with pytest.raises(R.RunFormatError, match="schema"):
        R.read_run(path)
    with pytest.raises(R.RunFormatError, match="cannot read"):
        R.read_run(tmp_path / "missing")


def test_truncate_drops_later_iterations_and_the_tail(tmp_path):
    path = make_run(tmp_path / "a")
    with open(path / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 3')
    RW.RunWriter.open(path).truncate(1)
    run = R.read_run(path)
    assert run.last_iteration == 1 and run.partial_tail is None and run.iterations_with_rollouts == (0, 1)


def test_metrics_are_json_clean(tmp_path):
    w = RW.RunWriter.create(tmp_path / "a", {"config": {}})
    w.append_metrics({"iteration": 0, "x": float("nan"), "y": np.float64(2.5), "z": np.int64(3)})
    rec = R.read_run(tmp_path / "a").metrics[0]
    assert rec == {"iteration": 0, "x": None, "y": 2.5, "z": 3}
    with pytest.raises(ValueError):
        w.append_metrics({"success_rate": 1.0})


def test_obs_equal_to_the_anchor_is_dropped(tmp_path):
    import dataclasses

    g = read_rollouts(WORKED)[0]
    r0 = g.rollouts[0]
    steps = tuple(dataclasses.replace(s, obs=s.anchor, response="x") for s in r0.steps)
    g2 = dataclasses.replace(g, rollouts=(dataclasses.replace(r0, steps=steps),) + g.rollouts[1:])
    w = RW.RunWriter.create(tmp_path / "a", {"config": {}})
    w.write_rollouts(0, [g2])
    text = (tmp_path / "a" / "rollouts" / "iter-0000.jsonl").read_text()
    assert '"obs"' not in text and '"response": "x"' in text


def test_zip_upload(tmp_path):
    path = make_run(tmp_path / "myrun")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in path.rglob("*"):
            if p.is_file():
                z.write(p, "myrun/" + str(p.relative_to(path)))
    run = Z.read_run_zip(buf.getvalue(), "myrun.zip")
    assert run.last_iteration == 2 and run.iterations_with_rollouts == (0, 1, 2)
    assert run.rollouts(2)[0].group == "worked-example"
    with pytest.raises(R.RunFormatError, match="not a zip"):
        Z.read_run_zip(b"hello", "x.zip")


def test_compressed_rollouts_read_the_same_locally_and_from_a_zip(tmp_path):
    import gzip

    path = make_run(tmp_path / "gz")
    plain = [R.read_run(path).rollouts(it) for it in range(3)]
    assert RW.compress_rollouts(path) == 3 and RW.compress_rollouts(path) == 0
    files = sorted(p.name for p in (path / "rollouts").iterdir())
    assert files == ["iter-0000.jsonl.gz", "iter-0001.jsonl.gz", "iter-0002.jsonl.gz"]
    run = R.read_run(path)
    assert run.iterations_with_rollouts == (0, 1, 2)
    assert [run.rollouts(it) for it in range(3)] == plain
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in path.rglob("*"):
            if p.is_file():
                z.write(p, "gz/" + str(p.relative_to(path)))
    assert Z.read_run_zip(buf.getvalue(), "gz.zip").rollouts(1) == plain[1]
    # resume after compression: later iterations go, compressed or not
    RW.RunWriter.open(path).truncate(0)
    assert sorted(p.name for p in (path / "rollouts").iterdir()) == ["iter-0000.jsonl.gz"]
    # a broken or oversized file is refused with its name
    bad = path / "rollouts" / "iter-0000.jsonl.gz"
    bad.write_bytes(gzip.compress(b"{not json\n")[:-6])
    with pytest.raises(R.RolloutFormatError, match="iter-0000.jsonl.gz"):
        R.read_run(path).rollouts(0)
    with pytest.raises(R.RolloutFormatError, match="expands beyond"):
        R.gunzip(gzip.compress(b"x" * 5000), "big.gz", limit=1000)
    bad.write_bytes(gzip.compress(b"{not json\n"))
    with pytest.raises(R.RolloutFormatError, match="iter-0000.jsonl.gz:1"):
        R.read_run(path).rollouts(0)


def test_find_and_order_runs(tmp_path):
    for est, seed in (("crbc", 1), ("grpo", 0), ("crbc", 0), ("gigpo", 0)):
        make_run(tmp_path / f"{est}-s{seed}", est, seed, rollouts=False)
    runs = A.order_runs([R.read_run(p) for p in R.find_runs(tmp_path)])
    assert [r.name for r in runs] == ["grpo-s0", "gigpo-s0", "crbc-s0", "crbc-s1"]


def _with_final(path: Path, final: float, levels) -> Path:
    w = RW.RunWriter.open(path)
    w.update_meta(final_eval={"after_iteration": R.read_run(path).last_iteration, "eval_success_rate": final,
                              "eval_level_success": list(levels)})
    return path


def test_curves_and_summary(tmp_path):
    a = R.read_run(_with_final(make_run(tmp_path / "crbc-s0", "crbc", 0, (0.2, 0.4, 0.6, 0.8)), 0.7, [1, 0.4]))
    b = R.read_run(_with_final(make_run(tmp_path / "crbc-s1", "crbc", 1, (0.0, 0.2, 0.4)), 0.3, [0.5, 0.1]))
    c = R.read_run(make_run(tmp_path / "grpo-s0", "grpo", 0, (0.1, 0.1, 0.1)))
    cur = A.curves([a, b, c])
    assert list(cur) == ["crbc", "grpo"]
    cc = cur["crbc"]
    assert cc.iterations.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(cc.mean, [0.1, 0.3, 0.5, 0.8])
    np.testing.assert_allclose(cc.lo, [0.0, 0.2, 0.4, 0.8])
    assert cc.n.tolist() == [2, 2, 2, 1]
    # 95% t interval of two values 0.2 and 0.0: 0.1 +- 12.706 * 0.1414 / sqrt(2) = 0.1 +- 1.2706
    np.testing.assert_allclose(cc.ci_hi[0], 0.1 + 1.27062, atol=1e-4)
    assert np.isnan(cc.ci_lo[3])  # one seed: no interval
    ev = A.curves([a, b], "eval_success_rate", with_final=True)["crbc"]
    assert ev.iterations.tolist() == [0, 2, 3, 4]  # evaluations at 0, 2 and the finals after 2 and 3
    rows = A.summarize([a, b, c], threshold=0.5, final_window=2)
    crbc = rows[0]
    assert crbc["estimator"] == "crbc" and crbc["seeds"] == 2
    assert math.isclose(crbc["final"], np.mean([0.7, 0.3]))
    # held-out: start = the iteration-0 evaluation; end = final_eval; gain paired by seed
    assert math.isclose(crbc["eval_start"], 0.1) and math.isclose(crbc["eval_final"], 0.5)
    assert math.isclose(crbc["gain"], np.mean([0.7 - 0.2, 0.3 - 0.0]))
    # seed 0 reaches 0.5 held-out at its iteration-2 evaluation (0.6); seed 1 never does
    assert crbc["eval_to_threshold_runs"] == [2, None] and crbc["eval_reached"] == 1
    assert rows[1]["eval_reached"] == 0 and rows[1]["eval_to_threshold"] is None
    # batch success (smooth 3): seed 0's trailing means 0.2, 0.3, 0.4, 0.5 reach 0.5 at iteration 3
    assert crbc["to_threshold"] == 3 and crbc["reached"] == 1
    assert rows[1]["gain"] == 0.0  # no final_eval: its last evaluation (0.1 at iteration 2) counts
    assert crbc["truth_spearman"] is None  # no diag.truth_* recorded
    md = T.table_markdown(rows)
    assert "| crbc | 2 |" in md and "not reached (0/1)" in md and "held-out success at start" in md


def test_moving_average_and_threshold():
    np.testing.assert_allclose(A.moving_average(np.array([1.0, 2, 3, 4]), 2), [1, 1.5, 2.5, 3.5])
    assert A.iterations_to_reach(np.array([0, 1, 2]), np.array([0.1, 0.5, 0.7]), 0.5) == 1
    assert A.iterations_to_reach(np.array([0, 1]), np.array([0.1, 0.2]), 0.5) is None


def test_t_interval_golden():
    # mean 0.38, s = 0.08396, t_{0.975, 4} = 2.776445: half-width 2.776445 * 0.08396 / sqrt(5)
    x = [0.31, 0.42, 0.38, 0.29, 0.5]
    m, lo, hi = A.t_interval(x)
    half = 2.7764451051977987 * np.std(x, ddof=1) / math.sqrt(5)
    assert math.isclose(m, 0.38) and np.allclose([lo, hi], [0.38 - half, 0.38 + half])
    assert A.t_interval([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.5)


def _sign_flip_p_slow(d):
    """Every one of the 2^n sign patterns written out: the share whose |mean| reaches the observed."""
    import itertools

    obs = abs(sum(d) / len(d))
    hits = [abs(sum(s * x for s, x in zip(signs, d, strict=True)) / len(d)) >= obs - 1e-12
            for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(hits) / len(hits)


def test_sign_flip_p_equals_the_enumeration():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 8, 10):
        for _ in range(4):
            d = rng.normal(0.05, 0.1, n).round(3)
            assert A.sign_flip_p(d) == pytest.approx(_sign_flip_p_slow(list(d)), abs=1e-12)


def test_sign_flip_p_golden_and_exact():
    # all five per-seed differences positive: only the identity and the all-flipped pattern are as
    # extreme, so p = 2 / 2^5 = 0.0625 (the smallest two-sided p five seeds can give)
    assert A.sign_flip_p(np.array([0.1, 0.2, 0.05, 0.3, 0.1])) == 2 / 32
    assert A.sign_flip_p(np.array([0.1, -0.1])) == 1.0
    rng = np.random.default_rng(1)
    d = rng.normal(0.0, 1.0, 40)
    assert 0.0 < A.sign_flip_p(d) <= 1.0  # Monte Carlo branch


def test_paired_test_pairs_by_seed_and_level(tmp_path):
    runs = []
    for est, shift in (("grpo", 0.0), ("crbc", 0.25)):
        for seed in range(3):
            levels = np.clip(np.array([0.0, 0.25, 0.5, 0.75]) + shift * (seed + 1) / 3, 0, 1)
            runs.append(R.read_run(_with_final(make_run(tmp_path / f"{est}-s{seed}", est, seed, rollouts=False),
                                               float(levels.mean()), levels)))
    rows = A.paired_table(runs, reference="grpo")
    assert len(rows) == 1 and rows[0]["a"] == "crbc" and rows[0]["b"] == "grpo"
    r = rows[0]
    d = np.array([[min(v + 0.25 * (s + 1) / 3, 1) - v for v in (0, 0.25, 0.5, 0.75)] for s in range(3)])
    assert math.isclose(r["diff"], d.mean()) and r["seeds"] == 3 and r["levels"] == 4 and r["wins"] == 3
    assert r["ci"][0] <= r["diff"] <= r["ci"][1] and r["ci"][0] > 0
    assert r["p_seeds"] == 2 / 8
    assert "crbc - grpo" in T.paired_markdown(rows)


# ---- diagnostics ---------------------------------------------------------------------------


def test_rank_helpers_match_scipy():
    from scipy.stats import rankdata as sp_rank
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 4, 12).astype(float)
        y = rng.normal(size=12)
        np.testing.assert_allclose(rankdata(x), sp_rank(x))
        assert math.isclose(spearman(x, y), spearmanr(x, y)[0], abs_tol=1e-12)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3])) and math.isnan(spearman([1, 2], [2, 1]))


def test_diagnostics_of_the_worked_example():
    d = iteration_diagnostics(read_rollouts(WORKED))
    assert d["anchors"] == 3 and d["multi_action_anchors"] == 3
    assert d["step_credit_share"] == 1.0
    assert d["rank_crbc_visit_local"] > 0.9
    # s0: the closure prefers a (0.4802 > 0.3601); shortest path rates a and b alike (one hop each)
    assert d["rare_route_disagreements"] == 1


def test_diagnostics_of_the_rare_route_sample():
    d = iteration_diagnostics(read_rollouts(RARE))
    assert d["rare_route_disagreements"] == 1  # the start: reliable 'up' vs rare 'right'
    assert 0 < d["step_credit_share"] < 1  # the single-action anchor gets no step credit
