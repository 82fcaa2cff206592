"""crbc.step_frame: one tidy row per (step, estimator), the same numbers as crbc.compute, on a run
the verl recorder wrote, on files, with intervals, anchor keys and the exact truth."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import crbc  # noqa: E402
from crbc.frame import COLUMNS, step_frame  # noqa: E402
from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts  # noqa: E402
from tests.support.groups import random_groups  # noqa: E402


def per_step(df: pd.DataFrame, estimator: str, column: str) -> np.ndarray:
    return df[df.estimator == estimator][column].to_numpy(dtype=float)


@pytest.mark.slow  # torch and verl are imported (about 10 s here)
def test_recorded_run_three_estimators_and_the_trainer(tmp_path):
    pytest.importorskip("torch")
    V = pytest.importorskip("crbc.integrations.verl")
    from tests.support.groups import chain_groups
    from tests.support.verl_batches import data_proto, trainer_pipeline

    rng = np.random.default_rng(5)
    groups = chain_groups(seed=5)
    data = trainer_pipeline(data_proto(groups, rng), rng)
    V.compute_advantage(data, "gigpo")
    V.RunRecorder(tmp_path / "run").record(data, 3)
    df = step_frame((tmp_path / "run", 3), ("crbc", "gigpo", "grpo"))
    assert tuple(df.columns) == COLUMNS  # no truth: the groups do not name a level
    got = crbc.read_run(tmp_path / "run").rollouts(3)
    n = sum(len(r) for g in got for r in g)
    assert len(df) == 3 * n and list(df.estimator.unique()) == ["crbc", "gigpo", "grpo"]
    for name in ("crbc", "gigpo", "grpo"):
        c = crbc.compute(name, got)
        np.testing.assert_array_equal(per_step(df, name, "advantage"), c.advantage_N)
        np.testing.assert_array_equal(per_step(df, name, "step_advantage"), c.step_advantage_N)
        if c.credit_N is not None:
            np.testing.assert_array_equal(per_step(df, name, "credit"), c.credit_N)
            np.testing.assert_array_equal(per_step(df, name, "value"), c.value_N)
        else:
            assert df[df.estimator == name][["value", "q", "credit"]].isna().all().all()
    # the trainer used gigpo: its advantage is gigpo's, step for step (recorded at float32)
    crbc_rows = df[df.estimator == "gigpo"]
    np.testing.assert_allclose(crbc_rows.trainer_advantage, crbc_rows.advantage, atol=1e-5)
    # rows name their step as the file does
    first = got[0].rollouts[0]
    rows = df[(df.estimator == "crbc") & (df.group == got[0].group) & (df.rollout == first.rollout)]
    assert rows.step.tolist() == list(range(len(first)))
    assert rows.action.tolist() == [s.action for s in first.steps]
    assert rows.lo.isna().all() and rows.evidence.isna().all()


def test_bootstrap_fills_the_interval_columns(tmp_path):
    groups = random_groups(2)
    df = step_frame(groups, ["crbc", "gigpo"], bootstrap=30, seed=4)
    for name in ("crbc", "gigpo"):
        ci = crbc.credit_intervals(groups, name, n_resamples=30, seed=4)
        rows = df[df.estimator == name]
        np.testing.assert_array_equal(rows.lo.to_numpy(), ci.lo_N)
        np.testing.assert_array_equal(rows.hi.to_numpy(), ci.hi_N)
        assert rows.evidence.tolist() == ci.evidence_N.tolist()
        assert set(rows.evidence) <= {"sure", "unsure", "none"} and rows.lo.notna().any()
        np.testing.assert_array_equal(rows.advantage.to_numpy(), crbc.compute(name, groups).advantage_N)


def test_files_params_and_anchor_keys(tmp_path):
    groups = random_groups(1)
    # observations carrying history: the regex keys them back to the plain cells
    noisy = [RolloutGroup(g.group, tuple(
        Rollout(r.group, r.rollout, tuple(Step(f"turn {t}: you see [{s.anchor}]", s.action, reward=s.reward)
                                          for t, s in enumerate(r.steps)), r.success, r.truncated)
        for r in g.rollouts)) for g in groups]
    path = tmp_path / "noisy.jsonl"
    write_rollouts(path, noisy)
    df = step_frame(path, ("crbc", "gigpo"), anchor=r"\[(c\d+)\]", beta=0.9, gamma=0.7)
    want = step_frame(groups, ("crbc", "gigpo"), beta=0.9, gamma=0.7)
    pd.testing.assert_frame_equal(df, want)
    np.testing.assert_array_equal(per_step(df, "crbc", "advantage"),
                                  crbc.compute("crbc", groups, beta=0.9).advantage_N)
    np.testing.assert_array_equal(per_step(df, "gigpo", "advantage"),
                                  crbc.compute("gigpo", groups, gamma=0.7).advantage_N)
    # a callable key does the same
    same = step_frame(noisy, ("crbc", "gigpo"), anchor=lambda t: re.search(r"\[(c\d+)\]", t).group(1),
                      beta=0.9, gamma=0.7)
    pd.testing.assert_frame_equal(same, want)


def test_bad_input_is_named(tmp_path):
    groups = random_groups(0)
    with pytest.raises(ValueError, match="no estimator of crbc has a parameter gamma"):
        step_frame(groups, "crbc", gamma=0.5)
    with pytest.raises(ValueError, match="beta"):
        step_frame(groups, "crbc", beta=1.5)
    with pytest.raises(ValueError, match="does not match"):
        step_frame(groups, "crbc", anchor=r"\[nothing\]")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"group": "g", "steps": []}\n')
    with pytest.raises(crbc.FormatError, match="bad.jsonl:1"):
        step_frame(bad)
    with pytest.raises(TypeError, match="source"):
        step_frame(42)


def test_truth_where_it_exists():
    from crbc.truth import level_truth
    from crbc.truth.sample import sample_group

    lt = level_truth("gridworld-6x6-v0", 3, "uniform", max_steps=6, temperature=1.0, full_policy=True)
    g = sample_group(lt, 6, rng_seed=1)
    g = RolloutGroup(g.group, tuple(dataclasses.replace(r, meta={**r.meta, "temperature": 1.0})
                                    for r in g.rollouts))  # the uniform policy has no temperature
    other = random_groups(0, n_groups=1)[0]
    df = step_frame([g, other], ("crbc", "gigpo"))
    assert df.columns[-1] == "truth"
    exact = np.concatenate([s.advantage for s in crbc.truth.group_truth(g)])
    rows = df[df.estimator == "crbc"]
    np.testing.assert_allclose(rows[rows.group == g.group].truth, exact)
    assert rows[rows.group == other.group].truth.isna().all()
    # the same truth on every estimator's rows
    np.testing.assert_array_equal(df[df.estimator == "gigpo"].truth.to_numpy(), rows.truth.to_numpy())


def test_interleaved_file_gives_each_step_its_own_numbers(tmp_path):
    a, b = random_groups(3, n_groups=2)
    path = tmp_path / "mixed.jsonl"
    lines = [crbc.io.rollouts.dumps_rollout(r) for pair in zip(a.rollouts, b.rollouts, strict=True) for r in pair]
    path.write_text("\n".join(lines) + "\n")
    df = step_frame(path, ("gigpo", "crbc"))
    pd.testing.assert_frame_equal(df, step_frame([a, b], ("gigpo", "crbc")))


def test_without_pandas_the_error_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "crbc\[report\]" \(or pip install pandas\)'):
        step_frame(random_groups(0))
