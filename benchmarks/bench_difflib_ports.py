"""Would a compiled difflib speed up similarity anchors, with the same clusters? Prints JSON.

    PYTHONPATH=. python benchmarks/bench_difflib_ports.py [--candidate cydifflib difflib_fast]
           [--pairs-per-family 2500] [--seed 0] [--tau 0.99 0.95 0.9 0.8] [--repeat 3]
           [--upstream] [--no-speed] [--out FILE]

One harness, several candidates (none is a dependency of crbc; a candidate not installed is
reported absent): ``cydifflib`` (``pip install cydifflib==1.2.0``: a Cython port of difflib's
``SequenceMatcher``) and ``difflib_fast`` (``pip install difflib-fast==0.4.0``: Rust, a suffix
automaton; a free ``ratio(a, b)`` and a ``cluster_canonicals``). Per candidate:

1. **Exact?** its ``ratio(a, b)`` against ``difflib.SequenceMatcher(None, a, b).ratio()`` (the
   default ``autojunk=True``, as verl-agent calls it) as floats, both argument orders, on
   adversarial pairs by family: random text over small alphabets, long text (difflib's autojunk
   from 200 characters), lengths 195-205, near-threshold pairs (difflib ratio within 0.02 of a
   TAU), unicode (astral, combining, NUL, lone surrogates), empty strings, Sokoban boards,
   repeated characters, ALFWorld-like observations; on every tenth pair the matching blocks too
   (candidates that have them). A difference, or an exception, is a counterexample; on every
   tenth differing pair the candidate is also compared with ``autojunk=False`` (what it computes
   instead, if that). A candidate with a clustering function is compared with the upstream
   grouping (tests/support/upstream_similarity.py) on the parity tests' groups.
2. **Faster?** only for an exact candidate: the fast path of
   :func:`crbc.io.similarity.cluster_texts` on benchmarks/bench_similarity.py's ALFWorld-sized
   iteration with its remaining ``ratio`` decisions made by the library (``python``: :func:`reaches`
   over :class:`BlockFinder`) and by each of the candidate's variants (cydifflib: ``cy_ratio``,
   its ``ratio() >= tau`` on one matcher per representative, ``set_seq1`` per text, and
   ``cy_reaches``, :func:`reaches` over its ``find_longest_match``; difflib_fast: ``df_ratio``,
   its ``ratio(text, rep) >= tau``). CPU seconds, best of ``--repeat``; the clusters of each are
   compared with the library's (which bench_similarity.py compares with upstream's);
   ``--upstream`` also times verl-agent's grouping once. For a candidate with a
   ``SequenceMatcher``: one ``find_longest_match`` over a whole window where nothing can match
   (``b2j`` empty), per text length.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crbc.io.similarity as sim  # noqa: E402
from benchmarks.bench_similarity import iteration  # noqa: E402
from devtools.text_edits import mutated
from tests.support.upstream_similarity import build_step_group_similar, clusters_of  # noqa: E402

TAUS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
ALPHABETS = ("ab", "abc", "ab \n", "acgt", "the quick brown fox 123", "0123456789abcdefghijklmnopqrstuvwxyz .,")
UNICODE = "ae\u00e9\u0301\U0001F600\u4e2d\u6587\x00\ud800\udfff \u200d"




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


# --------------------------------------------------------------------------------------------
# candidates


@dataclass
class Candidate:
    """A compiled difflib: its ``ratio(a, b)``, and what else it has."""

    name: str
    version: str
    ratio: Callable[[str, str], float]
    blocks: Callable[[str, str], list] | None = None  #: get_matching_blocks as tuples
    matcher: type | None = None  #: a SequenceMatcher class (find_longest_match)
    cluster: Callable[[list[str], float], list[int]] | None = None  #: labels numbered by first row
    variants: dict = field(default_factory=dict)  #: name -> (cache -> _Clusters.similar)


def cy_matcher(cydifflib, cache: dict, rep: str, text_: str):
    m = cache.get(rep)
    if m is None:
        m = cache[rep] = cydifflib.SequenceMatcher(None, "", rep)
    m.set_seq1(text_)
    return m


def load_cydifflib(mod) -> Candidate:
    def cy_ratio(cache):
        def similar(self, c, text_, where, tau):
            return cy_matcher(mod, cache, self.reps[c], text_).ratio() >= tau
        return similar

    def cy_reaches(cache):
        def similar(self, c, text_, where, tau):
            rep = self.reps[c]
            return sim.reaches(len(text_), len(rep), cy_matcher(mod, cache, rep, text_).find_longest_match, tau)
        return similar

    return Candidate("cydifflib", mod.__version__, lambda a, b: mod.SequenceMatcher(None, a, b).ratio(),
                     blocks=lambda a, b: [tuple(m) for m in mod.SequenceMatcher(None, a, b).get_matching_blocks()],
                     matcher=mod.SequenceMatcher, variants={"cy_ratio": cy_ratio, "cy_reaches": cy_reaches})


def load_difflib_fast(mod) -> Candidate:
    from importlib.metadata import version

    def cluster(texts: list[str], tau: float) -> list[int]:
        """cluster_canonicals' clusters (of two or more) as labels numbered by first row."""
        home = list(range(len(texts)))
        for members, _min_ratio in mod.cluster_canonicals(list(texts), tau, 1):
            for i in members:
                home[i] = min(members)
        number: dict[int, int] = {}
        return [number.setdefault(h, len(number)) for h in home]

    def df_ratio(cache):
        def similar(self, c, text_, where, tau):
            return mod.ratio(text_, self.reps[c]) >= tau
        return similar

    return Candidate("difflib_fast", version("difflib-fast"), mod.ratio, cluster=cluster,
                     variants={"df_ratio": df_ratio})


