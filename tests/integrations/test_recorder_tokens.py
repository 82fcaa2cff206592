"""The recorder's token file (issue 55, point 4): ``RunRecorder(tokens=S)`` keeps, for at most S
steps of a real ``verl.DataProto``, the advantage on each response token, the loss mask, the
token ids and texts, in ``rollouts/iter-NNNN.tokens.parquet``; ``crbc.io.tokens`` reads back the
same arrays; a bad file is refused naming the file, the row and the column."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import crbc  # noqa: E402
from crbc.errors import RunFormatError  # noqa: E402
from crbc.integrations import verl as V  # noqa: E402
from crbc.io.tokens import (  # noqa: E402
    StepTokens,
    iteration_tokens,
    read_tokens,
    step_tokens,
    tokens_path,
    tokens_table,
    write_tokens,
)
from tests.support.groups import chain_groups  # noqa: E402
from tests.support.verl_batches import RESPONSE, data_proto, trainer_pipeline  # noqa: E402


class Tokenizer:
    """What the recorder asks of verl's Hugging Face tokenizer: ``batch_decode``."""

    calls = 0

    def batch_decode(self, ids, skip_special_tokens=False):
        Tokenizer.calls += 1
        return [f"<{i[0]}>" for i in ids]


def multi_turn_batch(seed: int = 5):
    """A batch after compute_advantage, then made per-token and multi-turn: every response token
    its own advantage (GAE-like), an observation token in the middle of longer responses outside
    the loss mask, and distinct token ids."""
    rng = np.random.default_rng(seed)
    data = trainer_pipeline(data_proto(chain_groups(seed=seed, n_groups=4, group_size=5), rng), rng)
    V.compute_advantage(data, "grpo")
    b = len(data)
    attn = data.batch["attention_mask"][:, -RESPONSE:]
    mask = attn.clone()
    mask[:, 2] = 0  # an observation token (masked) wherever the response reaches position 2
    data.batch["response_mask"] = mask
    data.batch["advantages"] = torch.as_tensor(rng.normal(size=(b, RESPONSE)), dtype=torch.float32) * attn
    data.batch["responses"] = torch.as_tensor(rng.integers(10, 50000, size=(b, RESPONSE)))
    return data


def test_recorded_tokens_read_back_as_the_batchs_arrays(tmp_path):
    data = multi_turn_batch()
    rec = V.RunRecorder(tmp_path / "run", tokens=9, token_limit=4, tokenizer=Tokenizer())
    rec.record(data, 3)
    kept = iteration_tokens(tmp_path / "run", 3)
    assert len(kept) == 9
    assert {s.rollout for s in kept} == {0}  # rollout 0 of every group before any rollout 1
    groups = crbc.read_run(tmp_path / "run").rollouts(3)
    by_id = {g.group: g for g in groups}
    adv, mask = data.batch["advantages"].numpy(), data.batch["response_mask"].numpy() != 0
    ids, attn = data.batch["responses"].numpy(), data.batch["attention_mask"][:, -RESPONSE:].numpy()
    for s in kept:
        b = s.row
        m = int(attn[b].sum())  # right padding is no token
        assert s.length == m and s.n_stored == min(m, 4)
        np.testing.assert_array_equal(s.advantage, adv[b, :s.n_stored].astype(np.float64))
        np.testing.assert_array_equal(s.mask, mask[b, :s.n_stored])
        np.testing.assert_array_equal(s.token_ids, ids[b, :s.n_stored])
        assert s.tokens == tuple(f"<{i}>" for i in ids[b, :s.n_stored])
        # the row is the step the rollout file names (group, rollout index, step t)
        step = by_id[s.group].rollouts[s.rollout].steps[s.step]
        assert step.anchor == data.non_tensor_batch["anchor_obs"][b]
        assert str(data.non_tensor_batch["uid"][b]) == s.group
        assert step_tokens(tmp_path / "run", 3, s.group, s.rollout, s.step).row == b
    assert any(not s.mask.all() for s in kept)  # the masked observation token is kept as such
    assert Tokenizer.calls == 1  # one decode call per iteration
    assert step_tokens(tmp_path / "run", 3, kept[0].group, 99, 0) is None
    assert iteration_tokens(tmp_path / "run", 4) is None  # no file: no token view


