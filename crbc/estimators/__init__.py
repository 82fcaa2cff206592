"""Step-credit estimators: the registry and everything an estimator is made of.

``registry`` (one signature, :func:`compute`; the machinery only), ``builtin`` (the built-in
estimators, registered when this package is imported; ``builtin_graph`` the state-graph methods of
2026, ``graph_methods`` their maths), ``params`` (described parameters), ``closure``
(the CRBC family), ``baselines`` (verl's GRPO family, verl-agent's GiGPO), ``credits`` (the
result type), ``coverage`` (evidence coverage of the finite-depth family), ``bootstrap`` and
``resample`` (credit intervals and evidence classes, docs/MATH.md section 10). The registry's public
API is re-exported here: ``from crbc.estimators import compute, names``.
"""

# registers the built-in estimators, then the state-graph methods (docs/MATH.md section 12)
from crbc.estimators import builtin, builtin_graph  # noqa: F401, E402
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
