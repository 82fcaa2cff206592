"""A test module's optional dependency: imported, or the module is skipped (failed under CI=true,
where every dependency of requirements-dev.txt and requirements-verl.txt must be installed)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def importable(module: str, install: str) -> ModuleType:
    """``module`` imported; else skip the importing test module (``pytest.fail`` under CI=true),
    telling how to install it (``install``: the command)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - depends on the machine
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {module} is not importable ({e}); {install}", pytrace=False)
        pytest.skip(f"{module} is not importable ({e}): {install}", allow_module_level=True)
