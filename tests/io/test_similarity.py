"""Similarity anchors (crbc.io.similarity) against their slow twin, verl-agent's own grouping
re-implemented in tests/support/upstream_similarity.py: the same clusters on random text,
Sokoban boards and textarena transcripts; the vectorised block finder against difflib's.

Every test runs twice: with the compiled block search (crbc.io.blockmatch; skipped when it
is not built, which fails under CI=true) and with the pure-Python one
(CRBC_PURE_PYTHON_SIMILARITY=1). Upstream's clusters are computed once per input."""

from __future__ import annotations

import difflib
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crbc.io import similarity
from crbc.io.similarity import (
    PURE_PYTHON_ENV,
    BlockFinder,
    SimilarityError,
    check_similarity,
    cluster_texts,
    positions,
    reaches,
)
from devtools.text_edits import mutated
from tests.support import upstream_similarity
from tests.support.similarity_texts import sokoban_texts
from tests.support.upstream_similarity import build_step_group_similar

TAUS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
ALPHABETS = ("ab", "abc \n", "the quick brown fox 123", "xyz\u00e9\U0001F600 ")
_UPSTREAM: dict[tuple, tuple[list[int], list[str]]] = {}


def clusters_of(texts: list[str], tau: float) -> tuple[list[int], list[str]]:
    """Upstream's clusters (tests/support/upstream_similarity.py), each input computed once."""
    key = (tuple(texts), tau)
    if key not in _UPSTREAM:
        _UPSTREAM[key] = upstream_similarity.clusters_of(list(texts), tau)
    return _UPSTREAM[key]


@pytest.fixture(scope="module", params=["compiled", "python"], autouse=True)
def block_search(request):
    """The block search cluster_texts uses in this module's tests: compiled or pure Python."""
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "python":
            mp.setenv(PURE_PYTHON_ENV, "1")
        else:
            mp.delenv(PURE_PYTHON_ENV, raising=False)
            if similarity.blockmatch is None:
                pytest.skip("crbc.io.blockmatch is not built (pip install -e . builds it; needs a C compiler)")
        assert (similarity.compiled_block_search() is None) == (request.param == "python")
        yield request.param


