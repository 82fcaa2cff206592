"""Keying by a user's regex: the pattern's size and nesting are bounded before any work, messages
quote only its start, and the keying itself runs in a worker under budgets (crbc.jobs.keying)."""

from __future__ import annotations

import time

import pytest

from crbc.io.anchor_keys import (
    MAX_NESTING,
    MAX_PATTERN_CHARS,
    RegexError,
    compile_regex,
    nesting,
    rekey,
    shown,
)
from crbc.io.rollouts import read_rollouts
from crbc.jobs.keying import key_limited
from crbc.jobs.upload import Limits
from tests.support.paths import ROOT

WORKED = ROOT / "sample_rollouts" / "worked-example.jsonl"
HOSTILE = "(" * 5000 + ")" * 5000  # RE2 accepts it; 10,000 characters sent as a link


def test_nesting_counts_groups_not_escapes_or_classes():
    assert nesting(r"(?s)(Current Board:.*?)(?:Available Moves|$)") == 1
    assert nesting(r"\(\(\(a\)") == 0 and nesting(r"[(((]x") == 0 and nesting(r"[]((]x") == 0
    assert nesting("((a)(b(c)))") == 3


@pytest.mark.parametrize("pattern,why", [(HOSTILE, f"at most {MAX_PATTERN_CHARS:,}"),
                                         ("(" * 12 + "a" + ")" * 12, f"nested 12 deep; at most {MAX_NESTING}"),
                                         ("x" * (MAX_PATTERN_CHARS + 1), "1,001 characters")])
def test_a_long_or_deep_pattern_is_refused_at_once_without_echoing_it(pattern, why):
    t = time.perf_counter()
    with pytest.raises(RegexError) as e:
        compile_regex(pattern)
    assert time.perf_counter() - t < 0.1
    assert why in str(e.value) and len(str(e.value)) < 200
    assert len(pattern) <= 60 or pattern not in str(e.value)


def test_messages_quote_at_most_sixty_characters_of_a_pattern():
    assert shown("abc") == "'abc'"
    long = "a" * 500 + "(?=b)"
    assert len(shown(long)) < 90 and "500" not in shown(long) and "505 characters" in shown(long)
    with pytest.raises(RegexError, match="lookahead") as e:
        compile_regex(long)
    assert long not in str(e.value) and len(str(e.value)) < 250


def test_the_worker_keys_as_rekey_does_and_refuses_in_one_line():
    groups = read_rollouts(WORKED)
    pattern = r"(?s)(.)$"
    keyed, err = key_limited(groups, pattern)
    assert err is None and keyed == rekey(groups, pattern)
    keyed, err = key_limited(groups, r"NEVER-THERE")
    assert keyed is None and "does not match" in err and "group" in err and "step 0" in err
    keyed, err = key_limited(groups, HOSTILE)
    assert keyed is None and "at most 1,000" in err and HOSTILE not in err


def _many(n: int) -> list:
    """n copies of the worked example's groups, each under its own group id."""
    import dataclasses

    from crbc.io.rollouts import RolloutGroup

    return [RolloutGroup(f"{g.group}-{i}", tuple(dataclasses.replace(r, group=f"{g.group}-{i}") for r in g.rollouts))
            for i in range(n) for g in read_rollouts(WORKED)]


def test_the_worker_stops_at_its_budgets():
    tight = Limits(seconds=0.01, memory_bytes=10**9, cpu_seconds=None)
    keyed, err = key_limited(_many(2000), r"(?s)(.)", tight)
    assert keyed is None and "took longer than" in err and "nothing was keyed" in err


def test_a_refusal_names_no_server_path():
    groups = read_rollouts(WORKED)
    keyed, err = key_limited(groups * 2, r"(?s)(.)")  # a group twice: the worker's reader refuses it
    assert keyed is None and "the source" in err and "/tmp" not in err and "crbc-key" not in err
