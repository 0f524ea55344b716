"""Tetris glyphs, actions, pieces, rule sets and scores.

Pieces are drawn as text in their bounding box, spawn orientation first; the other three
orientations are that box turned a quarter at a time clockwise, as in the Super Rotation
System (SRS). A rule set (:class:`~agent_envs.envs.tetris.types.Rules`) holds everything
that differs between the full game and GRL's simplified boards.
"""

from __future__ import annotations

import enum

from agent_envs.envs.tetris.types import Piece, Rules, piece_from_art

EMPTY = "_"
FILLED = "#"
ACTIVE = "X"
GLYPHS = EMPTY + FILLED + ACTIVE
"""The board glyphs, GRL's: empty cell, locked block, cell of the falling piece."""


class Action(enum.IntEnum):
    """Everything the falling piece can do."""

    LEFT = 0
    RIGHT = 1
    DOWN = 2
    DROP = 3
    ROTATE_CW = 4
    ROTATE_CCW = 5


ACTION_NAMES = ("Left", "Right", "Down", "Drop", "RotateCW", "RotateCCW")
"""The name of each action as the model writes it; index = `Action` value."""

KICKS = (0, -1, 1, -2, 2)
"""Column shifts tried, in order, when a rotated piece does not fit where it is (simple
horizontal wall kicks; no floor kicks)."""

# The pieces of each set, spawn orientation first (letters mark cells, "." is empty).
PIECE_SETS: dict[str, tuple[Piece, ...]] = {
    "tetromino": (
        piece_from_art("I", "four in a row", ("....", "IIII", "....", "....")),
        piece_from_art("O", "a 2x2 square", ("OO", "OO")),
        piece_from_art("T", "three in a row with one above the middle", (".T.", "TTT", "...")),
        piece_from_art("S", "an S-shaped zigzag", (".SS", "SS.", "...")),
        piece_from_art("Z", "a Z-shaped zigzag", ("ZZ.", ".ZZ", "...")),
        piece_from_art("J", "three in a row with one above the left end", ("J..", "JJJ", "...")),
        piece_from_art("L", "three in a row with one above the right end", ("..L", "LLL", "...")),
    ),
    "domino": (
        piece_from_art("V", "two cells stacked vertically", ("V.", "V.")),
        piece_from_art("H", "two cells side by side", ("HH", "..")),
    ),
    "cell": (piece_from_art("C", "a single cell", ("C",)),),
}  # fmt: skip
"""Piece sets by name: the seven tetrominoes, or GRL's dominoes or single cells."""

SCORE_BY_LINES = (0, 100, 300, 500, 800)
"""Points for clearing 0..4 lines with one piece (Tetris guideline values at level 1; no piece
is taller than four cells)."""

RULES: dict[str, Rules] = {
    "standard": Rules(
        name="standard",
        actions=tuple(Action),
        gravity=True,
        lock_on_rest=False,
        top_row_game_over=False,
        random_spawn=False,
        enter_from_above=False,
        preview=True,
        action_penalty=0.0,
        line_rewards=(0.0, 1.0, 3.0, 5.0, 8.0),
    ),
    "grl": Rules(
        name="grl",
        actions=(Action.LEFT, Action.RIGHT, Action.DOWN),
        gravity=False,
        lock_on_rest=True,
        top_row_game_over=True,
        random_spawn=True,
        enter_from_above=True,
        preview=False,
        action_penalty=-0.1,
        line_rewards=(0.0, 10.0, 20.0, 30.0, 40.0),
    ),
}
"""The two rule sets: the full game (``"standard"``) and GRL's Tetris (``"grl"``)."""

SEQUENCES = ("bag", "balanced")
"""Piece orders: ``"bag"`` deals every piece of the set once per shuffled bag (the 7-bag for
tetrominoes); ``"balanced"`` is GRL's draw, each piece weighted ``5 + max(count) - count``."""

MAX_WIDTH = 32
MAX_HEIGHT = 64
