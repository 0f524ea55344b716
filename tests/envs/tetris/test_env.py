"""The Tetris Gymnasium shell: presets, contract, prompts, rewards, episode end, info keys."""

from __future__ import annotations

import re

import pytest

from agent_envs.core.policies import RandomPolicy
from agent_envs.envs.tetris import TetrisEnv, make_vector_env
from agent_envs.envs.tetris.constants import ACTION_NAMES
from agent_envs.testing import check_text_env

GRL_BUDGETS = dict(
    rules="grl", goal_lines=1, max_turns=11, max_actions_per_turn=5, max_actions_per_episode=40
)
PRESETS = {
    "grl/Tetris-v0": dict(
        width=10, height=20, pieces="tetromino", rules="standard", goal_lines=10, max_turns=100,
        max_actions_per_turn=10, max_actions_per_episode=None,
    ),
    "grl/Tetris-4x4-cell-v0": dict(width=4, height=4, pieces="cell", **GRL_BUDGETS),
    "grl/Tetris-3x3-domino-v0": dict(width=3, height=3, pieces="domino", **GRL_BUDGETS),
    "grl/Tetris-4x4-domino-v0": dict(width=4, height=4, pieces="domino", **GRL_BUDGETS),
}  # fmt: skip
GRL_CELL = PRESETS["grl/Tetris-4x4-cell-v0"]
EMPTY_FULL_BOARD = "\n".join(["__________"] * 20)


def answer(*actions: str) -> str:
    return "<answer>" + " || ".join(actions) + "</answer>"


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_tetris_env__passes_the_text_env_contract(env_id):
    check_text_env(TetrisEnv(**PRESETS[env_id]))


def test_tetris_env__docstring_lists_every_action_and_preset():
    doc = TetrisEnv.__doc__
    for name in ACTION_NAMES:
        assert re.search(rf"^\s*\| {name}\s+\|", doc, re.MULTILINE), name
    table = dict(re.findall(r"^\s*\| (grl/\S+)\s+\|(.*)\|\s*$", doc, re.MULTILINE))
    assert sorted(table) == sorted(PRESETS)
    for env_id, row in table.items():
        board, pieces, rules, goal, budgets = (cell.strip() for cell in row.split("|"))
        kwargs = PRESETS[env_id]
        assert board == f"{kwargs['width']}x{kwargs['height']}"
        assert (pieces, rules) == (kwargs["pieces"], kwargs["rules"])
        assert goal.split()[0] == str(kwargs["goal_lines"])
        assert budgets == "/".join(
            str(kwargs[key])
            for key in ("max_turns", "max_actions_per_turn", "max_actions_per_episode")
        )


def test_tetris_env__defaults_are_the_full_game_preset():
    env, preset = TetrisEnv(), PRESETS["grl/Tetris-v0"]
    settings = dict(
        width=env.width, height=env.height, pieces=env.pieces, rules=env.rules,
        goal_lines=env.goal_lines, max_turns=env.max_turns,
        max_actions_per_turn=env.answer_format.max_actions_per_turn,
        max_actions_per_episode=env.max_actions_per_episode,
    )  # fmt: skip
    assert settings == preset and env.sequence == "bag"


