"""`python -m crbc truth` (docs/FORMATS.md crbc.truth/1): output equals the library; every kind of bad
input exits 2 with one line naming file, line and field, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import ROOT

pytest.importorskip("torch")

from crbc.cli.main import main  # noqa: E402
from crbc.truth import TRUTH_ACTIONS, level_truth  # noqa: E402

SAMPLE = ROOT / "sample_rollouts" / "sokoban-weak.jsonl"
WEAK = str(ROOT / "models" / "sokoban-tiny-weak")


def _records(n=8):
    recs = [json.loads(x) for x in SAMPLE.read_text().splitlines()[:n]]
    for r in recs:
        r["meta"]["policy"] = WEAK
    return recs


def _write(path: Path, recs) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.fixture(autouse=True)
def _threads():
    import torch

    torch.set_num_threads(1)


def test_truth_file_matches_the_library(tmp_path, capsys):
    recs = _records(8)
    src, out = _write(tmp_path / "r.jsonl", recs), tmp_path / "t.jsonl"
    assert main(["truth", str(src), "-o", str(out)]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g["rollout"] for g in got] == [r["rollout"] for r in recs]
    meta = recs[0]["meta"]
    lt = level_truth(meta["env"], meta["seed"], WEAK, max_steps=meta["max_steps"],
                     temperature=meta["temperature"])
    index = lt.space.index()
    for g, r in zip(got, recs, strict=True):
        assert g["schema"] == "crbc.truth/1" and g["beta"] == 0.98 and g["temperature"] == 1.0
        assert g["policy"] == WEAK and len(g["value"]) == len(r["steps"])
        for t, step in enumerate(r["steps"]):
            s, a = index[step["anchor"]], TRUTH_ACTIONS.index(step["action"])
            assert g["value"][t] == pytest.approx(lt.value_TS[t, s])
            assert g["q"][t] == pytest.approx(lt.q_TSA[t, s, a])
            assert g["anchor_advantage"][t] == pytest.approx(lt.anchor_advantage_SA[s, a])
        assert np.allclose(np.subtract(g["q"], g["value"]), g["advantage"])
    # to standard output as well, and --model overrides meta.policy
    capsys.readouterr()
    assert main(["truth", str(src), "--model", WEAK, "--beta", "0.9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 and json.loads(lines[0])["beta"] == 0.9


def _bad(recs, line, change):
    recs = [json.loads(json.dumps(r)) for r in recs]
    change(recs[line - 1])
    return recs


def _other_level_board(rec):
    rec["steps"][2]["anchor"] = "######\n#P___#\n#_XO_#\n#____#\n#____#\n######"


def _drop_meta(rec):
    del rec["meta"]


def _unknown_env(rec):
    rec["meta"]["env"] = "chess-v0"


def _missing_model(rec):
    rec["meta"]["policy"] = "/nonexistent/model"


def _unknown_action(rec):
    rec["steps"][1]["action"] = "jump"


def _no_seed(rec):
    del rec["meta"]["seed"]


@pytest.mark.parametrize("change,line,needle", [
    (_drop_meta, 3, ":3: meta: no meta"),
    (_unknown_env, 2, ":2: meta.env: unknown env 'chess-v0'"),
    (_other_level_board, 4, ":4: steps[2].anchor: the anchor is not a state of sokoban-6x6-v0/seed-0"),
    (_missing_model, 5, ":5: meta.policy: model folder not found"),
    (_unknown_action, 1, ":1: steps[1].action: unknown action 'jump'"),
    (_no_seed, 6, ":6: meta.seed: missing"),
])
def test_truth_refuses_bad_input(tmp_path, capsys, change, line, needle):
    src = _write(tmp_path / "bad.jsonl", _bad(_records(8), line, change))
    out = tmp_path / "t.jsonl"
    capsys.readouterr()
    assert main(["truth", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(src) + needle in err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


def test_truth_refuses_a_missing_override_and_a_chat_model(tmp_path, capsys):
    src = _write(tmp_path / "r.jsonl", _records(2))
    out = tmp_path / "t.jsonl"
    assert main(["truth", str(src), "-o", str(out), "--model", str(tmp_path / "nope")]) == 2
    assert "--model: model folder not found" in capsys.readouterr().err
    chat = tmp_path / "chat"
    chat.mkdir()
    (chat / "config.json").write_text("{}")
    assert main(["truth", str(src), "-o", str(out), "--model", str(chat)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chat-format model" in err and ":1: " in err
    assert not out.exists()


def test_truth_refuses_a_bad_file(tmp_path, capsys):
    src = tmp_path / "x.jsonl"
    src.write_text("{not json\n")
    assert main(["truth", str(src)]) == 2
    assert f"{src}:1: (line): not valid JSON" in capsys.readouterr().err
    assert main(["truth", str(tmp_path / "missing.jsonl")]) == 2
