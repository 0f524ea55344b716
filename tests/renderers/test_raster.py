"""The pixel backend: documented sizes and tiles that tell the pieces apart."""

from __future__ import annotations

import numpy as np
import pytest
from agent_envs.renderers import Grid, GridFrame, TextFrame, Tile
from agent_envs.renderers.raster import TEXT_CARD_SIZE, draw, frame_size

from agent_envs.envs.sokoban.env import SokobanEnv

# Row 1: player, box, target, box on target, floor.
LEVEL = "#######\n#@$.* #\n#######"
TILE, LEFT, TOP = 48, 56, 52  # 7 columns: tile 48, board 336 px centred in 448, below the title


def sokoban_frame():
    env = SokobanEnv()
    env.reset(seed=0, options={"level": LEVEL})
    return env.frame()


def tile_pixels(image, row, column):
    y, x = TOP + row * TILE, LEFT + column * TILE
    return image[y : y + TILE, x : x + TILE].reshape(-1, 3).astype(int)


def test_raster__sokoban_frame_has_the_documented_size():
    frame = sokoban_frame()
    # 16 + 36 + 3*48 + 10 + 2*20 + 3 legend rows * 26 + 16; width max(448, 32 + 7*48)
    assert frame_size(frame) == (340, 448)
    image = draw(frame)
    assert image.shape == (340, 448, 3) and image.dtype == np.uint8


@pytest.mark.parametrize(
    ("grids", "legend_items", "expected"),
    [
        ((Grid(("X" * 10,) * 20), Grid(("X" * 4,) * 4)), 2, (16 + 36 + 480 + 50 + 26 + 16, 448)),
        ((Grid(("X" * 15,) * 9), Grid(("X" * 15,) * 9)), 0, (16 + 36 + 9 * 32 + 50 + 16, 1024)),
        ((Grid(("X",)),), 0, (16 + 36 + 48 + 50 + 16, 448)),
    ],
)
def test_raster__grid_sizes_follow_the_formula(grids, legend_items, expected):
    legend = (
        {"X": Tile("cell", "x"), "Y": Tile("empty", "y")} if legend_items else {"X": Tile("cell")}
    )
    frame = GridFrame(grids, legend)
    assert frame_size(frame) == expected == draw(frame).shape[:2]


def test_raster__text_cards_are_480_by_640_whatever_the_text():
    for body in ("short", "long " * 2000):
        image = draw(TextFrame("Card", (("Question", body), ("Answer", body)), "status"))
        assert image.shape == (*TEXT_CARD_SIZE, 3)


def test_raster__box_target_and_box_on_target_tiles_differ():
    image = draw(sokoban_frame())
    player, box, target, done, floor = (tile_pixels(image, 1, c) for c in range(1, 6))
    means = {
        name: tile.mean(axis=0)
        for name, tile in dict(
            player=player, box=box, target=target, done=done, floor=floor
        ).items()
    }
    names = list(means)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert np.abs(means[a] - means[b]).max() > 12, (a, b, means[a], means[b])
    # The target ring is red, the crate orange-brown, the finished crate green.
    assert (target[:, 0] > 180).sum() > 50 and ((target[:, 0] > 180) & (target[:, 1] < 100)).any()
    assert means["done"][1] > means["done"][0]  # green dominates on a box on target
    assert means["box"][0] > means["box"][2] + 60  # orange crate


def test_raster__wall_and_floor_tiles_are_what_the_legend_says():
    image = draw(sokoban_frame())
    wall, floor = tile_pixels(image, 0, 0).mean(axis=0), tile_pixels(image, 1, 5).mean(axis=0)
    assert floor.min() > 180  # light sand
    assert wall.max() < 140  # dark brick
