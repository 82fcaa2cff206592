"""Installing crbc as a library: pyproject.toml is the one list of dependencies, the core loads no
studio or training package, and a clean install into a trainer's environment works with verl.

The slow test builds a fresh virtual environment as a verl trainer's would be (torch from the
machine's local CPU wheel, numpy), ``pip install``s a copy of the repository (not editable), and
runs ``compute_advantage`` and ``RunRecorder.record`` on a real ``verl.DataProto`` in it. pip is
pointed at the machine's local package indexes only (the ``file://`` indexes and find-links of
``pip config``); the verl packages those lack are packed from this interpreter's own installed
copies (devtools/repack.py). Nothing is fetched from the network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import crbc
from tests.support.paths import ROOT

NEVER_IN_CORE = {"streamlit", "plotly", "pyvis", "transformers", "torch", "safetensors", "tokenizers",
                 "pandas", "networkx"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirements(name: str) -> dict[str, Requirement]:
    """{canonical name: Requirement} of a requirements file (``-r`` lines and comments skipped)."""
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        assert canonicalize_name(req.name) not in out, f"{name}: {req.name} listed twice"
        out[canonicalize_name(req.name)] = req
    return out


def declared() -> dict[str, dict[str, Requirement]]:
    """{"core" or extra name: {canonical name: Requirement}} of pyproject.toml."""
    proj = pyproject()["project"]
    groups = {"core": proj.get("dependencies", []), **proj.get("optional-dependencies", {})}
    return {g: {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs} for g, reqs in groups.items()}


def test_pyproject_declares_the_core_and_the_extras():
    d = declared()
    assert set(d) == {"core", "parquet", "report", "studio", "train", "ray", "worlds"}
    assert {"numpy", "scipy", "msgspec"} <= set(d["core"])
    assert not set(d["core"]) & NEVER_IN_CORE, "studio or training packages in the core"
    assert "pyarrow" in d["parquet"] and "streamlit" in d["studio"] and "torch" in d["train"]
    assert "ray" in d["ray"]
    assert {"gymnasium", "minigrid"} <= set(d["worlds"]) and not set(d["worlds"]) & NEVER_IN_CORE
    assert "pandas" in d["report"] and not set(d["report"]) & {"streamlit", "torch"}  # a trainer's report


def test_the_version_has_one_source():
    assert pyproject()["project"]["version"] == "0.3.0"
    assert "dynamic" not in pyproject()["project"]
    assert crbc.__version__ == pyproject()["project"]["version"]  # the installed metadata


def test_requirement_files_agree_with_pyproject():
    """requirements.txt pins exactly the core and the [parquet], [studio], [train], [worlds] extras (what
    ``make run`` and the tests need), each pin inside pyproject's range (or the same range);
    requirements-verl.txt pins [ray]'s ray inside its range; requirements-dev.txt adds only
    packages pyproject does not declare (test tools), on top of requirements.txt."""
    d = declared()
    wanted = {**d["core"], **d["parquet"], **d["studio"], **d["train"], **d["worlds"]}
    run = requirements("requirements.txt")
    assert set(run) == set(wanted), (f"only in requirements.txt: {sorted(set(run) - set(wanted))}; "
                                     f"only in pyproject: {sorted(set(wanted) - set(run))}")
    for group, reqs in d.items():
        for name, want in reqs.items():
            pins = {f: r for f in ("requirements.txt", "requirements-verl.txt")
                    for n, r in requirements(f).items() if n == name}
            assert pins, f"[{group}] {name} is pinned in no requirements file that make test installs"
            for f, got in pins.items():
                exact = [s.version for s in got.specifier if s.operator == "=="]
                if exact:
                    assert want.specifier.contains(exact[0], prereleases=True), \
                        f"{f}: {got} is outside pyproject's [{group}] {want}"
                else:
                    assert got.specifier == want.specifier, f"{f}: {got} differs from pyproject's {want}"
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert re.search(r"(?m)^-r requirements\.txt$", dev)
    assert not set(requirements("requirements-dev.txt")) & set(wanted)


def test_the_agreement_check_can_fail(tmp_path, monkeypatch):
    """A pin outside the range is caught (the check above is not vacuous)."""
    me = sys.modules[__name__]  # this module, whose ROOT the check reads

    (tmp_path / "requirements.txt").write_text((ROOT / "requirements.txt").read_text().replace(
        "numpy==2.4.6", "numpy==1.20.0"))
    for f in ("pyproject.toml", "requirements-verl.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / f, tmp_path / f)
    monkeypatch.setattr(me, "ROOT", tmp_path)
    with pytest.raises(AssertionError, match="numpy==1.20.0 is outside"):
        me.test_requirement_files_agree_with_pyproject()


def loaded_after(code: str, env: dict | None = None) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env=env)
    assert r.returncode == 0, r.stderr
    return {m.split(".")[0] for m in json.loads(r.stdout.splitlines()[-1])}


def test_the_core_and_the_trainer_glue_load_no_studio_or_training_package():
    mods = loaded_after("import crbc, crbc.run_analysis.health, crbc.integrations.verl, crbc.integrations.recorder, "
                        "crbc.integrations.trainer_metrics, crbc.io.importers")
    assert not mods & (NEVER_IN_CORE | {"pyarrow", "verl", "ray"}), mods & (NEVER_IN_CORE | {"pyarrow"})
    assert "crbc" in mods  # the probe ran


def test_parquet_recording_without_pyarrow_names_the_extra(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["pyarrow"] = None  # as if pyarrow were not installed
        from crbc.integrations.recorder import RunRecorder
        try:
            RunRecorder({str(tmp_path / 'run')!r})
        except ImportError as e:
            print("ERROR", e)
        RunRecorder({str(tmp_path / 'run2')!r}, format="jsonl")
        print("jsonl ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'pip install "crbc[parquet]"' in r.stdout and "jsonl ok" in r.stdout


# --------------------------------------------------------------------------------------------
# a clean install into a trainer's environment (slow: a venv, torch, verl's import set)

def local_pip_sources() -> list[str]:
    """pip options that reach only this machine's local indexes (from ``pip config list``)."""
    r = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60)
    urls, links = [], []
    for line in r.stdout.splitlines():
        key, _, val = line.partition("=")
        val = val.strip().strip("'\"")
        if key.endswith("index-url"):
            urls += [u for u in val.split() if u.startswith("file://")]
        elif key.endswith("find-links"):
            links += [u for u in val.split() if os.path.isdir(u.removeprefix("file://"))]
    if not urls:
        return []
    opts = ["--index-url", urls[0]]
    for u in dict.fromkeys(urls[1:]):
        opts += ["--extra-index-url", u]
    for link in dict.fromkeys(links):
        opts += ["--find-links", link]
    return opts


