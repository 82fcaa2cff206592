"""The Sokoban solver, generator and XSB reader against independent brute force."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crbc.envs import make
from crbc.envs import sokoban as sk
from crbc.envs.sokoban import SokobanLevel, from_xsb, solve, to_xsb

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}

MICROBAN_1 = """####
# .#
#  ###
#*@  #
#  $ #
#  ###
####"""


# ------------------------------------------------------------------ independent reference
def ref_move(walls, player, boxes, action):
    """Plain Sokoban rules on (row, col) tuples, written independently of the package."""
    dr, dc = MOVES[action]
    nxt = (player[0] + dr, player[1] + dc)
    if nxt in walls:
        return player, boxes
    if nxt in boxes:
        beyond = (nxt[0] + dr, nxt[1] + dc)
        if beyond in walls or beyond in boxes:
            return player, boxes
        return nxt, (boxes - {nxt}) | {beyond}
    return nxt, boxes


def ref_distance(level: SokobanLevel, limit: int = 10_000) -> int | None:
    """Exhaustive forward BFS without any pruning: fewest moves to solve, None if impossible."""
    walls = level.walls | level.outside
    start = (level.player, level.boxes)
    if level.boxes == level.targets:
        return 0
    seen, queue = {start: 0}, deque([start])
    while queue:
        state = queue.popleft()
        for action in MOVES:
            nxt = ref_move(walls, *state, action)
            if nxt in seen:
                continue
            seen[nxt] = seen[state] + 1
            if nxt[1] == level.targets:
                return seen[nxt]
            if seen[nxt] < limit:
                queue.append(nxt)
    return None


def iddfs_distance(level: SokobanLevel, max_depth: int) -> int | None:
    """Iterative deepening over raw action sequences (tiny levels only)."""
    walls = level.walls | level.outside

    def search(player, boxes, depth):
        if boxes == level.targets:
            return True
        if depth == 0:
            return False
        return any(search(*ref_move(walls, player, boxes, a), depth - 1) for a in MOVES)

    for depth in range(max_depth + 1):
        if search(level.player, level.boxes, depth):
            return depth
    return None


@st.composite
def small_levels(draw, max_boxes: int = 2):
    """Random rooms up to 6x6 (border walls, random inner walls), boxes, targets and player."""
    h, w = draw(st.integers(4, 6)), draw(st.integers(4, 6))
    inner = [(r, c) for r in range(1, h - 1) for c in range(1, w - 1)]
    wall_flags = draw(st.lists(st.booleans(), min_size=len(inner), max_size=len(inner)))
    floor = [cell for cell, is_wall in zip(inner, wall_flags, strict=True) if not is_wall or cell == inner[0]]
    n_boxes = draw(st.integers(1, max_boxes))
    if len(floor) < 2 * n_boxes + 1:
        floor = inner
    picks = draw(st.permutations(range(len(floor))))
    boxes = frozenset(floor[i] for i in picks[:n_boxes])
    player = floor[picks[n_boxes]]
    targets = frozenset(floor[i] for i in draw(st.permutations(range(len(floor))))[:n_boxes])
    all_cells = {(r, c) for r in range(h) for c in range(w)}
    return SokobanLevel(h, w, frozenset(all_cells - set(floor)), targets, boxes, player)


def ref_optimal_actions(level: SokobanLevel) -> set[str]:
    d = ref_distance(level)
    if not d:
        return set()
    walls = level.walls | level.outside
    out = set()
    for a in MOVES:
        player, boxes = ref_move(walls, level.player, level.boxes, a)
        if ref_distance(level.with_state(player, boxes)) == d - 1:
            out.add(a)
    return out


# ------------------------------------------------------------------ solver vs reference
@settings(max_examples=60, deadline=None)
@given(small_levels())
def test_solver_distance_matches_brute_force(level):
    assert sk.optimal_distance(level) == ref_distance(level)
    assert sk.is_dead(level) == (ref_distance(level) is None)


