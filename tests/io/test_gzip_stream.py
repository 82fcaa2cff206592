"""Gzip text is read as a stream with a byte cap per line (crbc.io.budgets.Meter.gunzip_lines):
a bomb of one huge line is refused without ever being decoded whole, and ``crbc credit`` reads
``.jsonl.gz`` as docs/FORMATS.md says."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import tracemalloc
import zlib

import pytest

from crbc.cli.main import main
from crbc.errors import BudgetError
from crbc.io import budgets
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"


def _bomb(path, n_mb: int, head: bytes = b'{"uid": "g", "traj_uid": "0", "anchor_obs": "') -> None:
    """A gzip file of one JSON line whose text is ``n_mb`` MB of one letter (a few hundred KB stored)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"a" * budgets.MB
    with open(path, "wb") as f:
        f.write(c.compress(head))
        for _ in range(n_mb):
            f.write(c.compress(chunk))
        f.write(c.compress(b'", "success": 1}\n') + c.flush())


def test_streamed_lines_are_the_text_lines_and_corruption_is_named():
    text = b"".join(json.dumps({"k": i, "t": "x" * (i * 997 % 5000)}).encode() + b"\n" for i in range(3000)) + b"tail"
    m = budgets.Meter(budgets.CLI)
    assert list(m.gunzip_lines(gzip.compress(text), "t.gz")) == text.splitlines(keepends=True)
    assert m.decoded == len(text)
    with pytest.raises(BudgetError, match="t.gz: truncated gzip file"):
        list(budgets.Meter().gunzip_lines(gzip.compress(text)[:-100], "t.gz"))
    with pytest.raises(BudgetError, match="t.gz: not a valid gzip file"):
        list(budgets.Meter().gunzip_lines(b"\x1f\x8b" + b"\x00" * 50, "t.gz"))


def test_a_one_line_bomb_stops_at_the_line_budget_without_decoding_it_whole(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    _bomb(bomb, 300)  # 300 MB of text in one line
    assert bomb.stat().st_size < 2 * budgets.MB
    tracemalloc.start()
    try:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(["import", str(bomb), "-o", str(tmp_path / "out.jsonl")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2 and "bomb.jsonl.gz" in err.getvalue() and "line 1 is longer than 64 MB" in err.getvalue()
    assert peak < 250 * budgets.MB, peak  # the line budget and a chunk, never the 300 MB text
    assert not (tmp_path / "out.jsonl").exists()


def test_a_long_text_is_refused_at_its_line(tmp_path):
    small = budgets.Budget("test", file_bytes=10**7, decoded_bytes=10**8, rows=1000, text_chars=5000)
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"uid": "g", "traj_uid": "0", "anchor_obs": "' + b"z" * 6000
                                 + b'", "success": 1}\n'))
    from crbc.io.importers import read_source

    with pytest.raises(BudgetError, match=r"t.jsonl.gz:1: anchor_obs: a text of 6,000 characters"):
        read_source("steps", [gz], budget=small)


def test_credit_reads_a_gzip_rollout_file(tmp_path):
    gz = tmp_path / "worked.jsonl.gz"
    gz.write_bytes(gzip.compress(WORKED.read_bytes()))
    outs = []
    for src, name in ((WORKED, "plain.jsonl"), (gz, "gz.jsonl")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(["credit", str(src), "-o", str(tmp_path / name)])
        assert rc == 0, err.getvalue()
        outs.append((tmp_path / name).read_text())
    assert outs[0] == outs[1] and outs[0]
