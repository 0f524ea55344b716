"""Sokoban levels by reverse play: solvable by construction, reproducible from a Generator.

Steps, following gym-sokoban's `room_utils.generate_room` (which GRL and RAGEN use):

1. Room topology: a walker takes `topology_steps` steps over the interior, turning with
   probability 0.35 before each step and carving one of five small masks around itself; the
   outer ring stays wall. Default steps: ``int(1.7 * (width + height))``, gym-sokoban's
   ``num_gen_steps`` (20 for 6x6, 27 for 8x8, 34 for 10x10).
2. The player and `num_boxes` targets on distinct uniformly drawn floor cells; the boxes start
   on the targets (the solved position).
3. Reverse play from the solved position: the player walks and pulls boxes (the inverse of a
   push), so the position chosen can be pushed back to the solved one. Every box and the
   player end off the targets.

   - One box: every position within `search_depth` reverse moves is visited (breadth-first);
     the choice is the position right after a pull with the box farthest (Manhattan) from its
     target, the deepest on ties. That is the position gym-sokoban's depth-first search looks
     for (its score, box swaps x displacement, is the displacement for one box).
   - Several boxes: gym-sokoban's exhaustive DFS is replaced by `PULL_LINES` randomized lines
     of play of at most `search_depth` moves each, one pull at a time (the player walks the
     shortest way to a box and pulls it), favouring pulls that take a box away from the
     targets; the choice is the position that needs the most pushes (cheapest assignment of
     boxes to targets).

   Then the player walks to a uniformly drawn non-target cell at most
   ``WANDER_STEPS_PER_BOX * num_boxes`` moves away, as RAGEN's generator moves the player a
   few random steps after the search.

A room whose reverse play reaches no such position (too small, or a box that cannot move) is
replaced by a new one drawn from the same Generator, up to `max_retries` rooms; the level
depends only on the Generator's state.

Measured against gym-sokoban's algorithm at the same settings (6x6/1, 8x8/1, 8x8/2 and 10x10/3
boxes, search depth 300), these levels need 5-20% more moves to solve optimally on average, and
one takes tens of microseconds (one box) to a few milliseconds to generate instead of up to a
second.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from agent_envs.envs.sokoban.constants import BOX, FLOOR, PLAYER, TARGET, WALL
from agent_envs.envs.sokoban.dynamics import action_offsets, walk_distances
from agent_envs.envs.sokoban.types import SokobanState

P_CHANGE_DIRECTION = 0.35
"""Probability that the topology walker turns before a step (gym-sokoban's value)."""

# Masks carved around the topology walker, as (row, column) offsets (gym-sokoban's five).
_MASKS = (
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, -1), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
)
_WALK_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


def default_topology_steps(width: int, height: int) -> int:
    """gym-sokoban's number of topology steps for a room: ``int(1.7 * (width + height))``."""
    return int(1.7 * (width + height))


def check_settings(
    *,
    width: int,
    height: int,
    num_boxes: int,
    search_depth: int = 300,
    topology_steps: int | None = None,
    max_retries: int = 50,
) -> None:
    """Raise `ValueError` naming the first invalid argument of `generate`."""
    for name, value, least in (
        ("width", width, 3),
        ("height", height, 3),
        ("num_boxes", num_boxes, 1),
        ("search_depth", search_depth, 1),
        ("max_retries", max_retries, 1),
    ):
        _check_int(name, value, least)
    if topology_steps is not None:
        _check_int("topology_steps", topology_steps, 1)
    interior = (width - 2) * (height - 2)
    if interior < num_boxes + 2:
        raise ValueError(
            f"num_boxes={num_boxes} does not fit a {width}x{height} room: its {interior} "
            f"interior cells must hold the boxes, the player and one free cell to pull into "
            f"(at most {max(interior - 2, 0)} boxes)"
        )


