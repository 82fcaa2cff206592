"""The one owner of everything the studio computes, reads or draws once and keeps: every cached
result and figure of every page lives in a store of this module, asked for through a context.

A **context** names what a page shows by its content: ``key`` is a content hash (a shipped
sample ``sample:<file>:<sha1>``, an upload ``upload:<sha1>``, a generated group ``gen:<sha1>``,
a run folder or archive, a Lesson group ``lesson:<sha1>``), and ``private`` says whether it came
from one user (an upload, a Lesson group a student edited). Every kept value is filed under
``(kind, context key, parts)``::

    ctx.kept("figure", ("credits_timeline", beta, r), lambda: timeline_svg(...))

The key is the caller's promise: two calls with the same ``(kind, key, parts)`` must build the
same value (``parts`` names every parameter the builder reads beyond the context's content).
A kept value is shared, so nobody may change it after it is returned.

**Who sees what.** A context that is not private files its values in the server's store, shared
by every session (thirty students opening the Lesson compute its worked example once). A private
one files them in its session's store (``st.session_state``), released with the session, so
nothing derived from a user's data ever sits where another session reads. :func:`server` is the
context of what the server itself holds (shipped files, models, run listings), never a user's.

**Bounds.** Each kind declares how many values it keeps (:data:`KINDS`: the least recently used
go first; a session keeps at most :data:`SESSION_ENTRIES` per kind, fewer for large ones) and, for listings of folders
that change, how long a value lives. Two sessions asking for the same shared value at once build
it once: the second waits for the first.

    PageContext                      a group of a loaded source (every page but Training runs)
      ctx.process                      the merged empirical process of the chosen group
      ctx.credits(name, params)        an estimator's credits on it (registry.compute)
      ctx.file_credits(name)           the same over every group of the source
      ctx.intervals(name, params)      its credit intervals (the validated default B, seed 0)
      ctx.file_intervals(name)         the same over every group of the source
      ctx.disagreement(comparison, params)  where two estimators disagree most (crbc.explain)
      ctx.file_disagreement(comparison, params)  the same over every group of the source
      ctx.sweep(beta, k_max), ctx.coverage(k_max)   the finite-depth backups and their evidence
      ctx.side_by_side(anchor, beta, sigma_min, truth_N)   every method's backup at one anchor
      ctx.trainer_N, ctx.file_trainer_N()           the advantage the user's trainer recorded
    Keyed(key, private)              anything else keyed by content (a run, a set of runs)
    server()                         what the server holds: shipped files, models, listings
    group_context(group, private)    a PageContext on one group (the Lesson's)
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

import streamlit as st

from crbc.estimators import closure
from crbc.estimators import registry as estimators
from crbc.estimators.bootstrap import DEFAULT_B, CreditIntervals, credit_intervals
from crbc.estimators.coverage import MAX_CELLS as COVERAGE_MAX_CELLS
from crbc.estimators.coverage import Coverage, coverage, coverage_cells
from crbc.explain import disagreements as compare
from crbc.io.rollouts import RolloutGroup, dumps_rollout
from crbc.process import Process, merge

__all__ = ["group_context", "KINDS", "Keyed", "NotKept", "owned_by_session", "PageContext", "server", "SESSION_ENTRIES",
           "shared_entries", "clear_shared", "Source", "UPLOAD_PREFIX"]

T = TypeVar("T")

#: the prefix of every upload's source key (ui/core/upload.py, ui/runs/upload.py)
UPLOAD_PREFIX = "upload:"
#: a session's values of one kind, at most
SESSION_ENTRIES = 16


@dataclass(frozen=True)
class Kind:
    """How a kind of value is kept: ``entries`` at most in the server's store (least recently
    used dropped first), each for ``ttl`` seconds (None: until dropped); ``session`` at most in
    one session's store (default ``min(entries, SESSION_ENTRIES)``)."""

    entries: int
    ttl: float | None = None
    session: int | None = None

    @property
    def per_session(self) -> int:
        return min(self.entries, SESSION_ENTRIES) if self.session is None else self.session


