"""crbc.estimators.worker_job: a computation in a bounded worker gives what the server computes itself
(credits of several estimators, intervals, the depth sweep), its budgets end it with a line
naming the command that runs it whole, and crbc.estimators.result_files writes nothing it cannot read
back without pickling."""

from __future__ import annotations

import dataclasses
import shlex

import numpy as np
import pytest

from crbc.estimators import registry
from crbc.estimators import result_files as results
from crbc.estimators.bootstrap import credit_intervals
from crbc.estimators.closure import depth_sweep
from crbc.estimators.worker_job import EstimateJob, EstimateRefused, command
from crbc.io import budgets
from crbc.io.rollouts import read_rollouts
from crbc.jobs.upload import Limits
from crbc.process import merge
from tests.support.paths import ROOT

GROUPS = read_rollouts(ROOT / "sample_rollouts" / "sokoban-weak.jsonl")[:6]
PARAMS = {"beta": 0.98, "depth": None, "sigma_min": 0.1}


def _same(a, b) -> None:
    """Every field of two results equal (arrays exactly, NaN where NaN; nested results alike)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            assert (np.array_equal(x, y, equal_nan=True) if x.dtype.kind == "f" else np.array_equal(x, y)), f.name
        elif dataclasses.is_dataclass(x) and not hasattr(x, "state_anchor"):
            _same(x, y)
        elif f.name != "process":
            assert x == y, f.name


def _run(what: str, name: str, params: dict, **kw):
    job = EstimateJob(GROUPS, what, name, params, **kw)
    job.wait()
    return job.result(merge(GROUPS))


@pytest.mark.parametrize("name", ["crbc", "gigpo", "rewardflow"])
def test_credits_from_the_worker_equal_the_servers(name):
    params = registry.get(name).shared(PARAMS)
    _same(_run("credits", name, params), registry.compute(name, merge(GROUPS), **params))


def test_intervals_and_the_sweep_from_the_worker_equal_the_servers():
    p = merge(GROUPS)
    _same(_run("intervals", "crbc", PARAMS, n_resamples=50), credit_intervals(p, "crbc", n_resamples=50, seed=0, **PARAMS))
    _same(_run("sweep", "crbc", {"beta": 0.98, "k_max": 5}), depth_sweep(p, 0.98, 5))


def test_the_backups_side_by_side_from_the_worker_equal_the_servers(tmp_path):
    """A SideBySide (nested MethodLines, tuples of text and floats) crosses as JSON and comes back
    equal, tuples as tuples; its notice's command is a group report at that anchor."""
    from crbc.explain.backups_side import choosable_anchors, side_by_side

    p = merge(GROUPS)
    s = choosable_anchors(p)[0]
    want = side_by_side(p, s, beta=0.98, sigma_min=0.1)
    assert results.load(results.save(want, tmp_path), tmp_path, p) == want
    got = _run("side_by_side", "crbc", {"state": s, "beta": 0.98, "sigma_min": 0.1, "group": 2})
    assert got == want and isinstance(got.lines, tuple) and isinstance(got.lines[0].scores, tuple)
    line = shlex.split(command("side_by_side", "crbc", {"state": s, "beta": 0.98, "sigma_min": 0.1, "group": 2}))
    assert line[3:5] == ["report", "FILE"] and line[line.index("--compare-at") + 1] == str(s)
    assert line[line.index("--group") + 1] == "2"


def test_the_doctor_from_the_worker_equals_the_servers():
    """The "doctor" computation (crbc.doctor.worker_job): the same findings, examples included,
    as diagnose_iteration in this process, on groups whose trainer gave every step advantage 0
    and with a recorded metrics line; its notice's command is ``crbc doctor RUN`` with the key."""
    import crbc.doctor.worker_job  # noqa: F401 (registers "doctor")
    from crbc.doctor.examine import diagnose_iteration

    zero = [dataclasses.replace(g, rollouts=tuple(
        dataclasses.replace(r, steps=tuple(dataclasses.replace(x, trainer_advantage=0.0) for x in r.steps))
        for r in g.rollouts)) for g in GROUPS]
    metrics = [{"iteration": 3, "crbc/doctor/std_zero_division": 5.0}]
    want = diagnose_iteration(zero, 3, metrics)[1]
    assert want and any(f.examples for f in want)
    job = EstimateJob(zero, "doctor", "crbc", {"iteration": 3, "metrics": metrics, "anchor": "room (\\d+)"})
    job.wait()
    assert list(job.result(None).findings) == want
    line = shlex.split(command("doctor", "crbc", {"iteration": 3, "anchor": "room (\\d+)"}))
    assert line[3:] == ["doctor", "RUN", "--anchor", "room (\\d+)"]


def test_a_budget_ends_the_job_with_the_command_that_runs_it_whole():
    tight = Limits(seconds=0.05, memory_bytes=1000 * budgets.MB, budget=budgets.CLI, cpu_seconds=None)
    with pytest.raises(EstimateRefused) as e:
        # 100,000 draws: seconds of work, far beyond the budget however warm the worker is
        _run("intervals", "crbc", PARAMS, n_resamples=100_000, limits=tight, label="the crbc intervals")
    line = str(e.value)
    assert "the crbc intervals took longer than the studio's 0.05 s" in line
    assert command("intervals", "crbc", PARAMS, 100_000) in line


def test_the_command_runs_as_the_cli_on_the_users_file(tmp_path):
    """The line a notice gives, with FILE replaced by the user's file, runs and gives the same
    credits (the CLI's parser accepts every option it names)."""
    import json

    from crbc.cli.main import main
    from crbc.io.rollouts import write_rollouts

    src, out = tmp_path / "mine.jsonl", tmp_path / "out.jsonl"
    write_rollouts(src, GROUPS)
    args = shlex.split(command("credits", "crbc", PARAMS))[3:]
    assert args[0] == "credit" and args[1] == "FILE"
    assert main([args[0], str(src), *args[2:], "-o", str(out)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want = registry.compute("crbc", merge(GROUPS), **PARAMS)
    assert np.allclose([a for r in got for a in r["advantage"]], want.advantage_N)
    assert shlex.split(command("sweep", "crbc", {"beta": 0.9, "k_max": 4}))[3] == "report"


def test_results_refuse_what_they_could_not_read_back_without_pickling(tmp_path):
    c = registry.compute("crbc", merge(GROUPS), **PARAMS)
    with pytest.raises(TypeError, match="object array"):
        results.save(dataclasses.replace(c, value_S=np.array([{"a": 1}], dtype=object)), tmp_path)
    with pytest.raises(TypeError, match="not a result class"):
        results.save(merge(GROUPS), tmp_path)
    meta = results.save(c, tmp_path)
    meta["class"] = "Process"
    with pytest.raises(ValueError, match="not a result class"):
        results.load(meta, tmp_path, merge(GROUPS))


def test_a_memory_budget_ends_the_job_with_the_command_too():
    small = Limits(seconds=120.0, memory_bytes=40 * budgets.MB, budget=budgets.CLI, cpu_seconds=None)
    with pytest.raises(EstimateRefused) as e:
        _run("intervals", "crbc", PARAMS, n_resamples=100_000, limits=small, label="the crbc intervals")
    line = str(e.value)
    assert line.startswith("the crbc intervals") and "memory budget of 40 MB" in line, line
    assert line.endswith(f"Run it whole on your machine: `{command('intervals', 'crbc', PARAMS, 100_000)}`")
