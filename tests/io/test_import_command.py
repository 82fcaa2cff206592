"""``python -m crbc import`` and the importers: golden tables for every source, the anchor keys,
merge statistics, and every bad input named by file, row and column with nothing written.

Fixtures (tests/data/importers, tests/data/importers/PROVENANCE.md): the same two textarena Sokoban levels x
three sessions, as verl 0.9.1's ``_write_generations`` wrote them (``verl``), as
openpipe-art 0.5.18's ``Model.log`` wrote them (``art``), and built field by field for rLLM's
episode logger and verl-agent's step rows (neither writes from a PyPI package).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import crbc
from crbc.cli.main import main
from crbc.io.anchor_keys import AnchorKeyError, anchor_key, rekey
from crbc.io.importers import read_source, read_uploads
from crbc.io.importers.rows import ImportFormatError
from crbc.process import merge_stats
from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import ROOT

DATA = TEST_DATA / "importers"
ROWS = DATA / "verl_agent_rows" / "step-0003.jsonl"
BOARD = r"Current Board:\s*\n\n((?:[^\n]*\n)+?)\n"  # the last board shown
MOVE = r"\[(\w+)\]"
#: what the six sessions did (group order, then rollout order): actions and outcomes
ACTIONS = [[["up", "up"], ["down", "up", "up"], ["up", "invalid", "down"]],
           [["left", "left"], ["up", "left", "left"], ["left", "invalid", "up"]]]
SUCCESS = [[True, True, False], [True, False, False]]
#: verl-agent's rows mark the moves textarena warned about (is_action_valid False): invalid
ACTIONS_VALID = [[["up", "up"], ["invalid", "up", "up"], ["up", "invalid", "down"]],
                 [["left", "left"], ["up", "left", "invalid"], ["left", "invalid", "up"]]]


def cli(*args) -> tuple[int, str]:
    import contextlib

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["import", *map(str, args)])
    return rc, err.getvalue()


def summary(groups):
    return ([[[s.action for s in r.steps] for r in g] for g in groups],
            [[r.success for r in g] for g in groups])


def board_rows() -> list[dict]:
    return [json.loads(x) for x in ROWS.read_text().splitlines()]


def write_table(path: Path, rows: list[dict]) -> Path:
    """The rows as JSON Lines, CSV or Parquet, by the file's suffix."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


STEP_KW = dict(success_threshold=1.0, anchor=BOARD, action=MOVE)


def steps_columns():
    from crbc.io.importers.rows import parse_columns_map
    return parse_columns_map(["action=response"])


# ------------------------------------------------------------------------------------------
# golden tables


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".jsonl.gz"])
def test_step_table_in_every_format(tmp_path, suffix):
    path = tmp_path / f"rows{suffix}"
    if suffix == ".jsonl.gz":
        path.write_bytes(gzip.compress(ROWS.read_bytes()))
    else:
        write_table(path, board_rows())
    got = read_source("steps", [path], columns=steps_columns(), **STEP_KW)
    assert list(got) == [None]
    assert summary(got[None]) == (ACTIONS_VALID, SUCCESS)
    g = got[None][0]
    assert g.rollouts[0].steps[0].anchor == "# # # # # #\n# _ _ O _ #\n# # _ _ _ #\n# # # X _ #\n# # # P _ #\n# # # # # #\n"
    assert g.rollouts[0].steps[0].obs.startswith("Current Board:")  # the full text is kept
    assert [r.score for r in g] == [1.0, 1.0, 0.0]
    assert [s.reward for s in g.rollouts[0].steps] == [0.0, 1.0]


def test_every_source_gives_the_same_groups_and_credits(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "is_action_valid"} for r in board_rows()]
    steps = read_source("steps", [write_table(tmp_path / "rows.jsonl", rows)], columns=steps_columns(),
                        **STEP_KW)[None]
    verl = read_source("verl", [DATA / "verl_rollout_dump"], **STEP_KW)[3]
    art = read_source("art", [DATA / "art"], anchor=BOARD, action=MOVE)[3]
    rllm = read_source("rllm", [DATA / "rllm_episode_log"])[3]
    for groups in (steps, verl, art):
        assert summary(groups) == (ACTIONS, SUCCESS)
    assert summary(rllm) == ([ACTIONS[0][::2]], [SUCCESS[0][::2]])  # sessions 0 and 2 of level 0
    ref = crbc.compute("crbc", steps).advantage_N
    for groups in (verl, art):
        np.testing.assert_allclose(crbc.compute("crbc", groups).advantage_N, ref, atol=1e-12)
    assert merge_stats(steps) == merge_stats(verl) == merge_stats(art)


