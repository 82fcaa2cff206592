"""The run recorder on real ``verl.DataProto`` batches packed as verl-agent packs its steps, and
the Parquet option of ``crbc.run/1`` rollout files (written, read back, refused when bad)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import crbc  # noqa: E402
from crbc.errors import RolloutFormatError  # noqa: E402
from crbc.integrations import verl as V  # noqa: E402
from crbc.io.parquet_rollouts import groups_table, read_parquet_rollouts, write_parquet_rollouts  # noqa: E402
from crbc.io.run_writer import RunWriter  # noqa: E402
from tests.support.groups import chain_groups  # noqa: E402
from tests.support.verl_batches import DataProto, data_proto, image, trainer_pipeline  # noqa: E402


def by_traj(groups):
    """{(group, traj_uid): rollout} of recorded groups; {(uid-<group>, <group>#<i>): ...} of the originals."""
    return {(g.group, r.meta.get("traj_uid", f"{g.group}#{r.rollout}")): r for g in groups for r in g}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_recorded_batch_reads_back_with_the_trainers_advantages(tmp_path, fmt):
    rng = np.random.default_rng(3)
    groups = chain_groups(seed=3)
    data = trainer_pipeline(data_proto(groups, rng), rng)  # step_index, copies, reorder
    V.compute_advantage(data, "crbc")
    rec = V.RunRecorder(tmp_path / "run", {"env": "chain", "config": {"estimator": "crbc"}}, format=fmt)
    health = rec.record(data, 7, {"actor/loss": np.float32(0.25), "timing/adv": 0.01, "note": [1, 2]})
    path = rec.last_path
    assert path.name == f"iter-0007.{fmt}"
    run = crbc.read_run(tmp_path / "run")
    assert run.iterations_with_rollouts == (7,) and run.estimator == "crbc" and run.meta["env"] == "chain"
    # the metrics line holds the trainer's numbers and the credit health the call returned
    assert run.metrics == [{"actor/loss": 0.25, "timing/adv": 0.01, **health, "iteration": 7}]
    assert health["crbc/trainer_spearman/crbc"] == pytest.approx(1.0)
    got = run.rollouts(7)
    assert [g.group for g in got] == sorted(f"uid-{g.group}" for g in groups)
    want = {(f"uid-{g.group}", f"{g.group}#{r.rollout}"): r for g in groups for r in g}
    recorded = by_traj(got)
    assert recorded.keys() == want.keys()
    credits = crbc.compute("crbc", groups)
    adv = {}
    for g_i, g in enumerate(groups):
        for r in g:
            lo = credits.process.rollout_offsets[sum(len(x) for x in groups[:g_i]) + r.rollout]
            adv[(f"uid-{g.group}", f"{g.group}#{r.rollout}")] = credits.advantage_N[lo:lo + len(r)]
    for k, r in want.items():
        rr = recorded[k]
        assert [(s.anchor, s.action, s.reward) for s in rr.steps] == [(s.anchor, s.action, s.reward) for s in r.steps]
        assert (rr.success, rr.score, rr.meta["iteration"]) == (r.success, r.score, 7)
        np.testing.assert_allclose([s.trainer_advantage for s in rr.steps], adv[k], rtol=1e-6, atol=1e-6)
    # the read-back groups give the estimator's own numbers again
    np.testing.assert_allclose(np.sort(crbc.compute("crbc", got).advantage_N), np.sort(credits.advantage_N), atol=1e-9)


def test_array_anchors_are_hashed_with_a_thumbnail(tmp_path):
    rng = np.random.default_rng(4)
    groups = chain_groups(seed=4)
    data = trainer_pipeline(data_proto(groups, rng, anchors="image"), rng)
    V.compute_advantage(data, "gigpo")
    V.RunRecorder(tmp_path / "run").record(data, 0)
    got = crbc.read_run(tmp_path / "run").rollouts(0)
    r = got[0].rollouts[0]
    key = r.steps[0].anchor
    assert key.startswith("array:3x4x3:")
    note = r.meta["anchor_arrays"][key]
    # verl-agent's (B, H, W, 3) object column loses the dtype: the values arrive as integers
    assert note["shape"] == [3, 4, 3] and note["dtype"] in ("uint8", "int64") and note["thumb_shape"] == [3, 4, 3]
    orig = groups[0].rollouts[0].steps[0].anchor
    import base64
    thumb = np.frombuffer(base64.b64decode(note["thumb"]), np.uint8).reshape(3, 4, 3)
    np.testing.assert_array_equal(thumb, image(orig))
    # the same picture is the same anchor in every rollout: the merge equals the text one
    assert crbc.process.merge_stats(got) == crbc.process.merge_stats(groups)


def test_success_threshold_missing_fields_and_no_step_index(tmp_path):
    rng = np.random.default_rng(5)
    groups = chain_groups(seed=5)
    data = data_proto(groups, rng, with_success=False)
    with pytest.raises(KeyError, match="success_threshold"), pytest.warns(UserWarning, match="step_index"):
        V.RunRecorder(tmp_path / "a").record(data, 0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        V.RunRecorder(tmp_path / "b", success_threshold=10.0).record(data, 0)  # rows still in order
    assert any("step_index" in str(x.message) for x in w)
    got = crbc.read_run(tmp_path / "b").rollouts(0)
    assert [[r.success for r in g] for g in got] == [[r.success for r in g] for g in groups]
    del data.non_tensor_batch["anchor_obs"]
    with pytest.raises(KeyError, match="anchor_obs"):
        V.RunRecorder(tmp_path / "c", success_threshold=10.0).record(data, 0)


def test_a_resumed_trainer_records_over_the_steps_it_redoes(tmp_path):
    rng = np.random.default_rng(6)
    data = trainer_pipeline(data_proto(chain_groups(seed=6), rng), rng)
    rec = V.RunRecorder(tmp_path / "run")
    for step in (0, 1, 2):
        rec.record(data, step, {"x": step})
    again = V.RunRecorder(tmp_path / "run")  # the trainer restarts from its step-1 checkpoint
    again.record(data, 1, {"x": 10})
    run = crbc.read_run(tmp_path / "run")
    assert run.iterations_with_rollouts == (0, 1) and [m["x"] for m in run.metrics] == [0, 10]


def test_a_real_dataproto_without_advantages_records_none(tmp_path):
    rng = np.random.default_rng(7)
    data = trainer_pipeline(data_proto(chain_groups(seed=7), rng), rng)
    assert isinstance(data, DataProto) and "advantages" not in data.batch.keys()
    V.RunRecorder(tmp_path / "run").record(data, 0)
    got = crbc.read_run(tmp_path / "run").rollouts(0)
    assert all(s.trainer_advantage is None for g in got for r in g for s in r.steps)


# ------------------------------------------------------------------------------------------
# Parquet rollout files


def test_parquet_round_trip_and_run_folder_and_zip(tmp_path):
    groups = chain_groups(seed=8)
    groups[0] = crbc.RolloutGroup(groups[0].group, tuple(
        crbc.Rollout(r.group, r.rollout, r.steps, r.success, r.truncated, r.score, {"seed": 1, "note": "é"})
        for r in groups[0]))
    path = write_parquet_rollouts(tmp_path / "g.parquet", groups)
    assert read_parquet_rollouts(path) == groups
    w = RunWriter.create(tmp_path / "run", {"config": {}})
    w.write_rollouts(0, groups, format="parquet")
    w.append_metrics({"iteration": 0})
    assert crbc.read_run(tmp_path / "run").rollouts(0) == groups
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in (tmp_path / "run").rglob("*"):
            if p.is_file():
                z.write(p, "run/" + str(p.relative_to(tmp_path / "run")))
    from crbc.io.run_zip import read_run_zip
    assert read_run_zip(buf.getvalue()).rollouts(0) == groups


def bad_table(groups, column, row, value):
    import pyarrow as pa

    t = groups_table(groups)
    vals = t.column(column).to_pylist()
    vals[row] = value
    i = t.column_names.index(column)
    typ = t.schema.field(column).type
    arr = pa.array(vals, type=typ.value_type) if pa.types.is_dictionary(typ) else pa.array(vals, type=typ)
    return t.set_column(i, column, arr)


@pytest.mark.parametrize("column,row,value,words", [
    ("step", 2, 5, "expected step"),
    ("success", 1, None, "missing"),
    ("anchor", 3, None, "missing"),
    ("reward", 4, float("inf"), "non-finite"),
    ("meta", 0, "{bad", "meta differs"),
])
def test_bad_parquet_rollouts_name_file_row_and_column(tmp_path, column, row, value, words):
    import pyarrow.parquet as pq

    groups = chain_groups(seed=9, n_groups=1, group_size=3, max_steps=4)
    groups = [crbc.RolloutGroup(g.group, tuple(crbc.Rollout(r.group, r.rollout, r.steps, r.success, r.truncated,
                                                            r.score, {"k": 1}) for r in g)) for g in groups]
    path = tmp_path / "iter-0000.parquet"
    pq.write_table(bad_table(groups, column, row, value), path)
    with pytest.raises(RolloutFormatError) as e:
        read_parquet_rollouts(path)
    assert e.value.source == str(path) and e.value.field == column and words in str(e.value)
    if column not in ("step",):
        assert e.value.line is not None
    path.write_text(json.dumps({"not": "parquet"}))
    with pytest.raises(RolloutFormatError, match="not a Parquet file"):
        read_parquet_rollouts(path)
