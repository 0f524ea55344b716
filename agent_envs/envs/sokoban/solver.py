"""Optimal Sokoban solver: A* over pushes, costed in moves.

A node is (player cell, box cells). An edge is one push: the player walks the shortest way
(boxes fixed) to the cell behind a box and pushes it one cell; its cost is the walk plus one.
Every solution is a sequence of such walks and pushes, so the cheapest path to a node with
every box on a target is an optimal solution in moves (the unit every action costs).

Heuristic: the minimum over assignments of boxes to distinct targets of the summed push
distances, where a box's push distance to a target is computed on the empty board (other boxes
ignored, the pusher needing a free cell behind the box). A push changes one box's distance by at
most one and costs at least one move, so the heuristic is consistent and A* closes each node
once. Pruned as lost: pushing a box onto a dead cell (no target reachable by pushes) and making
a 2x2 block of walls and boxes that holds a box off target.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from agent_envs.envs.sokoban.constants import (
    BOX,
    BOX_ON_TARGET,
    PLAYER_ON_TARGET,
    TARGET,
    WALL,
    Action,
)
from agent_envs.envs.sokoban.dynamics import action_offsets, walk_distances
from agent_envs.envs.sokoban.types import SokobanState

_WALL = ord(WALL)
_TARGET_GLYPHS = frozenset(map(ord, TARGET + BOX_ON_TARGET + PLAYER_ON_TARGET))
_BOX_GLYPHS = frozenset(map(ord, BOX + BOX_ON_TARGET))
_UNREACHABLE = 1 << 30
_MAX_ASSIGNMENT_BOXES = 5  # above this, the heuristic sums each box's nearest target instead

_Node = tuple[int, tuple[int, ...]]  # (player cell, sorted box cells)


class SolverLimitExceeded(RuntimeError):
    """The search expanded `max_states` nodes without proving a solution or its absence."""


def solve(state: SokobanState, *, max_states: int = 2_000_000) -> list[Action] | None:
    """An optimal (fewest moves) list of actions that solves `state`.

    Returns ``[]`` when `state` is already solved and ``None`` when it is proven unsolvable.
    Raises `SolverLimitExceeded` after expanding `max_states` nodes (a node is a player cell
    and the box cells after a push), and `ValueError` when `max_states` < 1.
    """
    if max_states < 1:
        raise ValueError(f"max_states must be >= 1, got {max_states}")
    problem = _Problem(state)
    return problem.search(max_states)


def optimal_solution_length(state: SokobanState, **kwargs: int) -> int | None:
    """Number of moves of an optimal solution, or ``None`` when unsolvable (see `solve`)."""
    solution = solve(state, **kwargs)
    return None if solution is None else len(solution)


class _Problem:
    """The static part of a level (walls, targets, distance tables) and the A* search."""

    def __init__(self, state: SokobanState) -> None:
        board, self.start, width = state
        self.offsets = action_offsets(width)  # indexed by Action
        self.open = bytes(0 if cell == _WALL or cell == 10 else 1 for cell in board)
        self.targets = tuple(i for i, cell in enumerate(board) if cell in _TARGET_GLYPHS)
        self.target_set = frozenset(self.targets)
        self.start_boxes = tuple(i for i, cell in enumerate(board) if cell in _BOX_GLYPHS)
        self.push_distance = [self._push_distances_to(t) for t in self.targets]
        self.nearest = [min(column) for column in zip(*self.push_distance, strict=True)]
        self.live = bytes(d < _UNREACHABLE for d in self.nearest)
        self.use_assignment = len(self.targets) <= _MAX_ASSIGNMENT_BOXES
        self.heuristic_cache: dict[tuple[int, ...], int] = {}
        self.squares = self._squares()

    def _push_distances_to(self, target: int) -> list[int]:
        """Fewest pushes taking a lone box from each cell to `target` (board without boxes)."""
        open_ = self.open
        dist = [_UNREACHABLE] * len(open_)
        dist[target] = 0
        frontier = [target]
        while frontier:
            following = []
            for cell in frontier:
                step = dist[cell] + 1
                for delta in self.offsets:
                    before = cell - delta  # a push along +delta moved the box before -> cell
                    if open_[before] and open_[before - delta] and dist[before] > step:
                        dist[before] = step
                        following.append(before)
            frontier = following
        return dist

    def heuristic(self, boxes: tuple[int, ...]) -> int:
        """Lower bound on the pushes left: cheapest box-to-target assignment (cached)."""
        cached = self.heuristic_cache.get(boxes)
        if cached is not None:
            return cached
        if self.use_assignment:
            best = min(
                sum(column[b] for column, b in zip(columns, boxes, strict=True))
                for columns in itertools.permutations(self.push_distance, len(boxes))
            )
        else:
            best = sum(self.nearest[b] for b in boxes)
        self.heuristic_cache[boxes] = best
        return best

    def walk_distances(self, player: int, boxes: Iterable[int]) -> list[int]:
        """Moves from `player` to every cell it can walk to, boxes fixed (-1: unreachable)."""
        todo = bytearray(self.open)
        for b in boxes:
            todo[b] = 0
        return walk_distances(todo, self.offsets, player)

    def _squares(self) -> list[tuple[tuple[int, int, int], ...]]:
        """For each cell, the other three cells of each 2x2 square holding it."""
        right, down = self.offsets[3], self.offsets[1]
        squares = []
        for cell in range(len(self.open)):
            found = []
            for corner in (cell, cell - right, cell - down, cell - down - right):
                block = (corner, corner + right, corner + down, corner + down + right)
                if all(0 <= c < len(self.open) for c in block):
                    found.append(tuple(c for c in block if c != cell))
            squares.append(tuple(found))
        return squares

    def frozen(self, dest: int, vacated: int, box_set: set[int]) -> bool:
        """Whether the box pushed from `vacated` to `dest` closes a 2x2 square of walls and
        boxes holding a box off target (no box of that square can ever move again)."""
        open_ = self.open
        for a, b, c in self.squares[dest]:
            if open_[a] and (a == vacated or a not in box_set):
                continue
            if open_[b] and (b == vacated or b not in box_set):
                continue
            if open_[c] and (c == vacated or c not in box_set):
                continue
            targets = self.target_set
            if dest not in targets or any(x in box_set and x not in targets for x in (a, b, c)):
                return True
        return False

    def search(self, max_states: int) -> list[Action] | None:
        """A* from the start; see the module docstring."""
        start_key = (self.start, self.start_boxes)
        if all(b in self.target_set for b in self.start_boxes):
            return []
        if len(self.start_boxes) > len(self.targets):
            return None
        h0 = self.heuristic(self.start_boxes)
        if h0 >= _UNREACHABLE:
            return None
        best_g = {start_key: 0}
        parent: dict[_Node, _Node] = {}
        counter = itertools.count()
        heap = [(h0, h0, next(counter), 0, start_key)]
        closed: set[_Node] = set()
        live, open_, target_set = self.live, self.open, self.target_set
        while heap:
            _, _, _, g, key = heapq.heappop(heap)
            if key in closed:
                continue
            player, boxes = key
            if all(b in target_set for b in boxes):
                return self._actions(key, parent)
            closed.add(key)
            if len(closed) > max_states:
                raise SolverLimitExceeded(f"no result after expanding {max_states} states")
            box_set = set(boxes)
            walk = self.walk_distances(player, boxes)
            for index, box in enumerate(boxes):
                for delta in self.offsets:
                    stand = box - delta
                    reach = walk[stand]
                    if reach < 0:
                        continue
                    dest = box + delta
                    if not live[dest] or not open_[dest] or dest in box_set:
                        continue
                    if self.frozen(dest, box, box_set):
                        continue
                    moved = tuple(sorted((*boxes[:index], dest, *boxes[index + 1 :])))
                    child = (box, moved)
                    cost = g + reach + 1
                    if cost >= best_g.get(child, _UNREACHABLE) or child in closed:
                        continue
                    best_g[child] = cost
                    parent[child] = key
                    h = self.heuristic(moved)
                    heapq.heappush(heap, (cost + h, h, next(counter), cost, child))
        return None

    def _actions(self, goal: _Node, parent: dict[_Node, _Node]) -> list[Action]:
        """Replay the chain of pushes from the start to `goal` as single moves."""
        chain = [goal]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        chain.reverse()
        actions: list[Action] = []
        for (player, boxes), (pushed_from, after) in itertools.pairwise(chain):
            (dest,) = set(after) - set(boxes)
            delta = dest - pushed_from
            actions.extend(self._walk_path(player, pushed_from - delta, boxes))
            actions.append(Action(self.offsets.index(delta)))
        return actions

    def _walk_path(self, player: int, goal: int, boxes: tuple[int, ...]) -> list[Action]:
        """A shortest list of moves from `player` to `goal` around the boxes."""
        blocked = bytearray(self.open)
        for b in boxes:
            blocked[b] = 0
        came_from = {player: (player, -1)}
        frontier = [player]
        while goal not in came_from:
            following = []
            for cell in frontier:
                for action, delta in enumerate(self.offsets):
                    nxt = cell + delta
                    if blocked[nxt] and nxt not in came_from:
                        came_from[nxt] = (cell, action)
                        following.append(nxt)
            frontier = following
        path = []
        cell = goal
        while cell != player:
            cell, action = came_from[cell]
            path.append(Action(action))
        path.reverse()
        return path