def test_verl_single_output_sessions_are_one_step_each():
    got = read_source("verl", [DATA / "verl_rollout_dump_single_output" / "3.jsonl"], success_threshold=1.0)
    assert [[len(r) for r in g] for g in got[3]] == [[1, 1, 1], [1, 1, 1]]


def test_several_iterations_make_a_run_folder(tmp_path):
    rows = board_rows()
    table = [dict(r, global_step=it) for it in (4, 5) for r in rows]
    src = write_table(tmp_path / "rows.jsonl", table)
    rc, err = cli(src, "-o", tmp_path / "one.jsonl", "--map", "action=response", "--success-threshold", 1)
    assert rc == 2 and "2 iterations" in err and not (tmp_path / "one.jsonl").exists()
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"run-{fmt}"
        rc, err = cli(src, "-o", out, "--map", "action=response", "--action-regex", MOVE,
                      "--anchor-regex", BOARD, "--success-threshold", 1, "--format", fmt)
        assert rc == 0, err
        run = crbc.read_run(out)
        assert run.iterations_with_rollouts == (4, 5) and [m["iteration"] for m in run.metrics] == [4, 5]
        assert summary(run.rollouts(5)) == (ACTIONS_VALID, SUCCESS)
        assert run.rollouts(4)[0].rollouts[0].meta["iteration"] == 4
        assert [p.name for p in out.iterdir()] and not list(tmp_path.glob(".run-*"))


def test_one_iteration_to_a_rollout_file(tmp_path):
    out = tmp_path / "groups.jsonl"
    rc, err = cli(DATA / "art", "--from", "art", "-o", out, "--anchor-regex", BOARD, "--action-regex", MOVE)
    assert rc == 0, err
    assert summary(crbc.read_rollouts(out)) == (ACTIONS, SUCCESS)


# ------------------------------------------------------------------------------------------
# anchor keys and merge statistics


def test_anchor_keys():
    text = "[GAME] board A\n[Player] [up]\n[GAME] board B\n"
    assert anchor_key(None)(text) == text
    assert anchor_key(r"board (\w)")(text) == "B"  # the last match, its first group
    assert anchor_key(re.compile(r"board \w"))(text) == "board B"  # no group: the whole match
    assert anchor_key(lambda t: t[-8:])(text) == "board B\n"
    with pytest.raises(AnchorKeyError, match="does not match"):
        anchor_key(r"tile (\d)")(text)


def test_rekey_and_merge_stats_by_hand():
    S = crbc.Step
    hist = lambda *b: "".join(f"[GAME] {x}\n" for x in b)  # noqa: E731  (history-carrying text)
    g = crbc.RolloutGroup("g", (
        crbc.Rollout("g", 0, (S(hist("a"), "x"), S(hist("a", "b"), "y")), True),
        crbc.Rollout("g", 1, (S(hist("a"), "x"), S(hist("a", "c"), "y"), S(hist("a", "c", "b"), "z")), False)))
    exact = merge_stats([g])  # anchors: a, ab, ac, acb; only "a" is shared: 2 of 5 steps
    assert (exact.n_anchors, exact.n_shared_anchors, exact.shared_step_share) == (4, 1, 0.4)
    keyed = rekey([g], r"\[GAME\] (\w)\n$")  # the current state only: a, b, c
    st = merge_stats(keyed)
    assert (st.n_anchors, st.n_shared_anchors, st.shared_step_share) == (3, 2, 0.8)
    assert keyed[0].rollouts[1].steps[2].obs == hist("a", "c", "b")
    nothing = merge_stats([crbc.RolloutGroup("g", (g.rollouts[0],))])
    assert nothing.shared_step_share == 0.0 and nothing.n_anchors == 2


