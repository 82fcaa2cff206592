"""The collector's pause (crbc.io.gc_pause): off inside, back on after, whatever the ending, the
nesting or the threads; a program that turned it off keeps it off; the readers that pause it
leave it as they found it."""

from __future__ import annotations

import gc
import json
import threading

import pytest

from crbc.io.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_off_inside_on_after_also_after_an_error():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), gc_paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_nested_pauses_end_with_the_outermost():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_program_that_turned_it_off_keeps_it_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_two_threads_overlapping_the_collector_comes_back_when_the_last_ends():
    """Thread A pauses, B pauses, A ends (still off: B is inside), B ends (on)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with gc_paused():
            a_in.set()
            b_in.wait(5)
        seen["after_a"] = gc.isenabled()
        a_out.set()

    def b():
        a_in.wait(5)
        with gc_paused():
            b_in.set()
            a_out.wait(5)
            seen["inside_b_after_a"] = gc.isenabled()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert seen == {"after_a": False, "inside_b_after_a": False}
    assert gc.isenabled()


def test_the_readers_that_pause_it_leave_it_on_also_when_they_refuse(tmp_path):
    from crbc.errors import FormatError
    from crbc.io.importers import read_source
    from crbc.io.parquet_rollouts import read_parquet_rollouts, write_parquet_rollouts
    from crbc.io.rollouts import read_rollouts

    good = tmp_path / "g.jsonl"
    good.write_text(json.dumps({"group": "g", "rollout": 0, "steps": [{"anchor": "a", "action": "x"}],
                                "success": True}) + "\n")
    groups = read_rollouts(good)
    write_parquet_rollouts(tmp_path / "g.parquet", groups)
    assert read_parquet_rollouts(tmp_path / "g.parquet") == groups and gc.isenabled()
    assert read_source("rollout", [good])[None] == groups and gc.isenabled()
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"group": "g"}\n')
    with pytest.raises(FormatError):
        read_source("rollout", [bad])
    assert gc.isenabled()
