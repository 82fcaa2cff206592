"""ui.core.nav_pages: the studio's st.Page objects are built once while their folders do not
change, and every script run gets copies (no path resolution per run, nothing shared between
runs); ui.core.state.sample_files lists its folder again only when the folder changes."""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui.core import nav_pages, state


def _script(folder: str, log: str) -> None:
    import json
    from pathlib import Path

    import streamlit as st

    from ui.core import nav_pages

    specs = [(str(Path(folder) / "pages" / n), n.title(), ":material/home:", n.split(".")[0])
             for n in ("one.py", "two.py", "three.py")]
    got = nav_pages.pages(Path(folder), specs, specs[0][0])
    got[0]._can_be_called = True  # what st.navigation sets on the page it runs
    again = nav_pages.pages(Path(folder), specs, specs[0][0])
    with open(log, "a") as f:
        f.write(json.dumps({"titles": [p.title for p in got], "urls": [p.url_path for p in got],
                            "default": [p._default for p in got], "ids": [id(p) for p in got],
                            "distinct": all(a is not b for a, b in zip(got, again, strict=True)),
                            "leaked": any(p._can_be_called for p in again),
                            "paths": [str(p._page) for p in got]}) + "\n")
    st.write("ok")


def test_pages_are_built_once_per_folder_state_and_copied_for_each_run(tmp_path, monkeypatch):
    import json

    pages_dir = tmp_path / "pages"
    pages_dir.mkdir()
    for n in ("one.py", "two.py"):  # three.py does not exist yet
        (pages_dir / n).write_text("import streamlit as st\nst.write('page')\n")
    builds = []
    real = nav_pages._build
    monkeypatch.setattr(nav_pages, "_build", lambda *a: builds.append(1) or real(*a))
    log = tmp_path / "log.jsonl"
    at = AppTest.from_function(_script, args=(str(tmp_path), str(log)), default_timeout=60).run()
    assert not at.exception
    at.run()
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 2 and len(builds) == 1  # two runs, four calls, one build
    first = runs[0]
    assert first["titles"] == ["One.Py", "Two.Py"] and first["urls"] == ["", "two"]  # the default page is at the root
    assert first["default"] == [True, False]
    assert first["paths"] == [str((pages_dir / n).resolve()) for n in ("one.py", "two.py")]
    assert all(r["distinct"] for r in runs)  # every call hands out fresh objects
    assert not any(r["leaked"] for r in runs)  # what one run sets stays on its own copies
    (pages_dir / "three.py").write_text("import streamlit as st\n")  # the folder changes
    os.utime(pages_dir, ns=(10**18, 10**18))  # a coarse clock could leave the mtime unchanged
    at.run()
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(builds) == 2 and runs[-1]["urls"] == ["", "two", "three"]


def test_sample_files_are_listed_again_only_when_the_folder_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path)
    (tmp_path / "b.jsonl").write_text("{}\n")
    listed = []
    real = state._list_samples
    monkeypatch.setattr(state, "_list_samples", lambda d: listed.append(d) or real(d))
    assert [p.name for p in state.sample_files()] == ["b.jsonl"]
    assert [p.name for p in state.sample_files()] == ["b.jsonl"]
    assert len(listed) == 1
    (tmp_path / "a.jsonl").write_text("{}\n")
    os.utime(tmp_path, ns=(10**18, 10**18))  # a coarse clock could leave the mtime unchanged
    assert [p.name for p in state.sample_files()] == ["a.jsonl", "b.jsonl"]
    assert len(listed) == 2
    monkeypatch.setattr(state, "SAMPLES_DIR", Path(tmp_path / "missing"))
    assert state.sample_files() == []
