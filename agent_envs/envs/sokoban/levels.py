"""Sokoban levels in XSB notation, to and from `SokobanState`.

XSB characters: ``#`` wall, ``@`` player, ``+`` player on goal, ``$`` box, ``*`` box on goal,
``.`` goal, space floor; ``-`` and ``_`` are also read as floor, as XSB variants write them.
Blank lines are dropped and ragged rows padded with floor; every cell that the player cannot
reach (walking through boxes and goals, never through walls) becomes a wall, so the parsed
board is enclosed and rectangular.
"""

from __future__ import annotations

from agent_envs.envs.sokoban.constants import (
    BOX,
    BOX_ON_TARGET,
    FLOOR,
    PLAYER,
    PLAYER_ON_TARGET,
    TARGET,
    WALL,
)
from agent_envs.envs.sokoban.types import SokobanState

_FROM_XSB = {
    "#": WALL,
    " ": FLOOR,
    "-": FLOOR,
    "_": FLOOR,
    ".": TARGET,
    "$": BOX,
    "*": BOX_ON_TARGET,
    "@": PLAYER,
    "+": PLAYER_ON_TARGET,
}
_TO_XSB = {
    WALL: "#",
    FLOOR: " ",
    TARGET: ".",
    BOX: "$",
    BOX_ON_TARGET: "*",
    PLAYER: "@",
    PLAYER_ON_TARGET: "+",
}
_PLAYERS = (PLAYER, PLAYER_ON_TARGET)


def parse_xsb(text: str) -> SokobanState:
    """Parse one XSB level; raise `ValueError` saying what is wrong and where.

    Errors: an unknown character (with its 1-based line and column in `text`), no player, more
    than one player, no box, a box count different from the goal count, a player region open
    to the outside of the level, a box or goal the player cannot reach.
    """
    rows = _glyph_rows(text)
    width = max(len(row) for row in rows)
    grid = [row + [FLOOR] * (width - len(row)) for row in rows]
    player = _find_player(grid)
    inside = _enclosed_region(grid, player)
    for r, row in enumerate(grid):
        for c, glyph in enumerate(row):
            if (r, c) in inside:
                continue
            if glyph != WALL and glyph != FLOOR:
                raise ValueError(
                    f"XSB level: {_TO_XSB[glyph]!r} at row {r + 1}, column {c + 1} "
                    "cannot be reached by the player"
                )
            row[c] = WALL
    _check_counts(grid)
    board = "\n".join("".join(row) for row in grid).encode("ascii")
    return SokobanState(board, player[0] * (width + 1) + player[1], width)


def to_xsb(state: SokobanState) -> str:
    """The level in XSB notation (walls ``#``, floor as space), one row per line."""
    return "".join(_TO_XSB.get(glyph, glyph) for glyph in state.board.decode("ascii"))


def _glyph_rows(text: str) -> list[list[str]]:
    """The non-blank lines of `text` as rows of our glyphs; unknown characters raise."""
    rows = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = []
        for column, char in enumerate(line, start=1):
            glyph = _FROM_XSB.get(char)
            if glyph is None:
                raise ValueError(
                    f"XSB level: unknown character {char!r} at line {line_number}, "
                    f"column {column} (expected one of '#@+$*. -_')"
                )
            row.append(glyph)
        rows.append(row)
    if not rows:
        raise ValueError("XSB level: the text has no rows")
    return rows


def _find_player(grid: list[list[str]]) -> tuple[int, int]:
    """(row, column) of the only player; raise if there is none or more than one."""
    found = [(r, c) for r, row in enumerate(grid) for c, g in enumerate(row) if g in _PLAYERS]
    if not found:
        raise ValueError("XSB level: no player ('@' or '+')")
    if len(found) > 1:
        where = ", ".join(f"row {r + 1} column {c + 1}" for r, c in found)
        raise ValueError(f"XSB level: {len(found)} players ('@' or '+') at {where}; need one")
    return found[0]


def _enclosed_region(grid: list[list[str]], start: tuple[int, int]) -> set[tuple[int, int]]:
    """Non-wall cells connected to `start`; raise if they reach the edge of the grid."""
    height, width = len(grid), len(grid[0])
    seen = {start}
    frontier = [start]
    while frontier:
        r, c = frontier.pop()
        if r in (0, height - 1) or c in (0, width - 1):
            raise ValueError(
                f"XSB level: the player's area is not enclosed by walls (it reaches row {r + 1},"
                f" column {c + 1} on the edge of the level)"
            )
        for cell in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if cell not in seen and grid[cell[0]][cell[1]] != WALL:
                seen.add(cell)
                frontier.append(cell)
    return seen


def _check_counts(grid: list[list[str]]) -> None:
    """Raise unless there is at least one box and as many boxes as goals."""
    glyphs = "".join("".join(row) for row in grid)
    boxes = glyphs.count(BOX) + glyphs.count(BOX_ON_TARGET)
    goals = glyphs.count(TARGET) + glyphs.count(BOX_ON_TARGET) + glyphs.count(PLAYER_ON_TARGET)
    if boxes == 0:
        raise ValueError("XSB level: no box ('$' or '*')")
    if boxes != goals:
        raise ValueError(f"XSB level: {boxes} boxes but {goals} goals; they must be equal")