# ------------------------------------------------------------------------------------------
# bad input: exit 2, one line naming file, row and column, nothing written


def edited(rows, i, **changes):
    rows = [dict(r) for r in rows]
    rows[i].update(changes)
    for k, v in changes.items():
        if v is None:
            del rows[i][k]
    return rows


def step_rows():
    """The table with a step_index column (0.. per trajectory in row order) and a success flag."""
    rows, seen = board_rows(), {}
    for r in rows:
        r["step_index"] = seen.get(r["traj_uid"], 0)
        seen[r["traj_uid"]] = r["step_index"] + 1
        r["success"] = r["episode_rewards"] >= 1
    return rows


BAD = [  # (why, rows, extra args, row named, column named, words)
    ("missing column", [{k: v for k, v in r.items() if k != "anchor_obs"} for r in step_rows()], [],
     1, "anchor_obs", "required column is missing"),
    ("missing on one row", edited(step_rows(), 4, anchor_obs=None), [], 5, "anchor_obs", "missing on this row"),
    ("success differs", edited(step_rows(), 1, success=False), [], 2, "success", "differs within trajectory"),
    ("step gap", edited(step_rows(), 4, step_index=3), [], 5, "step_index", "jump from 1 to 3"),
    ("step twice", edited(step_rows(), 4, step_index=1), [], 5, "step_index", "appears twice"),
    ("negative step", edited(step_rows(), 4, step_index=-1), [], 5, "step_index", "non-negative integer"),
    ("regex no match", edited(step_rows(), 6, anchor_obs="no board here"), ["--anchor-regex", BOARD],
     7, "anchor_obs", "does not match"),
    ("non-finite reward", edited(step_rows(), 2, rewards=float("nan")), [], 3, "rewards", "non-finite"),
    ("text score", edited(step_rows(), 2, episode_rewards="lots"), [], 3, "episode_rewards", "must be a number"),
]


