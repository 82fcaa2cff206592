"""Functions simple enough to read: ruff's complexity rule (C901, mccabe, max 10) holds everywhere
except the functions listed here, each marked ``# noqa: C901`` where it is defined. The list only
shrinks: a new complex function fails, a listed one that grew more complex fails, and a listed
one that is now simple must leave the list (and lose its noqa), so the list is never longer
than what the code needs. Issue 51 started it at 36 functions."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.support.paths import ROOT

#: "path::function": its complexity when it was listed (it may fall, never rise)
ALLOWED = {
    "benchmarks/bench_app.py::interactions": 13,
    "benchmarks/bench_app_users.py::user_interactions": 21,
    "benchmarks/bench_streamlit_floor.py::measure": 13,
    "benchmarks/bench_worst_shapes.py::rollout_lines": 17,  # came with main's worst shapes
    "crbc/cli/audit.py::run": 11,
    "crbc/audit.py::audit_run": 13,
    "crbc/cli/truth.py::run_accuracy_cmd": 13,
    "crbc/integrations/recorder.py::batch_steps": 12,
    "crbc/io/audit_reader.py::read_audit": 11,
    "crbc/io/records.py::_record_problems": 13,
    "crbc/io/run_zip.py::read_run_zip": 13,
    "crbc/jobs/worker.py::poll": 12,
    "crbc/truth/accuracy.py::run_accuracy": 15,  # 14 before main's similarity axis
    "crbc/report/runs.py::runs_report": 14,  # came with main's run explorer
    "crbc/viz/audit.py::audit_grid_svg": 12,
    "crbc/viz/core/axes.py::axes_svg": 14,
    "experiments/similarity_table.py::world_table": 12,  # came with main's similarity table
    "tests/project/test_layers.py::_module_graph": 12,
    "tests/project/test_layers.py::_cycles": 11,
    "tests/run_analysis/test_health.py::slow_health": 12,
    "tests/support/upstream_graph.py::hgpo_advantage": 16,
    "ui/backups/side.py::render": 11,
    "ui/lesson/closure.py::render": 12,
    "ui/runs/drilldown.py::_iteration": 16,  # 13 before main's run explorer
    "ui/runs/compare.py::render": 20,  # came with main's run explorer
    "ui/runs/picker.py::chosen_runs": 13,  # 12 before main's run explorer
    "ui/runs/review.py::render": 11,  # came with main
    "ui/core/run_source.py::run_source": 12,
    "ui/core/sidebar.py::_generate_source": 13,  # 11 before main's worlds
    "ui/core/sidebar.py::sidebar": 16,
}
STARTED_AT = 36  #: complex functions when the rule was switched on (issue 51)


def _complex() -> dict[str, int]:
    """``path::function`` -> complexity of every function over 10, noqa comments ignored."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--ignore-noqa", "--select", "C901",
                          "--output-format", "json", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = {}
    for r in json.loads(out.stdout):
        name, n = re.search(r"`(.+?)` is too complex \((\d+) > \d+\)", r["message"]).groups()
        found[f"{r['filename'].removeprefix(str(ROOT) + '/')}::{name}"] = int(n)
    return found


def test_no_new_complex_function_and_none_grew():
    found = _complex()
    new = sorted(set(found) - set(ALLOWED))
    assert not new, f"simplify these (ruff C901, max 10), do not list them: {new}"
    grew = {k: (ALLOWED[k], n) for k, n in found.items() if n > ALLOWED[k]}
    assert not grew, f"listed functions grew more complex (listed, now): {grew}"


def test_the_list_only_shrinks():
    found = _complex()
    gone = sorted(set(ALLOWED) - set(found))
    assert not gone, f"now simple: remove them from ALLOWED and drop their '# noqa: C901': {gone}"
    assert len(ALLOWED) < STARTED_AT


def test_every_noqa_c901_marks_a_listed_function():
    marked = set()
    for path in ROOT.rglob("*.py"):
        if any(part.startswith(".") or part in ("node_modules", "__pycache__") for part in path.parts):
            continue
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"\s*(?:async\s+)?def\s+(\w+).*#\s*noqa:\s*C901", line)
            if m:
                marked.add(f"{path.relative_to(ROOT)}::{m.group(1)}")
    assert marked == set(ALLOWED), (sorted(marked - set(ALLOWED)), sorted(set(ALLOWED) - marked))
