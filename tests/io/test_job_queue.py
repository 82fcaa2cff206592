"""The server's one queue of long jobs (crbc.jobs.jobqueue): a bound on jobs at once with the
position of each waiting one, one live job per person (every tab of one browser), a job nobody
polls ends, and a waiting job whose result appeared meanwhile never starts."""

from __future__ import annotations

import time

from crbc.jobs.jobqueue import JobQueue
from tests.support.fake_jobs import FakeJob


def _submit(q, log, owner, session="s", key="k"):
    return q.submit(owner, f"{owner}/{session}", key, f"the audit of {owner}", lambda: FakeJob(log, owner))


def test_at_most_max_running_at_once_the_rest_wait_in_order_with_their_position():
    q, log = JobQueue(max_running=1, stale_s=60, thread=False), []
    tickets = [_submit(q, log, o)[0] for o in ("a", "b", "c")]
    q.step()
    assert [t.state for t in tickets] == ["running", "waiting", "waiting"] and log == [("start", "a")]
    assert [q.position(t) for t in tickets] == [0, 1, 2] and q.counts() == (1, 2)
    tickets[0].job.finish()
    q.step()
    assert tickets[0].state == "done" and tickets[0].outcome == {"done": "a"}
    assert [t.state for t in tickets[1:]] == ["running", "waiting"] and q.position(tickets[2]) == 1
    q.cancel(tickets[1])
    q.step()
    assert ("cancel", "b") in log and tickets[2].state == "running"


def test_one_job_per_person_another_tab_is_refused_the_same_tab_replaces():
    q, log = JobQueue(max_running=2, stale_s=60, thread=False), []
    first, _ = _submit(q, log, "alice", "tab1")
    q.step()
    again, why = _submit(q, log, "alice", "tab2")
    assert again is None and "another tab of yours" in why and "running" in why
    other, _ = _submit(q, log, "bob", "tab1")
    assert other is not None
    newer, _ = _submit(q, log, "alice", "tab1", key="k2")
    assert first.state == "done" and "replaced" in first.outcome["error"] and ("cancel", "alice") in log
    q.step()
    assert newer.state == "running" and other.state == "running"


def test_a_job_nobody_polls_is_cancelled_waiting_or_running():
    q, log = JobQueue(max_running=1, stale_s=0.3, thread=False), []
    watched, _ = _submit(q, log, "a")
    orphan, _ = _submit(q, log, "b")
    q.step()
    for _ in range(5):
        time.sleep(0.1)
        q.beat(watched)
        q.step()
    assert watched.state == "running" and orphan.state == "done" and "nobody waited" in orphan.outcome["error"]
    time.sleep(0.4)
    q.step()
    assert watched.state == "done" and ("cancel", "a") in log and q.counts() == (0, 0)


def test_a_waiting_job_whose_result_appeared_is_not_started():
    q, log = JobQueue(max_running=1, stale_s=60, thread=False), []
    _submit(q, log, "a")
    t, _ = q.submit("b", "b/s", "k", "the audit", lambda: FakeJob(log, "b"), done_already=lambda: True)
    q.step()
    q.step()
    assert t.state == "done" and t.outcome == {"done": {"already": True}} and ("start", "b") not in log


def test_the_thread_moves_the_queue_by_itself():
    q, log = JobQueue(max_running=1, stale_s=60, tick_s=0.05), []
    t, _ = _submit(q, log, "a")
    deadline = time.monotonic() + 5
    while t.state != "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    t.job.finish()
    while t.state != "done" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert t.outcome == {"done": "a"}


def test_a_connected_session_keeps_its_job_without_beats_a_closed_one_does_not():
    q, log = JobQueue(max_running=2, stale_s=0.2, thread=False), []
    open_tab = {"on": True}
    kept, _ = q.submit("a", "a/s", "k", "the audit of a", lambda: FakeJob(log, "a"),
                       connected=lambda: open_tab["on"])
    q.step()
    time.sleep(0.3)
    q.step()
    assert kept.state == "running"  # on another page: no beats, but the tab is there
    open_tab["on"] = False  # the tab is closed
    q.step()
    assert kept.state == "done" and "nobody waited" in kept.outcome["error"]


