"""Import rules of docs/ARCHITECTURE.md: the numeric core and the credit CLI load no heavy framework."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

HEAVY = ("torch", "transformers", "streamlit", "plotly", "pyvis")


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    return {m.split(".")[0] for m in json.loads(r.stdout.splitlines()[-1])}


@pytest.mark.parametrize("code", [
    "import crbc",
    "import crbc.estimators.registry, crbc.estimators.closure, crbc.process, crbc.io.rollouts, crbc.cli.credit",
    "import crbc.truth, crbc.truth.accuracy, crbc.cli.truth",
    "from crbc.cli.main import main\nimport contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n"
    "    main(['credit', 'sample_rollouts/worked-example.jsonl'])\n    main(['estimators'])",
    "import crbc.integrations, crbc.integrations.step_rows, crbc.integrations.adapters, crbc.estimators.baselines",
    "import crbc.io.importers.steps, crbc.io.importers.verl_dump, crbc.io.importers.rllm, crbc.io.importers.art, "
    "crbc.io.importers.output, crbc.io.parquet_rollouts, crbc.cli.import_",
])
def test_core_loads_no_heavy_framework(code):
    assert not (loaded_after(code) & set(HEAVY))


_CREDIT = ("from crbc.cli.main import main\nimport contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n"
           "    assert main(['credit', 'sample_rollouts/worked-example.jsonl'{}]) == 0")


@pytest.mark.parametrize("extra", ["", ", '--estimator', 'gigpo'", ", '--estimator', 'visit_local'",
                                   ", '--estimator', 'grpo'", ", '--depth', '3'"])
def test_credit_command_loads_no_scipy(extra):
    """Dense blocks solve every group of at most MAX_DENSE_BLOCK anchors: no scipy import."""
    assert "scipy" not in loaded_after(_CREDIT.format(extra))


def test_scipy_is_loaded_when_needed():
    """The check above can fail: shortest_path (dijkstra) and a group too large for the dense
    path do import scipy, lazily."""
    assert "scipy" in loaded_after(_CREDIT.format(", '--estimator', 'shortest_path'"))
    big = ("import crbc, crbc.estimators.closure as C\nfrom crbc.io.rollouts import Rollout, RolloutGroup, Step\n"
           "steps = tuple(Step(f's{i}', 'a') for i in range(C.MAX_DENSE_BLOCK + 1))\n"
           "crbc.compute('crbc', [RolloutGroup('g', (Rollout('g', 0, steps, True),))])")
    assert "scipy" in loaded_after(big)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_streamlit_only_in_app_and_pages():
    for path in (ROOT / "crbc").rglob("*.py"):
        assert "streamlit" not in _imports(path), f"{path} imports streamlit"


def test_no_plotly_nor_pyvis():
    """Neither is a dependency (requirements.txt): colours are crbc.viz.core.palette, the anchor graph
    is crbc.viz.anchor_graph's own page around the vendored vis-network."""
    for folder in ("crbc", "ui", "pages", "devtools", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            bad = _imports(path) & {"plotly", "pyvis"}
            assert not bad, f"{path} imports {bad}"
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    pinned = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    names = {re.split(r"[<>=!~\[ ;]", r.strip(), maxsplit=1)[0].lower() for r in declared + pinned if r.strip()}
    assert "numpy" in names and not names & {"plotly", "pyvis"}


def test_torch_only_in_policy_generate_train():
    allowed = {"policy", "train"}
    for path in (ROOT / "crbc").rglob("*.py"):
        rel = path.relative_to(ROOT / "crbc").parts
        if rel[0] in allowed:  # the verl glue imports the trainer's torch only when called
            continue
        # module-level torch imports are forbidden; lazy ones inside functions are checked by the
        # subprocess tests above for the modules the core and the credit command load
        tree = ast.parse(path.read_text())
        top = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                top |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top.add(node.module.split(".")[0])
        assert not top & {"torch", "transformers"}, f"{path} imports torch/transformers at module level"


def test_pages_do_no_math():
    """Pages read widgets and render; they never import scipy or call into numpy linear algebra."""
    for path in list((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        if path.exists():
            text = path.read_text()
            assert "scipy" not in _imports(path), path
            assert "linalg" not in text, path


#: what computes: a page that calls one of these computes instead of drawing (ui.core.context offers
#: the results, cached once)
COMPUTING_CALLS = {"compute", "credit_intervals", "depth_sweep", "estimate", "merge", "disagreements",
                   "paired_table", "run_accuracy", "group_agreement", "coverage", "bootstrap_ci"}
#: the library modules that only compute: a page never imports them
COMPUTING_MODULES = ("crbc.estimators.bootstrap", "crbc.estimators.closure", "crbc.estimators.baselines",
                     "crbc.estimators.resample", "crbc.estimators.posterior", "crbc.estimators.rewardflow",
                     "crbc.estimators.coverage", "crbc.process", "crbc.truth.accuracy", "crbc.run_analysis.training_stats")
NAMES_FROM_COMPUTING_MODULES = {"DepthSweep", "DEFAULT_B", "DEFAULT_LEVEL", "pair_table", "Process"}  # types, constants, formatting


def page_problems(path: Path) -> list[str]:
    """Why page ``path`` does more than draw: a Streamlit cache or memo of its own, a call of a
    computing function, or an import of a computing module (types and constants excepted)."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("cache_"):
            out.append(f"{path.name}:{node.lineno} holds a cache (st.{node.attr}): use ui.core.context")
        elif isinstance(node, ast.Name) and node.id == "memo":
            out.append(f"{path.name}:{node.lineno} holds a memo: use ui.core.context")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            on_ctx = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "ctx"
            if name in COMPUTING_CALLS and not on_ctx:
                out.append(f"{path.name}:{node.lineno} computes ({name}): ask the page context")
        elif isinstance(node, ast.ImportFrom) and node.module in COMPUTING_MODULES:
            bad = [a.name for a in node.names if a.name not in NAMES_FROM_COMPUTING_MODULES]
            if bad:
                out.append(f"{path.name}:{node.lineno} imports {node.module}.{', '.join(bad)}")
        elif isinstance(node, ast.Import):
            out += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names if a.name in COMPUTING_MODULES]
    return out


def test_pages_only_draw():
    """No page holds a cache or calls an estimator: ui.core.context computes, pages draw."""
    bad = [msg for path in sorted((ROOT / "pages").glob("*.py")) for msg in page_problems(path)]
    assert not bad, "\n".join(bad)


def test_the_page_check_can_fail(tmp_path):
    page = tmp_path / "bad.py"
    page.write_text("import streamlit as st\nfrom crbc.estimators.bootstrap import credit_intervals\n"
                    "@st.cache_resource\ndef f(p):\n    return registry.compute('crbc', p)\n")
    found = " ".join(page_problems(page))
    assert "cache_resource" in found and "compute" in found and "credit_intervals" in found


# The layers of docs/ARCHITECTURE.md, bottom first: a module imports only from its own package
# or from a layer below it (listed earlier). ``crbc/__init__.py`` (the public API) is exempt.
LAYERS = [
    {"errors", "actions"},
    {"registry"},
    {"io"},
    {"process"},
    {"jobs"},
    {"estimators"},
    {"envs"},
    {"policy"},
    {"explain"},
    {"truth"},
    {"run_analysis", "doctor", "audit"},
    {"integrations"},
    {"train", "frame"},
    {"viz"},
    {"report"},
    {"cli"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
#: a layer whose packages read each other: a run's analysis, with its two public modules at their
#: public paths (crbc.doctor, crbc.audit; docs/ARCHITECTURE.md)
ONE_LAYER = {"run_analysis", "doctor", "audit"}


def _crbc_imports(path: Path) -> list[tuple[str, int]]:
    """(imported crbc module, line) of every import of a crbc module in ``path``, lazy ones too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        else:
            continue
        for m in mods:
            if m.split(".")[0] == "crbc" and len(m.split(".")) > 1:
                out.append((m, node.lineno))
    return out


def _package(rel: tuple[str, ...]) -> str:
    return rel[0].removesuffix(".py")


def test_every_crbc_module_is_in_a_layer():
    for path in (ROOT / "crbc").rglob("*.py"):
        rel = path.relative_to(ROOT / "crbc").parts
        if rel in (("__init__.py",), ("__main__.py",)):
            continue
        assert _package(rel) in RANK, f"{path}: add its package to LAYERS (docs/ARCHITECTURE.md)"


def test_imports_go_down_the_layers_only():
    bad = []
    for path in (ROOT / "crbc").rglob("*.py"):
        rel = path.relative_to(ROOT / "crbc").parts
        if rel in (("__init__.py",), ("__main__.py",)):
            continue
        own = _package(rel)
        for mod, line in _crbc_imports(path):
            target = mod.split(".")[1]
            if target not in RANK:  # a name imported from the top level (crbc.compute, ...)
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod} (use the defining module)")
            elif target != own and RANK[target] >= RANK[own] and not {target, own} <= ONE_LAYER:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}: {target} is not below {own}")
    assert not bad, "\n".join(bad)


def test_no_private_name_crosses_a_package():
    bad = []
    for path in list((ROOT / "crbc").rglob("*.py")) + list((ROOT / "ui").rglob("*.py")) + list((ROOT / "pages").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        here = path.relative_to(ROOT).parts[:2]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                there = tuple(node.module.split(".")[:2])
                for a in node.names:
                    if a.name.startswith("_") and there != here:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{a.name}")
    assert not bad, "\n".join(bad)


def test_the_library_never_imports_the_studio_tests_or_benchmarks():
    for path in (ROOT / "crbc").rglob("*.py"):
        assert not _imports(path) & {"ui", "pages", "tests", "benchmarks", "experiments", "devtools", "app"}, path
    for path in (ROOT / "benchmarks").rglob("*.py"):  # timings only: no experiment's code
        assert "experiments" not in _imports(path), f"{path}: an experiment belongs in experiments/"
    for path in (ROOT / "tests").rglob("*.py"):
        assert "benchmarks" not in _imports(path), f"{path}: helpers shared with benchmarks live in devtools/"


def _test_imports(source: str, package: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, module) of every import of a ``tests`` module in ``source``, at any depth, relative
    imports resolved against ``package`` (the file's own, as a tuple: ``("tests", "core")``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "tests"]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if module.split(".")[0] != "tests":
                continue
            names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
            out += [(node.lineno, m) for m in names]
    return out


def test_a_test_module_imports_only_the_support_package():
    """What tests share lives in tests/support (and tests/conftest.py's fixtures): a test module
    that imported another one's names would run that module's tests' setup and tie the two together."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for lineno, module in _test_imports(path.read_text(), path.relative_to(ROOT).parent.parts):
            if not module.startswith("tests.support"):
                bad.append(f"{path.relative_to(ROOT)}:{lineno} imports {module}")
    assert not bad, "\n".join(bad)


def test_the_support_check_sees_relative_and_absolute_imports():
    """The check above can fail: it sees ``from .x import``, ``from . import x`` and ``import tests.x``."""
    source = ("from .test_health import random_groups\nfrom . import test_closure\n"
              "def f():\n    import tests.io.test_rollouts\nfrom tests.support import reference\n")
    got = sorted(m for _, m in _test_imports(source, ("tests", "core")))
    assert got == ["tests.core.test_closure", "tests.core.test_health", "tests.io.test_rollouts",
                   "tests.support"]


# ---------------------------------------------------------------- the module graph of crbc


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> tuple[dict[str, dict[str, int]], list[str]]:  # noqa: C901
    """(edges, private): ``edges[a][b]`` = a line of ``a`` that imports crbc module ``b``, at
    module level or inside a function (lazy) alike; ``private`` lists every ``from x import _name``
    where ``x`` is another module than the importing one (``path:line x._name``). ``from p import
    m`` counts as importing the module ``p.m`` when that is one, else the module ``p``; relative
    imports are resolved. Imports under ``if TYPE_CHECKING:`` never run and are left out."""
    modules = {_module_name(p): p for p in (ROOT / "crbc").rglob("*.py")}
    edges: dict[str, dict[str, int]] = {}
    private: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                       and ast.unparse(guard.test).split(".")[-1] == "TYPE_CHECKING"
                       for stmt in guard.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = []
                for a in node.names:
                    if f"{source}.{a.name}" in modules:
                        targets.append(f"{source}.{a.name}")
                        continue
                    targets.append(source)
                    if a.name.startswith("_") and source != name and source.split(".")[0] == "crbc":
                        private.append(f"{path.relative_to(ROOT)}:{node.lineno} {source}.{a.name}")
            else:
                continue
            for t in targets:
                if t in modules and t != name:
                    edges.setdefault(name, {}).setdefault(t, node.lineno)
    return edges, private


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:  # noqa: C901
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_not_even_a_lazy_one():
    """No two crbc modules import each other, directly or around a ring, counting the imports
    inside functions too (a lazy import that closes a cycle hides a layering mistake)."""
    edges, _ = _module_graph()
    bad = [" -> ".join(f"{a} (line {edges[a][b]}) -> {b}" for a in comp for b in edges.get(a, {}) if b in comp)
           for comp in _cycles(edges)]
    assert not bad, "\n".join(bad)


def test_no_private_name_is_imported_from_another_module():
    """``from crbc.x import _name`` in any module but crbc.x itself: make the name public (or
    move it to the module that needs it)."""
    _, private = _module_graph()
    assert not private, "\n".join(private)


def test_the_graph_checks_can_fail():
    edges = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []
    edges, _ = _module_graph()
    assert "crbc.io.columns" in edges["crbc.io.rollouts"]  # lazy and module-level imports both count
    assert "crbc.estimators.registry" in edges.get("crbc.cli.credit", {})
    assert "crbc.integrations.recorder" not in edges.get("crbc.integrations.trainer_metrics", {})  # type-only


def test_viz_core_knows_no_view():
    """crbc/viz has one axis: core/ (primitives) imports no view module; views build on core."""
    bad = [f"{path.relative_to(ROOT)}:{line} imports {mod}"
           for path in (ROOT / "crbc" / "viz" / "core").glob("*.py")
           for mod, line in _crbc_imports(path)
           if mod.startswith("crbc.viz.") and not mod.startswith("crbc.viz.core")]
    assert not bad, "\n".join(bad)


def _ui_imports(path: Path) -> list[tuple[int, str]]:
    """(line, ui module) of every import of a ``ui`` module in ``path``, lazy ones too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ui":
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "ui"]
    return out


def test_ui_is_a_core_and_one_package_per_page():
    """``ui/core`` imports only itself; ``ui/<page>`` imports the core and itself; a page
    (``pages/<page>.py``) imports the core and its own package, never another page's."""
    packages = {p.name for p in (ROOT / "ui").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert "core" in packages and not [p for p in (ROOT / "ui").glob("*.py") if p.name != "__init__.py"]
    bad = []
    owners = [(path, path.parent.name) for path in (ROOT / "ui").rglob("*.py") if path.parent.name in packages]
    owners += [(path, path.stem) for path in (ROOT / "pages").glob("*.py")]
    owners += [(ROOT / "app.py", "core")]
    for path, own in owners:
        for line, module in _ui_imports(path):
            parts = module.split(".")
            if len(parts) < 2 or parts[1] not in {"core", own}:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "\n".join(bad)
