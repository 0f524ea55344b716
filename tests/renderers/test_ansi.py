"""The terminal backend: golden plain text and the colour codes."""

from __future__ import annotations

from agent_envs.renderers import Grid, GridFrame, TextFrame, Tile
from agent_envs.renderers.ansi import to_ansi

FRAME = GridFrame(
    (Grid(("#X", "#O"), "Now"), Grid(("1",), "Goal")),
    {
        "#": Tile("wall", "wall"),
        "X": Tile("box", "box"),
        "O": Tile("target"),
        "1": Tile("block", "", (250, 200, 60), "1"),
    },
    "Demo",
    ("Turn 1/3", ""),
)


def test_ansi__plain_layout_is_golden():
    assert to_ansi(FRAME, color=False) == (
        "Demo\nNow     Goal\n# X     1\n# O\nTurn 1/3\n#  wall  X  box"
    )


def test_ansi__colour_uses_24_bit_backgrounds_and_stays_ascii():
    text = to_ansi(FRAME)
    assert "\x1b[48;2;128;76;58m" in text  # wall background
    assert "\x1b[48;2;250;200;60m" in text  # the block's own colour
    assert text.isascii()
    assert to_ansi(FRAME).replace("\x1b[0m", "").count("\x1b[48;2;") == 5 + 2  # cells + legend


def test_ansi__text_card_wraps_sections():
    card = TextFrame("GSM8K", (("Question", "word " * 30),), "Turn 0/1")
    lines = to_ansi(card, color=False).splitlines()
    assert lines[0] == "GSM8K" and lines[1] == "Question" and lines[-1] == "Turn 0/1"
    assert all(len(line) <= 78 for line in lines)