@settings(max_examples=40, deadline=None)
@given(small_levels(max_boxes=1))
def test_optimal_actions_match_brute_force(level):
    assert set(sk.optimal_actions(level)) == ref_optimal_actions(level)


@settings(max_examples=40, deadline=None)
@given(small_levels())
def test_following_optimal_actions_solves_in_exactly_d_moves(level):
    d = sk.optimal_distance(level)
    sol = solve(level)
    state, moves = level, 0
    while sol.distance(state):
        actions = sol.optimal_actions(state)
        assert actions, "a live unsolved state must have an optimal action"
        for a in actions:  # every listed action really lowers the distance by one
            assert sol.distance(sk.apply_action(state, a)[0]) == sol.distance(state) - 1
        state = sk.apply_action(state, actions[-1])[0]
        moves += 1
    assert (d is None and not state.solved) or (state.solved and moves == d)


@pytest.mark.parametrize("seed", range(6))
def test_solver_agrees_with_iterative_deepening_on_generated_levels(seed):
    env = make("sokoban-6x6-v0")
    env.reset(seed=seed)
    d = env.optimal_distance()
    assert d is not None and d <= 10
    assert iddfs_distance(env.level, d) == d


def test_shortest_distance_agrees_with_solve():
    env = make("sokoban-8x8-2box-v0")
    for seed in range(15):
        env.reset(seed=seed)
        assert sk.shortest_distance(env.level, 40) == env.optimal_distance() == ref_distance(env.level)


def test_solution_queries_every_state_an_episode_visits():
    env = make("sokoban-8x8-2box-v0")
    rng = np.random.default_rng(5)
    env.reset(seed=5)
    while not env.done:
        assert env.optimal_distance() == ref_distance(env.level)
        env.step(str(rng.choice(["up", "down", "left", "right"])))


# ------------------------------------------------------------------ dead states
def test_box_in_corner_is_dead():
    level = from_xsb("######\n#$   #\n#  @.#\n######")
    assert sk.optimal_distance(level) is None
    assert sk.optimal_actions(level) == []
    assert sk.is_dead(level)


def test_box_against_wall_without_target_is_dead():
    level = from_xsb("#######\n#  $  #\n#  @  #\n#    .#\n#######")
    assert sk.is_dead(level) and ref_distance(level) is None


def test_two_boxes_blocking_each_other_are_dead():
    level = from_xsb("######\n#    #\n# $$ #\n# .. #\n#  @ #\n######")
    live = sk.optimal_distance(level)
    assert live == ref_distance(level)
    stuck = from_xsb("######\n#$$  #\n#  ..#\n#  @ #\n######")
    assert sk.optimal_distance(stuck) is None and ref_distance(stuck) is None


def test_env_reports_dead_after_pushing_into_corner():
    env = make("sokoban-xsb", level="#####\n#   #\n# $ #\n# @.#\n#####")
    env.reset(seed=0)
    assert env.optimal_distance() == ref_distance(env.level)
    env.step("up")  # box pushed to the top wall, above it nothing: dead (target is at the bottom)
    assert env.optimal_distance() is None and env.optimal_actions() == []


def test_solver_limit():
    big = from_xsb("##########\n#        #\n# $ $ $  #\n#  $ $ $ #\n# ...... #\n#   @    #\n##########")
    with pytest.raises(sk.SolverLimitError):
        solve(big, max_states=500)


# ------------------------------------------------------------------ generator
@pytest.mark.parametrize(("env_id", "lo", "hi"), [("sokoban-6x6-v0", 2, 10), ("sokoban-8x8-2box-v0", 3, 12)])
def test_generated_levels_are_solvable_within_range(env_id, lo, hi):
    env = make(env_id)
    distances = []
    for seed in range(200):
        env.reset(seed=seed)
        d = env.optimal_distance()
        assert d is not None and lo <= d <= hi, (seed, d, env.render())
        assert len(env.level.boxes) == len(env.level.targets) == env.config.n_boxes
        distances.append(d)
    assert len(set(distances)) >= 5  # a spread of difficulties, not one length


