"""The doctor's checks live in one registry (crbc.doctor.registry): each declares its name,
severity, order, meaning and what it reads where it is defined; CHECKS and WHAT are views of it,
in the order docs/FORMATS.md's table documents; diagnose runs what is registered, in that order."""

from __future__ import annotations

import inspect
import re

import pytest

from crbc.doctor import CHECKS, diagnose, diagnose_tokens, from_groups
from crbc.doctor import findings as F
from crbc.doctor import recorded as R
from crbc.doctor import registry as D
from crbc.doctor.findings import finding
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.registry import Registry
from tests.support.paths import ROOT


def documented_checks() -> list[tuple[str, str]]:
    """(check, severity) of each row of docs/FORMATS.md's table of the doctor's checks, in order."""
    text = (ROOT / "docs" / "FORMATS.md").read_text()
    table = text[text.index("| check | severity | fires when |"):].split("\n\n")[0]
    return re.findall(r"^\| `(\w+)` \| (\w+) \|", table, re.M)


def test_every_check_is_registered_once_with_all_its_properties_beside_its_function():
    assert isinstance(D.REGISTRY, Registry) and len(D.REGISTRY) == len(set(D.REGISTRY.names())) == 13
    orders = [c.order for c in D.REGISTRY]
    assert len(set(orders)) == len(orders)
    for c in D.REGISTRY:
        assert c.severity in D.SEVERITIES and c.reads in D.READS and c.what.strip(), c
        assert isinstance(c.order, (int, float)) and not isinstance(c.order, bool)
        module = inspect.getmodule(c.fn)
        assert c.fn.__name__ == c.name and getattr(module, c.name) is c.fn  # defined under its own name
        assert f'@register_check("{c.name}"' in inspect.getsource(module)  # declared at its definition
    assert {c.name: c.reads for c in D.REGISTRY if c.reads != "rows"} == {
        "advantage_off_mask": "tokens", "advantage_shifted": "tokens", "estimator_mismatch": "estimator"}


def test_the_order_and_severities_are_docs_formats_table():
    assert list(CHECKS.items()) == documented_checks()
    assert [c.name for c in D.ordered()] == list(CHECKS)


def test_checks_and_what_are_read_only_views_of_the_registry():
    assert F.CHECKS is D.CHECKS is CHECKS and R.WHAT is D.WHAT
    assert dict(CHECKS) == {c.name: c.severity for c in D.REGISTRY}
    assert dict(R.WHAT) == {c.name: c.what for c in D.REGISTRY} and list(R.WHAT) == list(CHECKS)
    assert CHECKS["zero_variance_groups"] == "info" and "nope" not in CHECKS and len(CHECKS) == 13
    with pytest.raises(KeyError):
        CHECKS["nope"]
    with pytest.raises(TypeError):
        CHECKS["nope"] = "error"  # type: ignore[index]


def test_a_taken_name_a_taken_order_and_an_undeclared_property_are_refused():
    fn = lambda b: None  # noqa: E731
    with pytest.raises(ValueError, match="already registered"):
        D.register_check("singleton_groups", severity="error", order=999, what="again", reads="rows")(fn)
    with pytest.raises(ValueError, match="order 10 is 'singleton_groups'"):
        D.register_check("toy_check", severity="error", order=10, what="x", reads="rows")
    with pytest.raises(ValueError, match="severity must be one of"):
        D.register_check("toy_check", severity="fatal", order=999, what="x", reads="rows")
    with pytest.raises(ValueError, match="reads must be one of"):
        D.register_check("toy_check", severity="error", order=999, what="x", reads="weights")
    with pytest.raises(ValueError, match="what a finding of it means"):
        D.register_check("toy_check", severity="error", order=999, what=" ", reads="rows")
    assert D.REGISTRY.get("singleton_groups").what != "again" and "toy_check" not in CHECKS


def _groups() -> list[RolloutGroup]:
    """One group of two rollouts with the same outcome (zero_variance_groups fires, info) and the
    trainer's advantage on the last step only (zero_step_advantage fires, error)."""
    rs = tuple(Rollout("g", i, (Step("s0", "go", trainer_advantage=0.0), Step("s1", "go", trainer_advantage=1.0)),
                       True, False, 1.0) for i in range(2))
    return [RolloutGroup("g", rs)]


def test_a_planted_check_runs_in_its_declared_order_and_leaves_when_removed():
    before = [f.check for f in diagnose(from_groups(_groups(), 3))]
    assert before == ["zero_step_advantage", "zero_variance_groups"]

    try:
        @D.register_check("toy_check", severity="warning", order=25, reads="rows", what="a toy bug planted by a test")
        def toy_check(b):
            return finding("toy_check", b.iteration, [1], b.n_rows, "a toy finding.")

        @D.register_check("toy_token_check", severity="info", order=5, reads="tokens", what="a toy token bug")
        def toy_token_check(t, iteration):
            return finding("toy_token_check", iteration, [0], t.n_rows, "a toy token finding.")

        found = diagnose(from_groups(_groups(), 3))
        assert [f.check for f in found] == ["zero_step_advantage", "toy_check", "zero_variance_groups"]
        toy = found[1]
        assert (toy.severity, toy.iteration, toy.rows, toy.share) == ("warning", 3, 1, 0.25)
        assert (toy.examples[0].group, toy.examples[0].rollout, toy.examples[0].step) == ("g", 0, 1)
        assert list(CHECKS)[:4] == ["toy_token_check", "singleton_groups", "zero_step_advantage", "toy_check"]
        assert R.WHAT["toy_check"] == "a toy bug planted by a test"
        tokens = [f.check for f in diagnose_tokens([[0.0, 1.0]], [[False, True]], 2)]
        assert tokens == ["toy_token_check"]
    finally:
        D.REGISTRY.remove("toy_check")
        D.REGISTRY.remove("toy_token_check")
    assert "toy_check" not in CHECKS and len(CHECKS) == 13
    assert [f.check for f in diagnose(from_groups(_groups(), 3))] == before
