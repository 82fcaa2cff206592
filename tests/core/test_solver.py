"""Every closure solver path against the dense reference (tests/support/reference.py) on random batches:
cycles, self-loops, beta = 1, singleton groups, and batches that mix dense and sparse groups."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crbc.estimators.closure as C
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.process import merge
from tests.support import reference as ref


def _check(groups, beta, method):
    p = merge(groups)
    ref.check_solver(C.solve_values(p, beta, method), p, groups, beta)


def _singletons():
    one_step = RolloutGroup("one", (Rollout("one", 0, (Step("s", "a"),), True),))
    self_loop = RolloutGroup("loop", (Rollout("loop", 0, (Step("s", "a"), Step("s", "a"), Step("s", "b")), False,
                                              truncated=True),))
    return [one_step, self_loop]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), beta=st.sampled_from([0.5, 0.98, 1.0]),
       method=st.sampled_from(C.SOLVERS), max_dense=st.sampled_from([1, 3, 6, 128]))
def test_every_solver_path_matches_reference(seed, beta, method, max_dense):
    rng = np.random.default_rng(seed)
    groups = [ref.random_group(rng, name=f"g{i}", n_anchors=int(rng.integers(1, 10)))
              for i in range(int(rng.integers(1, 25)))]
    groups += _singletons()
    rng.shuffle(groups)
    old = C.MAX_DENSE_BLOCK
    C.MAX_DENSE_BLOCK = max_dense  # "auto" then splits the batch between dense blocks and sparse LU
    try:
        _check(groups, beta, method)
    finally:
        C.MAX_DENSE_BLOCK = old


@pytest.mark.parametrize("method", C.SOLVERS)
def test_singleton_batches(method):
    for g in _singletons():
        _check([g], 1.0, method)
