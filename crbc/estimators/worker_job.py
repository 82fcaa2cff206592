"""An estimator's credits, their intervals, the depth sweep, or a computation a layer above
registers (:func:`register_computation`: the backups side by side at one anchor, the advantage
doctor) on a user's groups, computed in a worker process under a time, CPU and memory budget.

A shared studio computes what a page shows of an upload here when the upload is large
(:data:`INLINE_STEPS`), so one person's 20,000-anchor group can neither hold the interpreter
every session needs nor grow the server's memory: :class:`EstimateJob` writes the groups as
``crbc.rollout/1`` Parquet into a private folder and runs :func:`_estimate_job` in a
:class:`crbc.jobs.upload.LimitedRead` (a child of the fork server at a lower priority, with
:data:`LIMITS`), which merges them, computes, and writes the result's arrays
(:mod:`crbc.estimators.result_files`: npz and JSON, nothing pickled). The parent merges the same groups
(the step order is the merge's, the same in both) and attaches its process. Every ending is the
result or one line naming the budget that ended it and the command that computes it whole
(:func:`command`).

    job = EstimateJob(groups, "credits", "crbc", {"beta": 0.98})
    job.wait(); credits = job.result(process)       # or raises EstimateRefused(line)
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crbc.io import budgets
from crbc.io.rollouts import RolloutGroup
from crbc.jobs.upload import LimitedRead, Limits
from crbc.jobs.worker import Send, WorkerFailure
from crbc.process import Process
from crbc.registry import Registry

__all__ = ["command", "Computation", "COMPUTATIONS", "EstimateJob", "EstimateRefused", "INLINE_STEPS", "LIMITS",
           "register_computation", "WHATS"]

#: the budgets of one computation: 60 s of wall clock, 45 s of CPU, 1 GB beyond the worker's start
LIMITS = Limits(seconds=60.0, memory_bytes=1000 * budgets.MB, budget=budgets.CLI, cpu_seconds=45.0)
#: a process of at most this many steps is computed in the server itself: on the worst shapes of
#: about 4,000 steps every estimator takes at most 0.21 s of CPU and crbc's 200-draw intervals
#: 0.70 s and 153 MB peak, imports included (benchmarks/results/worst-shapes/inline-4000.json)
INLINE_STEPS = 4000
#: what a job computes -> the CLI command that computes the same, whole
WHATS = {"credits": "credit", "intervals": "credit", "sweep": "report"}


@dataclass(frozen=True)
class Computation:
    """A computation on groups that a layer above registers (:func:`register_computation`):
    ``compute(groups, params)`` runs in the worker and returns a dataclass registered with
    :func:`crbc.estimators.result_files.register`; ``command(params)`` is the CLI's arguments after
    ``python -m crbc`` that compute it whole on the user's ``FILE``."""

    name: str
    compute: Callable[[list[RolloutGroup], Mapping[str, Any]], Any]
    command: Callable[[Mapping[str, Any]], list[str]]


#: computations of the layers above (the worker imports the module that registered one)
COMPUTATIONS: Registry[Computation] = Registry("computation")


def register_computation(c: Computation) -> Computation:
    """Register ``c`` (again under the same name: the first stays)."""
    return c if c.name in COMPUTATIONS else COMPUTATIONS.add(c)


class EstimateRefused(Exception):
    """The one line saying why a computation stopped (its budget) and how to run it whole."""


def command(what: str, estimator: str, params: Mapping[str, Any], n_resamples: int | None = None) -> str:
    """The command line that computes ``what`` on the user's own file (``FILE``), without the
    studio's budget: ``python -m crbc credit FILE --estimator NAME --beta 0.98 ...`` (a depth of
    None is the closure, ``--depth inf``; the sweep is in ``crbc report``; a registered
    computation's is its own :attr:`Computation.command`)."""
    if what in COMPUTATIONS:
        return " ".join(shlex.quote(a) for a in ["python", "-m", "crbc", *COMPUTATIONS.get(what).command(params)])
    args = ["python", "-m", "crbc", WHATS[what], "FILE"]
    if what == "sweep":
        return " ".join(shlex.quote(a) for a in args + ["--beta", str(params.get("beta", 0.98))])
    args += ["--estimator", estimator]
    for k, v in sorted(params.items()):
        if v is not None or k == "depth":
            args += [f"--{k.replace('_', '-')}", "inf" if v is None else str(v)]
    if what == "intervals":
        args += ["--bootstrap", str(n_resamples or 200)]
    return " ".join(shlex.quote(a) for a in args)


def _compute(payload: dict, groups: list[RolloutGroup]):
    from crbc.estimators import registry
    from crbc.estimators.bootstrap import credit_intervals
    from crbc.estimators.closure import depth_sweep
    from crbc.process import merge

    what, name, params = payload["what"], payload["estimator"], payload["params"]
    if what == "credits":
        return registry.compute(name, groups, **params)
    if what == "intervals":
        return credit_intervals(groups, name, n_resamples=payload["n_resamples"], seed=payload["seed"], **params)
    if what == "sweep":
        return depth_sweep(merge(groups), params["beta"], params["k_max"], tol=params.get("tol"))
    if what in COMPUTATIONS:
        return COMPUTATIONS.get(what).compute(groups, params)
    raise WorkerFailure(f"unknown computation {what!r}")


