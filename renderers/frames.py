"""Frame descriptions: what an env hands a backend to draw. Plain, frozen, JSON-friendly data.

An env describes its current state as one of two frames; it never draws anything itself:

* :class:`GridFrame` for the grid games: one or more glyph grids side by side (Sokoban's
  room; Tetris' board and next piece; Blocksworld's current and goal towers), a legend that
  says what each glyph *looks like* (a :class:`Tile`), a title and a caption.
* :class:`TextFrame` for the dataset envs: a card with a title, headed sections of text
  (question, evidence, last result) and a status line.

A :class:`Tile` names a visual kind from :data:`TILE_KINDS`, not an env concept; the backends
(`agent_envs.renderers.ansi`, `agent_envs.renderers.raster`) know how to draw each kind and nothing
about envs.

Frames round-trip through JSON (:func:`frame_to_dict`, :func:`frame_from_dict`), so a
trajectory record can carry them and `agent_envs.renderers.replay` can draw them later without the
env.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TILE_KINDS",
    "Frame",
    "Grid",
    "GridFrame",
    "TextFrame",
    "Tile",
    "frame_from_dict",
    "frame_to_dict",
]

#: The visual kinds a backend can draw. ``blank`` is background (nothing drawn).
TILE_KINDS: tuple[str, ...] = (
    "blank",
    "floor",
    "wall",
    "target",
    "box",
    "box_on_target",
    "player",
    "player_on_target",
    "empty",  # an empty well cell (Tetris)
    "cell",  # a coloured bevelled block (Tetris); colour from `Tile.color`
    "block",  # a labelled toy block (Blocksworld); colour from `Tile.color`
    "table",  # the table top under the towers
)

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Tile:
    """How one glyph looks: a kind from :data:`TILE_KINDS`, an optional main colour
    (``(r, g, b)``, 0-255) and label (drawn on ``block`` tiles), and the words the legend
    shows for it (``""``: not listed in the legend)."""

    kind: str
    description: str = ""
    color: RGB | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TILE_KINDS:
            raise ValueError(f"Tile kind must be one of {TILE_KINDS}, got {self.kind!r}")
        if self.color is not None:
            color = tuple(int(c) for c in self.color)
            if len(color) != 3 or not all(0 <= c <= 255 for c in color):
                raise ValueError(f"Tile color must be (r, g, b) in 0..255, got {self.color!r}")
            object.__setattr__(self, "color", color)


@dataclass(frozen=True)
class Grid:
    """One panel of glyphs, top row first; rows may be ragged (missing cells are blank)."""

    rows: tuple[str, ...]
    title: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.rows), max((len(row) for row in self.rows), default=0)


@dataclass(frozen=True)
class GridFrame:
    """A grid game's frame: panels drawn side by side with one shared legend.

    ``caption`` holds up to two lines (status, score) drawn under the panels; every glyph
    used in ``grids`` must be in ``legend``. Keep the legend and the panels' shapes the same
    for a whole episode: the frame's size depends only on them (see
    `agent_envs.renderers.raster`)."""

    grids: tuple[Grid, ...]
    legend: dict[str, Tile]
    title: str = ""
    caption: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "grids", tuple(self.grids))
        object.__setattr__(self, "caption", tuple(self.caption))
        if not self.grids:
            raise ValueError("GridFrame needs at least one grid")
        if len(self.caption) > 2:
            raise ValueError(f"GridFrame caption holds at most 2 lines, got {len(self.caption)}")
        used = {glyph for grid in self.grids for row in grid.rows for glyph in row}
        missing = sorted(used - set(self.legend))
        if missing:
            raise ValueError(f"GridFrame glyphs missing from the legend: {missing}")


@dataclass(frozen=True)
class TextFrame:
    """A dataset env's card: a title, headed sections ``(heading, body)`` and a status line."""

    title: str
    sections: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    status: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", tuple((str(h), str(b)) for h, b in self.sections))


Frame = GridFrame | TextFrame


def frame_to_dict(frame: Frame) -> dict[str, Any]:
    """A JSON-serialisable dict of ``frame`` (``{"type": "grid" | "text", ...}``)."""
    if isinstance(frame, GridFrame):
        return {
            "type": "grid",
            "title": frame.title,
            "caption": list(frame.caption),
            "grids": [{"title": grid.title, "rows": list(grid.rows)} for grid in frame.grids],
            "legend": {
                glyph: {
                    "kind": tile.kind,
                    "description": tile.description,
                    "color": None if tile.color is None else list(tile.color),
                    "label": tile.label,
                }
                for glyph, tile in frame.legend.items()
            },
        }
    if isinstance(frame, TextFrame):
        return {
            "type": "text",
            "title": frame.title,
            "sections": [list(section) for section in frame.sections],
            "status": frame.status,
        }
    raise TypeError(f"not a frame: {type(frame).__name__}")


def frame_from_dict(data: dict[str, Any]) -> Frame:
    """The frame :func:`frame_to_dict` wrote; ``ValueError`` on anything else."""
    kind = data.get("type") if isinstance(data, dict) else None
    if kind == "grid":
        legend = {
            glyph: Tile(
                tile["kind"],
                tile.get("description", ""),
                None if tile.get("color") is None else tuple(tile["color"]),
                tile.get("label", ""),
            )
            for glyph, tile in data["legend"].items()
        }
        grids = tuple(Grid(tuple(g["rows"]), g.get("title", "")) for g in data["grids"])
        return GridFrame(grids, legend, data.get("title", ""), tuple(data.get("caption", ())))
    if kind == "text":
        sections = tuple((h, b) for h, b in data.get("sections", ()))
        return TextFrame(data.get("title", ""), sections, data.get("status", ""))
    raise ValueError(f"not a frame dict (type {kind!r}); expected type 'grid' or 'text'")
