"""A recorded run travels whole (issue 48): the recorder's own ``iter-NNNN.parquet`` is read by
every reader, ``crbc report`` takes the anchor key (``--anchor``, else run.json's
``config.anchor_key``) and names it, ``--group`` on a run writes that group or exits 2, verl's
metric names are drawn, the group report carries the trainer row, the run has a real name and
seed, and a trainer's environment without pandas gets one line naming ``crbc[report]``.

The runs are recorded as a verl-agent user records one (devtools/textarena_run.py: textarena
Sokoban transcripts, real ``DataProto`` batches, ``RunRecorder`` into the documented recipe's
``<default_local_dir>/crbc-run``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textarena")
pytest.importorskip("torch")
pytest.importorskip("verl")

import crbc  # noqa: E402
from crbc.cli.main import main  # noqa: E402
from crbc.io.anchor_keys import AnchorKeyError, regex_key, rekey  # noqa: E402
from crbc.io.rollout_files import read_columns  # noqa: E402
from crbc.process import merge_profile  # noqa: E402
from crbc.report import run_report  # noqa: E402
from devtools.textarena_run import BOARD, record_run  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """``plain``: transcripts recorded without a key (then audited with BOARD); ``keyed``: recorded
    with BOARD and a verl-like config (project, experiment, seed)."""
    root = tmp_path_factory.mktemp("recorded")
    plain = record_run(root / "checkpoints" / "sokoban" / "exp1" / "crbc-run", iterations=2, groups=2, rollouts=4)
    assert main(["audit", str(plain), "--anchor", BOARD, "--workers", "1"]) == 0
    keyed = record_run(root / "keyed" / "crbc-run", iterations=2, groups=2, rollouts=4, anchor=BOARD,
                       trainer_config={"trainer": {"project_name": "sokoban", "experiment_name": "gigpo-board",
                                                   "seed": 7}})
    return {"plain": plain, "keyed": keyed}


def _report(args: list[str], out: Path) -> str:
    assert main(["report", *args, "-o", str(out), "-q"]) == 0
    return out.read_text(encoding="utf-8")


def test_the_recorders_parquet_is_read_by_every_reader(runs, tmp_path, capsys):
    src = runs["plain"] / "rollouts" / "iter-0001.parquet"
    groups = crbc.read_rollouts(src)
    assert [g.group for g in groups] == ["sokoban-level-1", "sokoban-level-2"]
    assert any(s.trainer_advantage is not None for g in groups for r in g.rollouts for s in r.steps)
    renamed = tmp_path / "iter-0001.jsonl"  # by the magic bytes, not the name
    shutil.copy(src, renamed)
    assert [g.group for g in crbc.read_rollouts(renamed)] == [g.group for g in groups]
    assert read_columns(renamed).n_steps == sum(len(r.steps) for g in groups for r in g.rollouts)
    assert main(["credit", str(src), "-o", str(tmp_path / "c.jsonl")]) == 0
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == sum(len(g) for g in groups)
    html = _report([str(src), "--anchor", BOARD], tmp_path / "p.html")
    assert "sokoban-level-1" in html and "The trainer" in html


def test_the_run_report_takes_the_key_and_names_it(runs, tmp_path):
    plain = runs["plain"]
    keyed_groups = rekey(crbc.read_run(plain).rollouts(1), BOARD)
    line = merge_profile(keyed_groups).line()
    html = _report([str(plain), "--anchor", BOARD], tmp_path / "r.html")
    assert "Source: audit.parquet, computed with the anchor key" in html  # the keyed audit, used
    assert line in html  # the groups are keyed as the curves are
    assert f"anchor key: <b>{BOARD.replace(chr(92), chr(92))}" in html.replace("&#x27;", "'")
    exact = _report([str(plain)], tmp_path / "e.html")  # no key anywhere: the exact text, said so
    assert "anchor key: <b>exact text</b>" in exact
    assert "audit.parquet was computed with the anchor key" in exact and "so it is not used" in exact
    assert merge_profile(crbc.read_run(plain).rollouts(1)).line() in exact
    # the studio's download passes its sidebar key the same way
    assert line in run_report(plain, anchor=BOARD, top=1)


def test_a_run_recorded_with_a_key_is_reported_with_it(runs, tmp_path):
    keyed = runs["keyed"]
    html = _report([str(keyed)], tmp_path / "k.html")
    assert html.count("anchor key: <b>(?s)(Current Board:") >= 2  # the run's facts and each group
    assert merge_profile(crbc.read_run(keyed).rollouts(1)).line() in html  # not keyed a second time
    assert "run: <b>sokoban/gigpo-board · seed 7</b>" in html and "seed: <b>7</b>" in html  # Run.label


def test_group_on_a_run_writes_that_group_or_exits_2(runs, tmp_path, capsys):
    plain = runs["plain"]
    html = _report([str(plain), "--group", "1", "--anchor", BOARD], tmp_path / "g.html")
    assert "sokoban-level-2" in html and "Audit over iterations" not in html
    assert "The trainer&#x27;s advantage" in html or "The trainer's advantage" in html  # the trainer row
    html0 = _report([str(plain), "--group", "sokoban-level-1", "--iteration", "0"], tmp_path / "g0.html")
    assert "iteration 0" in html0 and "sokoban-level-1" in html0
    for bad in (["--group", "9"], ["--group", "0", "--iteration", "5"]):
        out = tmp_path / "bad.html"
        assert main(["report", str(plain), *bad, "-o", str(out)]) == 2
        assert not out.exists()
    err = capsys.readouterr().err
    assert "no group '9'" in err and "iteration 5 has no saved rollouts" in err


def test_verl_metric_names_are_drawn(runs, tmp_path):
    html = _report([str(runs["plain"]), "--anchor", BOARD, "--top", "0"], tmp_path / "m.html")
    for name in ("episode/success_rate", "critic/advantages/mean", "crbc/shared_step_share"):
        assert name in html
    assert "critic/advantages/max" not in html  # extremes left out
    assert "none of the usual trainer metrics" not in html


def test_recorded_runs_get_a_real_name():
    from crbc.integrations.run_meta import run_name, trainer_facts

    cfg = {"trainer": {"project_name": "p", "experiment_name": "e"}, "data": {"seed": 3}}
    assert trainer_facts(cfg) == {"project": "p", "experiment": "e", "seed": 3}
    assert run_name(Path("/x/ckpt/p/e/crbc-run"), {}) == "e/crbc-run"
    assert run_name(Path("/x/mine"), {}) == "mine"
    assert run_name(Path("/x/crbc-run"), {"experiment": "e"}) == "e"


def test_plain_run_is_named_after_its_experiment_folder(runs):
    run = crbc.read_run(runs["plain"])
    assert run.name == "exp1/crbc-run"


def test_a_regex_without_dotall_gets_a_hint():
    with pytest.raises(AnchorKeyError, match=re.escape("start the pattern with (?s)")):
        regex_key(r"Board:(.*)Moves")("Board:\n#@$.#\nMoves")
    with pytest.raises(AnchorKeyError) as e:
        regex_key(r"Board:(.*)Moves")("no board here")
    assert "(?s)" not in str(e.value)


def test_no_pandas_gives_one_line_naming_the_report_extra(tmp_path):
    """A trainer's environment with crbc[parquet] only: exit 2, one line, crbc[report], never studio."""
    code = ("import sys; sys.modules['pandas'] = None\n"
            "from crbc.cli.main import main\n"
            f"sys.exit(main(['report', {str(ROOT / 'sample_rollouts' / 'worked-example.jsonl')!r}, "
            f"'-o', {str(tmp_path / 'x.html')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "crbc[report]" in p.stderr and "studio" not in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