def _check_int(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")


class _Layout:
    """Index arithmetic of a width x height board laid out as `SokobanState.board` is."""

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.stride = stride = width + 1
        self.size = height * stride - 1
        self.interior = tuple(
            r * stride + c for r in range(1, height - 1) for c in range(1, width - 1)
        )
        self.row = tuple(i // stride for i in range(self.size))
        self.col = tuple(i % stride for i in range(self.size))
        self.offsets = action_offsets(width)
        self.masks = tuple(tuple(dr * stride + dc for dr, dc in mask) for mask in _MASKS)
        # walk[d][cell]: the walker's next cell from `cell` in direction d, clamped inside.
        self.walk = tuple(
            tuple(
                _clamp(i // stride + d_row, height - 2) * stride
                + _clamp(i % stride + d_col, width - 2)
                for i in range(self.size)
            )
            for d_row, d_col in _WALK_DIRECTIONS
        )
        self.walls = b"\n".join([WALL.encode() * width] * height)


def _clamp(value: int, most: int) -> int:
    return min(max(value, 1), most)


@lru_cache(maxsize=32)
def _layout(width: int, height: int) -> _Layout:
    return _Layout(width, height)


def generate(
    rng: np.random.Generator,
    *,
    width: int,
    height: int,
    num_boxes: int,
    search_depth: int = 300,
    topology_steps: int | None = None,
    max_retries: int = 50,
) -> SokobanState:
    """A solvable level of `width` x `height` cells (outer wall ring included, as
    gym-sokoban's ``dim_room``) with `num_boxes` boxes, no box and not the player on a target.

    All randomness comes from `rng`. `search_depth`: the most reverse moves in a line of play.
    `topology_steps`: steps of the room-carving walk (default `default_topology_steps`).
    `max_retries`: rooms tried before giving up with `RuntimeError`. Invalid settings raise
    `ValueError` (see `check_settings`), an `rng` that is not a `numpy.random.Generator`
    `TypeError`.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    check_settings(
        width=width,
        height=height,
        num_boxes=num_boxes,
        search_depth=search_depth,
        topology_steps=topology_steps,
        max_retries=max_retries,
    )
    layout = _layout(width, height)
    steps = default_topology_steps(width, height) if topology_steps is None else topology_steps
    for _ in range(max_retries):
        floor = _carve_room(layout, steps, rng)
        if len(floor) < num_boxes + 2:
            continue
        player, targets = _place(floor, num_boxes, rng)
        found = _reverse_play(layout, floor, player, targets, search_depth, rng)
        if found is not None:
            return _render(layout, floor, targets, *found)
    raise RuntimeError(
        f"no level after {max_retries} rooms with width={width}, height={height}, "
        f"num_boxes={num_boxes}, search_depth={search_depth}, topology_steps={steps}"
    )


def _carve_room(layout: _Layout, steps: int, rng: np.random.Generator) -> list[int]:
    """Floor cells carved by gym-sokoban's topology walk, in board order."""
    draws = rng.random(3 * steps + 3).tolist()
    # gym-sokoban starts anywhere in [1, dim - 1]; the first step clamps into the interior.
    center = (1 + int(draws[0] * (layout.height - 1))) * layout.stride
    center += 1 + int(draws[1] * (layout.width - 1))
    direction = int(draws[2] * 4)
    carved = bytearray(layout.size)
    walk, masks = layout.walk, layout.masks
    for turn, new_direction, mask in zip(draws[3::3], draws[4::3], draws[5::3], strict=True):
        if turn < P_CHANGE_DIRECTION:
            direction = int(new_direction * 4)
        center = walk[direction][center]
        for offset in masks[int(mask * 5)]:
            carved[center + offset] = 1
    return [cell for cell in layout.interior if carved[cell]]


def _place(floor: list[int], num_boxes: int, rng: np.random.Generator) -> tuple[int, list[int]]:
    """The player's cell and `num_boxes` target cells, distinct, uniform over `floor`."""
    cells = list(floor)
    chosen = []
    for draw in rng.random(num_boxes + 1).tolist():
        index = int(draw * len(cells))
        chosen.append(cells[index])
        cells[index] = cells[-1]
        cells.pop()
    return chosen[0], chosen[1:]


def _render(
    layout: _Layout, floor: list[int], targets: list[int], player: int, boxes: list[int]
) -> SokobanState:
    """The board bytes of a position."""
    cells = bytearray(layout.walls)
    for cell in floor:
        cells[cell] = ord(FLOOR)
    for cell in targets:
        cells[cell] = ord(TARGET)
    for cell in boxes:
        cells[cell] = ord(BOX)  # every box is off target (required by the search)
    cells[player] = ord(PLAYER)  # and the player too
    return SokobanState(bytes(cells), player, layout.width)


WANDER_STEPS_PER_BOX = 3
"""After the search the player walks to a uniformly drawn non-target cell at most
``WANDER_STEPS_PER_BOX * num_boxes`` moves away (RAGEN's generator likewise walks the player up to
3 random steps after gym-sokoban's search)."""
PULL_LINES = 16
"""Lines of reverse play tried when there are several boxes."""
GREEDY_PULL = 0.7
"""Probability that a line takes the pull that most increases its box's push distance to the
nearest target; otherwise the pull is uniform among the available ones."""
_MAX_ASSIGNMENT_BOXES = 4
_FAR = 1 << 20


class _Room:
    """The fixed part of a room during reverse play: its floor, targets and layout."""

    def __init__(self, layout: _Layout, floor: list[int], targets: list[int]) -> None:
        self.layout = layout
        self.floor = floor
        self.targets = targets
        self.free = bytearray(layout.size)
        for cell in floor:
            self.free[cell] = 1
        self.is_target = bytearray(layout.size)
        for cell in targets:
            self.is_target[cell] = 1

    def push_distances(self, sources: list[int]) -> list[int]:
        """Fewest pushes taking a lone box from each cell to the nearest of `sources`
        (`_FAR` where none can be reached): a breadth-first search over pulls."""
        free = self.free
        dist = [_FAR] * self.layout.size
        for cell in sources:
            dist[cell] = 0
        frontier = list(sources)
        steps = 0
        while frontier:
            steps += 1
            following = []
            for cell in frontier:
                for delta in self.layout.offsets:
                    before = cell - delta  # a push along +delta took the box from `before`
                    if dist[before] == _FAR and free[before] and free[before - delta]:
                        dist[before] = steps
                        following.append(before)
            frontier = following
        return dist


def _reverse_play(
    layout: _Layout,
    floor: list[int],
    player: int,
    targets: list[int],
    search_depth: int,
    rng: np.random.Generator,
) -> tuple[int, list[int]] | None:
    """(player, boxes) of the chosen reverse-play position, or None when no position reached
    has every box and the player off the targets."""
    room = _Room(layout, floor, targets)
    if len(targets) == 1:
        found = _single_box_search(room, player, search_depth)
    else:
        found = _pull_lines(room, player, search_depth, rng)
    if found is None:
        return None
    player, boxes = found
    return _wander(room, player, boxes, WANDER_STEPS_PER_BOX * len(boxes), rng), boxes


def _single_box_search(room: _Room, player: int, search_depth: int) -> tuple[int, list[int]] | None:
    """Exhaustive reverse play for one box: breadth-first over (box, player) positions to
    depth `search_depth`, a move pulling the box whenever the player walks away from it.

    Returns the position right after a pull with the box farthest (Manhattan) from its target
    and the player off the target; among those, the deepest. This is the position
    gym-sokoban's DFS looks for (its score is the displacement for one box).
    """
    (target,) = room.targets
    layout = room.layout
    size, free, row, col = layout.size, room.free, layout.row, layout.col
    target_row, target_col = row[target], col[target]
    # exits[cell]: (next cell, cell a box must be on to come along) for each move from `cell`.
    exits = {
        cell: tuple((cell + delta, cell - delta) for delta in layout.offsets if free[cell + delta])
        for cell in room.floor
    }
    start = target * size + player  # a position is box * size + player
    seen = {start}
    frontier = [start]
    best_distance, best = 1, None
    for _ in range(search_depth):
        following = []
        for key in frontier:
            box, at = divmod(key, size)
            for dest, behind in exits[at]:
                if dest == box:
                    continue
                key = box * size + dest
                if key not in seen:
                    seen.add(key)
                    following.append(key)
                if behind == box:  # the same move, pulling the box along
                    key = at * size + dest
                    if key not in seen:
                        seen.add(key)
                        following.append(key)
                        distance = abs(row[at] - target_row) + abs(col[at] - target_col)
                        if distance >= best_distance and dest != target:
                            best_distance, best = distance, (dest, [at])
        if not following:
            break
        frontier = following
    return best


def _pull_lines(
    room: _Room, player: int, search_depth: int, rng: np.random.Generator
) -> tuple[int, list[int]] | None:
    """Randomized reverse play for several boxes, one pull at a time.

    Each of `PULL_LINES` lines starts from the solved position and repeats: the player walks
    the shortest way to a cell beside a box and pulls the box one cell, while the line's moves
    (walks and pulls) stay within `search_depth`. The pull is, with probability `GREEDY_PULL`,
    one that most increases its box's push distance to the nearest target, else any. Returns
    the position seen with every box and the player off targets that needs the most pushes
    (cheapest assignment of boxes to targets on the empty room); the first one on ties.
    """
    offsets = room.layout.offsets
    nearest = room.push_distances(room.targets)
    to_target = [room.push_distances([target]) for target in room.targets]
    is_target = room.is_target
    best_score, best = 0, None
    for _ in range(PULL_LINES):
        draws = iter(rng.random(2 * search_depth).tolist())
        cells = bytearray(room.free)  # 1 where the player may walk
        boxes = list(room.targets)
        for box in boxes:
            cells[box] = 0
        at, moves, on_target = player, 0, len(boxes)
        while True:
            walk = walk_distances(cells, offsets, at)
            pulls = []
            for index, box in enumerate(boxes):
                for delta in offsets:
                    cost = walk[box + delta]
                    if 0 <= cost < search_depth - moves and cells[box + 2 * delta]:
                        gain = nearest[box + delta] - nearest[box]
                        pulls.append((gain, index, delta, cost))
            if not pulls:
                break
            if next(draws) < GREEDY_PULL:
                top = max(pulls)[0]
                pulls = [pull for pull in pulls if pull[0] == top]
            _, index, delta, cost = pulls[int(next(draws) * len(pulls))]
            box = boxes[index]
            moves += cost + 1
            cells[box] = 1
            cells[box + delta] = 0
            boxes[index] = box + delta
            at = box + 2 * delta
            on_target += is_target[box + delta] - is_target[box]
            if not on_target and not is_target[at]:
                score = _pushes_needed(to_target, nearest, boxes)
                if score > best_score:
                    best_score, best = score, (at, list(boxes))
    return best


def _pushes_needed(to_target: list[list[int]], nearest: list[int], boxes: list[int]) -> int:
    """Lower bound on the pushes solving `boxes`: the cheapest assignment of boxes to distinct
    targets by push distance (each box to its nearest target above 4 boxes)."""
    if len(boxes) > _MAX_ASSIGNMENT_BOXES:
        return sum(nearest[box] for box in boxes)
    return min(
        sum(distances[box] for distances, box in zip(order, boxes, strict=True))
        for order in itertools.permutations(to_target)
    )


def _wander(
    room: _Room, player: int, boxes: list[int], radius: int, rng: np.random.Generator
) -> int:
    """A uniformly drawn non-target cell at most `radius` moves from `player` (boxes fixed)."""
    cells = bytearray(room.free)
    for box in boxes:
        cells[box] = 0
    cells[player] = 0
    reached = [player]
    frontier = [player]
    for _ in range(radius):
        following = []
        for cell in frontier:
            for delta in room.layout.offsets:
                if cells[cell + delta]:
                    cells[cell + delta] = 0
                    following.append(cell + delta)
        if not following:
            break
        reached += following
        frontier = following
    options = [cell for cell in reached if not room.is_target[cell]]
    return options[int(rng.random() * len(options))]
