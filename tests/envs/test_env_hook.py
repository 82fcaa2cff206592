"""A new env gets the exact truth through its own dynamics() hook (crbc.envs.base.Dynamics), with
no change to crbc.truth: a toy corridor registered here, enumerated and solved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from crbc.envs import EnvSpec, make, register_env, unregister_env
from crbc.envs.base import SOLVE_BONUS, STEP_PENALTY, Dynamics, TextEnv
from crbc.truth.space import TRUTH_ACTIONS, TruthError, enumerate_states

LENGTH = 4  # cells 0..3, the player starts at 0, the goal is cell 3


@dataclass(frozen=True)
class Corridor:
    player: int

    def render(self) -> str:
        return "".join("P" if i == self.player else "G" if i == LENGTH - 1 else "_" for i in range(LENGTH))


class CorridorEnv(TextEnv):
    """left / right move along a 1 x 4 corridor; up / down bump the walls (no move)."""

    def _new_task(self, rng: np.random.Generator, options: dict[str, Any]) -> None:
        self.level = Corridor(0)

    def _move(self, action: str) -> tuple[float, dict[str, Any]]:
        step = {"left": -1, "right": 1}.get(action, 0)
        self.level = Corridor(min(max(self.level.player + step, 0), LENGTH - 1))
        return 0.0, {}

    def _solved(self) -> bool:
        return self.level.player == LENGTH - 1

    def legend(self) -> str:
        return "P player, G goal, _ floor"

    def optimal_actions(self) -> list[str]:
        return ["right"] * (LENGTH - 1 - self.level.player)

    def optimal_distance(self) -> int | None:
        return LENGTH - 1 - self.level.player

    def dynamics(self) -> Dynamics:
        moves = {"left": -1, "right": 1}
        deltas = [moves.get(a, 0) for a in TRUTH_ACTIONS[:4]]
        return Dynamics(start=self._require_level().player,
                        step=lambda key, k: (min(max(key + deltas[k], 0), LENGTH - 1), 0.0),
                        render=lambda key: Corridor(key).render(),
                        solved=lambda key: key == LENGTH - 1, dead=lambda key: False)


class NoTruthEnv(CorridorEnv):
    def dynamics(self) -> None:
        return None


@pytest.fixture
def corridor():
    register_env(EnvSpec("corridor-test-v0", CorridorEnv, description="toy corridor"))
    register_env(EnvSpec("corridor-notruth-v0", NoTruthEnv))
    yield "corridor-test-v0"
    unregister_env("corridor-test-v0")
    unregister_env("corridor-notruth-v0")


def test_a_registered_env_gets_the_truth_through_its_hook(corridor):
    space = enumerate_states(corridor, seed=0, max_steps=5)
    assert space.boards == ("P__G", "_P_G", "__PG", "___P")  # BFS order from the start
    assert space.dist_S.tolist() == [0, 1, 2, 3]
    assert space.solved_S.tolist() == [False, False, False, True]
    right, left, up = (TRUTH_ACTIONS.index(a) for a in ("right", "left", "up"))
    assert space.next_SA[:3, right].tolist() == [1, 2, 3] and space.next_SA[0, left] == 0
    assert space.next_SA[1, up] == 1  # a bump stays; the solved state is not expanded
    assert space.next_SA[3].tolist() == [3] * len(TRUTH_ACTIONS)
    assert space.reward_SA[2, right] == pytest.approx(STEP_PENALTY + SOLVE_BONUS)
    assert space.reward_SA[0, right] == pytest.approx(STEP_PENALTY)
    # the env's own episodes show the boards the truth enumerated
    env = make(corridor, max_steps=5)
    obs, _ = env.reset(seed=0)
    assert obs == space.boards[0] and env.step("right")[0] == space.boards[1]


def test_the_horizon_limits_the_enumeration(corridor):
    assert enumerate_states(corridor, seed=0, max_steps=2).boards == ("P__G", "_P_G", "__PG")


def test_an_env_without_dynamics_has_no_truth(corridor):
    with pytest.raises(TruthError, match="no exact dynamics"):
        enumerate_states("corridor-notruth-v0", seed=0, max_steps=3)
    with pytest.raises(ValueError, match="already registered"):
        register_env(EnvSpec(corridor, CorridorEnv))
