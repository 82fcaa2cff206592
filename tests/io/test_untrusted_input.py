"""Untrusted input: user regexes in linear time (RE2), decoded-size budgets in every reader,
nesting refused cleanly, duplicate rLLM episodes, and the worker process the studio reads in.

Every refusal names the file and the budget (or row and column) and writes nothing.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from crbc.cli.main import main
from crbc.errors import BudgetError, FormatError
from crbc.io import budgets
from crbc.io.anchor_keys import AnchorKeyError, RegexError, anchor_key, compile_regex, regex_key
from crbc.io.importers import read_source, read_uploads
from crbc.io.importers.rows import ImportFormatError
from crbc.jobs import upload as worker
from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import ROOT

DATA = TEST_DATA / "importers"
SMALL = budgets.Budget("test", file_bytes=10**6, decoded_bytes=2 * 10**6, rows=1000, text_chars=5000)


def rows_jsonl(n: int = 4, obs: str = "x" * 29) -> bytes:
    return "\n".join(json.dumps({"uid": "g", "traj_uid": str(i), "anchor_obs": obs, "action": "a",
                                 "success": i % 2}) for i in range(n)).encode()


def cli(*args) -> tuple[int, str]:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["import", *map(str, args)])
    return rc, err.getvalue()


# --------------------------------------------------------------------------------------------
# regexes


@pytest.mark.parametrize("pattern,text", [(r"(x+x+)+y", "x" * 29), (r"(\s*\w+\s*)+:", "one two three four five six seven"),
                                          (r"(a|aa)+$", "a" * 5000 + "b")])
def test_catastrophic_patterns_run_in_linear_time(pattern, text):
    key = anchor_key(pattern)
    t = time.perf_counter()
    with pytest.raises(AnchorKeyError, match="does not match"):
        key(text * 20)
    assert time.perf_counter() - t < 0.5  # Python's re takes minutes on the first two


@pytest.mark.parametrize("pattern,construct", [(r"(a)\1", "backreferences"), (r"(?P<n>a)(?P=n)", "backreferences"),
                                               (r"a(?=b)", "lookahead"), (r"(?<!a)b", "lookahead and lookbehind"),
                                               (r"a++", "possessive")])
def test_constructs_re2_cannot_run_are_named(pattern, construct):
    with pytest.raises(RegexError, match=re.escape(construct)):
        compile_regex(pattern)


def test_re_patterns_keep_their_flags_and_the_key_has_a_time_budget():
    assert anchor_key(re.compile("board (b)", re.IGNORECASE))("BOARD B") == "B"
    with pytest.raises(RegexError, match="flags"):
        anchor_key(re.compile("a b", re.VERBOSE))
    key = regex_key("x*", budget_s=0.0)  # any matching at all exceeds a zero budget
    with pytest.raises(RegexError, match="time budget"):
        key("abc" * 10_000)


def test_the_cli_refuses_a_bad_pattern_and_runs_a_hostile_one_fast(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_bytes(rows_jsonl())
    rc, err = cli(src, "-o", tmp_path / "o.jsonl", "--anchor-regex", r"(a)\1")
    assert rc == 2 and "backreferences" in err
    t = time.perf_counter()
    rc, err = cli(src, "-o", tmp_path / "o.jsonl", "--anchor-regex", r"(x+x+)+y")
    assert rc == 2 and "row 1" in err and "anchor_obs" in err and time.perf_counter() - t < 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]


# --------------------------------------------------------------------------------------------
# decoded-size budgets


def dictionary_bomb(path: Path, n_rows: int, chars: int = 2000) -> Path:
    """A small Parquet step table whose anchor column is one long string used by every row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    anchor = pa.DictionaryArray.from_arrays(pa.array([0] * n_rows, pa.int32()), pa.array(["x" * chars]))
    pq.write_table(pa.table({"uid": ["g"] * n_rows, "traj_uid": [str(i % 7) for i in range(n_rows)],
                             "anchor_obs": anchor, "success": [True] * n_rows}), path, compression="zstd")
    return path


