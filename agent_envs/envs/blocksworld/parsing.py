"""Text the model writes → Blocksworld moves (one action string at a time).

The grammar, case-insensitive, with ASCII spaces between words (none needed between
``block`` and its number)::

    action := move [ "." ]  |  "(" move [ "." ] ")" [ "." ]  |  "[" move [ "." ] "]" [ "." ]
    move   := "move" [ "block" ] NUMBER place
    place  := ( "to" | "onto" | "on" | "on top of" ) ( [ "block" ] NUMBER | [ "the" ] "table" )

``NUMBER`` is 1 to 6 ASCII digits; ``0`` as the place means the table (GRL's convention).
So ``move 1 to 2``, ``Move block 1 onto block 2``, ``(move 2 to 0)`` (GRL's example),
``move 3 to the table`` and ``MOVE 3 ON TOP OF 1.`` are moves, and ``stack 1 on 2``,
``move 1`` or ``move 1 to 2 and 3`` are not. Numbers that name no block still parse: such a
move is illegal, not unreadable (as in GRL).
"""

from __future__ import annotations

import re

from agent_envs.envs.blocksworld.constants import TABLE
from agent_envs.envs.blocksworld.types import Move

__all__ = ["decode_action", "format_move"]

_MOVE = re.compile(
    r"""
    move\s+(?:block\s*)?(?P<block>[0-9]{1,6})\s+
    (?:to|onto|on\s+top\s+of|on)\s+
    (?:(?:block\s*)?(?P<dest>[0-9]{1,6})|(?:the\s+)?(?P<table>table))
    """,
    re.IGNORECASE | re.ASCII | re.VERBOSE,
)


def decode_action(text: str) -> Move | None:
    """``"move 1 to table"`` → ``Move(1, 0)``; anything outside the grammar → ``None``."""
    core = _strip_period(text.strip())
    if core[:1] + core[-1:] in ("()", "[]"):
        core = _strip_period(core[1:-1].strip())
    match = _MOVE.fullmatch(core)
    if match is None:
        return None
    dest = TABLE if match["table"] else int(match["dest"])
    return Move(int(match["block"]), dest)


def _strip_period(text: str) -> str:
    return text[:-1].rstrip() if text.endswith(".") else text


def format_move(move: Move) -> str:
    """The canonical text of a move: ``move 2 to 1``, ``move 2 to table``."""
    dest = "table" if move.dest == TABLE else str(move.dest)
    return f"move {move.block} to {dest}"
