"""The sidebar's anchor similarity (issue 53): TAU from the URL merges the loaded groups in the
keying worker exactly as ``rekey(..., similarity=TAU)`` does, is named under the source, and a
TAU outside (0, 1) is said in the sidebar with nothing merged."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from crbc.io.anchor_keys import rekey  # noqa: E402
from ui.core import state  # noqa: E402


def test_a_tau_merges_the_sample_as_rekey_does(app):
    at = app(sample="sokoban-strong.jsonl", anchor_similarity="0.9")
    src = at.session_state["_crbc_source"]
    _, raw, err = state.load_sample(state.SAMPLES_DIR / "sokoban-strong.jsonl")
    assert not err
    assert list(src.groups) == rekey(raw, None, 0.9)
    assert any("merged at difflib ratio >= 0.9" in c.value for c in at.sidebar.caption)


def test_a_tau_out_of_range_is_said_and_nothing_merges(app):
    at = app(sample="sokoban-strong.jsonl", anchor_similarity="1.2")
    assert any("TAU" in e.value and "1.2" in e.value for e in at.sidebar.error), [e.value for e in at.sidebar.error]
    src = at.session_state["_crbc_source"]
    _, raw, _ = state.load_sample(state.SAMPLES_DIR / "sokoban-strong.jsonl")
    assert list(src.groups) == list(raw)


def test_the_graph_slider_shows_what_a_tau_merges_and_its_cost(app):
    """Anchor graph's similarity slider on a FrozenLake sample (exact truth from its meta): the
    number of anchors after merging equals cluster_texts', two merged boards are drawn side by
    side, and each estimator's Spearman with the truth on exact anchors is the library's."""
    from crbc.estimators import registry as estimators
    from crbc.io.similarity import cluster_texts
    from crbc.process import merge
    from crbc.truth import TruthCache, group_truth_arrays
    from crbc.truth.accuracy import signal_kind, spearman, step_signal
    from tests.support.paths import ROOT

    at = app("pages/graph.py", sample="frozenlake-4x4.jsonl", graph_tau="0.9")
    assert not at.exception
    group = at.session_state["_crbc_source"].groups[0]
    texts = [s.anchor for r in group.rollouts for s in r.steps]
    _, reps = cluster_texts(texts, 0.9)
    md = " ".join(m.value for m in at.markdown)
    assert f"anchors become **{len(reps)}**" in md and "two of them (difflib ratio" in md
    html = " ".join(str(getattr(h.proto, "body", "")) for h in at.get("html"))
    assert html.count("<table") >= 3  # two boards and the table of scores
    truth = group_truth_arrays(group, merge([group]).state_anchor, 0.98, TruthCache(policy_root=str(ROOT)))
    x = step_signal(estimators.compute("crbc", [group]), signal_kind("crbc"))
    assert f"{round(spearman(x, truth.advantage_N), 3)}" in html


def test_the_graph_similarity_fold_computes_nothing_until_opened(app, monkeypatch):
    """Folded (a link without graph_tau), the fold's content is not built: no slider, and no
    clustering of the group's anchors; a link that carries graph_tau opens it, and the next
    session on the same shipped group finds its merges kept."""
    from ui.core.context import clear_shared
    from ui.graph import similarity

    clear_shared()  # another test may have kept this sample's merges
    calls = []
    real = similarity.cluster_texts
    monkeypatch.setattr(similarity, "cluster_texts", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = app("pages/graph.py", sample="frozenlake-4x4.jsonl")
    assert not at.exception
    assert not [s for s in at.slider if s.key == "graph_tau"] and not calls
    at = app("pages/graph.py", sample="frozenlake-4x4.jsonl", graph_tau="0.9")
    assert [s for s in at.slider if s.key == "graph_tau"] and calls
    n = len(calls)
    at = app("pages/graph.py", sample="frozenlake-4x4.jsonl", graph_tau="0.9")  # another session
    assert not at.exception and len(calls) == n  # the shipped group's merges were kept