def _estimate_job(payload: dict, send: Send) -> dict:
    """The worker's target: read ``in.parquet``, compute, write ``result.npz``; the meta."""
    import importlib

    from crbc.errors import FormatError
    from crbc.estimators import result_files as results
    from crbc.io.parquet_rollouts import read_parquet_rollouts

    folder = Path(payload["folder"])
    with budgets.scope(budgets.Budget(**payload["budget"])):
        try:
            groups = read_parquet_rollouts("the source", (folder / "in.parquet").read_bytes())
            if payload.get("module"):
                importlib.import_module(payload["module"])
            send({"phase": "computing"})
            return results.save(_compute(payload, groups), folder)
        except (FormatError, ValueError, KeyError) as e:
            raise WorkerFailure(" ".join(str(e).split())[:300]) from None
        except MemoryError:
            raise WorkerFailure(f"the computation needed more than the memory budget of "
                                f"{budgets.mb(payload['memory_bytes'])}") from None


class EstimateJob(LimitedRead):
    """``what`` (``credits``, ``intervals``, ``sweep``, ``side_by_side``) of ``estimator`` with ``params`` on
    ``groups``, in a worker: :meth:`poll`, then :meth:`result`; :meth:`cancel` kills it.
    ``table``: the groups already as :func:`crbc.io.parquet_rollouts.groups_table` built them (a
    caller that starts several jobs on the same groups builds it once; it must be of ``groups``);
    ``timed_out_line``: what a job stopped at ``limits.seconds`` says instead of the studio's budget
    (a page whose own time ran out gave it less than that)."""

    def __init__(self, groups: Sequence[RolloutGroup], what: str, estimator: str, params: Mapping[str, Any],
                 *, n_resamples: int = 200, seed: int | None = 0, limits: Limits | None = None,
                 label: str = "this computation", table: Any = None, timed_out_line: str | None = None):
        from crbc.io.parquet_rollouts import write_parquet_rollouts

        if what not in WHATS and what not in COMPUTATIONS:
            raise ValueError(f"what must be one of {', '.join([*WHATS, *COMPUTATIONS.names()])}, not {what!r}")
        self.limits = limits or LIMITS
        self.label, self.line = label, command(what, estimator, params, n_resamples)
        self.timed_out_line = timed_out_line
        self.make_folder("crbc-estimate-")
        write_parquet_rollouts(Path(self.folder, "in.parquet"), list(groups) if table is None else table)
        payload = {"folder": self.folder, "what": what, "estimator": estimator, "params": dict(params),
                   "n_resamples": int(n_resamples), "seed": seed, "budget": self.limits.budget.__dict__,
                   "memory_bytes": self.limits.memory_bytes,
                   # the registering module, imported by the worker before it computes (it registers there too)
                   "module": COMPUTATIONS.get(what).compute.__module__ if what in COMPUTATIONS else None}
        self.start(_estimate_job, payload, label)

    def _whole(self) -> str:
        return f"Run it whole on your machine: `{self.line}`"

    def died(self) -> str:
        if self.cpu_exhausted():
            return (f"{self.label} needed more than the studio's CPU budget of {self.limits.cpu_seconds:g} s "
                    f"and was stopped. {self._whole()}")
        return (f"{self.label} stopped (exit code {self.proc.exitcode}), most likely at the studio's memory "
                f"budget of {budgets.mb(self.limits.memory_bytes)}. {self._whole()}")

    def timed_out(self) -> str:
        if self.timed_out_line:
            return self.timed_out_line
        return f"{self.label} took longer than the studio's {self.limits.seconds:g} s and was stopped. {self._whole()}"

    def cancelled(self) -> str:
        return f"{self.label}: cancelled"

    def result(self, process: Process):
        """The result with ``process`` attached (the same groups merged by the caller), or
        :class:`EstimateRefused` with the line to show; the folder is removed."""
        from crbc.estimators import result_files as results

        msg = self.outcome or {"error": f"{self.label} did not finish"}
        try:
            if "error" in msg:
                line = msg["error"]
                if not line.startswith(self.label):  # the worker's own line (a budget it met itself)
                    line = f"{self.label}: {line.rstrip('.')}."
                raise EstimateRefused(line if "Run it whole" in line or line.endswith("cancelled")
                                      else f"{line} {self._whole()}")
            return results.load(msg["done"], self.folder, process)
        except (OSError, ValueError, KeyError) as e:
            raise EstimateRefused(f"{self.label}: the worker's result could not be read ({type(e).__name__})") from e
        finally:
            self.close()
