"""The terminal backend: a frame description → text with 24-bit colour escape codes.

Each grid cell prints as two characters on the tile's colour (its label, else its glyph);
panels stand side by side, then the caption and a one-line legend. ``color=False`` gives the
same layout as plain ASCII. Only ASCII characters are used either way.
"""

from __future__ import annotations

import textwrap

from agent_envs.renderers.frames import Frame, GridFrame, TextFrame, Tile

__all__ = ["to_ansi"]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_GAP = "    "
# (background, foreground) per tile kind, when the tile has no colour of its own.
_COLOURS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    "blank": ((0, 0, 0), (0, 0, 0)),
    "floor": ((224, 215, 196), (150, 140, 120)),
    "wall": ((128, 76, 58), (200, 150, 130)),
    "target": ((224, 215, 196), (214, 64, 62)),
    "box": ((205, 140, 66), (70, 40, 10)),
    "box_on_target": ((92, 178, 92), (20, 60, 20)),
    "player": ((60, 116, 222), (255, 255, 255)),
    "player_on_target": ((60, 116, 222), (255, 200, 200)),
    "empty": ((22, 24, 30), (70, 74, 84)),
    "cell": ((150, 156, 168), (20, 20, 20)),
    "block": ((150, 156, 168), (20, 20, 20)),
    "table": ((156, 108, 66), (230, 200, 160)),
}


def _paint(text: str, tile: Tile, color: bool) -> str:
    if not color or tile.kind == "blank":
        return text
    background, foreground = _COLOURS[tile.kind]
    if tile.color is not None:
        background = tile.color
        luminance = 0.299 * background[0] + 0.587 * background[1] + 0.114 * background[2]
        foreground = (20, 20, 20) if luminance > 150 else (250, 250, 250)
    b, f = background, foreground
    return f"\x1b[48;2;{b[0]};{b[1]};{b[2]}m\x1b[38;2;{f[0]};{f[1]};{f[2]}m{text}{_RESET}"


def _cell_text(glyph: str, tile: Tile) -> str:
    if tile.kind == "blank":
        return "  "
    return (tile.label or glyph)[:2].ljust(2)


def _grid_lines(frame: GridFrame, color: bool) -> list[str]:
    height = max(grid.shape[0] for grid in frame.grids)
    titled = any(grid.title for grid in frame.grids)
    columns: list[list[str]] = []
    for grid in frame.grids:
        width = max(grid.shape[1] * 2, len(grid.title))
        lines = [grid.title.ljust(width)] if titled else []
        for row in grid.rows:
            cells = "".join(
                _paint(_cell_text(glyph, frame.legend[glyph]), frame.legend[glyph], color)
                for glyph in row
            )
            lines.append(cells + " " * (width - 2 * len(row)))
        lines += [" " * width] * (height + titled - len(lines))
        columns.append(lines)
    return [_GAP.join(parts).rstrip() for parts in zip(*columns, strict=True)]


def to_ansi(frame: Frame, *, color: bool = True) -> str:
    """``frame`` as terminal text (with colour escape codes unless ``color=False``)."""
    bold = (lambda text: f"{_BOLD}{text}{_RESET}") if color else (lambda text: text)
    if isinstance(frame, GridFrame):
        lines = [bold(frame.title)] if frame.title else []
        lines += _grid_lines(frame, color)
        lines += [line for line in frame.caption if line]
        legend = [
            f"{_paint(_cell_text(glyph, tile), tile, color)} {tile.description}"
            for glyph, tile in frame.legend.items()
            if tile.description
        ]
        if legend:
            lines.append("  ".join(legend))
        return "\n".join(lines)
    if isinstance(frame, TextFrame):
        lines = [bold(frame.title)] if frame.title else []
        for heading, body in frame.sections:
            lines.append(bold(heading) if heading else "")
            for paragraph in body.splitlines() or [""]:
                lines += textwrap.wrap(paragraph, 78) or [""]
        if frame.status:
            lines.append(frame.status)
        return "\n".join(lines)
    raise TypeError(f"not a frame: {type(frame).__name__}")