@st.composite
def groups_of_texts(draw):
    """A group's observations: a few bases (short, or past difflib's 200-character autojunk
    threshold), each seen again with small edits or exactly."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    alphabet = draw(st.sampled_from(ALPHABETS))
    n_bases = draw(st.integers(1, 5))
    bases = ["".join(rng.choice(alphabet) for _ in range(rng.choice([0, 3, 40, 199, 200, 260, 500])))
             for _ in range(n_bases)]
    n = draw(st.integers(1, 40))
    return [mutated(rng, rng.choice(bases), alphabet, rng.choice([0, 0, 1, 3, 10])) for _ in range(n)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=groups_of_texts(), tau=st.one_of(st.sampled_from(TAUS), st.floats(0.01, 0.99)))
def test_random_text_same_clusters_as_upstream(texts, tau):
    assert cluster_texts(texts, tau) == clusters_of(texts, tau)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), alphabet=st.sampled_from(ALPHABETS),
       la=st.sampled_from([0, 1, 7, 150, 199, 200, 201, 400]), lb=st.sampled_from([0, 1, 7, 150, 199, 200, 201, 400]))
def test_block_finder_is_difflibs_find_longest_match(seed, alphabet, la, lb):
    rng = random.Random(seed)
    a = "".join(rng.choice(alphabet) for _ in range(la))
    b = mutated(rng, a, alphabet, 5)[:lb] if rng.random() < 0.6 else "".join(rng.choice(alphabet) for _ in range(lb))
    lb = len(b)
    m = difflib.SequenceMatcher(None, a, b)
    f = BlockFinder(a, b, m.b2j, positions(a))
    windows = [(0, la, 0, lb)] + [sorted(rng.choices(range(la + 1), k=2)) + sorted(rng.choices(range(lb + 1), k=2))
                                  for _ in range(10)]
    for alo, ahi, blo, bhi in windows:
        assert f.find_longest_match(alo, ahi, blo, bhi) == tuple(m.find_longest_match(alo, ahi, blo, bhi))
    for tau in TAUS:
        ratio = m.ratio()
        assert reaches(la, lb, f.find_longest_match, tau) == (ratio >= tau)
        assert reaches(la, lb, m.find_longest_match, tau) == (ratio >= tau)


def test_ratio_exactly_at_tau_joins():
    """>= as upstream: ratio 0.8 exactly (2 * 4 / 10) joins at tau 0.8, not above it."""
    a, b = "abcdx", "abcdy"
    assert difflib.SequenceMatcher(None, b, a).ratio() == 0.8
    assert cluster_texts([a, b], 0.8) == ([0, 0], [a])
    assert cluster_texts([a, b], 0.8000001) == ([0, 1], [a, b])


def test_argument_order_matters_and_is_upstreams():
    """difflib's ratio is not symmetric under autojunk: the new observation is ``a``, the
    representative ``b``. A pair where the two orders straddle tau pins the order."""
    rng = random.Random(7)
    for _ in range(2000):
        rep = "".join(rng.choice("ab c") for _ in range(rng.randint(200, 260)))
        new = mutated(rng, rep, "ab c", rng.randint(1, 30))
        r_up = difflib.SequenceMatcher(None, new, rep).ratio()
        r_swapped = difflib.SequenceMatcher(None, rep, new).ratio()
        if r_up != r_swapped:
            tau = (r_up + r_swapped) / 2
            got = cluster_texts([rep, new], tau)[0]
            assert got == clusters_of([rep, new], tau)[0] == ([0, 0] if r_up >= tau else [0, 1])
            return
    pytest.fail("no asymmetric pair found")


def test_first_cluster_wins_not_the_best():
    """Upstream puts a text into the first similar cluster in creation order, even when a later
    one is more similar."""
    x = "aaaaaaaaaa"
    y = "aaaaaaaabb"  # ratio(y, x) = 0.8: its own cluster at 0.85
    z = "aaaaaaaabc"  # ratio(z, x) = 0.8, ratio(z, y) = 0.9
    labels, reps = cluster_texts([x, y, z], 0.85)
    assert (labels, reps) == ([0, 1, 1], [x, y])
    labels, reps = cluster_texts([x, y, z], 0.75)
    assert (labels, reps) == ([0, 0, 0], [x]) == clusters_of([x, y, z], 0.75)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sokoban_boards_same_clusters_as_upstream(seed):
    texts = sokoban_texts(seed)
    assert len(set(texts)) > 5
    merged = []
    for tau in (0.6, 0.8, 0.9, 0.95, 0.98):
        got = cluster_texts(texts, tau)
        assert got == clusters_of(texts, tau)
        merged.append(len(got[1]))
    assert merged == sorted(merged) and merged[0] < merged[-1] <= len(set(texts))


def test_textarena_transcripts_same_clusters_as_upstream():
    from tests.support.textarena_play import GROUP, LEVELS, play

    for level in LEVELS:
        eps = [play(level, i) for i in range(GROUP)]
        for key in ("history", "board"):
            texts = [s[key] if isinstance(s[key], str) else str(s[key]) for e in eps for s in e["steps"]]
            assert any(len(t) >= 200 for t in texts) or key == "board"
            for tau in (0.5, 0.8, 0.9, 0.95, 0.99):
                assert cluster_texts(texts, tau) == clusters_of(texts, tau)


def test_several_groups_as_upstreams_batch():
    """Per group, rows in batch order, as build_step_group clusters a batch of many groups."""
    rng = random.Random(5)
    texts = [mutated(rng, rng.choice(["kitchen: a mug, a knife", "bedroom: a lamp"]), "abk ", rng.randint(0, 4))
             for _ in range(60)]
    index = np.array([rng.randrange(3) for _ in texts])
    obs = np.empty(len(texts), dtype=object)
    obs[:] = texts
    up = build_step_group_similar(obs, index, 0.8)
    for g in range(3):
        rows = np.nonzero(index == g)[0]
        labels, _ = cluster_texts([texts[i] for i in rows], 0.8)
        same_up = up[rows][:, None] == up[rows][None, :]
        same_ours = np.array(labels)[:, None] == np.array(labels)[None, :]
        assert (same_up == same_ours).all()


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.5, 1.5, float("nan"), float("inf"), True, "x", [0.5]])
def test_tau_outside_the_open_interval_is_refused(bad):
    with pytest.raises(SimilarityError, match="anchor similarity"):
        check_similarity(bad)
    with pytest.raises(SimilarityError):
        cluster_texts(["a", "b"], bad)


def test_tau_accepted_forms():
    assert check_similarity(None) is None
    assert check_similarity(0.9) == 0.9 and check_similarity("0.5") == 0.5 and check_similarity(np.float32(0.25)) == 0.25


def test_work_cap_names_the_group():
    texts = [f"{i:04d} " + "".join(random.Random(i).choice("abcdefghij") for _ in range(30)) for i in range(200)]
    with pytest.raises(SimilarityError, match=r"group 'g7' needs more than 50 text comparisons"):
        cluster_texts(texts, 0.3, where="group 'g7'", max_comparisons=50)
    with pytest.raises(SimilarityError, match=r"group 'g7' needs more than 100 text pairs"):
        cluster_texts(texts, 0.99, where="group 'g7'", max_pairs=100)
    assert cluster_texts(texts, 0.3) == clusters_of(texts, 0.3)


def test_non_text_is_refused():
    with pytest.raises(TypeError, match="observation 1: similarity merges text, not int"):
        cluster_texts(["a", 3], 0.5)


def test_autojunk_extremes_and_odd_text():
    """Texts whose every character is popular (b2j empty: only the common prefix matches), lone
    surrogates, empty texts."""
    texts = ["a\ud800b" * 70, "a\ud800c" * 70, "", "", "x", "\ud800" * 300, "\ud801" * 300, "ab" * 150,
             "ab" * 149 + "ba"]
    for tau in (0.05, 0.3, 0.6, 0.9, 0.99):
        assert cluster_texts(texts, tau) == clusters_of(texts, tau)
    assert cluster_texts(texts, 0.3)[0][:2] == [0, 1]  # 210 characters, all popular: ratio 2 * 2 / 420
