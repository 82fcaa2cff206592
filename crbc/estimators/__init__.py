"""Step-credit estimators: the registry and everything an estimator is made of.

``registry`` (one signature, :func:`compute`; the machinery only), ``builtin`` (the built-in
estimators, registered when this package is imported), ``graph_methods`` (the maths of GraphGPO, HGPO
and G2PO), ``params`` (described parameters), ``closure``
(the CRBC family), ``baselines`` (verl's GRPO family, verl-agent's GiGPO), ``credits`` (the
result type), ``coverage`` (evidence coverage of the finite-depth family), ``bootstrap`` and
``resample`` (credit intervals and evidence classes, docs/MATH.md section 10). The registry's public
API is re-exported here: ``from crbc.estimators import compute, names``.
"""

from crbc.estimators import builtin  # noqa: F401, E402  (registers the built-in estimators)
from crbc.estimators.registry import (
    CREDIT_SCHEMA,
    Credits,
    Estimator,
    UnknownEstimatorError,
    compute,
    get,
    names,
    register,
    shared_param_specs,
)

__all__ = ["CREDIT_SCHEMA", "Credits", "Estimator", "UnknownEstimatorError", "compute", "get", "names",
           "register", "shared_param_specs"]
