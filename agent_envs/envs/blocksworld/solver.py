"""Optimal Blocksworld plans by breadth-first search over states.

Every legal move can be undone by one move, so the state graph is undirected and a search
from both ends meets in the middle: the search grows whichever frontier is smaller, one
whole layer at a time, and the first layer that touches the other side gives a shortest
plan. Moves that change nothing are never part of a plan.
"""

from __future__ import annotations

from agent_envs.envs.blocksworld.dynamics import successors
from agent_envs.envs.blocksworld.types import Move, State

__all__ = ["optimal_plan_length", "solve"]


def solve(start: State, goal: State) -> list[Move]:
    """A shortest list of legal moves from ``start`` to ``goal`` (``[]`` when equal).

    Both must be valid states of the same number of blocks (any such pair is connected).
    Deterministic: the same pair always gives the same plan.
    """
    if len(start) != len(goal):
        raise ValueError(f"start has {len(start)} blocks and goal has {len(goal)}")
    if start == goal:
        return []
    # parent[state] = (previous state, move from previous to state) on each side.
    forward: dict[State, tuple[State, Move] | None] = {start: None}
    backward: dict[State, tuple[State, Move] | None] = {goal: None}
    forward_layer, backward_layer = [start], [goal]
    while forward_layer and backward_layer:
        grow_forward = len(forward_layer) <= len(backward_layer)
        if grow_forward:
            layer, seen, other = forward_layer, forward, backward
        else:
            layer, seen, other = backward_layer, backward, forward
        next_layer: list[State] = []
        meeting = None
        for state in layer:
            for move, after in successors(state):
                if after in seen:
                    continue
                seen[after] = (state, move)
                next_layer.append(after)
                if meeting is None and after in other:
                    meeting = after
        if meeting is not None:
            return _join(meeting, forward, backward)
        if grow_forward:
            forward_layer = next_layer
        else:
            backward_layer = next_layer
    raise ValueError("goal cannot be reached from start; are both valid states?")


def optimal_plan_length(start: State, goal: State) -> int:
    """The number of moves of a shortest plan from ``start`` to ``goal``."""
    return len(solve(start, goal))


def _join(
    meeting: State,
    forward: dict[State, tuple[State, Move] | None],
    backward: dict[State, tuple[State, Move] | None],
) -> list[Move]:
    """The plan start → meeting (forward parents) → goal (backward parents, undone)."""
    head: list[Move] = []
    state = meeting
    while (link := forward[state]) is not None:
        state, move = link
        head.append(move)
    head.reverse()
    tail: list[Move] = []
    state = meeting
    while (link := backward[state]) is not None:
        previous, move = link
        # `move` took `previous` to `state` going backward; going forward from `state`, the
        # same block returns to where it sat in `previous`.
        tail.append(Move(move.block, previous[move.block - 1]))
        state = previous
    return head + tail
