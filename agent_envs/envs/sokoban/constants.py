"""Sokoban glyphs, actions and rewards.

The glyphs are a fixed public point: they are what the model reads, one board row per line.
The rewards are gym-sokoban's (and so RAGEN's and GRL's).
"""

from __future__ import annotations

import enum

WALL = "#"
FLOOR = "_"
TARGET = "O"
BOX = "X"
BOX_ON_TARGET = "*"
PLAYER = "P"
PLAYER_ON_TARGET = "S"
GLYPHS = WALL + FLOOR + TARGET + BOX + BOX_ON_TARGET + PLAYER + PLAYER_ON_TARGET
"""All seven board glyphs, in the order above."""


class Action(enum.IntEnum):
    """The four moves; moving into a box pushes it."""

    UP = 0
    DOWN = 1
    LEFT = 2
    RIGHT = 3


ACTION_NAMES = ("Up", "Down", "Left", "Right")
"""The name of each action as the model writes it; index = `Action` value."""

STEP_PENALTY = -0.1
"""Paid by every action, including one that bumps into a wall or an unpushable box."""
BOX_ON_TARGET_REWARD = 1.0
"""Paid when a push moves a box from a non-target cell onto a target."""
BOX_OFF_TARGET_PENALTY = -1.0
"""Paid when a push moves a box from a target onto a non-target cell."""
SOLVED_REWARD = 10.0
"""Paid by the push that puts the last box on a target."""
