"""One registration point for importers: a toy importer registered once is a ``--from`` choice
of the ``import`` command, a format of the studio's upload, and reads through both."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from crbc.cli import import_ as import_command
from crbc.cli.main import main
from crbc.errors import FormatError
from crbc.io.importers import Importer, importers, read_uploads, register_importer
from crbc.io.importers.registry import unregister_importer
from crbc.io.rollouts import Rollout, RolloutGroup, Step, read_rollouts

LABEL = "toy corridor log (.toy)"


def read_toy(paths, *, anchor=None, action=None, success_threshold=None, limit=None):
    """One group per file: a line per rollout, ``s0>right s1>right 1`` (anchor>action ... success)."""
    groups = []
    for path in paths:
        rollouts = []
        for i, line in enumerate(Path(path).read_text().splitlines()):
            *moves, ok = line.split()
            if ok not in ("0", "1"):
                raise FormatError("the last word is the outcome, 0 or 1", str(path), i + 1, "success")
            steps = tuple(Step(*m.split(">")) for m in moves)
            rollouts.append(Rollout(Path(path).stem, i, steps, ok == "1"))
        groups.append(RolloutGroup(Path(path).stem, tuple(rollouts)))
    return {None: groups}


@pytest.fixture
def toy():
    imp = register_importer(Importer("toy", "a toy corridor log, a line per rollout", LABEL, ("toy",), read_toy))
    yield imp
    unregister_importer("toy")


def _choices() -> list[str]:
    parser = argparse.ArgumentParser()
    import_command.add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "source"]
    assert "toy: a toy corridor log" in action.help or "toy" not in action.choices
    return list(action.choices)


def test_a_registered_importer_is_a_command_choice_and_an_upload_format(toy):
    from ui.core import upload

    assert "toy" in _choices() and [i.name for i in importers()][:5] == ["rollout", "steps", "verl", "rllm", "art"]
    assert upload.formats()["toy"] == (LABEL, ["toy"], toy)
    assert list(upload.formats())[:2] == ["rollout", "steps"]
    unregister_importer("toy")
    assert "toy" not in _choices() and "toy" not in upload.formats()


def test_the_command_and_the_upload_read_through_it(toy, tmp_path):
    src = tmp_path / "corridor.toy"
    src.write_text("s0>right s1>right 1\ns0>left 0\n")
    assert main(["import", str(src), "-o", str(tmp_path / "out.jsonl"), "--from", "toy"]) == 0
    (g,) = read_rollouts(tmp_path / "out.jsonl")
    assert [r.success for r in g.rollouts] == [True, False] and g.rollouts[0].steps[1].anchor == "s1"
    (up,) = read_uploads(toy, {"mine.toy": src.read_bytes()})[None]
    assert [len(r.steps) for r in up.rollouts] == [2, 1]
    with pytest.raises(FormatError, match=r"^mine\.toy:2"):  # the upload's name, not the temporary path
        read_uploads("toy", {"mine.toy": b"s0>right 1\ns0>up 7\n"})


def test_the_studio_offers_it(toy, tmp_path, app):
    at = app(samples=tmp_path)
    at.radio(key="source").set_value("upload").run()
    assert not at.exception
    assert LABEL in at.selectbox(key="upload_kind").options
