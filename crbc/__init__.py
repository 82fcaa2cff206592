"""crbc: Cross-Rollout Bellman Closure step credit for group-based RL (arXiv 2609.35082).

The core (this package's top level) needs only numpy and scipy; torch, transformers, plotly and
streamlit live in ``crbc.policy``, ``crbc.generate``, ``crbc.train``, ``crbc.viz`` and the app.
"""

from .estimators import Credits, compute, get, names, register
from .process import Process, merge
from .rollouts import (
    Rollout,
    RolloutFormatError,
    RolloutGroup,
    Step,
    parse_rollouts,
    read_rollouts,
    write_rollouts,
)

__version__ = "0.1.0"

__all__ = [
    "Credits", "Process", "Rollout", "RolloutFormatError", "RolloutGroup", "Step", "compute", "get",
    "merge", "names", "parse_rollouts", "read_rollouts", "register", "write_rollouts",
]