INSTRUCTIONS = {
    "grl/Tetris-v0": (
        "You are playing Tetris on a board 10 columns wide and 20 rows high. Pieces fall one at"
        " a time from the top.\n"
        "Pieces, dealt in shuffled bags that hold each of the 7 kinds once: I (four in a row), O"
        " (a 2x2 square), T (three in a row with one above the middle), S (an S-shaped zigzag),"
        " Z (a Z-shaped zigzag), J (three in a row with one above the left end), L (three in a"
        " row with one above the right end). Each new piece appears centred in the top rows.\n"
        "The board is shown one row per line, top row first: _ empty, # locked block, X the"
        " falling piece; the last line names the next piece.\n"
        "Actions: Left and Right shift the piece one column; Down moves it one row down (it"
        " locks if it cannot move down); Drop drops it as far as it goes and locks it; RotateCW"
        " and RotateCCW turn it a quarter clockwise or counterclockwise (if it does not fit, it"
        " is tried 1 and 2 columns to either side). After every turn the piece also falls one"
        " row by itself (locking if it cannot).\n"
        "A row filled from wall to wall is cleared and the rows above it move down. The game is"
        " lost when a new piece has no room to appear or a piece locks partly above the board."
        " Goal: clear 10 lines; the episode ends when you do.\n"
        "Rewards: +1, +3, +5 and +8 for clearing 1 to 4 lines with one piece.\n"
        "You have 100 turns.\n"
        "Think as you like, then give your answer as <answer>RotateCW || Left || Drop</answer>."
        " Separate several actions with '||' (at most 10 per turn; extra ones are ignored)."
    ),
    "grl/Tetris-4x4-cell-v0": (
        "You are playing Tetris on a board 4 columns wide and 4 rows high. Pieces fall one at a"
        " time from the top.\n"
        "Every piece is a single cell. Each new piece appears at a random column with its"
        " lowest cell in the top row.\n"
        "The board is shown one row per line, top row first: _ empty, # locked block, X the"
        " falling piece.\n"
        "Actions: Left and Right shift the piece one column; Down moves it one row down. Pieces"
        " cannot rotate. A piece locks as soon as it rests on the floor or on a block after any"
        " action.\n"
        "A row filled from wall to wall is cleared and the rows above it move down. The game is"
        " lost when a locked block remains in the top row. Goal: clear one line; the episode"
        " ends when you do.\n"
        "Rewards: -0.1 per action, +10 per line cleared.\n"
        "You have 11 turns and 40 actions in all; actions past that are ignored.\n"
        "Think as you like, then give your answer as <answer>Left || Down</answer>. Separate"
        " several actions with '||' (at most 5 per turn; extra ones are ignored)."
    ),
}
DOMINO_LINE = (
    "Pieces, dealt in shuffled bags that hold each of the 2 kinds once: V (two cells stacked"
    " vertically), H (two cells side by side). Each new piece appears at a random column with"
    " its lowest cell in the top row."
)


@pytest.mark.parametrize("env_id", sorted(INSTRUCTIONS))
def test_tetris_env__instructions_golden(env_id):
    assert TetrisEnv(**PRESETS[env_id]).instructions == INSTRUCTIONS[env_id]


@pytest.mark.parametrize(
    ("env_id", "size"), [("3x3", "3 columns wide and 3"), ("4x4", "4 columns wide and 4")]
)
def test_tetris_env__domino_presets_describe_their_own_board(env_id, size):
    text = TetrisEnv(**PRESETS[f"grl/Tetris-{env_id}-domino-v0"]).instructions
    cell = INSTRUCTIONS["grl/Tetris-4x4-cell-v0"]
    expected = cell.replace("4 columns wide and 4", size).replace(
        "Every piece is a single cell. Each new piece appears at a random column with its"
        " lowest cell in the top row.",
        DOMINO_LINE,
    )
    assert text == expected


def test_tetris_env__prompts_differ_per_preset():
    texts = {TetrisEnv(**kwargs).instructions for kwargs in PRESETS.values()}
    assert len(texts) == len(PRESETS)


def test_tetris_env__reset_observation_golden():
    env = TetrisEnv()
    observation, info = env.reset(seed=7)
    assert observation == (
        "_____X____\n___XXX____\n" + "\n".join(["__________"] * 18) + "\nNext: O"
    )
    assert info["current_piece"] == "L" and info["next_piece"] == "O"
    assert (info["score"], info["lines"], info["pieces_placed"], info["game_over"]) == (
        0, 0, 0, False,
    )  # fmt: skip
    grl = TetrisEnv(**GRL_CELL)
    assert grl.reset(seed=7)[0] == "_X__\n____\n____\n____"


def test_tetris_env__grl_line_clear_succeeds_with_grl_reward():
    env = TetrisEnv(**GRL_CELL)
    env.reset(seed=3, options={"board": "____\n____\n____\n###_"})
    actions = ["Right"] * (3 - env.state.left) + ["Down", "Down", "Down"]
    total, terminated = 0.0, False
    for start in range(0, len(actions), 5):
        observation, reward, terminated, truncated, info = env.step(
            answer(*actions[start : start + 5])
        )
        total += reward
    assert terminated and not truncated and info["success"]
    assert (info["lines"], info["score"], info["pieces_placed"]) == (1, 100, 1)
    assert observation.splitlines()[3] == "____"
    assert total == pytest.approx(-0.1 * len(actions) + 10.0)


def test_tetris_env__grl_rejects_actions_it_does_not_have():
    env = TetrisEnv(**GRL_CELL)
    env.reset(seed=0)
    observation, reward, _, _, info = env.step(answer("Left", "Drop", "Left"))
    assert not info["action_valid"] and info["num_actions"] == 1
    assert reward == pytest.approx(-0.1 - 0.1)
    assert observation.splitlines()[0].startswith("Invalid action 2 of 3: unknown")
    assert observation in env.observation_space


