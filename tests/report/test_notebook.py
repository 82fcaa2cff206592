"""docs/notebook.ipynb runs under nbclient on a real ipykernel (offline, a kernel spec made for
the test that runs this Python with this checkout first on its path); no output cell may hold an
error, and the rich displays are inline SVG without script."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.paths import ROOT

NOTEBOOK = ROOT / "docs" / "notebook.ipynb"


@pytest.mark.slow
def test_the_docs_notebook_runs_without_an_error(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    spec = tmp_path / "kernels" / "crbc-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "crbc test", "language": "python",
        "env": {"PYTHONPATH": str(ROOT), "MPLBACKEND": "agg"}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="crbc-test",
                                     resources={"metadata": {"path": str(ROOT / "docs")}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
    html = [o.data["text/html"] for o in outputs if o.output_type == "execute_result" and "text/html" in o.data]
    drawings = [h for h in html if "<svg" in h]
    assert len(drawings) >= 3, "group, process and credits draw themselves"
    assert all("<script" not in h.lower() for h in drawings)
    assert any("RolloutGroup sokoban-6x6-v0/seed-1" in h for h in drawings)
    assert any("report.html:" in o.get("text", "") for o in outputs if o.output_type == "stream")
