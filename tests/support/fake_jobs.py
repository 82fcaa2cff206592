"""A stand-in for a worker job (crbc.jobs.worker.WorkerJob) in tests of the job queue: what
the queue uses of a job (poll, progress, outcome, elapsed, cancel, close), with a log of starts
and cancels, and finish() to end it."""

from __future__ import annotations


class FakeJob:
    def __init__(self, log: list, name: str):
        self.log, self.name = log, name
        self.outcome = None
        self.progress = {"iterations": 0, "total": 2}
        self.elapsed = 0.0
        log.append(("start", name))

    def poll(self, timeout: float = 0) -> bool:
        return self.outcome is not None

    def finish(self) -> None:
        self.outcome = {"done": self.name}

    def cancel(self) -> None:
        self.outcome = self.outcome or {"error": "cancelled"}
        self.log.append(("cancel", self.name))

    def close(self) -> None:
        pass
