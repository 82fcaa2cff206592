"""The action vocabulary shared by the environments, the policies and the rollouts they write."""

from __future__ import annotations

__all__ = ["ACTIONS", "INVALID_ACTION"]

#: The semantic actions of every toy environment (grid moves), in a fixed order.
ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
#: What a policy's unparseable response becomes: a no-op step in the environments.
INVALID_ACTION = "invalid"