TRAINER_SCRIPT = r'''
import json, sys, warnings
import numpy as np, torch
from verl import DataProto
import crbc
from crbc.integrations import verl as V
from crbc.io.similarity import compiled_block_search

rows = []  # (uid, traj_uid, observation with its history, action, success)
rng = np.random.default_rng(0)
for g in range(3):
    for i in range(6):
        pos, seen, traj = 0, [], []
        for t in range(8):
            a = str(rng.choice(["right", "right", "left", "stay"]))
            traj.append([f"uid-{g}", f"t-{g}-{i}", f"moves: {' '.join(seen)}\nBoard: cell-{pos}", a])
            seen.append(f"{a} ({int(rng.integers(10**6))})")  # what the model wrote: never twice the same
            pos = max(0, pos + (a == "right") - (a == "left"))
            if pos >= 3:
                break
        rows += [r + [pos >= 3] for r in traj]
b = len(rows)
obj = lambda xs: np.array(xs, dtype=object)
data = DataProto.from_single_dict({
    "responses": torch.ones((b, 4), dtype=torch.long), "response_mask": torch.ones((b, 4), dtype=torch.long),
    "uid": obj([r[0] for r in rows]), "traj_uid": obj([r[1] for r in rows]),
    "anchor_obs": obj([r[2] for r in rows]), "action": obj([r[3] for r in rows]),
    "success": np.array([r[4] for r in rows]), "episode_rewards": obj([float(r[4]) for r in rows]),
    "rewards": obj([0.0] * b)})
V.add_step_index(data)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    V.compute_advantage(data, "crbc")
exact_warned = any("merge almost nothing" in str(x.message) for x in w)
V.compute_advantage(data, "crbc", anchor=r"Board: (\S+)")
rec = V.RunRecorder(sys.argv[1], format="jsonl", anchor=r"Board: (\S+)")
metrics = rec.record(data, 0, {"actor/loss": 0.5})
try:
    V.RunRecorder(sys.argv[1] + "-parquet")
    parquet_error = ""
except ImportError as e:
    parquet_error = str(e)
print(json.dumps({"version": crbc.__version__, "metrics": metrics, "exact_warned": exact_warned,
                  "parquet_error": parquet_error, "rows": b, "compiled": compiled_block_search() is not None,
                  "advantages": float(data.batch["advantages"].abs().sum()),
                  "torch": torch.__version__, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
'''


