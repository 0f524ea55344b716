"""Text the model reads: the Sokoban instructions (the observation is the board itself)."""

from __future__ import annotations

from agent_envs.core.parsing import AnswerFormat
from agent_envs.envs.sokoban import constants as c

__all__ = ["instructions"]

_LEGEND = (
    f"{c.WALL} wall, {c.FLOOR} floor, {c.TARGET} target, {c.BOX} box, "
    f"{c.BOX_ON_TARGET} box on a target, {c.PLAYER} you, {c.PLAYER_ON_TARGET} you on a target"
)


def instructions(
    *, max_turns: int, max_actions_per_episode: int | None, answer_format: AnswerFormat
) -> str:
    """The system prompt of a Sokoban episode."""
    budget = f"You have {max_turns} turns"
    if max_actions_per_episode is not None:
        budget += f" and {max_actions_per_episode} actions in all; actions past that are ignored"
    return "\n".join(
        (
            "You are playing Sokoban. Push every box onto a target.",
            f"The board is shown one row per line: {_LEGEND}.",
            f"Actions: {', '.join(c.ACTION_NAMES)}. Walking into a box pushes it one cell if the"
            " cell behind it is floor or a target; you cannot pull boxes or push two at once.",
            f"Rewards: {c.STEP_PENALTY:+g} per action, {c.BOX_ON_TARGET_REWARD:+g} for a box"
            f" onto a target, {c.BOX_OFF_TARGET_PENALTY:+g} for a box off a target,"
            f" {c.SOLVED_REWARD:+g} when every box is on a target.",
            f"{budget}.",
            answer_format.describe(f"{c.ACTION_NAMES[3]} || {c.ACTION_NAMES[0]}"),
        )
    )
