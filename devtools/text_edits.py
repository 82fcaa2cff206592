"""Random edits of a text, for the similarity tests and benchmarks: texts near a given one."""

from __future__ import annotations

import random

__all__ = ["mutated"]


def mutated(rng: random.Random, base: str, alphabet: str, edits: int) -> str:
    """``base`` after ``edits`` random edits, each an insertion, deletion or substitution (one
    third each; an insertion when the text is empty) at a uniform position, new characters drawn
    from ``alphabet``."""
    s = list(base)
    for _ in range(edits):
        op, at = rng.randrange(3), rng.randrange(len(s) + 1)
        if op == 0 or not s:
            s.insert(at, rng.choice(alphabet))
        elif op == 1:
            del s[min(at, len(s) - 1)]
        else:
            s[min(at, len(s) - 1)] = rng.choice(alphabet)
    return "".join(s)