def test_a_parquet_dictionary_bomb_stops_at_the_decoded_budget(tmp_path):
    bomb = dictionary_bomb(tmp_path / "bomb.parquet", 20_000)
    assert bomb.stat().st_size < 100_000  # 40 MB of text in a tiny file
    big = budgets.Budget("test", file_bytes=10**6, decoded_bytes=10 * 10**6, rows=10**6)
    with pytest.raises(BudgetError, match=r"bomb.parquet: decodes to more than 10 MB of data, the test's budget"):
        read_source("steps", [bomb], budget=big)
    with pytest.raises(BudgetError, match="more than 1,000 rows"):  # the metadata's row count, first
        read_source("steps", [bomb], budget=SMALL)


@pytest.mark.slow
def test_the_cli_refuses_a_bomb_within_seconds_and_writes_nothing(tmp_path):
    bomb = dictionary_bomb(tmp_path / "bomb.parquet", 600_000)  # 1.2 GB decoded, CLI budget 1000 MB
    t = time.perf_counter()
    rc, err = cli(bomb, "-o", tmp_path / "out")
    assert rc == 2 and "bomb.parquet" in err and "1000 MB" in err and "budget" in err
    assert time.perf_counter() - t < 120
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.parquet"]


def test_gzip_text_and_rows_budgets(tmp_path):
    gz = tmp_path / "steps.jsonl"  # really gzip: 3 MB of one observation
    gz.write_bytes(gzip.compress(rows_jsonl(1, "y" * 3_000_000)))
    with pytest.raises(BudgetError, match="steps.jsonl: decodes to more than 2 MB"):
        read_source("steps", [gz], budget=SMALL)
    long = tmp_path / "long.jsonl"
    long.write_bytes(rows_jsonl(2, "z" * 6000))
    with pytest.raises(BudgetError, match=r"long.jsonl:1: anchor_obs: a text of 6,000 characters.*5,000"):
        read_source("steps", [long], budget=SMALL)
    many = tmp_path / "many.csv"
    many.write_text("uid,traj_uid,anchor_obs,success\n" + "g,1,a,1\n" * 1001)
    with pytest.raises(BudgetError, match="many.csv: more than 1,000 rows"):
        read_source("steps", [many], budget=SMALL)
    with pytest.raises(BudgetError, match="the file is"):
        read_uploads("steps", {"big.jsonl": b" " * (10**6 + 1)}, budget=SMALL)


def test_upload_size_label_and_check_agree():
    from ui.core import state

    assert state.MAX_UPLOAD_BYTES == state.MAX_UPLOAD_MB * 10**6 == budgets.STUDIO.file_bytes
    groups, err = state.load_upload("a.jsonl", b" " * int(19.996 * 2**20))  # 20.97 MB
    assert groups is None and "20.97 MB" in err and "20 MB" in err


def test_rollout_and_run_readers_charge_the_budget(tmp_path):
    from crbc.io.parquet_rollouts import write_parquet_rollouts
    from crbc.io.rollouts import Rollout, RolloutGroup, Step, parse_rollouts
    from crbc.io.runs import gunzip

    g = RolloutGroup("g", tuple(Rollout("g", i, (Step("s" * 3000, "a"),), i == 0) for i in range(800)))
    write_parquet_rollouts(tmp_path / "r.parquet", [g])
    from crbc.io.parquet_rollouts import read_parquet_rollouts

    with budgets.scope(SMALL), pytest.raises(BudgetError, match="r.parquet: decodes to more than 2 MB"):
        read_parquet_rollouts(tmp_path / "r.parquet")
    line = json.dumps({"group": "g", "steps": [{"anchor": "a", "action": "b"}], "success": True})
    with budgets.scope(SMALL), pytest.raises(BudgetError, match="more than 1,000 rows"):
        parse_rollouts("\n".join([line.replace('"g"', f'"g{i}"') for i in range(1001)]), "many.jsonl")
    with budgets.scope(SMALL), pytest.raises(BudgetError, match="it.jsonl.gz: decodes to more than 2 MB"):
        gunzip(gzip.compress(b" " * 3 * 10**6), "it.jsonl.gz")


# --------------------------------------------------------------------------------------------
# nesting and duplicates