LOADERS = {"cydifflib": load_cydifflib, "difflib_fast": load_difflib_fast}


def load(name: str) -> Candidate | None:
    try:
        return LOADERS[name](importlib.import_module(name))
    except ImportError:
        return None


# --------------------------------------------------------------------------------------------
# exactness


def differs(cand: Candidate, a: str, b: str, want: float, blocks: bool) -> dict | None:
    """The first difference between ``cand`` and difflib (whose ratio is ``want``) on (a, b)."""
    try:
        got = cand.ratio(a, b)
    except Exception as e:  # noqa: BLE001 - an exception is a difference
        return {"a": a, "b": b, "difflib_ratio": want, "error": f"{type(e).__name__}: {e}"}
    if got != want:
        return {"a": a, "b": b, "difflib_ratio": want, "candidate_ratio": got}
    if blocks and cand.blocks is not None:
        d = [tuple(m) for m in difflib.SequenceMatcher(None, a, b).get_matching_blocks()]
        if d != cand.blocks(a, b):
            return {"a": a, "b": b, "what": "matching blocks"}
    return None


def all_pairs(seed: int, per_family: int) -> dict[str, list[tuple[str, str]]]:
    """The ordered pairs by family (each generated pair both ways), as bench_cydifflib.py made them."""
    rng = random.Random(seed)
    return {name: [p for a, b in make_pairs(rng, per_family) for p in ((a, b), (b, a))]
            for name, make_pairs in FAMILIES.items()}


def exactness(cands: list[Candidate], pairs: dict, keep: int = 3) -> dict:
    out = {c.name: {"by_family": {}, "differing_by_family": {}, "counterexamples": [],
                    "differing_checked_against_autojunk_false": 0, "equal_to_autojunk_false": 0,
                    "errors": 0} for c in cands}
    for name, family in pairs.items():
        for c in cands:
            out[c.name]["by_family"][name] = len(family)
            out[c.name]["differing_by_family"][name] = 0
        for n, (a, b) in enumerate(family):
            want = difflib.SequenceMatcher(None, a, b).ratio()
            for c in cands:
                bad = differs(c, a, b, want, blocks=n % 20 < 2)
                if bad is None:
                    continue
                o = out[c.name]
                o["differing_by_family"][name] += 1
                o["errors"] += "error" in bad
                if "candidate_ratio" in bad and o["differing_by_family"][name] % 10 == 1:
                    bad["difflib_autojunk_false_ratio"] = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
                    o["differing_checked_against_autojunk_false"] += 1
                    o["equal_to_autojunk_false"] += bad["difflib_autojunk_false_ratio"] == bad["candidate_ratio"]
                if o["differing_by_family"][name] <= keep:
                    o["counterexamples"].append({"family": name, **bad})
    for o in out.values():
        o["ordered_pairs_checked"] = sum(o["by_family"].values())
        o["ordered_pairs_differing"] = sum(o["differing_by_family"].values())
        o["exact"] = o["ordered_pairs_differing"] == 0
    return out


