"""The columnar path against its slow twins: the typed reader vs the reference line-by-line reader
(same rollouts, same errors), the process built from columns vs merge(), the msgspec credit writer
vs json.dumps of Credits.records()."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crbc.estimators import registry as estimators
from crbc.io.columns import Columns, decode_lines, parse_columns, read_columns
from crbc.io.creditfile import encoded_chunks, write_credits
from crbc.io.rollouts import (
    RolloutFormatError,
    parse_rollouts,
    read_rollouts,
    reference_parse_rollouts,
    reference_read_rollouts,
)
from crbc.process import Process, from_columns, merge
from tests.support import reference as ref
from tests.support.rollout_lines import BAD, GOOD, lines, with_

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def outcome(fn, *args):
    """``("ok", value)`` or ``("error", (message, source, line, field))`` of a reader call."""
    try:
        return "ok", fn(*args)
    except RolloutFormatError as e:
        return "error", (str(e), e.source, e.line, e.field)


def same_process(p: Process, q: Process) -> None:
    for f in dataclasses.fields(Process):
        a, b = getattr(p, f.name), getattr(q, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), f.name
        else:
            assert a == b, f.name


# ------------------------------------------------------------------ random valid files

text_st = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
num_st = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def record_st(draw, groups):
    rec: dict = {}
    if draw(st.booleans()):
        rec["schema"] = "crbc.rollout/1"
    rec["group"] = draw(st.sampled_from(groups))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        s = {"anchor": draw(st.sampled_from(["a", "b", "#P_\n#", "é\u2028"]) | text_st),
             "action": draw(st.sampled_from(["up", "down", "invalid"]))}
        for opt in ("obs", "response"):
            if draw(st.booleans()):
                s[opt] = draw(st.none() | text_st)
        if draw(st.booleans()):
            s["reward"] = draw(st.none() | num_st)
        steps.append(s)
    rec["steps"] = steps
    rec["success"] = draw(st.booleans())
    if draw(st.booleans()):
        rec["truncated"] = False if rec["success"] else draw(st.booleans())
    if draw(st.booleans()):
        rec["score"] = draw(st.none() | num_st)
    if draw(st.booleans()):
        rec["meta"] = draw(st.none() | st.dictionaries(text_st, st.none() | num_st | text_st
                                                        | st.lists(num_st, max_size=3), max_size=3))
    return rec


@st.composite
def file_st(draw):
    groups = draw(st.lists(st.sampled_from(["g", "h", "task/1", "ü"]), min_size=1, max_size=3, unique=True))
    recs = draw(st.lists(record_st(groups), min_size=1, max_size=12))
    counts: dict[str, int] = {}
    out = []
    for rec in recs:  # explicit indices that never collide with the defaults
        if draw(st.booleans()):
            rec["rollout"] = 1000 + counts.get(rec["group"], 0)
        counts[rec["group"]] = counts.get(rec["group"], 0) + 1
        ascii_, compact = draw(st.booleans()), draw(st.booleans())
        out.append(json.dumps(rec, ensure_ascii=ascii_, separators=(",", ":") if compact else None))
        if draw(st.integers(0, 5)) == 0:
            out.append(draw(st.sampled_from(["", "   ", "\t", "\r"])))
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\r\n"]))


@SETTINGS
@given(text=file_st())
@pytest.mark.slow
def test_random_valid_files_read_the_same(tmp_path, text):
    path = tmp_path / "r.jsonl"
    path.write_text(text, encoding="utf-8")
    want = reference_read_rollouts(path)
    got = read_rollouts(path)
    assert got == want
    assert [r.meta for g in got for r in g.rollouts] == [r.meta for g in want for r in g.rollouts]
    same_process(from_columns(read_columns(path, keep_text=False)), merge(want))
    assert parse_rollouts(text, "x") == reference_parse_rollouts(text, "x")
    assert parse_rollouts(text.encode(), "x") == reference_parse_rollouts(text.encode(), "x")


@SETTINGS
@given(text=file_st(), data=st.data())
def test_mutated_lines_same_outcome(tmp_path, text, data):
    """Random byte edits of a valid file: both readers accept the same rollouts or raise the same
    error (message, file, line, field)."""
    raw = bytearray(text.encode("utf-8"))
    for _ in range(data.draw(st.integers(1, 3))):
        if not raw:
            break
        i = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["del", "ins", "set"]))
        b = data.draw(st.sampled_from(list(b'{}[]",:0123456789.eE-+ntfa\\\n\x00\xff\t') + [0x0c, 0xc3]))
        if op == "del":
            del raw[i]
        elif op == "ins":
            raw.insert(i, b)
        else:
            raw[i] = b
    path = tmp_path / "m.jsonl"
    path.write_bytes(bytes(raw))
    assert outcome(read_rollouts, path) == outcome(reference_read_rollouts, path)
    assert outcome(parse_rollouts, bytes(raw), "m") == outcome(reference_parse_rollouts, bytes(raw), "m")


# ------------------------------------------------------------------ every bad-input rule, both readers

MORE_BAD = [
    ("success and truncated, default index", with_(rollout=None, success=True, truncated=True)),
    ("reward overflows", '{"group": "g", "steps": [{"anchor": "x", "action": "u", "reward": -1e400}], "success": false}'),
    ("meta overflows", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "meta": {"a": [1e999]}}'),
    ("unknown field overflows", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "x": 1e999}'),
    ("unknown step field overflows", '{"group": "g", "steps": [{"anchor": "x", "action": "u", "y": 1e999}], "success": false}'),
    ("NaN in meta", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "meta": {"a": NaN}}'),
    ("-Infinity reward", '{"group": "g", "steps": [{"anchor": "x", "action": "u", "reward": -Infinity}], "success": false}'),
    ("rollout is a bool", with_(rollout=True)),
    ("score is a bool", with_(score=False)),
    ("reward is a bool", with_(steps=[{"anchor": "x", "action": "up", "reward": True}])),
    ("schema null", with_(schema=None)),
    ("truncated null", with_(truncated=None)),
    ("second step not an object", with_(steps=[{"anchor": "x", "action": "up"}, "x"])),
    ("response not a string", with_(steps=[{"anchor": "x", "action": "up", "response": []}])),
    ("action null", with_(steps=[{"anchor": "x", "action": None}])),
    ("group null", with_(group=None)),
    ("success null", with_(success=None)),
    ("raw control character", '{"group": "g\x01", "steps": [{"anchor": "x", "action": "u"}], "success": false}'),
    ("raw tab in a string", '{"group": "g\t", "steps": [{"anchor": "x", "action": "u"}], "success": false}'),
    ("trailing garbage", json.dumps(GOOD) + " x"),
    ("two records on a line", json.dumps(GOOD) + json.dumps(GOOD)),
    ("leading zero", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "score": 01}'),
    ("a bare string", '"hello"'),
    ("null", "null"),
]

ALL_BAD = [(b[0], b[1]) for b in BAD] + MORE_BAD


@pytest.mark.parametrize("why,record", ALL_BAD, ids=[b[0] for b in ALL_BAD])
@pytest.mark.parametrize("where", [1, 3])
def test_bad_input_same_error_as_reference(tmp_path, why, record, where):
    path = tmp_path / "bad.jsonl"
    good = [GOOD | {"rollout": 5}, with_(group="other")][:where - 1]
    path.write_text(lines(*good, record), encoding="utf-8")
    fast, slow = outcome(read_rollouts, path), outcome(reference_read_rollouts, path)
    assert slow[0] == "error" and fast == slow
    assert slow[1][2] == where  # the line is named
    data = path.read_bytes()
    assert outcome(parse_rollouts, data, "up.jsonl") == outcome(reference_parse_rollouts, data, "up.jsonl")


LEGAL_ODDITIES = [
    ("unknown fields are ignored", with_(extra={"x": 1}, steps=[{"anchor": "x", "action": "u", "note": 3}])),
    ("lone surrogate escape", '{"group": "g\\ud800", "steps": [{"anchor": "x", "action": "u"}], "success": false}'),
    ("form feed around the record", "\x0c" + json.dumps(GOOD) + "\x0c"),
    ("line of unicode spaces", "\u2028\u00a0"),
    ("duplicate key: last wins", '{"group": 3, "group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false}'),
    ("huge integer score", with_(score=10**30)),
    ("tiny float underflows to 0", '{"group": "g", "steps": [{"anchor": "x", "action": "u", "reward": 1e-400}], "success": false}'),
    ("obs null", with_(steps=[{"anchor": "x", "action": "u", "obs": None, "response": None, "reward": None}])),
    ("meta null", with_(meta=None)),
]


@pytest.mark.parametrize("why,record", LEGAL_ODDITIES, ids=[b[0] for b in LEGAL_ODDITIES])
def test_legal_oddities_read_the_same(tmp_path, why, record):
    path = tmp_path / "odd.jsonl"
    path.write_text(lines(GOOD | {"rollout": 9}, record, with_(group="z")), encoding="utf-8")
    fast, slow = outcome(read_rollouts, path), outcome(reference_read_rollouts, path)
    assert slow[0] == "ok" and fast == slow


def test_crlf_and_text_with_lone_surrogates():
    text = lines(GOOD, with_(rollout=1)).replace("\n", "\r\n")
    assert parse_rollouts(text.encode(), "c") == reference_parse_rollouts(text.encode(), "c")
    odd = lines(with_(group="g\ud800"))
    assert parse_rollouts(odd, "s") == reference_parse_rollouts(odd, "s")


def test_empty_inputs_refused_like_reference(tmp_path):
    for data in ("", "\n \n", b"\n\r\n"):
        assert outcome(parse_rollouts, data, "e")[0] == "error"
        assert outcome(parse_rollouts, data, "e") == outcome(reference_parse_rollouts, data, "e")
    assert decode_lines([], "e").n_rollouts == 0


# ------------------------------------------------------------------ columns <-> groups, process

def test_columns_round_trip_groups():
    rng = np.random.default_rng(3)
    groups = [ref.random_group(rng, name=f"g{i}") for i in range(40)]
    cols = Columns.from_groups(groups, keep_text=True)
    assert cols.to_groups() == groups
    same_process(from_columns(cols), merge(groups))


def test_interleaved_groups_give_merge_process(tmp_path):
    recs = [with_(group="b", rollout=0, steps=[{"anchor": "y", "action": "down"}, {"anchor": "x", "action": "up"}]),
            with_(group="a", rollout=0, steps=[{"anchor": "x", "action": "up"}]),
            with_(group="b", rollout=1, steps=[{"anchor": "z", "action": "left"}, {"anchor": "x", "action": "up"}])]
    path = tmp_path / "i.jsonl"
    path.write_text(lines(*recs))
    cols = read_columns(path)
    assert cols.group_ids == ("b", "a") and cols.rollout_group.tolist() == [0, 1, 0]
    same_process(from_columns(cols), merge(reference_read_rollouts(path)))


def test_effective_score_defaults():
    cols = parse_columns(lines(with_(score=None, success=True, truncated=False), with_(rollout=1, score=None),
                               with_(rollout=2, score=2.5)), "s")
    assert cols.effective_score().tolist() == [1.0, 0.0, 2.5]


# ------------------------------------------------------------------ the credit writer

def _reference_lines(credits) -> list[str]:
    return [json.dumps(rec, allow_nan=False) for rec in credits.records()]


@pytest.mark.parametrize("name", estimators.names())
def test_writer_matches_json_dumps(tmp_path, name, monkeypatch):
    import crbc.io.creditfile as cf
    monkeypatch.setattr(cf, "CHUNK_ROLLOUTS", 7)  # several chunks
    rng = np.random.default_rng(11)
    groups = [ref.random_group(rng, name=f"grp-{i}-ü") for i in range(30)]
    credits = estimators.compute(name, groups)
    path = tmp_path / "c.jsonl"
    write_credits(credits, path)
    got = path.read_text(encoding="utf-8").splitlines()
    want = _reference_lines(credits)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        gj, wj = json.loads(g), json.loads(w)
        assert gj == wj and list(gj) == list(wj)  # same keys in the same order, same numbers
        assert json.dumps(gj) == w  # bit-identical floats: re-encoding gives json.dumps's text
    buf = io.StringIO()
    write_credits(credits, buf)
    assert buf.getvalue() == path.read_text(encoding="utf-8")
    raw = io.BytesIO()
    write_credits(credits, raw)
    assert raw.getvalue() == b"".join(encoded_chunks(credits))


@settings(max_examples=300, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_float_encoding_round_trips(x):
    import msgspec
    assert json.loads(msgspec.json.encode([x]))[0] == x == json.loads(json.dumps([x]))[0]


def test_writer_refuses_non_finite_and_leaves_nothing(tmp_path):
    credits = estimators.compute("crbc", [ref.random_group(np.random.default_rng(1))])
    bad = dataclasses.replace(credits, advantage_N=np.full_like(credits.advantage_N, np.nan))
    path = tmp_path / "c.jsonl"
    path.write_text("keep\n")
    with pytest.raises(ValueError, match="JSON compliant"):
        write_credits(bad, path)
    assert path.read_text() == "keep\n" and [p.name for p in tmp_path.iterdir()] == ["c.jsonl"]