def test_nesting_is_refused_cleanly_by_every_importer(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    steps = tmp_path / "steps.jsonl"
    steps.write_text('{"uid": "g", "traj_uid": "1", "anchor_obs": ' + deep + ', "success": 1}\n')
    verl = tmp_path / "3.jsonl"
    verl.write_text('{"uid": "p_0_0", "input": ' + deep + "}\n")
    rllm = tmp_path / "ep.json"
    rllm.write_text('{"episode_id": "t:0", "trajectories": ' + deep + "}")
    for name, path, kw in (("steps", steps, {}), ("verl", verl, {"success_threshold": 1.0}), ("rllm", rllm, {})):
        with pytest.raises(ImportFormatError, match="nested too deeply"):
            read_source(name, [path], **kw)
        rc, err = cli(path, "--from", name, "-o", tmp_path / "o.jsonl", *(["--success-threshold", "1"] if kw else []))
        assert rc == 2 and path.name in err and "nested too deeply" in err and "Traceback" not in err


def test_duplicate_rllm_episodes_are_refused_naming_both(tmp_path):
    src = DATA / "rllm_episode_log" / "episodes" / "train_step_3_epoch_0"
    first = sorted(p for p in src.glob("episode_*.json"))[0]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(first, tmp_path / "a" / "one.json")
    shutil.copy(first, tmp_path / "b" / "two.json")
    with pytest.raises(ImportFormatError, match=r"two.json: column 'episode_id': episode .* appears twice: here and in .*one.json"):
        read_source("rllm", [tmp_path])


# --------------------------------------------------------------------------------------------
# the worker process


def test_the_worker_reads_keys_and_merges(tmp_path):
    res = worker.read_limited("steps", {"x.jsonl": rows_jsonl()}, anchor=r"(x)$")
    assert res.error is None and res.profiles[None].n_anchors == 1  # one anchor after the key
    (groups,) = res.groups.values()
    assert [len(g) for g in groups] == [4] and groups[0].rollouts[0].steps[0].anchor == "x"


def test_the_workers_merge_profile_is_the_servers(tmp_path):
    """The profile the worker sends (the sidebar's merge line of an upload) equals the one the
    server would compute from the groups it read back: two iterations, with and without a key,
    and a file whose rollouts have one step (no later steps: NaN)."""
    import dataclasses
    import math

    from crbc.process import merge_profile

    def walks(n: int, it: int) -> bytes:  # three steps a trajectory; the last one's room is its own
        return "".join(json.dumps({"uid": "g", "traj_uid": str(k), "anchor_obs": f"room {t} {k % 3 if t < 2 else k}",
                                   "action": "a", "success": k % 2, "global_step": it}) + "\n"
                       for k in range(n) for t in range(3)).encode()

    files = {"a.jsonl": walks(8, 0) + walks(5, 1)}
    for anchor in (None, r"room (\d)"):
        res = worker.read_limited("steps", files, anchor=anchor)
        assert res.error is None and set(res.profiles) == set(res.groups)
        for it, groups in res.groups.items():
            mine, theirs = dataclasses.astuple(res.profiles[it]), dataclasses.astuple(merge_profile(groups))
            assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(mine, theirs, strict=True))
    one_step = "".join(json.dumps({"uid": "g", "traj_uid": str(k), "anchor_obs": "a", "success": k % 2}) + "\n"
                       for k in range(3)).encode()
    res = worker.read_limited("steps", {"one.jsonl": one_step})
    assert res.profiles[None].later_steps == 0 and math.isnan(res.profiles[None].later_share)


def test_the_worker_refuses_within_its_budgets(tmp_path):
    bomb = dictionary_bomb(tmp_path / "bomb.parquet", 80_000).read_bytes()  # decodes to 160 MB
    t = time.perf_counter()
    res = worker.read_limited("steps", {"bomb.parquet": bomb}, limits=worker.Limits(
        seconds=300, memory_bytes=80 * 10**6, budget=budgets.CLI))  # no budget but the memory limit
    assert res.groups is None and res.error.startswith("bomb.parquet: ") and "80 MB" in res.error
    res = worker.read_limited("steps", {"slow.jsonl": rows_jsonl(20_000)}, limits=worker.Limits(seconds=0.05))
    assert res.error == "slow.jsonl: reading took longer than the time budget of 0.05 s; stopped, nothing was loaded"
    assert time.perf_counter() - t < 120


