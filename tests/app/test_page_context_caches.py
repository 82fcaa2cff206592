"""The page context computes each result once, and nothing derived from an upload is shared:
two sessions over the same upload each compute their own; over a shipped sample the second
session reuses the first one's results (so the test can tell the two apart)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("own_session_ids")  # AppTests as separate sessions


def _session(counts: dict, source_key: str) -> None:
    import streamlit as st

    import crbc.estimators.bootstrap as bootstrap
    import crbc.estimators.registry as registry
    import crbc.explain.disagreements as compare
    from crbc.io.rollouts import read_rollouts
    from ui.core import context

    def counted(name, fn):
        def call(*a, **k):
            counts[name] = counts.get(name, 0) + 1
            return fn(*a, **k)
        return call

    # the context's memos call these module attributes: count every real computation
    st.session_state.setdefault("_patched", True)
    context.estimators.compute = counted("compute", registry.compute)
    context.credit_intervals = counted("intervals", bootstrap.credit_intervals)
    context.compare.disagreements = counted("disagreements", compare.disagreements)
    groups = read_rollouts("sample_rollouts/worked-example.jsonl")
    src = context.Source(source_key, "test", groups)
    ctx = context.PageContext(src, 0, 0, "crbc", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
    ctx.credits("crbc")
    ctx.intervals("crbc")
    ctx.disagreement("crbc vs gigpo", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
    ctx.kept("figure", ("probe",), lambda: counted("figure", lambda: "svg")())
    st.write("done")


@pytest.mark.parametrize("key, shared", [("upload:abc", False), ("sample:worked:def", True)])
def test_an_uploads_results_are_its_sessions_and_a_samples_are_shared(key, shared):
    import crbc.estimators.registry as registry
    import crbc.explain.disagreements as compare
    from ui.core import context

    saved = (context.estimators.compute, context.credit_intervals, context.compare.disagreements)
    try:
        first: dict = {}
        at = AppTest.from_function(_session, args=(first, key + "-" + str(shared))).run(timeout=120)
        assert not at.exception, at.exception
        assert first.get("compute", 0) >= 1 and first["intervals"] == 1 and first["figure"] == 1
        assert first["disagreements"] == 1
        at.run(timeout=120)  # the same session again: everything is held
        assert first["intervals"] == 1 and first["figure"] == 1 and first["disagreements"] == 1
        second: dict = {}
        other = AppTest.from_function(_session, args=(second, key + "-" + str(shared))).run(timeout=120)
        assert not other.exception, other.exception
        computed = {k: second.get(k, 0) for k in ("intervals", "figure", "disagreements")}
        if shared:
            assert computed == {"intervals": 0, "figure": 0, "disagreements": 0}
        else:
            assert computed == {"intervals": 1, "figure": 1, "disagreements": 1}
    finally:
        context.estimators.compute = registry.compute
        context.credit_intervals, context.compare.disagreements = saved[1], compare.disagreements
