"""Text the model reads: the Tetris instructions, built from the game's own settings.

Every sentence depends on the configuration it describes (board size, piece set, rule set,
goal, budgets), so each preset's prompt describes its own board and pieces.
"""

from __future__ import annotations

from agent_envs.core.parsing import AnswerFormat
from agent_envs.envs.tetris.constants import ACTION_NAMES, ACTIVE, EMPTY, FILLED, KICKS, Action
from agent_envs.envs.tetris.types import Game

__all__ = ["instructions"]


def _pieces(game: Game, sequence: str) -> str:
    pieces = game.pieces
    if len(pieces) == 1:
        return f"Every piece is {pieces[0].description}."
    kinds = ", ".join(f"{piece.name} ({piece.description})" for piece in pieces)
    if sequence == "bag":
        order = f"dealt in shuffled bags that hold each of the {len(pieces)} kinds once"
    else:
        order = "drawn at random, favouring the kinds dealt least so far"
    return f"Pieces, {order}: {kinds}."


def _spawn(game: Game) -> str:
    rules = game.rules
    where = "at a random column" if rules.random_spawn else "centred"
    if rules.enter_from_above:
        return f"Each new piece appears {where} with its lowest cell in the top row."
    return f"Each new piece appears {where} in the top rows."


def _actions(game: Game) -> str:
    rules = game.rules
    parts = [
        f"{ACTION_NAMES[Action.LEFT]} and {ACTION_NAMES[Action.RIGHT]} shift the piece one column",
        f"{ACTION_NAMES[Action.DOWN]} moves it one row down"
        + ("" if rules.lock_on_rest else " (it locks if it cannot move down)"),
    ]
    if Action.DROP in rules.actions:
        parts.append(f"{ACTION_NAMES[Action.DROP]} drops it as far as it goes and locks it")
    if Action.ROTATE_CW in rules.actions:
        shifts = sorted({abs(kick) for kick in KICKS if kick})
        parts.append(
            f"{ACTION_NAMES[Action.ROTATE_CW]} and {ACTION_NAMES[Action.ROTATE_CCW]} turn it a"
            " quarter clockwise or counterclockwise (if it does not fit, it is tried"
            f" {' and '.join(map(str, shifts))} columns to either side)"
        )
    text = "Actions: " + "; ".join(parts) + "."
    if Action.ROTATE_CW not in rules.actions:
        text += " Pieces cannot rotate."
    if rules.lock_on_rest:
        text += " A piece locks as soon as it rests on the floor or on a block after any action."
    if rules.gravity:
        text += " After every turn the piece also falls one row by itself (locking if it cannot)."
    return text


def _end(game: Game, goal_lines: int) -> str:
    if game.rules.top_row_game_over:
        over = "The game is lost when a locked block remains in the top row."
    else:
        over = (
            "The game is lost when a new piece has no room to appear or a piece locks partly"
            " above the board."
        )
    goal = "one line" if goal_lines == 1 else f"{goal_lines} lines"
    return (
        "A row filled from wall to wall is cleared and the rows above it move down. "
        f"{over} Goal: clear {goal}; the episode ends when you do."
    )


def _rewards(game: Game) -> str:
    rules = game.rules
    rewards = rules.line_rewards
    if all(rewards[n] == n * rewards[1] for n in range(len(rewards))):
        lines = f"{rewards[1]:+g} per line cleared"
    else:
        lines = (
            ", ".join(f"{reward:+g}" for reward in rewards[1:-1])
            + f" and {rewards[-1]:+g} for clearing 1 to {len(rewards) - 1} lines with one piece"
        )
    if rules.action_penalty:
        return f"Rewards: {rules.action_penalty:+g} per action, {lines}."
    return f"Rewards: {lines}."


def instructions(
    *,
    game: Game,
    sequence: str,
    goal_lines: int,
    max_turns: int,
    max_actions_per_episode: int | None,
    answer_format: AnswerFormat,
) -> str:
    """The system prompt of a Tetris episode with these settings."""
    rules = game.rules
    board = (
        f"The board is shown one row per line, top row first: {EMPTY} empty, {FILLED} locked"
        f" block, {ACTIVE} the falling piece"
        + ("; the last line names the next piece." if rules.preview else ".")
    )
    budget = f"You have {max_turns} turns"
    if max_actions_per_episode is not None:
        budget += f" and {max_actions_per_episode} actions in all; actions past that are ignored"
    example = (
        f"{ACTION_NAMES[Action.ROTATE_CW]} || {ACTION_NAMES[Action.LEFT]} || "
        f"{ACTION_NAMES[Action.DROP]}"
        if Action.DROP in rules.actions
        else f"{ACTION_NAMES[Action.LEFT]} || {ACTION_NAMES[Action.DOWN]}"
    )
    return "\n".join(
        (
            f"You are playing Tetris on a board {game.width} columns wide and {game.height}"
            " rows high. Pieces fall one at a time from the top.",
            f"{_pieces(game, sequence)} {_spawn(game)}",
            board,
            _actions(game),
            _end(game, goal_lines),
            _rewards(game),
            f"{budget}.",
            answer_format.describe(example),
        )
    )