def test_without_tokens_nothing_changes_and_bad_arguments_fail_at_once(tmp_path):
    data = multi_turn_batch()
    V.RunRecorder(tmp_path / "plain").record(data, 0)
    assert not tokens_path(tmp_path / "plain", 0).exists()
    assert crbc.read_run(tmp_path / "plain").iterations_with_rollouts == (0,)
    with pytest.raises(ValueError, match="tokens"):
        V.RunRecorder(tmp_path / "x", tokens=-1)
    with pytest.raises(ValueError, match="token_limit"):
        V.RunRecorder(tmp_path / "x", tokens=4, token_limit=0)
    with pytest.raises(TypeError, match="batch_decode"):
        V.RunRecorder(tmp_path / "x", tokens=4, tokenizer=object())


def test_a_resumed_recorder_forgets_later_token_files(tmp_path):
    data = multi_turn_batch()
    rec = V.RunRecorder(tmp_path / "run", tokens=4)
    for it in range(3):
        rec.record(data, it)
    assert all(tokens_path(tmp_path / "run", it).exists() for it in range(3))
    kept = iteration_tokens(tmp_path / "run", 0)
    assert kept[0].tokens is None and kept[0].token_ids is not None  # no tokenizer: ids only
    V.RunRecorder(tmp_path / "run", tokens=0).record(data, 1)  # resumed at 1, tokens now off
    assert tokens_path(tmp_path / "run", 0).exists()
    assert not tokens_path(tmp_path / "run", 1).exists() and not tokens_path(tmp_path / "run", 2).exists()


def _step(**kw) -> StepTokens:
    base = dict(group="g", rollout=0, step=0, row=0, length=3, advantage=np.array([0.1, 0.2, 0.3]),
                mask=np.array([True, False, True]))
    return StepTokens(**{**base, **kw})


def test_a_bad_token_file_is_refused_naming_file_row_and_column(tmp_path):
    path = tmp_path / "iter-0000.tokens.parquet"
    write_tokens(path, tokens_table([_step(), _step(step=1, tokens=("a", "b"))], 8, 8))
    with pytest.raises(RunFormatError, match=r"iter-0000\.tokens\.parquet:2: token: holds 2 entries"):
        read_tokens(path)
    write_tokens(path, tokens_table([_step(), _step()], 8, 8))
    with pytest.raises(RunFormatError, match=r":2: step: .*stored twice"):
        read_tokens(path)
    write_tokens(path, tokens_table([_step(length=2)], 8, 8))
    with pytest.raises(RunFormatError, match=r":1: length: 2 response tokens, but 3 are stored"):
        read_tokens(path)
    path.write_bytes(b"not parquet")
    with pytest.raises(RunFormatError, match="not a Parquet file"):
        read_tokens(path)
    import pyarrow.parquet as pq

    good = tokens_table([_step()], 8, 8)
    pq.write_table(good.replace_schema_metadata({"schema": "crbc.rollout/1"}), path)
    with pytest.raises(RunFormatError, match="schema: unsupported schema"):
        read_tokens(path)
    write_tokens(path, good)
    (s,) = read_tokens(path)
    assert s.labels() is None and s.mask.tolist() == [True, False, True]


def test_a_failing_tokenizer_is_logged_once_and_training_goes_on(tmp_path, caplog):
    data = multi_turn_batch()
    rec = V.RunRecorder(tmp_path / "run", tokens=4, tokenizer=lambda ids: ["x"])  # one text for many ids
    with caplog.at_level("WARNING", logger="crbc"):
        rec.record(data, 0)
        rec.record(data, 1)
    assert crbc.read_run(tmp_path / "run").iterations_with_rollouts == (0, 1)
    assert sum("could not keep the tokens of iteration 0" in r.getMessage() for r in caplog.records) == 1
    assert not tokens_path(tmp_path / "run", 0).exists()
