"""The doctor's checks: one :class:`crbc.registry.Registry`, each check declared where it is defined.

A check is a pure function registered with the decorator :func:`register_check`, which states everything
the doctor knows of it::

    @register_check("singleton_groups", severity="error", order=10, reads="rows",
                    what="groups of one rollout, where every group-relative advantage is 0 or the raw score")
    def singleton_groups(b: Batch) -> Finding | None: ...

name: the ``check`` of its findings (``crbc.doctor/1``), the recorder's ``crbc/doctor/<name>``
metric and the audit's ``doctor/<name>`` column. severity: ``error``, ``warning`` or ``info``.
order: its sort key; the doctor runs and prints the checks in ascending order (docs/FORMATS.md's
table lists them so), whatever order their modules are imported in; two checks never share one.
what: what a finding of it means, as a noun phrase (the message of a finding known only from the
recorder's count). reads: how :func:`crbc.doctor.diagnose.diagnose` calls it (:data:`READS`).
A check is registered when its module is imported: :mod:`crbc.doctor.diagnose` imports the
modules of the built-in ones.

:data:`CHECKS` (name -> severity) and :data:`WHAT` (name -> what) are read-only mappings derived
from the registry, in the checks' order; they see a check registered later too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crbc.registry import Registry

if TYPE_CHECKING:
    from crbc.doctor.batch import Batch
    from crbc.doctor.findings import Finding

__all__ = ["CHECKS", "Check", "READS", "REGISTRY", "SEVERITIES", "WHAT", "ordered", "register_check"]

SEVERITIES = ("error", "warning", "info")
#: what a check reads, which says how it is called: ``rows`` ``fn(batch)`` (a Batch's step rows,
#: and its token tensors where it wants them), ``tokens`` ``fn(tokens, iteration)`` (a trainer's
#: token tensors: run only on a batch that carries them, and by ``diagnose_tokens``),
#: ``estimator`` ``fn(batch, expect, params)`` (the trainer's advantage against the estimator it
#: is expected to be)
READS = ("rows", "tokens", "estimator")


@dataclass(frozen=True)
class Check:
    """One doctor check and what it declares at registration (module docstring)."""

    name: str
    fn: Callable[..., Finding | None]
    severity: str
    order: float
    what: str
    reads: str

    def run(self, batch: Batch, expect: str | None = None, params: dict[str, Any] | None = None) -> Finding | None:
        """Its finding on ``batch``, or None (also when it reads token tensors the batch lacks)."""
        if self.reads == "rows":
            return self.fn(batch)
        if self.reads == "tokens":
            return None if batch.tokens is None else self.fn(batch.tokens, batch.iteration)
        return self.fn(batch, expect, params)


REGISTRY: Registry[Check] = Registry("doctor check")


def register_check(name: str, *, severity: str, order: float, what: str, reads: str):
    """Decorator: register the function as the doctor check ``name`` (module docstring) and
    return it unchanged. ValueError for a severity or reads outside the vocabulary, an empty
    ``what``, an order another check has, or a name already registered."""
    if severity not in SEVERITIES:
        raise ValueError(f"doctor check {name!r}: severity must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    if reads not in READS:
        raise ValueError(f"doctor check {name!r}: reads must be one of {', '.join(READS)}, got {reads!r}")
    if not isinstance(what, str) or not what.strip():
        raise ValueError(f"doctor check {name!r}: say what a finding of it means (what=...)")
    taken = [c.name for c in REGISTRY if c.order == order and c.name != name]
    if taken:
        raise ValueError(f"doctor check {name!r}: order {order!r} is {taken[0]!r}'s; choose a free one")

    def deco(fn):
        REGISTRY.add(Check(name, fn, severity, order, what, reads))
        return fn

    return deco


def ordered() -> list[Check]:
    """The registered checks in ascending order: the order the doctor runs and prints them."""
    return sorted(REGISTRY, key=lambda c: c.order)


class _Field(Mapping[str, str]):
    """A read-only ``{check name: one field of its entry}``, in the checks' order, read from the
    registry on every access."""

    def __init__(self, field: str):
        self._field = field

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str) or name not in REGISTRY:
            raise KeyError(name)
        return getattr(REGISTRY.get(name), self._field)

    def __contains__(self, name: object) -> bool:
        return name in REGISTRY

    def __iter__(self) -> Iterator[str]:
        return iter([c.name for c in ordered()])

    def __len__(self) -> int:
        return len(REGISTRY)

    def __repr__(self) -> str:
        return repr(dict(self))


#: check name -> severity, in the order the doctor runs and prints them (docs/FORMATS.md's table)
CHECKS: Mapping[str, str] = _Field("severity")
#: check name -> what a finding of it means (for a finding known only from the recorder's count)
WHAT: Mapping[str, str] = _Field("what")
