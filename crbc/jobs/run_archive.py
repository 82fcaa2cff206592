"""A run uploaded as a ``.zip`` of its folder, read in a worker process (the studio's Training runs).

A run archive is untrusted input like any upload: its JSON and JSON Lines are parsed, and every
iteration's rollouts validated, by :func:`_archive_job` in a :class:`crbc.jobs.worker.WorkerJob`
(lower priority, CPU, wall-clock and memory budgets, the studio's decoded-size budget; see
:mod:`crbc.jobs.upload`'s :class:`Limits`). The worker writes each iteration's validated
groups as ``crbc.rollout/1`` Parquet and answers with the run's ``run.json`` and metrics as JSON.
The parent keeps the Parquet bytes in the :class:`crbc.io.runs.Run` it returns, so opening an
iteration later reads compact, already validated columns (the validating Parquet reader, under
the same budget) and never parses the archive's text on the server.
"""

from __future__ import annotations

from pathlib import Path

from crbc.io import budgets
from crbc.io.runs import Run
from crbc.jobs.upload import LimitedRead, Limits
from crbc.jobs.worker import Send, WorkerFailure

__all__ = ["ArchiveJob", "read_archive_limited"]


def _archive_job(payload: dict, send: Send) -> dict:
    """The worker's target: the archive's run, every iteration validated and written as Parquet."""
    from crbc.errors import FormatError
    from crbc.io.parquet_rollouts import write_parquet_rollouts
    from crbc.io.run_zip import read_run_zip

    folder, name = Path(payload["folder"]), payload["name"]
    with budgets.scope(budgets.Budget(**payload["budget"])) as meter:
        try:
            run = read_run_zip((folder / "in.zip").read_bytes(), name)
            iterations = []
            for k, it in enumerate(run.iterations_with_rollouts):
                send({"iteration": k + 1, "of": len(run.iterations_with_rollouts), "bytes": meter.decoded})
                write_parquet_rollouts(folder / f"iter-{it:04d}.parquet", run.rollouts(it))
                iterations.append(it)
        except FormatError as e:
            raise WorkerFailure(" ".join(str(e).split())) from None
        except MemoryError:
            raise WorkerFailure(f"{name}: reading needed more than the memory budget of "
                                f"{budgets.mb(payload['memory_bytes'])}; nothing was loaded") from None
        except RecursionError:
            raise WorkerFailure(f"{name}: nested too deeply to read; nothing was loaded") from None
        except Exception as e:  # noqa: BLE001 (a forged archive the readers did not foresee: still named)
            raise WorkerFailure(f"{name}: could not be read ({type(e).__name__}); nothing was loaded") from None
    return {"meta": run.meta, "metrics": run.metrics, "partial_tail": run.partial_tail, "iterations": iterations}


class ArchiveJob(LimitedRead):
    """Reading one run archive (``name``, its bytes) in a worker: :meth:`poll`, then :meth:`result`."""

    def __init__(self, name: str, data: bytes, limits: Limits | None = None):
        self.name = name
        self.limits = limits or Limits()
        self.make_folder("crbc-run-")
        Path(self.folder, "in.zip").write_bytes(data)
        payload = {"folder": self.folder, "name": name, "budget": self.limits.budget.__dict__,
                   "memory_bytes": self.limits.memory_bytes}
        self.start(_archive_job, payload, name)

    def result(self) -> tuple[Run | None, str | None]:
        """``(run, None)`` or ``(None, one line)``; the worker's folder is removed."""
        msg = self.outcome or {"error": f"{self.name}: the read did not finish"}
        try:
            if "error" in msg:
                return None, msg["error"]
            done = msg["done"]
            parquet = {int(it): Path(self.folder, f"iter-{int(it):04d}.parquet").read_bytes() for it in done["iterations"]}
            files = {it: f"rollouts/iter-{it:04d}.parquet" for it in parquet}
            return Run(self.name, done["meta"], done["metrics"], tuple(files), done["partial_tail"], files,
                       _parquet=parquet), None
        except OSError as e:
            return None, f"{self.name}: the worker's result could not be read ({e.strerror})"
        finally:
            self.close()


def read_archive_limited(name: str, data: bytes, limits: Limits | None = None) -> tuple[Run | None, str | None]:
    """Read a run archive in a worker and wait: ``(run, None)`` or ``(None, one line)``."""
    job = ArchiveJob(name, data, limits)
    try:
        job.wait()
        return job.result()
    finally:
        job.cancel()
