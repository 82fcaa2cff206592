"""The compiled block search (crbc.io.blockmatch, crbc/io/blockmatch.c) against difflib and
against its pure-Python twin (crbc.io.similarity.BlockFinder and reaches): on every pair, the
ratio equal as a float to ``SequenceMatcher(None, a, b).ratio()``, the decision ``ratio >= tau``
the same at several TAUs and at the ratio itself and its two float neighbours, ``b2j`` equal to
difflib's (autojunk on), ``find_longest_match`` equal on the whole texts and random windows.

Without the extension built these tests skip, and under CI=true a skip fails (tests/conftest.py):
the development environment always has a C compiler, so a CI run checks the compiled path.
Planted errors (a TAU a hair off, autojunk off) show the checks would see a divergence."""

from __future__ import annotations

import difflib
import math
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crbc.io import similarity
from crbc.io.similarity import (
    PURE_PYTHON_ENV,
    BlockFinder,
    cluster_texts,
    compiled_block_search,
    positions,
    reaches,
)
from devtools.text_edits import mutated
from tests.support.similarity_texts import sokoban_texts
from tests.support.upstream_similarity import clusters_of

TAUS = (0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
UNICODE = "a\u00e9\u0301\U0001F600\U00010348\x00\ud800\udfff\u4e2d \n"


@pytest.fixture(scope="module")
def blockmatch():
    if similarity.blockmatch is None:
        pytest.skip("crbc.io.blockmatch is not built (pip install -e . builds it; needs a C compiler)")
    return similarity.blockmatch


def check_pair(index_of, a: str, b: str, rng: random.Random, taus=TAUS) -> None:
    """Assert that ``index_of(b)`` (an ``Index``) agrees with difflib and with the Python path on
    the pair (module docstring)."""
    m = difflib.SequenceMatcher(None, a, b)
    ratio = m.ratio()
    ix = index_of(b)
    assert ix.ratio(a) == ratio, (a, b)
    finder = BlockFinder(a, b, m.b2j, positions(a)).find_longest_match
    for tau in (*taus, ratio, math.nextafter(ratio, 0.0), math.nextafter(ratio, 2.0)):
        want = ratio >= tau
        assert ix.reaches(a, tau) == want, (a, b, tau, ratio)
        assert reaches(len(a), len(b), finder, tau) == want
    windows = [(0, len(a), 0, len(b))] + [
        (*sorted(rng.choices(range(len(a) + 1), k=2)), *sorted(rng.choices(range(len(b) + 1), k=2))) for _ in range(3)]
    for w in windows:
        assert ix.find_longest_match(a, *w) == tuple(m.find_longest_match(*w)), (a, b, w)


def _text(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _near(rng: random.Random, alphabet: str, n: int, edits: int) -> tuple[str, str]:
    """A text and a copy after ``edits`` edits, in a random order."""
    a = _text(rng, alphabet, n)
    b = mutated(rng, a, alphabet, edits)
    return (a, b) if rng.random() < 0.5 else (b, a)


def pairs_small_alphabets(rng):
    for _ in range(400):
        alphabet = rng.choice(["ab", "abc \n", "the quick brown fox 123", "xyz"])
        if rng.random() < 0.5:
            yield _near(rng, alphabet, rng.randint(0, 60), rng.randint(0, 8))
        else:
            yield _text(rng, alphabet, rng.randint(0, 60)), _text(rng, alphabet, rng.randint(0, 60))


def pairs_long(rng):
    """200-900 characters: autojunk drops b's popular characters."""
    for _ in range(250):
        alphabet = rng.choice([string.ascii_lowercase + " ", "abcd ", string.printable, "ab"])
        yield _near(rng, alphabet, rng.randint(200, 900), rng.randint(1, 60))


def pairs_around_200(rng):
    for _ in range(250):
        alphabet = rng.choice(["abc ", string.ascii_lowercase])
        a = _text(rng, alphabet, rng.randint(195, 205))
        b = mutated(rng, a, alphabet, rng.randint(0, 10))[:205]
        yield (a, b) if rng.random() < 0.5 else (b, a)


def pairs_near_threshold(rng):
    """Pairs whose ratio lies within 0.02 of a TAU in 0.3-0.99 (the nextafter TAUs are checked on
    every pair besides)."""
    made = 0
    while made < 250:
        a, b = _near(rng, rng.choice(["abcdefgh ", string.ascii_lowercase]), rng.randint(20, 400), rng.randint(1, 40))
        r = difflib.SequenceMatcher(None, a, b).ratio()
        if any(abs(r - t) <= 0.02 for t in TAUS[1:]):
            made += 1
            yield a, b


def pairs_unicode(rng):
    """Astral, combining, NUL, lone surrogates, CJK; short and past 200 characters."""
    for _ in range(250):
        if rng.random() < 0.5:
            yield _near(rng, UNICODE, rng.choice([0, 1, 5, 40, 199, 200, 260, 400]), rng.randint(0, 20))
        else:
            yield _text(rng, UNICODE, rng.randint(0, 250)), _text(rng, UNICODE, rng.randint(0, 250))


def pairs_empty(rng):
    for text in ["", "a", "\x00", "\ud800", "ab" * 150]:
        yield "", text
        yield text, ""


def pairs_repeated(rng):
    """Runs of one or two characters: every character popular past 200, the longest match
    ties everywhere."""
    for _ in range(150):
        unit = rng.choice(["a", "ab", "aab", "\ud800", "\U0001F600"])
        a = unit * rng.randint(1, 300)
        yield a, mutated(rng, unit * rng.randint(1, 300), "abx", rng.randint(0, 3))


def pairs_sokoban(rng):
    """Ordered pairs of distinct Sokoban boards (the test_similarity episodes)."""
    boards = sorted({t for seed in (0, 1) for t in sokoban_texts(seed)})
    for _ in range(250):
        yield rng.choice(boards), rng.choice(boards)


FAMILIES = {
    "small alphabets": pairs_small_alphabets, "long (autojunk)": pairs_long, "lengths 195-205": pairs_around_200,
    "near threshold": pairs_near_threshold, "unicode": pairs_unicode, "empty": pairs_empty,
    "repeated characters": pairs_repeated, "sokoban boards": pairs_sokoban,
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_compiled_equals_difflib_and_python(blockmatch, family):
    rng = random.Random(family)
    n = 0
    for a, b in FAMILIES[family](rng):
        check_pair(blockmatch.Index, a, b, rng)
        n += 1
    assert n >= (10 if family == "empty" else 150)


def test_b2j_is_difflibs(blockmatch):
    rng = random.Random(3)
    for n in [0, 1, 150, 199, 200, 201, 299, 300, 301, 700]:
        for alphabet in ["ab", "abcdefghij", UNICODE, string.printable]:
            b = _text(rng, alphabet, n)
            assert blockmatch.Index(b).b2j() == difflib.SequenceMatcher(None, "", b).b2j
            assert blockmatch.Index(b).length == n


@st.composite
def text_pairs(draw):
    alphabet = draw(st.sampled_from(["ab", "abc ", UNICODE, "a\ud800"]))
    chars = st.sampled_from(alphabet)
    a = "".join(draw(st.lists(chars, max_size=320)))
    if draw(st.booleans()):
        return a, "".join(draw(st.lists(chars, max_size=320)))
    return a, mutated(random.Random(draw(st.integers(0, 2**32 - 1))), a, alphabet, draw(st.integers(0, 12)))


@settings(max_examples=200, deadline=None)
@given(pair=text_pairs(), seed=st.integers(0, 1000))
def test_compiled_equals_difflib_on_generated_text(blockmatch, pair, seed):
    check_pair(blockmatch.Index, *pair, random.Random(seed))


class _OffByAHair:
    """A planted error: the decision at ``tau * (1 - 1e-12)``."""

    def __init__(self, index):
        self.index = index

    def __getattr__(self, name):
        return getattr(self.index, name)

    def reaches(self, a, tau):
        return self.index.reaches(a, tau * (1 - 1e-12))


class _NoAutojunk:
    """A planted error: difflib without autojunk (what a port that forgets it computes)."""

    def __init__(self, b):
        self.b = b
        self.index = similarity.blockmatch.Index(b)

    def ratio(self, a):
        return difflib.SequenceMatcher(None, a, self.b, autojunk=False).ratio()

    def reaches(self, a, tau):
        return self.ratio(a) >= tau

    def find_longest_match(self, a, *w):
        return self.index.find_longest_match(a, *w)


@pytest.mark.parametrize("planted, family", [(lambda ix: lambda b: _OffByAHair(ix.Index(b)), "small alphabets"),
                                             (lambda ix: _NoAutojunk, "long (autojunk)")])
def test_a_divergence_is_seen(blockmatch, planted, family):
    rng = random.Random(family)
    with pytest.raises(AssertionError):
        for a, b in FAMILIES[family](rng):
            check_pair(planted(blockmatch), a, b, rng)


def test_a_divergence_changes_clusters(blockmatch, monkeypatch):
    """The cluster tests would see it too: ratio exactly at TAU joins upstream, not off a hair."""
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    texts = ["abcdx", "abcdy"]
    assert cluster_texts(texts, 0.8) == clusters_of(texts, 0.8) == ([0, 0], ["abcdx"])

    class Planted:
        Index = staticmethod(lambda b: _OffByAHair_up(blockmatch.Index(b)))

    class _OffByAHair_up(_OffByAHair):
        def reaches(self, a, tau):
            return self.index.reaches(a, tau * (1 + 1e-12))

    monkeypatch.setattr(similarity, "blockmatch", Planted)
    assert cluster_texts(texts, 0.8) != clusters_of(texts, 0.8)


def test_pure_python_switch(blockmatch, monkeypatch):
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    assert compiled_block_search() is blockmatch
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    assert compiled_block_search() is None


def test_misuse_raises_never_crashes(blockmatch):
    ix = blockmatch.Index("abc")
    with pytest.raises(ValueError):
        ix.find_longest_match("abc", 0, 4, 0, 3)
    with pytest.raises(ValueError):
        ix.find_longest_match("abc", 2, 1, 0, 3)
    with pytest.raises(TypeError):
        ix.reaches(b"abc", 0.5)
    with pytest.raises(TypeError):
        blockmatch.Index(["a"])
    with pytest.raises(ValueError, match="not initialised"):
        blockmatch.Index.__new__(blockmatch.Index).reaches("a", 0.5)
    assert blockmatch.Index.__new__(blockmatch.Index).b2j() == {}
    ix.__init__("xyz")  # re-initialised: the new text
    assert ix.ratio("xyz") == 1.0 and ix.b2j() == {"x": [0], "y": [1], "z": [2]}


def test_long_text_and_large_alphabet(blockmatch):
    """A b past the shared run-length rows (65,536 characters: the call's own rows) over 3,002
    distinct characters (the character table grows many times)."""
    rng = random.Random(1)
    alphabet = "".join(chr(0x4E00 + k) for k in range(3000)) + "\U0001F600\ud800"
    a = _text(rng, alphabet, 70_000)
    b = mutated(rng, a, alphabet, 20)
    m = difflib.SequenceMatcher(None, a, b)
    ratio = m.ratio()
    ix = blockmatch.Index(b)
    assert ix.ratio(a) == ratio and ix.b2j() == m.b2j
    assert ix.reaches(a, ratio) and not ix.reaches(a, math.nextafter(ratio, 2.0))
    short = blockmatch.Index(b[:500])  # then a short b again: the shared rows
    assert short.ratio(a[:400]) == difflib.SequenceMatcher(None, a[:400], b[:500]).ratio()
