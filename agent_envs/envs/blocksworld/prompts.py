"""Text the model reads: the Blocksworld instructions and the observation in each mode.

The observation formats are GRL's, with ASCII ``-`` in place of GRL's macron (U+00AF) under
each block of the 2d drawing, and without GRL's leading blank line.
"""

from __future__ import annotations

from agent_envs.core.parsing import AnswerFormat
from agent_envs.envs.blocksworld.constants import GOAL_REWARD, MOVE_REWARD, TABLE
from agent_envs.envs.blocksworld.dynamics import stacks
from agent_envs.envs.blocksworld.types import State

__all__ = ["describe_state", "draw_state", "instructions", "list_state", "observation"]


def describe_state(state: State) -> str:
    """``text`` mode: one sentence per block, e.g. ``Block 2 is on top of Block 1.``"""
    return " ".join(
        f"Block {block} is on the table."
        if below == TABLE
        else f"Block {block} is on top of Block {below}."
        for block, below in enumerate(state, 1)
    )


def list_state(state: State) -> str:
    """``1d`` mode: what each block sits on, e.g. ``[0, 1, 0]``."""
    return "[" + ", ".join(map(str, state)) + "]"


def draw_state(state: State) -> list[str]:
    """``2d`` mode: the towers side by side (ordered by bottom block), each block drawn as
    ``_`` over ``|n|`` over ``-``, top row first; trailing spaces removed."""
    towers = stacks(state)
    lines = []
    for level in reversed(range(max(map(len, towers)))):
        rows = ["", "", ""]
        for tower in towers:
            there = level < len(tower)
            rows[0] += " _  " if there else "    "
            rows[1] += f"|{tower[level]}| " if there else "    "
            rows[2] += " -  " if there else "    "
        lines += [row.rstrip() for row in rows]
    return lines


def observation(state: State, goal: State, mode: str) -> str:
    """The observation text of ``mode`` (``text``, ``1d`` or ``2d``): state, then goal."""
    if mode == "text":
        return f"Current state: {describe_state(state)}\nGoal state: {describe_state(goal)}"
    if mode == "1d":
        return (
            f"Current representation:\n{list_state(state)}\n\n"
            f"Goal representation:\n{list_state(goal)}"
        )
    if mode == "2d":
        return "\n".join(
            (
                "Graphical representation (Current):",
                *draw_state(state),
                "",
                "Graphical representation (Goal):",
                *draw_state(goal),
            )
        )
    raise ValueError(f"unknown observation mode {mode!r}")


def _example(num_blocks: int) -> State:
    """Block 2 on block 1, every other block on the table."""
    return (TABLE, 1) + (TABLE,) * (num_blocks - 2)


def _state_format(mode: str, num_blocks: int) -> str:
    example = _example(num_blocks)
    meaning = f"means: {describe_state(example)}"
    if mode == "text":
        return (
            "Each observation gives the current state and the goal state, one sentence per"
            ' block, such as "Block 2 is on top of Block 1." or "Block 1 is on the table."'
        )
    if mode == "1d":
        return (
            "Each observation gives the current state and the goal state as a list whose i-th"
            " number is what Block i sits on: 0 for the table, otherwise the number of the"
            f" block below it. For example {list_state(example)} {meaning}"
        )
    drawing = "\n".join(draw_state(example))
    return (
        "Each observation draws the current state and the goal state as towers of blocks"
        " standing on the table, side by side; each block is drawn as |n| between _ above"
        f" and - below. For example\n{drawing}\n{meaning}"
    )


def instructions(
    *,
    num_blocks: int,
    mode: str,
    max_turns: int,
    max_actions_per_episode: int | None,
    format_penalty: float,
    invalid_action_penalty: float,
    answer_format: AnswerFormat,
) -> str:
    """The system prompt of a Blocksworld episode."""
    budget = f"You have {max_turns} turns"
    if max_actions_per_episode is not None:
        budget += (
            f" and {max_actions_per_episode} actions in all (illegal moves count);"
            " actions past that are ignored"
        )
    return "\n".join(
        (
            f"You are playing Blocksworld with {num_blocks} blocks, numbered 1 to"
            f" {num_blocks}. Move the blocks until the current state equals the goal state.",
            _state_format(mode, num_blocks),
            "Each action is written as move X to Y: X is the number of the block to move, and"
            " Y is the number of the block to put it on, or table (0 also means the table)."
            " You can only move a block that has no block on top of it, and only onto the"
            " table or onto a block that has no block on top of it.",
            f"Rewards: {MOVE_REWARD:+g} per move, {GOAL_REWARD:+g} instead for the move that"
            f" reaches the goal, {invalid_action_penalty:+g} for an illegal or unreadable"
            " action (the rest of that answer is not executed),"
            f" {format_penalty:+g} for a reply without a readable answer.",
            f"{budget}.",
            answer_format.describe("move 2 to table || move 1 to 2"),
        )
    )
