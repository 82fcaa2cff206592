"""A run uploaded as a .zip is read in a worker (crbc.sandbox.run_archive): the same run as the
plain reader, bad archives as one line, and nothing parsed on the server afterwards."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import crbc.io.run_writer as RW
import crbc.io.runs as R
from crbc.io import budgets
from crbc.io.rollouts import read_rollouts
from crbc.sandbox.run_archive import read_archive_limited
from crbc.sandbox.upload import Limits
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"


def _zipped(path: Path, iterations: int = 3, bad_line: bool = False) -> bytes:
    w = RW.RunWriter.create(path, {"name": path.name, "config": {"estimator": "crbc", "seed": 0}})
    for it in range(iterations):
        w.write_rollouts(it, read_rollouts(WORKED))
        w.append_metrics({"iteration": it, "success_rate": 0.1 * it})
    if bad_line:
        with open(path / "rollouts" / "iter-0001.jsonl", "a") as f:
            f.write('{"group": "g", "rollout": 0}\n')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(path.rglob("*")):
            if p.is_file():
                z.write(p, f"{path.name}/{p.relative_to(path)}")
    return buf.getvalue()


def test_an_archive_read_in_the_worker_is_the_run_the_plain_reader_gives(tmp_path):
    data = _zipped(tmp_path / "myrun")
    run, err = read_archive_limited("myrun.zip", data)
    plain = R.read_run_zip(data, "myrun.zip")
    assert err is None and run.name == "myrun" and run.metrics == plain.metrics
    assert run.iterations_with_rollouts == (0, 1, 2) and run._zip is None and run._parquet
    assert [run.rollouts(it) for it in range(3)] == [plain.rollouts(it) for it in range(3)]
    assert R.renamed(run, "other").rollouts(2) == plain.rollouts(2)


def test_a_bad_archive_is_one_line_naming_its_file_and_line(tmp_path):
    run, err = read_archive_limited("bad.zip", _zipped(tmp_path / "bad", bad_line=True))
    assert run is None and err.startswith("bad.zip/bad/rollouts/iter-0001.jsonl:") and "Traceback" not in err
    run, err = read_archive_limited("x.zip", b"hello")
    assert run is None and err.startswith("x.zip: not a zip archive")
    tight = Limits(budget=budgets.Budget(**{**budgets.STUDIO.__dict__, "decoded_bytes": 1000}))
    run, err = read_archive_limited("big.zip", _zipped(tmp_path / "big"), tight)
    assert run is None and "big.zip" in err and "budget" in err
