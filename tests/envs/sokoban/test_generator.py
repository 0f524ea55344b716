"""Reverse-play level generator: solvable, reproducible, well-formed, validated."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agent_envs.envs.sokoban.dynamics import boxes_on_target, is_solved, num_boxes, step
from agent_envs.envs.sokoban.generator import check_settings, default_topology_steps, generate
from agent_envs.envs.sokoban.levels import parse_xsb, to_xsb
from agent_envs.envs.sokoban.solver import solve

PRESETS = [(6, 6, 1), (8, 8, 1), (8, 8, 2), (10, 10, 3)]
SEEDS = 1000


def level(seed: int, width: int, height: int, boxes: int, **kwargs: int):
    return generate(
        np.random.default_rng(seed), width=width, height=height, num_boxes=boxes, **kwargs
    )


@pytest.mark.parametrize(("width", "height", "boxes"), PRESETS)
def test_sokoban__generated_levels_are_solvable(width, height, boxes):
    for seed in range(SEEDS):
        state = level(seed, width, height, boxes)
        solution = solve(state)
        assert solution, f"seed {seed}: {state.board.decode()}"
        for action in solution:
            state = step(state, action).state
        assert is_solved(state), f"seed {seed}"


@pytest.mark.parametrize(("width", "height", "boxes"), [*PRESETS, (7, 9, 2), (12, 8, 4)])
def test_sokoban__generated_levels_are_well_formed(width, height, boxes):
    for seed in range(100):
        state = level(seed, width, height, boxes)
        rows = state.board.decode().split("\n")
        assert state.width == width
        assert len(rows) == height and {len(row) for row in rows} == {width}
        assert set(rows[0]) == set(rows[-1]) == {"#"}
        assert all(row[0] == row[-1] == "#" for row in rows)
        assert num_boxes(state) == boxes and boxes_on_target(state) == 0
        assert state.board.count(b"X") == state.board.count(b"O") == boxes
        assert state.board.count(b"P") == 1 and state.board.count(b"S") == 0
        assert state.board[state.player] == ord("P")
        # Enclosed and valid: its XSB text parses back to the same state.
        assert parse_xsb(to_xsb(state)) == state


def test_sokoban__same_seed_same_level():
    for width, height, boxes in PRESETS:
        for seed in range(20):
            assert level(seed, width, height, boxes) == level(seed, width, height, boxes)


def test_sokoban__same_generator_state_same_level():
    rng = np.random.default_rng(7)
    first = generate(rng, width=8, height=8, num_boxes=2)
    state = rng.bit_generator.state
    second = generate(rng, width=8, height=8, num_boxes=2)
    rng.bit_generator.state = state
    assert generate(rng, width=8, height=8, num_boxes=2) == second != first


@pytest.mark.parametrize(
    ("width", "height", "boxes", "distinct"), [(6, 6, 1, 150), (10, 10, 3, 200)]
)
def test_sokoban__different_seeds_mostly_different_levels(width, height, boxes, distinct):
    boards = {level(seed, width, height, boxes).board for seed in range(200)}
    assert len(boards) >= distinct


def test_sokoban__generator_leaves_global_rngs_alone():
    random.seed(1)
    np.random.seed(1)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    level(0, 10, 10, 3)
    assert random.getstate() == python_state
    assert all(
        np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state, strict=True)
    )


GOLDEN = {
    (6, 6, 1): "######\n#__O##\n#___##\n#PX###\n#___##\n######",
    (8, 8, 2): "########\n#__P####\n#XX#####\n#___####\n#OO#####\n#___####\n#_######\n########",
    (10, 10, 3): (
        "##########\n#___###P##\n#__X#__X_#\n#_O_____O#\n#_X___O###\n#_########\n"
        "#_########\n#_########\n#___######\n##########"
    ),
}


@pytest.mark.parametrize(("size", "board"), GOLDEN.items())
def test_sokoban__golden_levels_for_seed_0(size, board):
    assert level(0, *size).board.decode() == board


def test_sokoban__default_topology_steps_are_gym_sokobans():
    assert [default_topology_steps(n, n) for n in (6, 8, 10)] == [20, 27, 34]


def test_sokoban__search_depth_bounds_the_reverse_play():
    shallow = [level(seed, 10, 10, 3, search_depth=20) for seed in range(30)]
    deep = [level(seed, 10, 10, 3) for seed in range(30)]
    assert sum(map(len, map(solve, shallow))) < sum(map(len, map(solve, deep)))


def test_sokoban__retries_exhausted_raise_naming_the_settings():
    # One topology step carves at most four cells: never room to pull two boxes.
    with pytest.raises(
        RuntimeError, match=r"no level after 5 rooms .*num_boxes=2.*topology_steps=1"
    ):
        level(0, 8, 8, 2, topology_steps=1, max_retries=5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"width": 2}, "width must be >= 3, got 2"),
        ({"height": 0}, "height must be >= 3, got 0"),
        ({"num_boxes": 0}, "num_boxes must be >= 1, got 0"),
        ({"search_depth": 0}, "search_depth must be >= 1, got 0"),
        ({"max_retries": 0}, "max_retries must be >= 1, got 0"),
        ({"topology_steps": 0}, "topology_steps must be >= 1, got 0"),
        ({"width": 6.0}, "width must be an int, got 6.0"),
        ({"num_boxes": True}, "num_boxes must be an int, got True"),
        ({"width": 5, "height": 4, "num_boxes": 5}, "num_boxes=5 does not fit a 5x4 room"),
        ({"width": 3, "height": 3}, "num_boxes=1 does not fit a 3x3 room"),
    ],
)
def test_sokoban__invalid_settings_raise(kwargs, message):
    settings = {"width": 6, "height": 6, "num_boxes": 1, **kwargs}
    with pytest.raises(ValueError) as error:
        generate(np.random.default_rng(0), **settings)
    assert message in str(error.value)
    with pytest.raises(ValueError):
        check_settings(**settings)


def test_sokoban__rng_must_be_a_generator():
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        generate(np.random.RandomState(0), width=6, height=6, num_boxes=1)
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        generate(0, width=6, height=6, num_boxes=1)