#: every kind of kept value. Results of one group are many and small; those of a whole source
#: (every group at once) few and large; figures many; listings of folders re-read every 30 s.
KINDS: dict[str, Kind] = {
    "process": Kind(64), "credits": Kind(256), "intervals": Kind(64), "disagreement": Kind(64),
    "trainer": Kind(64), "sweep": Kind(32), "coverage": Kind(32), "truth": Kind(64),
    "file_credits": Kind(8), "file_intervals": Kind(8), "file_disagreement": Kind(8),
    "figure": Kind(512), "table": Kind(128), "profile": Kind(64), "findings": Kind(64),
    "lesson": Kind(256, session=48), "review": Kind(512), "iteration": Kind(32), "run": Kind(128, session=4), "audit": Kind(16),
    "paired": Kind(16), "file": Kind(32), "model": Kind(4), "solver": Kind(1),
    "accuracy": Kind(8), "generated": Kind(32), "keyed": Kind(4), "service": Kind(8), "owner": Kind(512), "listing": Kind(64, ttl=30.0),
    "job_input": Kind(4),
}


def owned_by_session(key: Any) -> bool:
    """True for a key derived from an upload (a string starting with ``upload:``)."""
    return isinstance(key, str) and key.startswith(UPLOAD_PREFIX)


class NotKept(Exception):  # noqa: N818 (an outcome, not an error)
    """Raised by a builder for an outcome to return but not keep (a cancelled job: the next rerun
    tries again); ``value`` is what :meth:`Context.kept` returns."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


class Store:
    """Kept values by ``(kind, key)``: per kind an LRU of at most ``entries(kind)`` values, each
    living ``KINDS[kind].ttl`` seconds. Thread-safe; a value asked for by two threads at once
    is built once."""

    def __init__(self, entries: Callable[[str], int]) -> None:
        self._entries = entries
        self._shelves: dict[str, OrderedDict[Hashable, tuple[float, Any]]] = {}
        self._lock = threading.Lock()
        self._building: dict[tuple[str, Hashable], threading.Lock] = {}

    def _hit(self, kind: str, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            shelf = self._shelves.setdefault(kind, OrderedDict())
            if key not in shelf:
                return False, None
            born, value = shelf[key]
            ttl = KINDS[kind].ttl
            if ttl is not None and time.monotonic() - born > ttl:
                del shelf[key]
                return False, None
            shelf.move_to_end(key)
            return True, value

    def _put(self, kind: str, key: Hashable, value: Any) -> None:
        with self._lock:
            shelf = self._shelves.setdefault(kind, OrderedDict())
            shelf[key] = (time.monotonic(), value)
            shelf.move_to_end(key)
            while len(shelf) > self._entries(kind):
                shelf.popitem(last=False)

    def peek(self, kind: str, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` when ``(kind, key)`` is held, else ``(False, None)``; builds nothing."""
        return self._hit(kind, key)

    def get(self, kind: str, key: Hashable, build: Callable[[], T]) -> T:
        """The value kept under ``(kind, key)``, else ``build()``'s, kept (an exception is not;
        :class:`NotKept` returns its value unkept)."""
        if kind not in KINDS:
            raise KeyError(f"{kind!r} is not a kind of kept value (ui.core.context.KINDS)")
        found, value = self._hit(kind, key)
        if found:
            return value
        with self._lock:
            gate = self._building.setdefault((kind, key), threading.Lock())
        try:
            with gate:
                found, value = self._hit(kind, key)  # built by the thread we waited for
                if not found:
                    value = build()
                    self._put(kind, key, value)
        except NotKept as e:
            return e.value
        finally:
            with self._lock:
                self._building.pop((kind, key), None)
        return value

    def entries(self) -> list[tuple[str, Hashable]]:
        """Every ``(kind, key)`` held, for tests and the memory report."""
        with self._lock:
            return [(kind, key) for kind, shelf in self._shelves.items() for key in shelf]

    def clear(self) -> None:
        with self._lock:
            self._shelves.clear()


_SERVER = Store(lambda kind: KINDS[kind].entries)
_SESSION_STORE = "_crbc_kept"


def _session_store() -> Store:
    ss = st.session_state
    if _SESSION_STORE not in ss:
        ss[_SESSION_STORE] = Store(lambda kind: KINDS[kind].per_session)
    return ss[_SESSION_STORE]


def shared_entries() -> list[tuple[str, Hashable]]:
    """Every ``(kind, key)`` the server's store holds (what every session may read)."""
    return _SERVER.entries()


def clear_shared() -> None:
    """Empty the server's store (tests; a server under memory pressure)."""
    _SERVER.clear()


