"""Old module paths still import for one release: the same module object as the new path, with a
DeprecationWarning that names the new path (crbc.MOVED_MODULES); ``crbc.audit`` is a short path
that does not warn."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import crbc


@pytest.mark.parametrize("old", sorted(crbc.MOVED_MODULES))
def test_an_old_path_is_the_new_module_and_warns(old):
    new = importlib.import_module("crbc." + crbc.MOVED_MODULES[old])
    sys.modules.pop("crbc." + old, None)
    with pytest.warns(DeprecationWarning, match=f"crbc.{old} moved to crbc.{crbc.MOVED_MODULES[old]}"):
        module = importlib.import_module("crbc." + old)
    assert module is new


def test_crbc_audit_is_the_run_analysis_audit_without_a_warning():
    from crbc.run_analysis import audit

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import crbc.audit as short
    assert short is audit is crbc.audit
    assert callable(crbc.audit.audit_run)


def test_no_old_path_has_a_file_left():
    from tests.support.paths import ROOT

    for old in crbc.MOVED_MODULES:
        rel = old.replace(".", "/")
        assert not (ROOT / "crbc" / f"{rel}.py").exists() and not (ROOT / "crbc" / rel).is_dir(), old


def test_crbc_doctor_and_its_submodules_are_the_run_analysis_modules():
    import importlib

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from crbc.doctor import Finding, diagnose, from_groups  # noqa: F401
        findings = importlib.import_module("crbc.doctor.findings")
    from crbc.run_analysis import doctor
    from crbc.run_analysis.doctor import findings as deep

    assert findings is deep and Finding is deep.Finding
    assert sys.modules["crbc.doctor"] is doctor