def test_groups() -> list[tuple[str, list[str], tuple[float, ...]]]:
    """The groups of tests/io/test_similarity.py's parity tests that are not drawn by hypothesis."""
    from tests.io.test_similarity import mutated as t_mutated
    from tests.io.test_similarity import sokoban_texts

    x, y, z = "aaaaaaaaaa", "aaaaaaaabb", "aaaaaaaabc"
    rng = random.Random(5)
    batch = [t_mutated(rng, rng.choice(["kitchen: a mug, a knife", "bedroom: a lamp"]), "abk ", rng.randint(0, 4))
             for _ in range(60)]
    odd = ["a\ud800b" * 70, "a\ud800c" * 70, "", "", "x", "\ud800" * 300, "\ud801" * 300, "ab" * 150,
           "ab" * 149 + "ba"]
    groups = [("first_cluster_wins", [x, y, z], (0.75, 0.85)), ("exactly_at_tau", ["abcdx", "abcdy"], (0.8,)),
              ("several_groups_batch", batch, (0.8,)), ("autojunk_extremes", odd, (0.05, 0.3, 0.6, 0.9, 0.99))]
    groups += [(f"sokoban_seed{s}", sokoban_texts(s), (0.6, 0.8, 0.9, 0.95, 0.98)) for s in range(4)]
    try:
        from tests.support.textarena_play import GROUP, LEVELS, play
    except BaseException:  # noqa: BLE001 - textarena absent: the module skips its importer
        return groups
    for level in LEVELS:
        eps = [play(level, i) for i in range(GROUP)]
        for key in ("history", "board"):
            texts = [s[key] if isinstance(s[key], str) else str(s[key]) for e in eps for s in e["steps"]]
            groups.append((f"textarena_level{level}_{key}", texts, (0.5, 0.8, 0.9, 0.95, 0.99)))
    return groups


def clustering(cand: Candidate) -> dict:
    """The candidate's clustering against upstream's on the parity tests' groups."""
    out = {"group_taus_checked": 0, "group_taus_differing": 0, "errors": 0, "first_differences": []}
    for name, texts, taus in test_groups():
        for tau in taus:
            want = clusters_of(texts, tau)[0]
            try:
                got = cand.cluster(texts, tau)
            except Exception as e:  # noqa: BLE001
                got = f"{type(e).__name__}: {e}"
                out["errors"] += 1
            out["group_taus_checked"] += 1
            if got != want:
                out["group_taus_differing"] += 1
                if len(out["first_differences"]) < 4:
                    out["first_differences"].append({"group": name, "tau": tau, "texts": len(texts),
                                                     "upstream_labels": want, "candidate_labels": got})
    return out


# --------------------------------------------------------------------------------------------
# speed: the fast path's remaining decisions by each matcher


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


def empty_window_us(cands: list[Candidate], n: int, reps: int = 100) -> dict:
    """One find_longest_match over an n x n window of texts that share no character."""
    a, b = "x" * n, "y" * n
    out = {}
    for name, cls in [("difflib", difflib.SequenceMatcher)] + [(c.name, c.matcher) for c in cands if c.matcher]:
        m = cls(None, a, b)
        c0 = time.process_time()
        for _ in range(reps):
            m.find_longest_match(0, n, 0, n)
        out[name] = round((time.process_time() - c0) / reps * 1e6, 1)
    return out


def speed(cands: list[Candidate], taus, repeat: int, upstream: bool) -> dict:
    groups = iteration(0, 16, 8, 50)
    variants = [("python", None)] + [(v, make) for c in cands for v, make in c.variants.items()]
    out = {}
    for tau in taus:
        row, ref = {}, None
        for name, make in variants:
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
            for name, _ in variants:
                row[name]["speedup_cpu"] = round(up / row[name]["cpu_s"], 1)
        out[str(tau)] = row
        print(tau, row, file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", nargs="+", choices=sorted(LOADERS), default=sorted(LOADERS))
    ap.add_argument("--pairs-per-family", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau", type=float, nargs="+", default=[0.99, 0.95, 0.9, 0.8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--upstream", action="store_true", help="also time verl-agent's grouping (minutes)")
    ap.add_argument("--no-speed", action="store_true", help="exactness and clustering only")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    loaded = {name: load(name) for name in args.candidate}
    cands = [c for c in loaded.values() if c is not None]
    result: dict = {"what": "compiled difflib ports against difflib: exact ratio() equality on adversarial pairs, "
                            "clustering against upstream's, and the similarity fast path's decisions made by each "
                            "exact one (ALFWorld-sized iteration of bench_similarity.py: seed 0, 16 x 8 x 50)",
                    "candidates": {n: (c.version if c else "absent") for n, c in loaded.items()},
                    "python": platform.python_version(), "loadavg_before": os.getloadavg()}
    c0 = time.process_time()
    result["exactness"] = exactness(cands, all_pairs(args.seed, args.pairs_per_family))
    result["exactness_cpu_s"] = round(time.process_time() - c0, 1)
    result["clustering_vs_upstream"] = {c.name: clustering(c) for c in cands if c.cluster}
    exact = [c for c in cands if result["exactness"][c.name]["exact"]]
    result["timed"] = [c.name for c in exact]  # only exact candidates are timed
    if exact and not args.no_speed:
        result["empty_window_find_longest_match_us"] = {str(n): empty_window_us(exact, n) for n in (200, 580, 1000)}
        result["by_tau"] = speed(exact, args.tau, args.repeat, args.upstream)
    result["loadavg_after"] = os.getloadavg()
    out = json.dumps(result, indent=1)
    print(out)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(out + "\n")
    return result


if __name__ == "__main__":
    main()