def test_the_worker_stops_at_its_cpu_budget_and_runs_below_the_server():
    """RLIMIT_CPU ends the read (SIGXCPU) with the CPU budget named; the worker's nice value is
    the server's plus NICENESS, so a read never competes with the pages on equal terms."""
    import os

    res = worker.read_limited("steps", {"slow.jsonl": rows_jsonl(400_000)}, limits=worker.Limits(
        seconds=120, cpu_seconds=1, budget=budgets.CLI))
    assert res.error == "slow.jsonl: reading needed more than the CPU budget of 1 s; stopped, nothing was loaded"
    job = worker.start_read("steps", {"slow.jsonl": rows_jsonl(400_000)}, limits=worker.Limits(budget=budgets.CLI))
    try:
        deadline = time.monotonic() + 30
        while not job.progress["rows"] and job.outcome is None and time.monotonic() < deadline:
            job.poll(0.05)  # until the first rows: the worker has set its limits and priority
        assert job.outcome is None and job.progress["rows"]
        assert os.getpriority(os.PRIO_PROCESS, job.proc.pid) == min(19, os.nice(0) + worker.NICENESS)  # 19: the lowest
        # its own session, so under autogroup scheduling its own group, at the same niceness
        assert os.getsid(job.proc.pid) == job.proc.pid != os.getsid(0)
        group = Path(f"/proc/{job.proc.pid}/autogroup")
        if group.exists():
            assert group.read_text().split()[-1] == str(worker.NICENESS), group.read_text()
    finally:
        job.cancel()


def test_a_cancelled_worker_is_gone():
    job = worker.start_read("steps", {"x.jsonl": rows_jsonl(20_000)})
    job.cancel()
    assert not job.proc.is_alive() and not Path(job.folder).exists()
    assert job.outcome["error"].endswith("cancelled; nothing was loaded")


def test_errors_never_carry_a_traceback_or_a_server_path(tmp_path):
    res = worker.read_limited("verl", {"3.jsonl": b'{"uid": "p_0_0", "input": ' + b"[" * 100_000 + b"}\n"},
                              threshold=1.0)
    assert res.error.startswith("3.jsonl: row 1: ") and "nested too deeply" in res.error
    assert "/tmp" not in res.error and "Traceback" not in res.error
    assert issubclass(BudgetError, FormatError)


def test_the_studio_shows_no_error_details_and_keeps_uploads_per_session():
    import inspect
    import tomllib

    from ui.core import upload

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none" and config["runner"]["postScriptGC"] is False
    src = inspect.getsource(upload)
    assert "worker.start_read" in src and "cache_resource(show_spinner=\"Reading" not in src


def test_a_pattern_that_can_match_nothing_keys_by_its_last_non_empty_match():
    """``(?s)(.*)`` also matches "" at the very end of a text; that match must not key every
    anchor as "" (all anchors merged into one)."""
    key = regex_key(r"(?s)(.*)")
    assert key("abc\ndef") == "abc\ndef"
    assert regex_key(r"(\d*)")("a1b22c") == "22"  # the last non-empty of 1, 22 and the empty ones
    assert regex_key(r"(x*)")("abc") == ""  # only empty matches: the (empty) last one, as before


def test_a_worker_never_runs_the_parents_main_script(tmp_path, monkeypatch):
    """Under Streamlit the page script is ``__main__``; a child must not re-run it (here: a main
    script that would fail the child, and one that is gone, as after AppTest.from_function)."""
    import sys
    import types

    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('the child ran the parent main script')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    res = worker.read_limited("steps", {"x.jsonl": rows_jsonl()})
    assert res.error is None and sys.modules["__main__"] is main
    script.unlink()
    res = worker.read_limited("steps", {"x.jsonl": rows_jsonl()})
    assert res.error is None


# --------------------------------------------------------------------------------------------
# bad values quoted in error messages (issue 57: a 1,000,000-entry list cell echoed as 3 MB)


def _main_stderr(argv) -> tuple[int, str]:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(list(map(str, argv)))
    return rc, err.getvalue()


