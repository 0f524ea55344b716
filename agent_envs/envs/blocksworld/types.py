"""Plain data for Blocksworld: a state, a move and the result of one move."""

from __future__ import annotations

from typing import NamedTuple

State = tuple[int, ...]
"""``state[i - 1]`` is what block ``i`` sits on: another block's number, or 0 for the table.
Blocks are numbered 1 to ``len(state)``. This is GRL's 1d representation."""


class Move(NamedTuple):
    """``move block to dest``; ``dest`` is a block number or 0 (the table). Numbers are as
    written by the model, so they may name blocks that do not exist."""

    block: int
    dest: int


class Transition(NamedTuple):
    """The result of `dynamics.step`.

    `legal`: the move was allowed (otherwise `state` is the old state and `reward` is 0).
    `moved`: the state changed (a legal move of a table block to the table changes nothing).
    `solved`: the new state is the goal.
    """

    state: State
    reward: float
    legal: bool
    moved: bool
    solved: bool