def test_two_jobs_of_one_key_never_run_at_once_and_the_second_uses_the_firsts_result():
    q, log = JobQueue(max_running=2, stale_s=60, thread=False), []
    written = {"file": False}
    a, _ = q.submit("a", "a/s", ("run", "key"), "the audit", lambda: FakeJob(log, "a"),
                    done_already=lambda: written["file"])
    b, _ = q.submit("b", "b/s", ("run", "key"), "the audit", lambda: FakeJob(log, "b"),
                    done_already=lambda: written["file"])
    q.step()
    assert a.state == "running" and b.state == "waiting" and log == [("start", "a")]
    written["file"] = True
    a.job.finish()
    q.step()
    assert b.state == "done" and b.outcome == {"done": {"already": True}} and ("start", "b") not in log


def test_fresh_browsers_from_one_address_are_bounded_when_the_server_asks_for_it():
    """Eight fresh browsers (eight owners) from one address queue two jobs at most with
    ``max_per_address=2``; another address is not affected; without the bound all eight queue."""
    def ask(q, log, owner, address):
        return q.submit(owner, f"{owner}/tab", "k", f"the audit of {owner}", lambda: FakeJob(log, owner),
                        address=address)

    q, log = JobQueue(max_running=1, stale_s=60, thread=False, max_per_address=2), []
    got = [ask(q, log, f"browser{i}", "10.0.0.7") for i in range(8)]
    assert [t is not None for t, _ in got] == [True, True] + [False] * 6
    assert "2 jobs from your network address" in got[2][1] and "at most 2" in got[2][1]
    assert ask(q, log, "neighbour", "10.0.0.8")[0] is not None
    assert ask(q, log, "browser0", "10.0.0.7")[0] is not None  # its own tab again: replaces its ticket
    free = JobQueue(max_running=1, stale_s=60, thread=False, max_per_address=None)
    assert all(ask(free, [], f"browser{i}", "10.0.0.7")[0] is not None for i in range(8))


def _ask(q, log, owner, address, key="k"):
    return q.submit(owner, f"{owner}/tab", key, f"the audit of {owner}", lambda: FakeJob(log, owner),
                    address=address)[0]


def _run_to_the_end(q, log) -> list[str]:
    """Finish each running job in turn; the owners in the order their jobs started."""
    for _ in range(50):
        q.step()
        running = [t for t in q._tickets if t.state == "running"]
        if not running:
            break
        for t in running:
            t.job.finish()
    return [name for what, name in log if what == "start"]


def test_addresses_take_turns_so_fresh_browsers_delay_others_by_one_job():
    """Four fresh browsers of one address queue first, then one person from each of two other
    addresses: after the first browser's job, the others' jobs come before the rest of its own,
    and each is told it has one job ahead."""
    q, log = JobQueue(max_running=1, stale_s=60, thread=False), []
    mine = [_ask(q, log, f"browser{i}", "10.0.0.7", key=i) for i in range(4)]
    q.step()
    others = [_ask(q, log, "bob", "10.0.0.8", key="b"), _ask(q, log, "carol", "10.0.0.9", key="c")]
    assert [q.position(t) for t in others] == [1, 2] and [q.position(t) for t in mine[1:]] == [3, 4, 5]
    assert _run_to_the_end(q, log) == ["browser0", "bob", "carol", "browser1", "browser2", "browser3"]


def test_one_address_waits_in_order_of_arrival_and_two_places_alternate():
    """A class behind one NAT (one address) is served in order of arrival; with two places, the
    second goes to another address before the first address's second job."""
    q, log = JobQueue(max_running=1, stale_s=60, thread=False), []
    for i in range(4):
        _ask(q, log, f"student{i}", "192.168.1.1", key=i)
    assert _run_to_the_end(q, log) == [f"student{i}" for i in range(4)]
    q, log = JobQueue(max_running=2, stale_s=60, thread=False), []
    for i in range(3):
        _ask(q, log, f"browser{i}", "10.0.0.7", key=i)
    _ask(q, log, "bob", "10.0.0.8", key="b")
    q.step()
    assert log == [("start", "browser0"), ("start", "bob")]


def test_an_address_with_nothing_left_is_forgotten():
    q, log = JobQueue(max_running=1, stale_s=60, thread=False), []
    _ask(q, log, "a", "10.0.0.7")
    _run_to_the_end(q, log)
    assert q._started == {} and q.counts() == (0, 0)
