"""A large upload's credits, intervals, depth sweep and backups side by side are computed in a bounded worker
(ui/core/bounded.py), equal to what the server computes itself; a budget ends one with a notice that
names the limit and the command that runs it whole; a shipped source of the same size and a
small upload are computed in the server as before."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("own_session_ids")


def _big_groups():
    """One group of 200 rollouts of 25 steps over 1,000 random anchors (5,000 steps)."""
    from crbc.io.rollouts import Rollout, RolloutGroup, Step

    rng = np.random.default_rng(3)
    rollouts = tuple(Rollout("random", i, tuple(Step(f"a{int(a)}", ("left", "right", "up")[int(m)])
                                               for a, m in zip(rng.integers(1000, size=25), rng.integers(3, size=25),
                                                               strict=True)), bool(rng.random() < 0.3))
                     for i in range(200))
    return [RolloutGroup("random", rollouts)]


def _script(key: str, seconds: float | None, log: list, groups: list) -> None:
    import streamlit as st

    import crbc.estimators.worker_job as E
    import crbc.io.parquet_rollouts as PR
    from ui.core import bounded, context

    started, tables = [], []
    real, real_table = E.EstimateJob.__init__, PR.groups_table

    def table(groups):
        tables.append(len(groups))
        return real_table(groups)

    def counted(self, *a, **k):
        started.append(a[1] if k.get("table") is not None else f"{a[1]} without a table")
        if seconds is not None:
            k["limits"] = E.Limits(seconds=seconds, memory_bytes=E.LIMITS.memory_bytes, budget=E.LIMITS.budget,
                                   cpu_seconds=None)
        return real(self, *a, **k)

    E.EstimateJob.__init__, PR.groups_table = counted, table
    try:
        src = context.Source(key, "test", tuple(groups))
        ctx = context.PageContext(src, 0, 0, "crbc", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
        assert ctx.process.n_steps > E.INLINE_STEPS
        c = ctx.credits("crbc")
        log.append(("credits", c.advantage_N))
        log.append(("sweep", ctx.sweep(0.98, 4).a_SA))
        from crbc.explain.backups_side import choosable_anchors

        log.append(("side", ctx.side_by_side(choosable_anchors(ctx.process)[0], 0.98, 0.1)))
        d = ctx.disagreement("crbc vs gigpo", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
        log.append(("disagreement", [(a.anchor, a.disagreement) for a in d.anchors[:5]]))
        st.write("done")
    finally:
        E.EstimateJob.__init__, PR.groups_table = real, real_table
        log.append(("jobs", tuple(started)))
        log.append(("tables", tuple(tables)))
    del bounded


def _run(key: str, seconds: float | None = None) -> tuple[AppTest, dict, list]:
    """The script run once: the AppTest, what it logged (the last value per name), and the log
    itself (later runs append to it)."""
    log: list = []
    at = AppTest.from_function(_script, args=(key, seconds, log, _big_groups()), default_timeout=180).run()
    return at, dict(log), log


def test_a_large_uploads_results_come_from_a_worker_and_equal_the_servers():
    from crbc.estimators import registry
    from crbc.estimators.closure import depth_sweep
    from crbc.process import merge

    at, log, raw = _run("upload:big-1")
    assert not at.exception, at.exception
    assert log["jobs"] == ("credits", "sweep", "side_by_side", "credits")  # gigpo's side: crbc's is kept already
    assert log["tables"] == (1,)  # the worker's input built once for the four jobs, not per job
    p = merge(_big_groups()[:1])
    from crbc.explain.disagreements import disagreements

    want = disagreements(p, "crbc vs gigpo", beta=0.98, depth=None, sigma_min=0.1)
    assert log["disagreement"] == [(a.anchor, a.disagreement) for a in want.anchors[:5]]
    assert np.array_equal(log["credits"], registry.compute("crbc", p, beta=0.98, depth=None, sigma_min=0.1).advantage_N)
    assert np.array_equal(log["sweep"], depth_sweep(p, 0.98, 4).a_SA, equal_nan=True)
    from crbc.explain.backups_side import choosable_anchors, side_by_side

    assert log["side"] == side_by_side(p, choosable_anchors(p)[0], beta=0.98, sigma_min=0.1)
    at.run()  # kept in the session: no job again, the same numbers
    assert not at.exception and dict(raw)["jobs"] == () and np.array_equal(dict(raw)["credits"], log["credits"])


def test_a_shipped_source_of_the_same_size_is_computed_in_the_server():
    at, log, _ = _run("sample:big-2")
    assert not at.exception, at.exception
    assert log["jobs"] == ()


def test_a_budget_ends_the_computation_with_a_notice_and_the_command():
    at, log, _ = _run("upload:big-3", seconds=0.01)
    assert not at.exception, at.exception
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and "took longer than the studio's 0.01 s" in notes[0]
    assert "python -m crbc credit FILE --estimator crbc --beta 0.98 --depth inf --sigma-min 0.1" in notes[0]
    assert "credits" not in log and not [m for m in at.markdown if m.value == "done"]  # the page stopped


def _page_script(log: list, groups: list) -> None:
    """One run of a page whose bounded jobs share bounded.PAGE_S = 6 s: a job of 2 s, one of 30 s
    (cut when the page's time ends), then the depth sweep (nothing left: never started)."""
    import streamlit as st

    import crbc.estimators.worker_job as E
    import tests.support.slow_job  # noqa: F401 (registers "sleep")
    from crbc.process import merge
    from ui.core import bounded, context

    real, page_s = E.EstimateJob.__init__, bounded.PAGE_S

    def counted(self, *a, **k):
        log.append((a[1], k["limits"].seconds))
        return real(self, *a, **k)

    E.EstimateJob.__init__, bounded.PAGE_S = counted, 6.0
    try:
        bounded.start_run()
        src = context.Source("upload:page-budget", "test", tuple(groups))
        ctx = context.PageContext(src, 0, 0, "crbc", {"beta": 0.98, "depth": None, "sigma_min": 0.1})
        p = merge(list(groups))
        for s in (2, 30):
            out = ctx.kept("table", ("sleep", s), lambda s=s: bounded.compute(
                groups, p, "sleep", "crbc", {"seconds": s}, label=f"the {s} s job"))
            st.write(f"the {s} s job: {out}")
        ctx.sweep(0.98, 4)  # nothing of the page's time is left: refused before it starts
        st.write("done")
    finally:
        E.EstimateJob.__init__, bounded.PAGE_S = real, page_s


def test_a_pages_jobs_share_its_time_and_a_cut_one_is_asked_again():
    log: list = []
    at = AppTest.from_function(_page_script, args=(log, _big_groups()), default_timeout=120).run()
    assert not at.exception, at.exception
    assert [w for w, _ in log] == ["sleep", "sleep"]  # the sweep was never started
    assert log[0][1] <= 6.0 and log[1][1] <= 6.0 - 2.0  # each job had only what was left of the 6 s
    said = [m.value for m in at.markdown]
    assert "the 2 s job: Slept(seconds=2.0)" in said
    assert [x for x in said if x.startswith("the 30 s job: Refused(message=\"the 30 s job: stopped when this "
                                            "page's computations reached the studio's 6 s.")]
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and "the depth sweep K = 0..4 of this group: stopped when this page's computations" in notes[0]
    assert "done" not in said  # the notice stopped the page
    log.clear()
    at.run()  # the 2 s job is kept; the cut one was not (the page's time, not its own budget): asked again
    assert not at.exception, at.exception
    assert [w for w, _ in log][:1] == ["sleep"] and len([m for m in at.markdown if m.value.startswith("the 2 s")]) == 1
