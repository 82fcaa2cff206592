"""The crbc.rollout/1 reader and writer: round trip and every bad-input rule of docs/FORMATS.md."""

from __future__ import annotations

import pytest

from crbc.io.rollouts import (
    Rollout,
    RolloutFormatError,
    RolloutGroup,
    Step,
    parse_rollouts,
    read_rollouts,
    reference_read_rollouts,
    write_rollouts,
)
from tests.support.rollout_lines import BAD, DELETE, GOOD, lines, with_


def test_round_trip(tmp_path):
    g = RolloutGroup("g", (
        Rollout("g", 0, (Step("a", "up", "o", "r", 1.0), Step("b", "invalid")), True, score=10.0, meta={"x": 1}),
        Rollout("g", 1, (Step("a", "down"),), False, truncated=True)))
    path = tmp_path / "r.jsonl"
    write_rollouts(path, [g])
    back = read_rollouts(path)
    assert back == [g] and back[0].rollouts[0].meta == {"x": 1}
    assert back[0].rollouts[1].effective_score == 0.0 and back[0].rollouts[0].effective_score == 10.0


def test_groups_in_order_and_default_indices():
    text = lines({"group": "b", "steps": [{"anchor": "s", "action": "a"}], "success": True},
                 {"group": "a", "steps": [{"anchor": "s", "action": "a"}], "success": False},
                 "",
                 {"group": "b", "steps": [{"anchor": "s", "action": "a"}], "success": False})
    groups = parse_rollouts(text, "x.jsonl")
    assert [g.group for g in groups] == ["b", "a"]
    assert [r.rollout for r in groups[0].rollouts] == [0, 1]


@pytest.mark.parametrize("why,record,line,field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_named(tmp_path, why, record, line, field):
    path = tmp_path / "bad.jsonl"
    path.write_text(lines(GOOD | {"rollout": 5}, record) if line == 2 else lines(record))
    with pytest.raises(RolloutFormatError) as e:
        read_rollouts(path)
    assert e.value.source == str(path) and e.value.line == line and e.value.field == field
    assert str(e.value).startswith(f"{path}:{line}: {field}: ")


def test_bad_line_after_good_lines_refuses_whole_file(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(lines(GOOD, with_(rollout=1), "{broken"))
    with pytest.raises(RolloutFormatError) as e:
        read_rollouts(path)
    assert e.value.line == 3


def test_duplicate_group_rollout(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(lines(GOOD, with_(group="other"), GOOD))
    with pytest.raises(RolloutFormatError) as e:
        read_rollouts(path)
    assert (e.value.line, e.value.field) == (3, "rollout")


def test_duplicate_with_default_index(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(lines(with_(rollout=DELETE), with_(rollout=0)))
    with pytest.raises(RolloutFormatError, match="duplicate"):
        read_rollouts(path)


def test_empty_and_missing_file(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(RolloutFormatError, match="empty"):
        read_rollouts(empty)
    with pytest.raises(RolloutFormatError, match="cannot read"):
        read_rollouts(tmp_path / "missing.jsonl")


def test_bad_utf8():
    with pytest.raises(RolloutFormatError, match="UTF-8") as e:
        parse_rollouts(b'{"group": "\xff"}\n', "u.jsonl")
    assert e.value.line == 1


def test_writer_is_atomic(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text("old contents\n")

    def boom():
        yield Rollout("g", 0, (Step("a", "b"),), True)
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_rollouts(path, boom())
    assert path.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_writer_refuses_nan(tmp_path):
    with pytest.raises(ValueError):
        write_rollouts(tmp_path / "n.jsonl", [Rollout("g", 0, (Step("a", "b", reward=float("nan")),), True)])
    assert not (tmp_path / "n.jsonl").exists()


def test_hostile_nesting_is_refused_with_the_line_never_a_recursion_error(tmp_path):
    from crbc.io.linecheck import bad_lines

    deep = ('{"group": "g", "steps": [{"anchor": "a", "action": "x"}], "success": true, "meta": '
            + "[" * 100_000 + "]" * 100_000 + "}")
    path = tmp_path / "deep.jsonl"
    path.write_text('{"group": "g", "steps": [{"anchor": "a", "action": "x"}], "success": false}\n' + deep + "\n")
    with pytest.raises(RolloutFormatError, match=r"deep\.jsonl:2: \(line\): nested too deeply"):
        read_rollouts(path)
    errs, _ = bad_lines(path.read_bytes(), "deep.jsonl")
    assert len(errs) == 1 and "nested too deeply" in str(errs[0])


def test_a_windows_file_with_a_byte_order_mark_and_crlf_is_read(tmp_path):
    lines = ['{"group": "g", "steps": [{"anchor": "a", "action": "x"}], "success": true}',
             '{"group": "g", "steps": [{"anchor": "a", "action": "y"}], "success": false}']
    path = tmp_path / "win.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    groups = read_rollouts(path)
    assert [r.steps[0].action for r in groups[0].rollouts] == ["x", "y"]
    assert reference_read_rollouts(path)[0].rollouts[1].success is False
