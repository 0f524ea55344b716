"""Frame descriptions: validation and the JSON round trip."""

from __future__ import annotations

import json

import pytest
from agent_envs.renderers import Grid, GridFrame, TextFrame, Tile, frame_from_dict, frame_to_dict

LEGEND = {"#": Tile("wall", "wall"), "X": Tile("box", "box", (200, 100, 50)), " ": Tile("blank")}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Tile("sprite"), "Tile kind"),
        (lambda: Tile("cell", color=(0, 0, 300)), "Tile color"),
        (lambda: GridFrame((Grid(("#Y",)),), LEGEND), "missing from the legend"),
        (lambda: GridFrame((), LEGEND), "at least one grid"),
        (lambda: GridFrame((Grid(("#",)),), LEGEND, caption=("a", "b", "c")), "at most 2"),
        (lambda: frame_from_dict({"type": "video"}), "not a frame dict"),
    ],
)
def test_frames__bad_descriptions_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "frame",
    [
        GridFrame((Grid(("#X#", "# #"), "Room"), Grid(("X",))), LEGEND, "Title", ("one", "two")),
        TextFrame("Card", (("Question", "What is 6 x 7?"), ("Answer", "42")), "Turn 1/1"),
    ],
)
def test_frames__json_round_trip_is_exact(frame):
    data = json.loads(json.dumps(frame_to_dict(frame)))
    assert frame_from_dict(data) == frame


def test_frames__grid_shape_counts_ragged_rows():
    assert Grid(("##", "####", "#")).shape == (3, 4)
