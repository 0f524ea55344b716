"""The placement-search oracle: board features, legal plans, and its success rates."""

from __future__ import annotations

import pytest

from agent_envs.core.policies import OraclePolicy
from agent_envs.envs.tetris import TetrisEnv
from agent_envs.envs.tetris.constants import PIECE_SETS, RULES, Action
from agent_envs.envs.tetris.dynamics import step
from agent_envs.envs.tetris.oracle import best_placement, board_features, placements
from agent_envs.envs.tetris.types import Game, TetrisState

GRL_BUDGETS = dict(
    rules="grl", goal_lines=1, max_turns=11, max_actions_per_turn=5, max_actions_per_episode=40
)
GRL_PRESETS = {
    "4x4-cell": dict(width=4, height=4, pieces="cell", **GRL_BUDGETS),
    "3x3-domino": dict(width=3, height=3, pieces="domino", **GRL_BUDGETS),
    "4x4-domino": dict(width=4, height=4, pieces="domino", **GRL_BUDGETS),
}
SEEDS = 200


def rows_of(*art: str) -> tuple[int, ...]:
    return tuple(sum(1 << c for c, ch in enumerate(line) if ch == "#") for line in art)


@pytest.mark.parametrize(
    ("art", "features"),
    [
        (("____", "____", "____", "____"), (0, 0, 0)),
        (("____", "____", "____", "####"), (4, 0, 0)),
        (("____", "_#__", "____", "_#__"), (3, 1, 6)),  # one hole under column 1
        (("#___", "#___", "#___", "#__#"), (5, 0, 5)),
        (("____", "##__", "#___", "_#_#"), (7, 2, 4)),
    ],
    ids=["empty", "flat", "one_hole", "tower", "two_holes"],
)
def test_tetris__board_features(art, features):
    # (aggregate height, holes, bumpiness)
    assert board_features(rows_of(*art), 4) == features


def test_tetris__oracle_drops_the_i_into_the_well():
    game = Game(6, 6, PIECE_SETS["tetromino"], RULES["standard"])
    rows = rows_of("______", "______", "##_###", "##_###", "##_###", "##_###")
    state = TetrisState(rows, 0, 0, -1, 1, 0, 0, 0)  # I, flat, columns 1-4 of the top row
    moves, transition, _ = best_placement(game, state, [(1, 2)], goal_lines=10)
    # Turned in place it would overlap column 3, so the first wall kick (one column left)
    # puts it straight into the well.
    assert moves == [Action.ROTATE_CW, Action.DROP]
    assert transition.cleared == 4 and transition.state.score == 800


def test_tetris__placements_are_distinct_and_legal():
    game = Game(10, 20, PIECE_SETS["tetromino"], RULES["standard"])
    for kind in range(7):
        state = TetrisState((0,) * 20, kind, 0, 0, 3, 0, 0, 0)
        found = placements(game, state, (1, 4))
        boards = {transition.state.rows for _, transition in found}
        # I: 7 + 10 columns; O: 9; S, Z: 8 + 9 (two distinct orientations); T, J, L: 8 + 8 + 9 + 9.
        assert len(boards) == {0: 17, 1: 9, 2: 34, 3: 17, 4: 17, 5: 34, 6: 34}[kind]
        for moves, transition in found:
            replay = state
            for action in moves:
                result = step(game, replay, action, (1, 4))
                assert result.effective
                replay = result.state
            assert replay == transition.state


def run_oracle(env: TetrisEnv, seed: int) -> dict:
    policy = OraclePolicy()
    observation, info = env.reset(seed=seed)
    terminated = truncated = False
    while not (terminated or truncated):
        observation, _, terminated, truncated, info = env.step(policy(env, observation))
        assert info["action_valid"] and info["action_effective"], (seed, info)
    return info


@pytest.mark.parametrize("preset", sorted(GRL_PRESETS))
def test_tetris__oracle_clears_a_line_on_grl_presets(preset):
    env = TetrisEnv(**GRL_PRESETS[preset])
    successes = sum(run_oracle(env, seed)["success"] for seed in range(SEEDS))
    # The requirement is >= 95% within GRL's budgets; with the 7-bag order it is all of them.
    assert successes == SEEDS, f"{preset}: {successes}/{SEEDS}"


def test_tetris__oracle_with_grl_balanced_draw_loses_only_unwinnable_openings():
    # 3x3 dominoes: H H H (each row takes one H) and V V H (two full columns, H lands in the
    # top row) cannot clear a line; GRL's own draw deals them in about 1 episode in 5.
    env = TetrisEnv(sequence="balanced", **GRL_PRESETS["3x3-domino"])
    for seed in range(SEEDS):
        _, info = env.reset(seed=seed)
        opening = info["current_piece"] + "".join(
            env.game.pieces[kind].name for kind, _ in env._queue.upcoming(2)
        )
        success = run_oracle(env, seed)["success"]
        assert success == (opening not in ("HHH", "VVH")), (seed, opening)


@pytest.mark.parametrize("seed", [0, 1])
def test_tetris__oracle_reaches_the_full_game_goal(seed):
    info = run_oracle(TetrisEnv(), seed)
    assert info["success"] and info["lines"] >= 10 and not info["game_over"]
    assert info["turn"] <= 20