class Context:
    """Something a page shows, named by its content: ``key`` (a content hash) and ``private``
    (it came from one user: its values stay in that user's session)."""

    key: str
    private: bool

    def kept(self, kind: str, parts: Hashable, build: Callable[[], T], spinner: str | None = None) -> T:
        """``build()`` the first time ``(kind, self.key, parts)`` is asked for, the same object
        after that; ``spinner``: the text shown while it is built."""
        store = _session_store() if self.private else _SERVER
        if spinner:
            def shown() -> T:
                with st.spinner(spinner):
                    return build()
            return store.get(kind, (self.key, parts), shown)
        return store.get(kind, (self.key, parts), build)


    def held(self, kind: str, parts: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` when :meth:`kept` holds ``(kind, self.key, parts)``, else ``(False, None)``."""
        return (_session_store() if self.private else _SERVER).peek(kind, (self.key, parts))


@dataclass(frozen=True)
class Keyed(Context):
    """A context that is only its content key: a run, a set of runs, a file."""

    key: str
    private: bool = False

    @classmethod
    def of(cls, key: str) -> Keyed:
        """The context of ``key``, private when it names an upload."""
        return cls(key, owned_by_session(key))


def server() -> Keyed:
    """The context of what the server holds for everybody: shipped files, models, listings of
    the run folders (never anything a user sent)."""
    return Keyed("server", False)


def group_digest(group: RolloutGroup) -> str:
    """A content hash of a group: its id and every rollout as the file format writes it."""
    h = hashlib.sha1(group.group.encode())
    for r in group.rollouts:
        h.update(dumps_rollout(r).encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class Source:
    """A loaded data source. key: content-hash cache key (``sample:...``, ``upload:<sha1>``,
    ``gen:<sha1>``, ``run:<sha1>``, ``lesson:<sha1>``). label: for people. groups: its groups.
    recorded_key: the anchor key its anchors already carry (a run's ``config.anchor_key``; ""
    for none). private: it came from one user (default: its key names an upload)."""

    key: str
    label: str
    groups: tuple[RolloutGroup, ...]
    recorded_key: str = ""
    private: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        if self.private is None:
            object.__setattr__(self, "private", owned_by_session(self.key))


def _params_key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted(params.items()))


def _trainer_of(groups: tuple):
    """(N,) the trainer's advantage per step in merge order, or None when no step carries one."""
    import numpy as np

    from crbc.run_analysis.review import trainer_advantage

    adv = trainer_advantage(list(groups))
    return adv if adv is not None and np.isfinite(adv).any() else None


@dataclass(frozen=True, eq=False)
class PageContext(Context):
    """What a page renders: the chosen group of the current source, rollout, estimator, parameters.

    source: the loaded data. index: the chosen group's position in ``source.groups``. rollout:
    the chosen rollout's index inside the group (0-based). estimator: the sidebar's estimator
    (registry name). params: every shared sidebar parameter (name -> value).
    """

    source: Source
    index: int
    rollout: int
    estimator: str
    params: Mapping[str, Any]

    @property
    def groups(self) -> tuple[RolloutGroup, ...]:
        return self.source.groups

    @property
    def group(self) -> RolloutGroup:
        return self.source.groups[self.index]

    @property
    def key(self) -> str:
        """Cache key of the chosen group (content hash of the source and the group index)."""
        return f"{self.source.key}#{self.index}"

    @property
    def private(self) -> bool:
        return bool(self.source.private)

    @property
    def whole(self) -> Keyed:
        """The context of the whole source (every group at once)."""
        return Keyed(self.source.key, self.private)

    @cached_property
    def process(self) -> Process:
        """The merged empirical process of the chosen group (kept, read-only)."""
        group = self.group
        return self.kept("process", (), lambda: merge([group]))

    def file_process(self) -> Process:
        """Every group of the source merged (each on its own anchors; kept)."""
        groups = self.groups
        return self.whole.kept("process", (), lambda: merge(list(groups)))

    def _bounded(self, on: Context, kind: str, parts: Hashable, inline: Callable[[], T], job: dict,
                 then: str = "") -> T:
        """``on.kept(kind, parts, inline)``, except for a private context's process of more than
        :data:`crbc.estimators.worker_job.INLINE_STEPS` steps: then a bounded worker computes it
        (:mod:`ui.core.bounded`, ``job``: its groups, process, what, estimator and parameters), and a
        refusal (a budget) is kept and shown as the page's notice. The groups' rollout table, the
        worker's input, is built once per context (``job_input``: 1 s of the server's time for
        100,000 steps), not once per job. ``then``: what the notice tells the reader to do instead."""
        from crbc.estimators.worker_job import INLINE_STEPS

        if not on.private or job["process"].n_steps <= INLINE_STEPS:
            return on.kept(kind, parts, inline)
        from ui.core import bounded

        def in_worker():
            from crbc.io.parquet_rollouts import groups_table

            groups = job["groups"]  # (self.group,) on a group's context, every group on .whole
            return bounded.compute(**job, table=on.kept("job_input", (len(groups),), lambda: groups_table(groups)))

        out = on.kept(kind, parts, in_worker)
        if isinstance(out, bounded.Refused):
            bounded.show(out, then)
        return out

    @property
    def trainer_N(self):
        """(N,) the advantage the user's trainer gave each step of the chosen group (NaN where a
        step has none), in the process's step order; None when the group records none."""
        groups = (self.group,)
        return self.kept("trainer", (), lambda: _trainer_of(groups))

    def file_trainer_N(self):
        """:attr:`trainer_N` over every group of the source (the order of :meth:`file_credits`)."""
        groups = self.groups
        return self.whole.kept("trainer", (), lambda: _trainer_of(groups))

    def estimator_params(self, name: str) -> dict[str, Any]:
        """The shared sidebar parameters that estimator ``name`` takes (the others keep defaults)."""
        return estimators.get(name).shared(dict(self.params))

    def credits(self, name: str | None = None, params: Mapping[str, Any] | None = None) -> estimators.Credits:
        """Credits of the chosen group under ``name`` (default: the sidebar's estimator) with
        ``params`` (default: its sidebar parameters); kept by group, name and parameters."""
        name = name or self.estimator
        params = dict(self.estimator_params(name) if params is None else params)
        p = self.process
        return self._bounded(self, "credits", (name, _params_key(params)), lambda: estimators.compute(name, p, **params),
                             {"groups": (self.group,), "process": p, "what": "credits", "estimator": name,
                              "params": params, "label": f"the {name} credits of this group"})

    def file_credits(self, name: str) -> estimators.Credits:
        """Credits of every group of the source under ``name`` with its sidebar parameters (each
        group's anchors merged inside that group only, as everywhere); kept like :meth:`credits`."""
        return self._file_credits_with(name, self.estimator_params(name))

    def _file_credits_with(self, name: str, params: Mapping[str, Any]) -> estimators.Credits:
        params, p = dict(params), self.file_process()
        with st.spinner("Computing the credits of every group..."):
            return self._bounded(self.whole, "file_credits", (name, _params_key(params)),
                                 lambda: estimators.compute(name, p, **params),
                                 {"groups": self.groups, "process": p, "what": "credits", "estimator": name,
                                  "params": params, "label": f"the {name} credits of every group"})

    def intervals(self, name: str, params: Mapping[str, Any] | None = None, *, then: str = "") -> CreditIntervals | None:
        """The credit intervals of ``name`` on the chosen group (docs/MATH.md section 10: the
        validated default B = 200, the estimator's default method, level 0.9, seed 0) with
        ``params`` (default: its sidebar parameters); None for an estimator without a step signal.
        ``then``: what a budget's notice tells the reader to do instead."""
        if estimators.get(name).interval_signal() is None:
            return None
        params = dict(self.estimator_params(name) if params is None else params)
        p = self.process
        return self._bounded(self, "intervals", (name, _params_key(params)),
                             lambda: credit_intervals(p, name, n_resamples=DEFAULT_B, seed=0, **params),
                             {"groups": (self.group,), "process": p, "what": "intervals", "estimator": name,
                              "params": params, "label": f"the {name} intervals of this group",
                              "n_resamples": DEFAULT_B}, then)

    def file_intervals(self, name: str) -> CreditIntervals | None:
        """:meth:`intervals` over every group of the source (the order of :meth:`file_credits`)."""
        if estimators.get(name).interval_signal() is None:
            return None
        params, p = self.estimator_params(name), self.file_process()
        with st.spinner("Resampling every group..."):
            return self._bounded(self.whole, "file_intervals", (name, _params_key(params)),
                                 lambda: credit_intervals(p, name, n_resamples=DEFAULT_B, seed=0, **params),
                                 {"groups": self.groups, "process": p, "what": "intervals", "estimator": name,
                                  "params": params, "label": f"the {name} intervals of every group",
                                  "n_resamples": DEFAULT_B})

    def disagreement(self, comparison: str, params: Mapping[str, Any]) -> compare.Disagreement:
        """Where the two sides of ``comparison`` (a name of
        :func:`crbc.explain.disagreements.comparison_named`, the trainer's advantage included)
        disagree on the chosen group, with the shared ``params``."""
        trainer = self.trainer_N if comparison.startswith("trainer vs ") else None
        p, params = self.process, dict(params)
        cache = self._sides(comparison, params, p, self.credits)
        return self.kept("disagreement", (comparison, _params_key(params)),
                         lambda: compare.disagreements(p, comparison, trainer_N=trainer, cache=cache, **params),
                         spinner="Comparing the estimators...")

    def _sides(self, comparison: str, params: dict, p: Process, credits: Callable) -> dict | None:
        """For a private process too large to compute in the server: each side's credits of
        ``comparison`` through ``credits`` (bounded, kept), filed as
        :func:`crbc.explain.disagreements.disagreements`' cache; else None (computed there)."""
        from crbc.estimators.worker_job import INLINE_STEPS

        if not self.private or p.n_steps <= INLINE_STEPS:
            return None
        return {estimators.cache_key(name, p, side): credits(name, side)
                for name, side in compare.sides(comparison, **params)}

    def file_disagreement(self, comparison: str, params: Mapping[str, Any]) -> compare.Disagreement:
        """:meth:`disagreement` over every group of the source."""
        trainer = self.file_trainer_N() if comparison.startswith("trainer vs ") else None
        p, params = self.file_process(), dict(params)
        cache = self._sides(comparison, params, p, self._file_credits_with)
        return self.whole.kept("file_disagreement", (comparison, _params_key(params)),
                               lambda: compare.disagreements(p, comparison, trainer_N=trainer, cache=cache, **params),
                               spinner="Comparing the estimators on every group...")

    def sweep(self, beta: float, k_max: int, tol: float | None = None) -> closure.DepthSweep:
        """V^(K), Q^(K), A^(K) for K = 0..k_max and the closure (kept); with ``tol``, ending at
        the first K >= 1 where ||A^(K) - A_inf|| <= tol (:func:`crbc.estimators.closure.depth_sweep`)."""
        p, beta, k_max = self.process, float(beta), int(k_max)
        return self._bounded(self, "sweep", (beta, k_max, tol), lambda: closure.depth_sweep(p, beta, k_max, tol=tol),
                             {"groups": (self.group,), "process": p, "what": "sweep", "estimator": "crbc",
                              "params": {"beta": beta, "k_max": k_max, "tol": tol},
                              "label": f"the depth sweep K = 0..{k_max} of this group"})

    def side_by_side(self, state: int, beta: float, sigma_min: float, truth_N=None):
        """Every method's backup at anchor ``state`` of the chosen group
        (:func:`crbc.explain.backups_side.side_by_side`; kept by anchor, beta, sigma_min and whether
        ``truth_N``, the exact anchor-level A(s,a) per step, is the reference). A large upload's is
        computed in a bounded worker: it runs every method on the whole group."""
        from crbc.explain import backups_side as B

        p, state, beta, sigma_min = self.process, int(state), float(beta), float(sigma_min)
        return self._bounded(self, "table", ("side_by_side", state, beta, sigma_min, truth_N is not None),
                             lambda: B.side_by_side(p, state, beta=beta, sigma_min=sigma_min,
                                                    anchor_advantage_N=truth_N),
                             {"groups": (self.group,), "process": p, "what": "side_by_side", "estimator": "crbc",
                              "params": {"state": state, "beta": beta, "sigma_min": sigma_min, "group": self.index},
                              "label": "the backups side by side at this anchor"})

    def coverage(self, k_max: int) -> Coverage | None:
        """Evidence coverage C^(K)(s) for K = 0..k_max (crbc.estimators.coverage; kept); None on a
        group whose hop distances and reaches exceed :data:`crbc.estimators.coverage.MAX_CELLS`
        (the page says so rather than hold gigabytes in the server)."""
        p, k_max = self.process, int(k_max)
        if coverage_cells(p) > COVERAGE_MAX_CELLS:
            return None
        return self.kept("coverage", (k_max,), lambda: coverage(p, k_max))


def group_context(group: RolloutGroup, private: bool, params: Mapping[str, Any] | None = None,
                  estimator: str = "crbc") -> PageContext:
    """A :class:`PageContext` on ``group`` alone, keyed by its content (``lesson:<sha1>``):
    the Lesson's group, kept in the session when a student edited it (``private``)."""
    src = Source(f"lesson:{group_digest(group)}", group.group, (group,), private=private)
    return PageContext(src, 0, 0, estimator, dict(params or {}))