@pytest.mark.parametrize("why,rows,extra,row,column,words", BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_bad_table_named_by_file_row_and_column(tmp_path, why, rows, extra, row, column, words, suffix):
    if suffix == ".csv" and why == "missing on one row":
        rows = edited(rows, 4, anchor_obs="")  # a CSV cell cannot be absent, only empty
    src = write_table(tmp_path / f"rows{suffix}", rows)
    out = tmp_path / "out"
    rc, err = cli(src, "-o", out, *extra)
    assert rc == 2
    line = err.strip()
    assert "\n" not in line and str(src) in line and f"row {row}:" in line and f"column {column!r}" in line, line
    assert words in line
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [src.name]


def test_nan_constant_in_json_and_bad_json_named(tmp_path):
    src = tmp_path / "rows.jsonl"
    lines = [json.dumps(r) for r in step_rows()]
    lines[3] = lines[3].replace('"rewards": 0.0', '"rewards": NaN')
    src.write_text("\n".join(lines) + "\n")
    rc, err = cli(src, "-o", tmp_path / "o.jsonl")
    assert rc == 2 and f"{src}: row 4:" in err and "non-finite" in err
    src.write_text("\n".join(lines[:2] + ["{not json"]) + "\n")
    rc, err = cli(src, "-o", tmp_path / "o.jsonl")
    assert rc == 2 and f"{src}: row 3:" in err and not (tmp_path / "o.jsonl").exists()


def test_bom_and_crlf_read_fine(tmp_path):
    rows = step_rows()
    plain = write_table(tmp_path / "a.csv", rows)
    bom = tmp_path / "b.csv"
    assert plain.read_bytes().count(b"\r\n") == len(rows) + 1  # csv writes CRLF record ends
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    jl = tmp_path / "c.jsonl"
    jl.write_bytes(b"\xef\xbb\xbf" + write_table(tmp_path / "d.jsonl", rows).read_bytes().replace(b"\n", b"\r\n"))
    cols = steps_columns()
    ref = read_source("steps", [plain], columns=cols)
    for p in (bom, jl):
        got = read_source("steps", [p], columns=cols)
        assert summary(got[None]) == summary(ref[None])
        assert got[None][0].rollouts[0].steps[0].anchor == rows[0]["anchor_obs"]  # "\n" kept, no "\r"


def test_parquet_that_is_not_parquet_and_a_file_too_big(tmp_path):
    fake = tmp_path / "rows.parquet"
    fake.write_text("uid,traj_uid\n")
    rc, err = cli(fake, "-o", tmp_path / "o.jsonl")
    assert rc == 2 and str(fake) in err and "not a Parquet file" in err
    big = write_table(tmp_path / "rows.jsonl", step_rows())
    rc, err = cli(big, "-o", tmp_path / "o.jsonl", "--max-bytes", 1000)
    assert rc == 2 and str(big) in err and "over the limit" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl", "rows.parquet"]


def test_sources_refuse_what_they_cannot_group(tmp_path):
    v0 = tmp_path / "3.jsonl"  # verl's legacy trainer: no uid
    v0.write_text(json.dumps({"input": "x", "output": "y", "score": 1.0, "step": 3}) + "\n")
    with pytest.raises(ImportFormatError, match=r"row 1: column 'uid': .*use_v1"):
        read_source("verl", [v0], success_threshold=1.0)
    rc, err = cli(DATA / "verl_rollout_dump", "--from", "verl", "-o", tmp_path / "o.jsonl")
    assert rc == 2 and "--success-threshold" in err
    rc, err = cli(ROWS, "--from", "verl", "--map", "anchor=x", "-o", tmp_path / "o.jsonl")
    assert rc == 2 and "--map applies to --from steps only" in err
    rc, err = cli(ROWS, "-o", tmp_path / "o.jsonl", "--anchor-regex", "(")
    assert rc == 2 and "not a valid regular expression" in err


def test_an_existing_output_folder_is_not_touched(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    rc, err = cli(ROWS, "-o", out, "--map", "action=response", "--success-threshold", 1)
    assert rc == 2 and "not an empty folder" in err and [p.name for p in out.iterdir()] == ["keep.txt"]


def test_uploads_read_like_files_and_errors_name_the_upload():
    got = read_uploads("art", {"0003.parquet": (DATA / "art" / "trajectories" / "train" / "0003.parquet").read_bytes()},
                       anchor=BOARD, action=MOVE)
    assert summary(got[3]) == (ACTIONS, SUCCESS)
    assert got[3][0].rollouts[0].meta["source"] == "0003.parquet"
    bad = "".join(json.dumps(r) + "\n" for r in edited(step_rows(), 1, success=False)).encode()
    with pytest.raises(ImportFormatError) as e:
        read_uploads("steps", {"my rows.jsonl": bad})
    assert str(e.value).startswith("my rows.jsonl: row 2: column 'success':")


def test_the_command_as_a_subprocess(tmp_path):
    import subprocess
    import sys

    root = ROOT
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "crbc", "import", str(DATA / "verl_rollout_dump"), "--from", "verl",
                        "-o", str(out), "--success-threshold", "1", "--anchor-regex", BOARD, "--action-regex", MOVE,
                        "--format", "parquet"], capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    assert summary(crbc.read_run(out).rollouts(3)) == (ACTIONS, SUCCESS)
    r = subprocess.run([sys.executable, "-m", "crbc", "import", str(ROWS), "-o", str(tmp_path / "x.jsonl")],
                       capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "column 'success'" in r.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_a_callable_anchor_key_and_a_threshold_over_a_success_column(tmp_path):
    board = lambda text: text.split("\n\n")[1]  # noqa: E731  (the lines between the blank lines)
    by_regex = read_source("steps", [ROWS], columns=steps_columns(), **STEP_KW)[None]
    by_callable = read_source("steps", [ROWS], columns=steps_columns(), anchor=board, action=MOVE,
                              success_threshold=1.0)[None]
    assert [[s.anchor.strip() for s in r.steps] for g in by_regex for r in g] == \
        [[s.anchor.strip() for s in r.steps] for g in by_callable for r in g]
    rows = edited(step_rows(), 1, success=False)  # would differ within its trajectory...
    got = read_source("steps", [write_table(tmp_path / "r.jsonl", rows)], columns=steps_columns(),
                      success_threshold=1.0)  # ...but the threshold decides, the column is not read
    assert summary(got[None])[1] == SUCCESS