@pytest.mark.parametrize(
    "spelling", ["RotateCW", "rotate cw", "Rotate_CW", "ROTATE-CW", " rotatecw "]
)
def test_tetris_env__rotation_spellings(spelling):
    env = TetrisEnv()
    env.reset(seed=7)
    info = env.step(answer(spelling))[4]
    assert info["action_valid"] and info["action_effective"] and env.state.rotation == 1


def test_tetris_env__gravity_moves_the_piece_every_turn_whatever_the_reply():
    env = TetrisEnv()
    env.reset(seed=7)
    top = env.state.top
    env.step(answer("Left"))
    assert env.state.top == top + 1
    _, reward, _, _, info = env.step("I am not sure.")
    assert not info["format_ok"] and env.state.top == top + 2 and reward == -0.1


def test_tetris_env__full_game_line_clear_pays_the_table():
    env = TetrisEnv()
    board = EMPTY_FULL_BOARD.rsplit("\n", 2)[0] + "\n" + "\n".join(["####__####"] * 2)
    seed = next(
        seed
        for seed in range(100)
        if env.reset(seed=seed, options={"board": board})[1]["current_piece"] == "O"
    )
    env.reset(seed=seed, options={"board": board})
    _, reward, terminated, _, info = env.step(answer("Drop"))
    assert reward == 3.0 and (info["lines"], info["score"]) == (2, 300) and not terminated


def test_tetris_env__game_over_terminates_without_success():
    env = TetrisEnv()
    tower = ["__________", "__________"] + ["___####___"] * 18
    env.reset(seed=1, options={"board": "\n".join(tower)})
    observation, reward, terminated, truncated, info = env.step(answer("Drop"))
    assert terminated and not truncated
    assert info["game_over"] and not info["success"] and info["current_piece"] == ""
    assert observation.endswith("Game over.") and reward == 0.0
    assert env.oracle_actions() == []


def test_tetris_env__grl_budgets_truncate_on_the_action_budget():
    env = TetrisEnv(**GRL_CELL)
    env.reset(seed=0)
    wiggle = answer("Left", "Right", "Left", "Right", "Left")
    for turn in range(1, 8):
        assert env.step(wiggle)[4]["truncation_reason"] is None, turn
    _, reward, terminated, truncated, info = env.step(wiggle)
    assert truncated and not terminated and info["truncation_reason"] == "action_budget"
    assert reward == pytest.approx(-0.5)


def test_tetris_env__full_game_truncates_on_max_turns():
    env = TetrisEnv(max_turns=2)
    env.reset(seed=0)
    env.step(answer("Left"))
    _, _, terminated, truncated, info = env.step(answer("Right"))
    assert truncated and not terminated and info["truncation_reason"] == "max_turns"


def test_tetris_env__info_names_the_pieces_the_observation_shows():
    env = TetrisEnv()
    observation, info = env.reset(seed=11)
    for _ in range(10):
        assert observation.endswith(f"Next: {info['next_piece']}")
        observation, _, terminated, truncated, info = env.step(answer("Drop"))
        assert info["pieces_placed"] == env.state.placed
        if terminated or truncated:
            break


def test_tetris_env__random_policy_replies_are_valid():
    for kwargs in PRESETS.values():
        env = TetrisEnv(**kwargs)
        observation, _ = env.reset(seed=0)
        info = env.step(RandomPolicy(seed=0)(env, observation))[4]
        assert info["format_ok"] and info["action_valid"]


def test_tetris_env__vector_entry_point():
    envs = make_vector_env(num_envs=2, **GRL_CELL)
    observations, _ = envs.reset(seed=[1, 2])
    assert len(observations) == 2
    envs.close()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"width": 3}, "width"),  # an I needs 4 columns
        ({"height": 100}, "height"),
        ({"width": 2.5}, "width"),
        ({"pieces": "pentomino"}, "pieces"),
        ({"rules": "nes"}, "rules"),
        ({"sequence": "random"}, "sequence"),
        ({"goal_lines": 0}, "goal_lines"),
        ({"max_turns": 0}, "max_turns"),
    ],
)
def test_tetris_env__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TetrisEnv(**kwargs)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"bord": "____"}, "bord"),
        ({"board": "____\n____"}, "4 rows of 4"),
        ({"board": "____\n____\n__x_\n____"}, "may only hold"),
        ({"board": "____\n____\n____\n####"}, "full row"),
        ({"board": 7}, "must be a str"),
    ],
)
def test_tetris_env__bad_reset_options_are_named(options, match):
    with pytest.raises(ValueError, match=match):
        TetrisEnv(**GRL_CELL).reset(seed=0, options=options)
