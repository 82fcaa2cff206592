"""One owner of everything the studio keeps: no module of ``ui/``, ``pages/`` or ``app.py`` but
``ui/core/context.py`` caches anything. The whole tree is read (every ``.py`` file, found by walking
the folders, never a list of names); each file's syntax tree is searched for the ways Python
and Streamlit keep values between calls, and the detector is shown to find each of them in a
planted snippet, so the test can fail."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWNER = ROOT / "ui" / "core" / "context.py"

#: Streamlit's and the standard library's caches, and third-party ones, by the name used
CACHE_NAMES = {"cache_data", "cache_resource", "experimental_memo", "experimental_singleton", "memo",
               "singleton", "lru_cache", "cache", "cached_property", "figure_cache", "session_memo"}
CACHE_MODULES = {"cachetools", "joblib", "diskcache", "functools_lru"}
#: containers a module-level name can keep values in, and the calls that fill one
CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter",
              "WeakValueDictionary", "WeakKeyDictionary"}
FILLS = {"append", "add", "update", "setdefault", "insert", "extend", "appendleft", "__setitem__"}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_container(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _name(value.func) in CONTAINERS


def _module_containers(tree: ast.Module) -> set[str]:
    out = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if value is not None and _is_container(value):
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def _filled_in_functions(tree: ast.Module, names: set[str]) -> set[str]:
    """Module-level containers that a function writes into (``x[k] = v``, ``x.append(v)``...)."""
    out = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _name(node.value) in names:
                out.add(_name(node.value))
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FILLS
                    and _name(node.func.value) in names):
                out.add(_name(node.func.value))
            if isinstance(node, ast.Global):
                out |= set(node.names) & names
    return out


def cache_findings(source: str, where: str = "<snippet>") -> list[str]:
    """Every way ``source`` keeps values between calls, one line each (empty: none)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            names = [a.name for a in node.names]
            if any(m.split(".")[0] in CACHE_MODULES for m in mods) or (set(names) & CACHE_NAMES):
                found.append(f"{where}:{line}: imports a cache ({', '.join(mods + names)})")
        elif isinstance(node, (ast.Attribute, ast.Name)) and _name(node) in CACHE_NAMES:
            found.append(f"{where}:{line}: uses {_name(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "popitem":
            found.append(f"{where}:{line}: evicts like an LRU (popitem)")
        elif isinstance(node, ast.Call) and _name(node.func) == "OrderedDict":
            found.append(f"{where}:{line}: builds an OrderedDict (an LRU's store)")
    for name in sorted(_filled_in_functions(tree, _module_containers(tree))):
        found.append(f"{where}: module-level container {name!r} is filled by a function (a cache)")
    return sorted(set(found))


def _studio_files() -> list[Path]:
    files = [ROOT / "app.py"] + sorted((ROOT / "ui").rglob("*.py")) + sorted((ROOT / "pages").rglob("*.py"))
    return [f for f in files if f.is_file() and "__pycache__" not in f.parts]


def test_nothing_in_the_studio_caches_but_its_one_owner():
    files = _studio_files()
    assert len(files) > 40 and OWNER in files  # the whole tree was found
    found = [x for f in files if f != OWNER for x in cache_findings(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert not found, "only ui/core/context.py keeps values:\n" + "\n".join(found)


def test_the_owner_holds_the_studio_s_one_store():
    found = cache_findings(OWNER.read_text(encoding="utf-8"))
    assert found, "ui/core/context.py is where the store lives: the detector must see it there"


PLANTED = {
    "st.cache_data": "import streamlit as st\n@st.cache_data\ndef f(x):\n    return x\n",
    "st.cache_resource(...)": "import streamlit as st\ng = st.cache_resource(max_entries=2)(len)\n",
    "functools.cache": "import functools\n@functools.cache\ndef f():\n    return 1\n",
    "from functools import lru_cache": "from functools import lru_cache\n@lru_cache(8)\ndef f(x):\n    return x\n",
    "cachetools": "import cachetools\nC = cachetools.LRUCache(8)\n",
    "module dict filled": "_SEEN = {}\ndef f(k, v):\n    _SEEN[k] = v\n    return v\n",
    "module list appended": "KEPT: list = []\ndef f(v):\n    KEPT.append(v)\n",
    "global rebinding": "_LAST = dict()\ndef f(v):\n    global _LAST\n    _LAST = {'v': v}\n",
    "LRU in session_state": ("import streamlit as st\nfrom collections import OrderedDict\n"
                             "def f(k, v):\n    s = st.session_state.setdefault('x', OrderedDict())\n"
                             "    s[k] = v\n    while len(s) > 4:\n        s.popitem(last=False)\n"),
    "the old memo": "from ui.session_memo import memo\n@memo(max_entries=4)\ndef f(k):\n    return k\n",
    "the old figure cache": "from ui import figure_cache\nx = figure_cache.figure('k', (1,), lambda: 2)\n",
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_the_detector_finds_a_planted_cache(what):
    assert cache_findings(PLANTED[what]), what


def test_the_detector_is_silent_on_code_that_keeps_nothing():
    clean = ("import streamlit as st\nLIMITS = {'a': 1}\nNAMES = ('x', 'y')\n"
             "def f(ctx, k):\n    rows = {}\n    rows[k] = LIMITS['a']\n    st.session_state['k'] = k\n"
             "    return ctx.kept('figure', (k,), lambda: rows)\n")
    assert cache_findings(clean) == []