def _freeze(py: Path, env: dict) -> dict[str, str]:
    r = subprocess.run([str(py), "-m", "pip", "list", "--format=json"], capture_output=True, text=True,
                       env=env, timeout=120, check=True)
    return {canonicalize_name(p["name"]): p["version"] for p in json.loads(r.stdout)}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_clean_install_into_a_trainers_environment(tmp_path):
    sources = local_pip_sources()
    if not sources or not any(p.name.startswith("torch-") for d in sources[1::2] if os.path.isdir(d)
                              for p in Path(d).iterdir()):
        pytest.skip("no local package index with a torch wheel on this machine (pip config list)")
    sys.path.insert(0, str(ROOT))
    from devtools.repack import repack

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_CONFIG_FILE=os.devnull)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"

    def pip(*args: str) -> None:
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                           env=env, timeout=900)
        assert r.returncode == 0, f"pip install {' '.join(args)}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"

    # the trainer's environment: its torch and numpy
    pip(*sources, "torch==2.13.0", "numpy")
    before = _freeze(py, env)
    # the library, from a copy of the repository (not editable)
    src = tmp_path / "src"
    src.mkdir()
    for f in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / f, src / f)
    shutil.copytree(ROOT / "crbc", src / "crbc", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    # google-re2 (core) is not on this machine's local index: packed from this interpreter's copy
    re2 = repack("google-re2", wheels)
    pip(*sources, "--find-links", str(wheels), str(src))
    after = _freeze(py, env)
    assert after["crbc"] == crbc.__version__
    assert after["torch"] == before["torch"] and after["numpy"] == before["numpy"], "the install touched torch/numpy"
    added = set(after) - set(before)
    assert {"crbc", "scipy", "msgspec", "google-re2"} <= added and re2.exists()
    assert not added & (NEVER_IN_CORE | {"pyarrow"}), sorted(added & (NEVER_IN_CORE | {"pyarrow"}))
    # verl's import set: verl pulls transformers and ray's import-time needs from the index; the
    # pinned packages of requirements-verl.txt (verl, tensordict, pyvers, ray, ...) are packed
    # from this interpreter's own copies, installed without dependencies, as `make test` does
    pip(*sources, "transformers>=5,<6", "packaging", "requests", "jsonschema", "protobuf", "filelock",
        "pyyaml", "click")
    packed = [str(repack(name, wheels)) for name in requirements("requirements-verl.txt")]
    pip("--no-index", "--no-deps", *packed)
    r = subprocess.run([str(py), "-c", TRAINER_SCRIPT, str(tmp_path / "run")], capture_output=True,
                       text=True, env=env, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["version"] == crbc.__version__
    # the optional C extension, built by pip from setup.py wherever a compiler is
    assert out["compiled"] or shutil.which("gcc") is None, "pip install built no crbc.io.blockmatch"
    assert out["torch"].startswith("2.13.0") and _freeze(py, env)["torch"] == before["torch"]
    assert out["exact_warned"], "texts with history under the exact key should warn"
    m = out["metrics"]
    assert m["crbc/shared_step_share"] > 0.5 and m["crbc/merge_warning"] == 0.0
    assert {"crbc/anchors_per_group", "crbc/none_share", "crbc/record_seconds"} <= set(m)
    assert out["advantages"] > 0
    assert 'pip install "crbc[parquet]"' in out["parquet_error"]
    assert not set(out["modules"]) & {"streamlit", "plotly", "pyvis", "pyarrow"}
    got = (tmp_path / "run" / "rollouts").iterdir()
    assert [p.name for p in got] == ["iter-0000.jsonl"]
