"""The command line as docs/FORMATS.md specifies it, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from crbc.estimators.registry import names
from tests.support.paths import ROOT
from tests.support.rollout_lines import BAD, GOOD, lines

EXAMPLE = ROOT / "sample_rollouts" / "worked-example.jsonl"


def crbc(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "crbc", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120)


def test_estimators_lists_registry():
    out = crbc("estimators")
    assert out.returncode == 0 and out.stdout.split() == names()
    assert set(names()) == {"grpo", "visit_local", "crbc", "gigpo", "shortest_path", "rewardflow", "graphgpo", "hgpo",
                            "g2po"}


def test_credit_worked_example(tmp_path):
    out = tmp_path / "c.jsonl"
    r = crbc("credit", EXAMPLE, "-o", out)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 5 and [x["rollout"] for x in recs] == [0, 1, 2, 3, 4]
    first = recs[0]
    assert first["schema"] == "crbc.credit/1" and first["estimator"] == "crbc"
    assert first["params"]["depth"] is None
    assert first["value"] == pytest.approx([0.3842, 0.49], abs=1e-4)
    assert first["q"] == pytest.approx([0.4802, 0.98], abs=1e-4)
    assert first["credit"] == pytest.approx([0.096, 0.49], abs=1e-4)


def test_credit_to_stdout_and_options():
    r = crbc("credit", EXAMPLE, "--depth", "0", "--beta", "0.98", "--sigma-min", "0.1", "--w-group", "1",
             "--w-step", "5")
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout.splitlines()[0])
    assert first["params"]["depth"] == 0 and first["q"][0] == pytest.approx(0.9604)
    inf = json.loads(crbc("credit", EXAMPLE, "--depth", "inf").stdout.splitlines()[0])
    assert inf["params"]["depth"] is None


@pytest.mark.parametrize("name", ["grpo", "visit_local", "gigpo", "shortest_path"])
def test_credit_every_estimator(name):
    r = crbc("credit", EXAMPLE, "--estimator", name)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert all(x["estimator"] == name for x in recs)
    assert (recs[0]["value"] is None) == (name == "grpo")


@pytest.mark.parametrize("args,needle", [
    (["--estimator", "nope"], "unknown estimator"),
    (["--beta", "1.5"], "beta"),
    (["--beta", "abc"], "must be a number"),
    (["--depth", "-2"], "non-negative"),
    (["--estimator", "gigpo", "--depth", "2"], "no parameter depth"),
    (["--sigma-min", "0"], "sigma_min"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_arguments_exit_2_one_line(tmp_path, args, needle):
    out = tmp_path / "c.jsonl"
    r = crbc("credit", EXAMPLE, "-o", out, *args)
    assert r.returncode == 2
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr and not out.exists()


@pytest.mark.parametrize("why,record,line,field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_exit_2_located(tmp_path, why, record, line, field):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines(GOOD | {"rollout": 7}, record))
    out = tmp_path / "c.jsonl"
    r = crbc("credit", bad, "-o", out)
    assert r.returncode == 2, r.stderr
    assert f"bad.jsonl:2: {field}:" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr and not out.exists() and r.stdout == ""


def test_missing_file_and_existing_output_untouched(tmp_path):
    out = tmp_path / "c.jsonl"
    out.write_text("keep\n")
    r = crbc("credit", tmp_path / "nope.jsonl", "-o", out)
    assert r.returncode == 2 and "cannot read" in r.stderr
    assert out.read_text() == "keep\n"


def test_unknown_command_and_help():
    assert crbc("frobnicate").returncode == 2
    h = crbc("--help")
    assert h.returncode == 0 and "credit" in h.stdout
    assert crbc("credit", "--help").returncode == 0


def test_bench_smoke_prints_json():
    """The benchmark runs end to end on a tiny size and prints one JSON object (no timing asserted)."""
    r = crbc("bench", "--large-groups", "16", "--paper-groups", "2", "--repeats", "1", "--max-len", "10")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["large_batch"]["estimator_s"]) == set(names())
    assert out["solvers"]["max_abs_diff_dense"] < 1e-9
    assert len(out["scaling"]["points"]) == 4


def test_credit_keeps_input_order_when_groups_interleave(tmp_path):
    """docs/FORMATS.md: one credit line per input rollout, in the input's order, even when the file
    interleaves its groups (the process itself lays them out group after group)."""
    recs = [json.loads(x) for x in EXAMPLE.read_text().splitlines()]
    other = [dict(r, group="other", rollout=r["rollout"]) for r in recs]
    mixed = [recs[0], other[0], recs[1], other[1], other[2], recs[2], recs[3], other[3], recs[4], other[4]]
    src = tmp_path / "mixed.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in mixed))
    out = tmp_path / "c.jsonl"
    r = crbc("credit", src, "-o", out)
    assert r.returncode == 0, r.stderr
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(g["group"], g["rollout"]) for g in got] == [(m["group"], m["rollout"]) for m in mixed]
    # same numbers as the group alone, wherever its lines sit
    alone = tmp_path / "alone.jsonl"
    assert crbc("credit", EXAMPLE, "-o", alone).returncode == 0
    by_key = {(g["group"], g["rollout"]): g for g in got}
    for a in map(json.loads, alone.read_text().splitlines()):
        assert by_key[(a["group"], a["rollout"])]["advantage"] == a["advantage"]
        assert by_key[("other", a["rollout"])]["advantage"] == a["advantage"]
    assert out.stat().st_mode & 0o044  # readable by others like any file, not mkstemp's 0600


def test_scores_near_the_float_limit_give_finite_right_advantages(tmp_path):
    """(s - mean) / (std + 1e-6) is representable although s * s is not: +-1e308 in a group of
    two is A_G = +-1/sqrt(2), never a silent 0, a NaN or a JSON error."""
    src = tmp_path / "big.jsonl"
    rows = [{"group": "g", "rollout": 0, "steps": [{"anchor": "a", "action": "x"}], "success": True, "score": 1e308},
            {"group": "g", "rollout": 1, "steps": [{"anchor": "a", "action": "y"}], "success": False, "score": -1e308}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for est in ("crbc", "grpo", "gigpo", "visit_local", "shortest_path"):
        out = tmp_path / f"{est}.jsonl"
        r = crbc("credit", src, "-o", out, "--estimator", est)
        assert r.returncode == 0 and not r.stderr, r.stderr  # no RuntimeWarning either
        recs = [json.loads(line) for line in out.read_text().splitlines()]
        assert all(np.isfinite(r["advantage"]).all() for r in recs)
        assert recs[0]["group_advantage"] > 0 > recs[1]["group_advantage"]
    assert json.loads((tmp_path / "grpo.jsonl").read_text().splitlines()[0])["group_advantage"] == \
        pytest.approx(2 ** -0.5)
    # a deviation beyond the float range (mean_norm keeps it unscaled) is refused, nothing written:
    # rows 1.7e308, 1.7e308, -1.7e308 have mean 0.57e308, and -1.7e308 - 0.57e308 overflows
    rows[0]["steps"] *= 2
    rows[0]["score"], rows[1]["score"] = 1.7e308, -1.7e308
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = tmp_path / "bad.jsonl"
    r = crbc("credit", src, "-o", bad, "--estimator", "gigpo", "--mode", "mean_norm")
    assert r.returncode == 2 and "too far apart" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not bad.exists()
