"""Would cydifflib speed up similarity anchors, with the same clusters? Prints JSON.

    PYTHONPATH=. python benchmarks/bench_cydifflib.py [--pairs-per-family 2500] [--seed 0]
           [--tau 0.99 0.95 0.9 0.8] [--repeat 3] [--upstream] [--out FILE]

Needs ``pip install cydifflib==1.2.0`` (PyPI, "Fast implementation of difflib's algorithms": a
Cython port of difflib's ``SequenceMatcher``; not a dependency of crbc). Two questions:

1. **Exact?** ``cydifflib.SequenceMatcher(None, a, b).ratio() == difflib.SequenceMatcher(None, a,
   b).ratio()`` as floats, both argument orders, on adversarial pairs by family: random text over
   small alphabets, long text (difflib's autojunk from 200 characters), lengths 198-202,
   near-threshold pairs (difflib ratio within 0.02 of a TAU), unicode (astral, combining, NUL,
   lone surrogates), empty strings, Sokoban boards, repeated characters, ALFWorld-like
   observations; on every tenth pair the matching blocks too. Any difference is printed.
2. **Faster?** The fast path of :func:`crbc.io.similarity.cluster_texts` on
   benchmarks/bench_similarity.py's ALFWorld-sized iteration with its remaining ``ratio``
   decisions made three ways: ``python`` (the library's own: :func:`reaches` over
   :class:`BlockFinder`), ``cy_ratio`` (``cydifflib`` ``ratio() >= tau`` on one matcher per
   representative, ``set_seq1`` per text) and ``cy_reaches`` (:func:`reaches` over
   cydifflib's ``find_longest_match``). CPU seconds, best of ``--repeat``; the clusters of each
   are compared with the library's (which bench_similarity.py compares with upstream's);
   ``--upstream`` also times verl-agent's grouping (tests/support/upstream_similarity.py) once.
   Also: one ``find_longest_match`` over a whole window where nothing can match (``b2j`` empty),
   per text length, for both libraries.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import platform
import random
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import cydifflib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crbc.io.similarity as sim  # noqa: E402
from benchmarks.bench_similarity import iteration  # noqa: E402
from tests.support.upstream_similarity import build_step_group_similar  # noqa: E402

TAUS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
ALPHABETS = ("ab", "abc", "ab \n", "acgt", "the quick brown fox 123", "0123456789abcdefghijklmnopqrstuvwxyz .,")
UNICODE = "ae\u00e9\u0301\U0001F600\u4e2d\u6587\x00\ud800\udfff \u200d"


def mutated(rng: random.Random, base: str, alphabet: str, edits: int) -> str:
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


def text(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def pair(rng: random.Random, alphabet: str, n: int) -> tuple[str, str]:
    """Independent texts half the time, else a text and a copy with a few edits."""
    a = text(rng, alphabet, n)
    if rng.random() < 0.5:
        return a, text(rng, alphabet, max(0, n + rng.randint(-20, 20)))
    return a, mutated(rng, a, alphabet, rng.choice([1, 2, 5, 10, 30, 80]))


def fam_random(rng, k):
    return [pair(rng, rng.choice(ALPHABETS), rng.randint(0, 120)) for _ in range(k)]


def fam_long(rng, k):
    return [pair(rng, rng.choice(ALPHABETS), rng.randint(200, 900)) for _ in range(k)]


def fam_boundary(rng, k):
    return [pair(rng, rng.choice(ALPHABETS), rng.randint(195, 205)) for _ in range(k)]


def fam_unicode(rng, k):
    return [pair(rng, UNICODE, rng.choice([0, 1, 5, 50, 199, 200, 201, 400])) for _ in range(k)]


def fam_near_threshold(rng, k):
    """Pairs whose difflib ratio is within 0.02 of one of TAUS (edits until one lands there)."""
    out = []
    while len(out) < k:
        alphabet = rng.choice(ALPHABETS)
        a = text(rng, alphabet, rng.choice([10, 40, 150, 199, 200, 260, 500]))
        b = mutated(rng, a, alphabet, rng.randint(1, max(1, len(a) // 4)))
        r = difflib.SequenceMatcher(None, a, b).ratio()
        if any(abs(r - t) < 0.02 for t in TAUS):
            out.append((a, b))
    return out


def fam_empty(rng, k):
    others = [text(rng, rng.choice(ALPHABETS), rng.randint(0, 300)) for _ in range(k // 2)]
    return [("", "")] + [p for o in others for p in (("", o), (o, ""))]


def fam_repeated(rng, k):
    out = []
    while len(out) < k:
        c, d = rng.sample("ab\u00e9\U0001F600 ", 2)
        n, m = rng.choice([0, 1, 2, 99, 100, 101, 199, 200, 201, 202, 300, 600]), rng.randint(0, 620)
        unit = rng.choice([c, c + d, c * 3 + d])
        a = (unit * n)[:n]
        b = rng.choice([(unit * m)[:m], (c * m), (d + unit * m)[:m + 1], mutated(rng, a, c + d, 3)])
        out.append((a, b))
    return out


def fam_sokoban(rng, k):
    from crbc.envs import make

    boards: list[str] = []
    for seed in range(12):
        for env_id in ("sokoban-6x6-v0", "sokoban-8x8-2box-v0"):
            env = make(env_id, max_steps=30)
            obs, _ = env.reset(seed=seed)
            for _ in range(30):
                boards.append(obs)
                obs, _, end, cut, _ = env.step(rng.choice(["up", "down", "left", "right"]))
                if end or cut:
                    break
    return [(rng.choice(boards), rng.choice(boards)) for _ in range(k)]


def fam_alfworld(rng, k):
    groups = iteration(rng.randrange(1000), 4, 8, 50)
    return [tuple(rng.sample(g, 2)) for g in (rng.choice(groups) for _ in range(k))]


FAMILIES = {"random_small_alphabet": fam_random, "long_autojunk": fam_long, "length_195_205": fam_boundary,
            "near_threshold": fam_near_threshold, "unicode": fam_unicode, "empty": fam_empty,
            "repeated_characters": fam_repeated, "sokoban_boards": fam_sokoban, "alfworld_like": fam_alfworld}


def differs(a: str, b: str, blocks: bool) -> dict | None:
    """The first difference between the two libraries on (a, b), else None."""
    d, c = difflib.SequenceMatcher(None, a, b), cydifflib.SequenceMatcher(None, a, b)
    rd, rc = d.ratio(), c.ratio()
    if rd != rc:
        return {"a": a, "b": b, "difflib_ratio": rd, "cydifflib_ratio": rc}
    if blocks and [tuple(m) for m in d.get_matching_blocks()] != [tuple(m) for m in c.get_matching_blocks()]:
        return {"a": a, "b": b, "what": "matching blocks"}
    return None


def exactness(seed: int, per_family: int) -> dict:
    rng = random.Random(seed)
    out: dict = {"by_family": {}, "counterexamples": []}
    for name, make_pairs in FAMILIES.items():
        pairs = make_pairs(rng, per_family)
        checked = 0
        for n, (a, b) in enumerate(pairs):
            for x, y in ((a, b), (b, a)):
                bad = differs(x, y, blocks=n % 10 == 0)
                checked += 1
                if bad is not None:
                    out["counterexamples"].append({"family": name, **bad})
        out["by_family"][name] = checked
    out["ordered_pairs_checked"] = sum(out["by_family"].values())
    out["exact"] = not out["counterexamples"]
    return out


# --------------------------------------------------------------------------------------------
# speed: the fast path's remaining decisions by each matcher


def cy_matcher(cache: dict, rep: str, text_: str):
    m = cache.get(rep)
    if m is None:
        m = cache[rep] = cydifflib.SequenceMatcher(None, "", rep)
    m.set_seq1(text_)
    return m


def decide_cy_ratio(cache):
    def similar(self, c, text_, where, tau):
        return cy_matcher(cache, self.reps[c], text_).ratio() >= tau
    return similar


def decide_cy_reaches(cache):
    def similar(self, c, text_, where, tau):
        rep = self.reps[c]
        return sim.reaches(len(text_), len(rep), cy_matcher(cache, rep, text_).find_longest_match, tau)
    return similar


@contextmanager
def deciding(similar):
    orig = sim._Clusters.similar
    sim._Clusters.similar = similar or orig
    try:
        yield
    finally:
        sim._Clusters.similar = orig


def time_variant(groups, tau: float, make_similar, repeat: int):
    best, res = float("inf"), None
    for _ in range(repeat):
        cache: dict = {}
        with deciding(make_similar(cache) if make_similar else None):
            c0 = time.process_time()
            res = [sim.cluster_texts(g, tau) for g in groups]
            best = min(best, time.process_time() - c0)
    return best, res


def empty_window_us(n: int, reps: int = 100) -> dict:
    """One find_longest_match over an n x n window of texts that share no character."""
    a, b = "x" * n, "y" * n
    out = {}
    for name, cls in (("difflib", difflib.SequenceMatcher), ("cydifflib", cydifflib.SequenceMatcher)):
        m = cls(None, a, b)
        c0 = time.process_time()
        for _ in range(reps):
            m.find_longest_match(0, n, 0, n)
        out[name] = round((time.process_time() - c0) / reps * 1e6, 1)
    return out


def speed(taus, repeat: int, upstream: bool) -> dict:
    groups = iteration(0, 16, 8, 50)
    out = {}
    for tau in taus:
        row, ref = {}, None
        for name, make in (("python", None), ("cy_ratio", decide_cy_ratio), ("cy_reaches", decide_cy_reaches)):
            cpu, res = time_variant(groups, tau, make, repeat)
            ref = res if ref is None else ref
            row[name] = {"cpu_s": round(cpu, 3), "same_clusters": res == ref}
        if upstream:
            obs = np.empty(sum(map(len, groups)), dtype=object)
            obs[:] = [t for g in groups for t in g]
            index = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
            c0 = time.process_time()
            build_step_group_similar(obs, index, tau)
            up = time.process_time() - c0
            row["upstream_cpu_s"] = round(up, 2)
            for name in ("python", "cy_ratio", "cy_reaches"):
                row[name]["speedup_cpu"] = round(up / row[name]["cpu_s"], 1)
        out[str(tau)] = row
        print(tau, row, file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs-per-family", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau", type=float, nargs="+", default=[0.99, 0.95, 0.9, 0.8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--upstream", action="store_true", help="also time verl-agent's grouping (minutes)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    result: dict = {"what": "cydifflib against difflib: exact ratio() equality on adversarial pairs, and the "
                            "similarity fast path's decisions made by cydifflib (ALFWorld-sized iteration of "
                            "bench_similarity.py: seed 0, 16 x 8 x 50)",
                    "cydifflib": cydifflib.__version__, "python": platform.python_version(),
                    "loadavg_before": os.getloadavg()}
    c0 = time.process_time()
    result["exactness"] = exactness(args.seed, args.pairs_per_family)
    result["exactness"]["cpu_s"] = round(time.process_time() - c0, 1)
    result["empty_window_find_longest_match_us"] = {str(n): empty_window_us(n) for n in (200, 580, 1000)}
    result["by_tau"] = speed(args.tau, args.repeat, args.upstream)
    result["loadavg_after"] = os.getloadavg()
    out = json.dumps(result, indent=1)
    print(out)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(out + "\n")
    return result


if __name__ == "__main__":
    main()
