"""Where things are: the repository's root, the studio's entry script, the tests' own data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
DATA = ROOT / "tests" / "data"
ARTIFACTS = ROOT / "test-artifacts"