@pytest.mark.parametrize("where", ["score", "reward"])
def test_credit_quotes_a_huge_bad_value_by_its_start_and_length(tmp_path, where):
    step = {"anchor": "s", "action": "a"}
    rec = {"group": "g", "rollout": 0, "steps": [step], "success": True}
    (step if where == "reward" else rec)[where] = [0] * 1_000_000
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    rc, err = _main_stderr(["credit", path])
    assert rc == 2 and len(err) < 400, err[:400]
    assert "must be a number, got [0, 0, 0" in err and "(a list of 1,000,000 entries)" in err


def test_import_quotes_a_huge_bad_cell_by_its_start_and_length(tmp_path):
    rows = [{"uid": "g", "traj_uid": "0", "anchor_obs": "s", "action": "a", "success": list(range(10**6))}]
    src = tmp_path / "steps.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc, err = cli(src, "-o", tmp_path / "out.jsonl")
    assert rc == 2 and len(err) < 400, err[:400]
    assert "(a list of 1,000,000 entries)" in err


def test_shown_value_and_the_message_backstop():
    from crbc.errors import bounded_message, shown_value

    assert shown_value("ok") == "'ok'" and shown_value(1.5) == "1.5" and shown_value(None) == "None"
    assert shown_value("x" * 10_000).endswith("(a text of 10,000 characters)")
    assert len(shown_value("x" * 10_000)) < 120
    assert shown_value({str(i): i for i in range(50)}).endswith("(a dict of 50 keys)")
    assert bounded_message("short") == "short"
    long = bounded_message("y" * 10**6)
    assert len(long) < 2100 and long.endswith("(message cut: 1,000,000 characters in all)")


# --------------------------------------------------------------------------------------------
# paths too long for the file system (issue 57: refused as "File name too long" of a temp name)


def test_a_name_too_long_is_refused_naming_the_255_byte_limit(tmp_path):
    """A 305-character name: the message says which part breaks which limit, with the path cut."""
    src = tmp_path / ("a" * 299 + ".jsonl")
    for argv in (["credit", src, "-o", tmp_path / "out.jsonl"], ["report", src, "-o", tmp_path / "r.html"]):
        rc, err = _main_stderr(argv)
        assert rc == 2 and len(err) < 1000, err
        assert "is 305 bytes; a name (one part of a path) may be at most 255 bytes" in err
        assert "Errno" not in err


def test_an_output_name_the_file_system_takes_is_written_though_its_temp_twin_is_longer(tmp_path):
    """A 246-byte output name is legal; its temporary twin (``.<name>.<random>.tmp``) used to be
    260 bytes and the command failed with "File name too long" about a file the user never named."""
    from crbc.io.rollouts import atomic_write_chunks

    out = tmp_path / ("b" * 240 + ".jsonl")
    atomic_write_chunks(out, [b"x\n"])
    assert out.read_bytes() == b"x\n" and [p.name for p in tmp_path.iterdir()] == [out.name]
    too = tmp_path / ("c" * 250 + ".jsonl")
    with pytest.raises(OSError):
        atomic_write_chunks(too, [b"x\n"])
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"group": "g", "rollout": 0, "steps": [{"anchor": "s", "action": "a"}], "success": True}) + "\n")
    rc, err = _main_stderr(["credit", src, "-o", too])
    assert rc == 2 and "is 256 bytes; a name (one part of a path) may be at most 255 bytes" in err


def test_path_limit_message_names_the_part_or_the_whole_path():
    from crbc.errors import NAME_MAX_BYTES, PATH_MAX_BYTES, path_limit_message

    assert path_limit_message("/tmp/ok.jsonl") is None
    said = path_limit_message("/tmp/" + "é" * 200 + "/x")  # 400 bytes in UTF-8, 200 characters
    assert said and f"is 400 bytes; a name (one part of a path) may be at most {NAME_MAX_BYTES} bytes" in said
    deep = "/" + "/".join(["d" * 200] * 25)
    said = path_limit_message(deep)
    assert said and f"a whole path must be under {PATH_MAX_BYTES:,} bytes" in said and len(said) < 300