def test_generator_uses_only_its_generator():
    cfg = sk.SokobanConfig()
    np.random.seed(0)
    before = np.random.get_state()[1].copy()
    a = sk.generate_level(cfg, np.random.default_rng(42))
    b = sk.generate_level(cfg, np.random.default_rng(42))
    assert a == b
    assert np.array_equal(np.random.get_state()[1], before)


# ------------------------------------------------------------------ XSB
def test_xsb_round_trip_classic_level():
    level = from_xsb(MICROBAN_1)
    assert to_xsb(level) == MICROBAN_1
    assert from_xsb(to_xsb(level)) == level
    assert sk.optimal_distance(level) == ref_distance(level)
    assert level.render().splitlines()[3] == "#√P__#"


def test_xsb_accepts_alternative_floor_and_comments():
    text = "; Level 7\n\n#####\n#@$.#\n#####\n\n"
    dashed = "#####\n#@$.#\n#####".replace(" ", "-")
    assert from_xsb(text) == from_xsb(dashed) == from_xsb("#####\n#@$.#\n#####")
    assert (
        from_xsb("######\n#@_$.#\n######")
        == from_xsb("######\n#@-$.#\n######")
        == from_xsb("######\n#@ $.#\n######")
    )
    assert to_xsb(from_xsb("######\n#@ $.#\n######"), floor="-") == "######\n#@-$.#\n######"


def test_xsb_outside_cells_and_player_on_goal():
    text = "  ####\n###  #\n#+ $ #\n######"
    level = from_xsb(text)
    assert to_xsb(level) == text
    assert (0, 0) in level.outside
    assert level.render().splitlines()[0] == "######"
    assert level.player in level.targets and level.render().splitlines()[2] == "#S_X_#"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_xsb_round_trip_generated_levels(seed):
    level = sk.generate_level(
        sk.SokobanConfig(height=8, width=8, n_boxes=2, min_moves=3, max_moves=12), np.random.default_rng(seed)
    )
    assert from_xsb(to_xsb(level)) == level


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#####\n#   #\n#####", "no player"),
        ("######\n#@$.@#\n######", "line 2, column 5: a second player"),
        ("#####\n#@$.#\n##k##\n#####", "line 3, column 3: unknown character 'k'"),
        ("#####\n#@$. \n#####", "line 2, column 4: the level is not enclosed"),
        ("#####\n#@$.#\n#  \n#####", "line 3, column 2: the level is not enclosed"),
        ("#####\n@$.#\n#####", "line 2, column 1: the level is not enclosed"),
        ("######\n#@$$.#\n######", "box count \\(2"),
        ("#####\n#@ .#\n#####", "no boxes"),
        ("#######\n#@$.#.#\n#######", "line 2, column 6: goal outside"),
        ("#######\n#@.#$##\n#######", "line 2, column 5: box outside"),
        ("", "empty"),
    ],
)
def test_bad_xsb_raises_naming_the_place(text, message):
    with pytest.raises(ValueError, match=message):
        from_xsb(text)


def test_xsb_env_plays_the_fixed_level():
    env = make("sokoban-xsb", level=MICROBAN_1)
    obs1, _ = env.reset(seed=1)
    obs2, _ = env.reset(seed=2)
    assert obs1 == obs2 == from_xsb(MICROBAN_1).render()
    assert env.task_id == "sokoban-xsb/seed-2"
    d = env.optimal_distance()
    while not env.done:
        obs, reward, terminated, truncated, info = env.step(env.optimal_actions()[0])
    assert d > env.max_steps and truncated and not info["success"]  # 33 moves > 15-step cap
    env = make("sokoban-xsb", level=MICROBAN_1, max_steps=100)
    env.reset(seed=0)
    for _ in range(d):
        obs, reward, terminated, truncated, info = env.step(env.optimal_actions()[0])
    assert terminated and info["success"] and env.steps == d
