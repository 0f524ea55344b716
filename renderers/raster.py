"""The pixel backend: a frame description → an ``(H, W, 3)`` ``uint8`` RGB array (Pillow).

Sprite-style tiles are drawn by code (no asset files) at twice the size and scaled down, so
edges are smooth. Sizes are fixed by the frame's shape, never by its text, so every frame of
an episode has the same size (what video writers and Gymnasium's ``RecordVideo`` need):

**GridFrame** (all sizes in pixels):

* ``tile = clamp(480 // max(rows, columns of the widest panel), 12, 48)``;
* ``width = max(448, 2*16 + sum(panel columns * tile) + 32 * (panels - 1))``;
* ``height = 16 + 36 (title) + 24 (if any panel has a title) + rows * tile + 10
  + 2 * 20 (caption) + 26 * legend rows + 16``, where ``rows`` is the tallest panel and the
  legend lists the described tiles, ``(width - 32) // 136`` to a row.

**TextFrame**: always ``480 x 640`` (height x width); long text is wrapped and cut with
``...``.

:func:`frame_size` gives ``(height, width)`` without drawing.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from agent_envs.renderers.frames import Frame, Grid, GridFrame, TextFrame, Tile

from agent_envs.optional import require

__all__ = ["TEXT_CARD_SIZE", "draw", "frame_size", "text_panel", "to_image"]

PAD, HEADER, PANEL_TITLE, GAP = 16, 36, 24, 32
CAPTION_GAP, CAPTION_LINE, CAPTION_LINES = 10, 20, 2
LEGEND_ROW, LEGEND_SLOT = 26, 136
MIN_WIDTH, BOARD_SPAN, MIN_TILE, MAX_TILE = 448, 480, 12, 48
#: (height, width) of every TextFrame.
TEXT_CARD_SIZE = (480, 640)
_SS = 2  # supersampling factor

BACKGROUND = (32, 35, 43)
PANEL = (42, 46, 56)
TEXT = (232, 234, 238)
MUTED = (160, 166, 178)
ACCENT = (245, 190, 80)
_FLOOR = (224, 215, 196)
_FLOOR_EDGE = (206, 196, 176)
_WALL, _MORTAR = (128, 76, 58), (86, 50, 40)
_TARGET = (214, 64, 62)
_CRATE, _CRATE_DARK = (205, 140, 66), (138, 86, 36)
_CRATE_DONE, _CRATE_DONE_DARK = (92, 178, 92), (44, 118, 52)
_PLAYER, _PLAYER_DARK, _SKIN = (60, 116, 222), (34, 70, 150), (247, 210, 168)
_WELL, _WELL_LINE = (22, 24, 30), (44, 48, 58)
_DEFAULT_CELL = (150, 156, 168)
_TABLE, _TABLE_DARK = (156, 108, 66), (104, 68, 38)


# ----------------------------------------------------------------------------- sizes
def _tile_size(frame: GridFrame) -> int:
    cells = max(max(grid.shape) for grid in frame.grids)
    return max(MIN_TILE, min(MAX_TILE, BOARD_SPAN // max(cells, 1)))


def _legend_items(frame: GridFrame) -> list[tuple[str, Tile]]:
    return [(glyph, tile) for glyph, tile in frame.legend.items() if tile.description]


def _grid_layout(frame: GridFrame) -> dict[str, Any]:
    tile = _tile_size(frame)
    shapes = [grid.shape for grid in frame.grids]
    rows = max(r for r, _ in shapes)
    board_width = sum(c for _, c in shapes) * tile + GAP * (len(shapes) - 1)
    width = max(MIN_WIDTH, 2 * PAD + board_width)
    per_row = max(1, (width - 2 * PAD) // LEGEND_SLOT)
    legend_rows = math.ceil(len(_legend_items(frame)) / per_row)
    titled = PANEL_TITLE if any(grid.title for grid in frame.grids) else 0
    board_top = PAD + HEADER + titled
    caption_top = board_top + rows * tile + CAPTION_GAP
    legend_top = caption_top + CAPTION_LINES * CAPTION_LINE
    height = legend_top + legend_rows * LEGEND_ROW + PAD
    return {
        "tile": tile,
        "width": width,
        "height": height,
        "rows": rows,
        "board_left": (width - board_width) // 2,
        "board_top": board_top,
        "caption_top": caption_top,
        "legend_top": legend_top,
        "legend_per_row": per_row,
    }


def frame_size(frame: Frame) -> tuple[int, int]:
    """``(height, width)`` in pixels of ``draw(frame)`` (see the module docstring)."""
    if isinstance(frame, TextFrame):
        return TEXT_CARD_SIZE
    layout = _grid_layout(frame)
    return layout["height"], layout["width"]


# ----------------------------------------------------------------------------- fonts, text
@cache
def _font(size: int, style: str = "sans") -> Any:
    """A TrueType font (DejaVu when the system has it, else Pillow's bundled default)."""
    image_font = require("PIL.ImageFont", "render")
    name = {"sans": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}
    try:
        return image_font.truetype(name[style], size)
    except OSError:
        return image_font.load_default(size)


def wrap_text(text: str, font: Any, width: float) -> list[str]:
    """Greedy word wrap to ``width`` pixels; words longer than a line are split."""
    lines: list[str] = []
    for paragraph in text.replace("\t", "    ").split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = word if not line else f"{line} {word}"
            if font.getlength(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            while font.getlength(word) > width and len(word) > 1:
                cut = max(1, int(len(word) * width / font.getlength(word)))
                while cut > 1 and font.getlength(word[:cut]) > width:
                    cut -= 1
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def _fit(text: str, font: Any, width: float) -> str:
    """``text`` cut with ``...`` to fit ``width`` pixels on one line."""
    text = text[: int(width) + 1]  # no glyph is narrower than a pixel: the rest cannot show
    if font.getlength(text) <= width:
        return text
    low, high = 0, len(text)  # the longest prefix that fits with "..." (binary search)
    while low < high:
        middle = (low + high + 1) // 2
        if font.getlength(text[:middle] + "...") <= width:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "..."


def _head(text: str, lines: int, font: Any, width: float) -> str:
    """The start of ``text`` that holds its first ``lines + 1`` wrapped lines (so wrapping a
    megabyte-long body costs what wrapping one screen does)."""
    per_line = int(width / max(font.getlength("i"), 1.0)) + 2
    head = "\n".join(text.split("\n", lines + 1)[: lines + 1])
    return head[: (lines + 1) * per_line]


def _clip_lines(lines: list[str], limit: int, font: Any, width: float) -> list[str]:
    if len(lines) <= limit:
        return lines
    kept = lines[: max(limit, 0)]
    if kept:
        kept[-1] = _fit(kept[-1] + " ...", font, width)
    return kept


# ----------------------------------------------------------------------------- tiles
def _shade(color: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    """Lighter (factor > 1) or darker (< 1) version of ``color``."""
    if factor >= 1:
        return tuple(int(c + (255 - c) * (factor - 1)) for c in color)  # type: ignore[return-value]
    return tuple(int(c * factor) for c in color)  # type: ignore[return-value]


def _floor(d: Any, x: int, y: int, t: int) -> None:
    d.rectangle([x, y, x + t - 1, y + t - 1], fill=_FLOOR)
    d.rectangle([x, y, x + t - 1, y + t - 1], outline=_FLOOR_EDGE, width=max(1, t // 48))


def _wall(d: Any, x: int, y: int, t: int) -> None:
    d.rectangle([x, y, x + t - 1, y + t - 1], fill=_MORTAR)
    m = max(1, t // 24)
    half = t // 2
    for row, offset in ((0, 0), (1, half // 2)):
        top = y + row * half
        for left in range(x - offset, x + t, half):
            a, b = max(left + m, x + m), min(left + half - m, x + t - m)
            if b > a:
                d.rectangle([a, top + m, b - 1, top + half - m - 1], fill=_WALL)
                d.line([a, top + m, b - 1, top + m], fill=_shade(_WALL, 1.25), width=m)


def _target(d: Any, x: int, y: int, t: int) -> None:
    _floor(d, x, y, t)
    cx, cy, r, w = x + t / 2, y + t / 2, t * 0.27, max(2, t // 12)
    d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=_TARGET, width=w)
    r2 = t * 0.08
    d.ellipse([cx - r2, cy - r2, cx + r2, cy + r2], fill=_TARGET)


def _crate(d: Any, x: int, y: int, t: int, color: tuple, dark: tuple) -> None:
    inset, w = t * 0.08, max(2, t // 14)
    box = [x + inset, y + inset, x + t - 1 - inset, y + t - 1 - inset]
    d.rounded_rectangle(box, radius=t * 0.1, fill=color, outline=dark, width=w)
    inner = t * 0.22
    a, b = x + inner, x + t - 1 - inner
    c, e = y + inner, y + t - 1 - inner
    d.rectangle([a, c, b, e], outline=dark, width=w)
    d.line([a, c, b, e], fill=dark, width=w)
    d.line([a, e, b, c], fill=dark, width=w)


def _player(d: Any, x: int, y: int, t: int) -> None:
    cx = x + t / 2
    body = [x + t * 0.24, y + t * 0.46, x + t * 0.76, y + t * 0.9]
    d.rounded_rectangle(body, radius=t * 0.16, fill=_PLAYER, outline=_PLAYER_DARK, width=t // 20)
    r = t * 0.17
    cy = y + t * 0.32
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=_SKIN, outline=_PLAYER_DARK, width=t // 24)
    e = t * 0.03
    for dx in (-0.06, 0.06):
        d.ellipse([cx + dx * t - e, cy - e, cx + dx * t + e, cy + e], fill=(30, 30, 40))


def _cell(d: Any, x: int, y: int, t: int, color: tuple) -> None:
    b = max(2, t // 7)
    d.rectangle([x, y, x + t - 1, y + t - 1], fill=_shade(color, 0.55))
    d.polygon([(x, y), (x + t - 1, y), (x + t - b, y + b), (x + b, y + b)], fill=_shade(color, 1.4))
    d.polygon([(x, y), (x + b, y + b), (x + b, y + t - b), (x, y + t - 1)], fill=_shade(color, 1.2))
    d.rectangle([x + b, y + b, x + t - 1 - b, y + t - 1 - b], fill=color)


def _block(d: Any, x: int, y: int, t: int, color: tuple, label: str) -> None:
    box = [x + t * 0.06, y + t * 0.02, x + t - 1 - t * 0.06, y + t - 1 - t * 0.02]
    d.rounded_rectangle(
        box, radius=t * 0.14, fill=color, outline=_shade(color, 0.6), width=max(2, t // 16)
    )
    if label:
        luminance = 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]
        ink = (25, 25, 30) if luminance > 150 else (250, 250, 250)
        d.text(
            (x + t / 2, y + t / 2), label, font=_font(int(t * 0.5), "bold"), fill=ink, anchor="mm"
        )


def _table(d: Any, x: int, y: int, t: int) -> None:
    top = y + t * 0.05
    d.rectangle([x, top, x + t - 1, top + t * 0.28], fill=_TABLE)
    d.line([x, top, x + t - 1, top], fill=_shade(_TABLE, 1.3), width=max(2, t // 16))
    d.rectangle([x, top + t * 0.28, x + t - 1, top + t * 0.36], fill=_TABLE_DARK)


def _draw_tile(d: Any, tile: Tile, x: int, y: int, t: int) -> None:
    kind = tile.kind
    if kind == "blank":
        return
    if kind == "floor":
        _floor(d, x, y, t)
    elif kind == "wall":
        _wall(d, x, y, t)
    elif kind == "target":
        _target(d, x, y, t)
    elif kind in ("box", "box_on_target"):
        _floor(d, x, y, t)
        if kind == "box":
            _crate(d, x, y, t, tile.color or _CRATE, _shade(tile.color or _CRATE, 0.67))
        else:
            _crate(d, x, y, t, tile.color or _CRATE_DONE, _CRATE_DONE_DARK)
    elif kind == "player":
        _floor(d, x, y, t)
        _player(d, x, y, t)
    elif kind == "player_on_target":
        _target(d, x, y, t)
        _player(d, x, y, t)
    elif kind == "empty":
        d.rectangle([x, y, x + t - 1, y + t - 1], fill=_WELL, outline=_WELL_LINE, width=1)
    elif kind == "cell":
        _cell(d, x, y, t, tile.color or _DEFAULT_CELL)
    elif kind == "block":
        _block(d, x, y, t, tile.color or _DEFAULT_CELL, tile.label)
    elif kind == "table":
        _table(d, x, y, t)


# ----------------------------------------------------------------------------- frames
def _draw_grid_frame(frame: GridFrame) -> Any:
    image_module = require("PIL.Image", "render")
    draw_module = require("PIL.ImageDraw", "render")
    layout = _grid_layout(frame)
    s = _SS
    image = image_module.new("RGB", (layout["width"] * s, layout["height"] * s), BACKGROUND)
    d = draw_module.Draw(image)
    text_width = (layout["width"] - 2 * PAD) * s
    d.text(
        (PAD * s, (PAD + HEADER / 2 - 2) * s),
        _fit(frame.title, _font(18 * s, "bold"), text_width),
        font=_font(18 * s, "bold"),
        fill=TEXT,
        anchor="lm",
    )
    t = layout["tile"] * s
    left = layout["board_left"] * s
    top = layout["board_top"] * s
    for grid in frame.grids:
        _draw_grid(d, frame, grid, left, top, t)
        left += grid.shape[1] * t + GAP * s
    font = _font(14 * s)
    for index, line in enumerate(frame.caption):
        y = (layout["caption_top"] + index * CAPTION_LINE + CAPTION_LINE / 2) * s
        fill = TEXT if index == 0 else ACCENT
        d.text((PAD * s, y), _fit(line, font, text_width), font=font, fill=fill, anchor="lm")
    _draw_legend(d, frame, layout)
    return image.resize((layout["width"], layout["height"]), image_module.Resampling.LANCZOS)


def _draw_grid(d: Any, frame: GridFrame, grid: Grid, left: int, top: int, t: int) -> None:
    if grid.title:
        font = _font(13 * _SS, "bold")
        y = top - (PANEL_TITLE / 2 + 2) * _SS
        d.text((left, y), grid.title, font=font, fill=MUTED, anchor="lm")
    for r, row in enumerate(grid.rows):
        for c, glyph in enumerate(row):
            _draw_tile(d, frame.legend[glyph], left + c * t, top + r * t, t)


def _draw_legend(d: Any, frame: GridFrame, layout: dict[str, Any]) -> None:
    s = _SS
    font = _font(12 * s)
    swatch = 18 * s
    per_row = layout["legend_per_row"]
    for index, (_, tile) in enumerate(_legend_items(frame)):
        x = (PAD + (index % per_row) * LEGEND_SLOT) * s
        y = (layout["legend_top"] + (index // per_row) * LEGEND_ROW) * s
        d.rectangle([x, y, x + swatch - 1, y + swatch - 1], fill=PANEL)
        _draw_tile(d, tile, x, y, swatch)
        label = _fit(tile.description, font, (LEGEND_SLOT - 26) * s)
        d.text((x + swatch + 6 * s, y + swatch / 2), label, font=font, fill=MUTED, anchor="lm")


def text_panel(
    image: Any, box: tuple[int, int, int, int], sections: list[tuple[str, str]], scale: int = 1
) -> None:
    """Draw headed, wrapped, clipped sections of text inside ``box`` (x0, y0, x1, y1) of a
    Pillow image: each heading in bold, each body in monospace; later sections keep at least
    two lines each."""
    draw_module = require("PIL.ImageDraw", "render")
    d = draw_module.Draw(image)
    heading_font, body_font = _font(13 * scale, "bold"), _font(13 * scale, "mono")
    line = 18 * scale
    x0, y0, x1, y1 = box
    width = x1 - x0
    y = y0
    for index, (heading, body) in enumerate(sections):
        later = len(sections) - index - 1
        room = (y1 - y) // line - 1 - 2 * later  # lines left for this body
        if room < 1:
            break
        if heading:
            d.text((x0, y), _fit(heading, heading_font, width), font=heading_font, fill=ACCENT)
            y += line
        head = _head(body, room, body_font, width)
        lines = _clip_lines(wrap_text(head, body_font, width), room, body_font, width)
        for text in lines:
            d.text((x0, y), text, font=body_font, fill=TEXT)
            y += line
        y += line // 3


def _draw_text_frame(frame: TextFrame) -> Any:
    image_module = require("PIL.Image", "render")
    draw_module = require("PIL.ImageDraw", "render")
    height, width = TEXT_CARD_SIZE
    s = _SS
    image = image_module.new("RGB", (width * s, height * s), BACKGROUND)
    d = draw_module.Draw(image)
    d.rectangle([0, 0, width * s, 44 * s], fill=PANEL)
    title_font = _font(18 * s, "bold")
    d.text(
        (PAD * s, 22 * s),
        _fit(frame.title, title_font, (width - 2 * PAD) * s),
        font=title_font,
        fill=TEXT,
        anchor="lm",
    )
    d.rectangle([0, (height - 34) * s, width * s, height * s], fill=PANEL)
    status_font = _font(14 * s)
    d.text(
        (PAD * s, (height - 17) * s),
        _fit(frame.status, status_font, (width - 2 * PAD) * s),
        font=status_font,
        fill=ACCENT,
        anchor="lm",
    )
    box = (PAD * s, 56 * s, (width - PAD) * s, (height - 44) * s)
    text_panel(image, box, list(frame.sections), scale=s)
    return image.resize((width, height), image_module.Resampling.LANCZOS)


def to_image(frame: Frame) -> Any:
    """``frame`` drawn as a Pillow ``Image`` (RGB)."""
    if isinstance(frame, GridFrame):
        return _draw_grid_frame(frame)
    if isinstance(frame, TextFrame):
        return _draw_text_frame(frame)
    raise TypeError(f"not a frame: {type(frame).__name__}")


def draw(frame: Frame) -> np.ndarray:
    """``frame`` as an ``(H, W, 3)`` ``uint8`` array of the size :func:`frame_size` gives."""
    return np.asarray(to_image(frame), dtype=np.uint8).copy()
