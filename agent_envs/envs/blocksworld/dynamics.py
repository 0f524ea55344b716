"""Blocksworld rules as pure functions on `State` (GRL semantics).

A move ``move X to Y`` puts block X on block Y, or on the table when Y is 0. It is illegal,
and changes nothing, when (checked in this order, as GRL does):

1. X is not a block (not in 1..N) or Y is neither the table nor a block (not in 0..N);
2. X and Y are the same block;
3. X has a block on top of it;
4. Y is a block with a block on top of it (including X itself: moving a block onto the block
   it already sits on is illegal).

Moving a block that is already on the table to the table is legal and changes nothing; it
costs a move like any other. A legal move earns `MOVE_REWARD`, or `GOAL_REWARD` instead when
the new state is the goal. An illegal move earns 0 here: the env charges it through
``invalid_action_penalty``.
"""

from __future__ import annotations

from agent_envs.envs.blocksworld.constants import GOAL_REWARD, MOVE_REWARD, TABLE
from agent_envs.envs.blocksworld.types import Move, State, Transition

__all__ = [
    "blocks_in_place",
    "check_move",
    "check_state",
    "clear_blocks",
    "stacks",
    "step",
    "successors",
]


def check_state(state: State) -> str | None:
    """Why ``state`` is not a Blocksworld state, or ``None`` if it is one.

    Every block sits on the table or on another block, no two blocks on the same block, and
    following the supports from any block reaches the table (no cycle).
    """
    count = len(state)
    if count == 0:
        return "there are no blocks"
    for block, below in enumerate(state, 1):
        if isinstance(below, bool) or not isinstance(below, int) or not 0 <= below <= count:
            return f"block {block} sits on {below!r}, not on 0 (the table) or a block 1..{count}"
        if below == block:
            return f"block {block} sits on itself"
    supports = [below for below in state if below != TABLE]
    if len(supports) != len(set(supports)):
        return "two blocks sit on the same block"
    for block in range(1, count + 1):
        below, seen = block, 0
        while below != TABLE:
            below = state[below - 1]
            seen += 1
            if seen > count:
                return f"the stack under block {block} is a cycle"
    return None


def clear_blocks(state: State) -> list[int]:
    """The blocks with nothing on top of them, in increasing order."""
    covered = set(state)
    return [block for block in range(1, len(state) + 1) if block not in covered]


def check_move(state: State, move: Move) -> str | None:
    """Why ``move`` is illegal in ``state`` (see the module docstring), or ``None``."""
    block, dest = move
    count = len(state)
    if not 1 <= block <= count:
        return f"there is no block {block}"
    if not 0 <= dest <= count:
        return f"there is no block {dest}"
    if block == dest:
        return f"block {block} cannot go on itself"
    if block in state:
        return f"block {block} has a block on top of it"
    if dest != TABLE and dest in state:
        return f"block {dest} has a block on top of it"
    return None


def step(state: State, move: Move, goal: State) -> Transition:
    """Apply one move; see the module docstring for the rules and rewards."""
    if check_move(state, move) is not None:
        return Transition(state, 0.0, False, False, state == goal)
    block, dest = move
    new = (*state[: block - 1], dest, *state[block:])
    solved = new == goal
    return Transition(new, GOAL_REWARD if solved else MOVE_REWARD, True, new != state, solved)


def successors(state: State) -> list[tuple[Move, State]]:
    """Every legal move that changes ``state``, with the state it leads to.

    Order: by the block moved, then the table before blocks, then by block number.
    """
    clear = clear_blocks(state)
    result = []
    for block in clear:
        index = block - 1
        dests = [] if state[index] == TABLE else [TABLE]
        dests += [dest for dest in clear if dest != block]
        for dest in dests:
            result.append((Move(block, dest), (*state[:index], dest, *state[index + 1 :])))
    return result


def blocks_in_place(state: State, goal: State) -> int:
    """Number of blocks that sit on what they sit on in the goal."""
    return sum(here == there for here, there in zip(state, goal, strict=True))


def stacks(state: State) -> list[list[int]]:
    """The towers, each listed bottom to top, ordered by their bottom block's number."""
    above = {below: block for block, below in enumerate(state, 1) if below != TABLE}
    towers = []
    for block, below in enumerate(state, 1):
        if below == TABLE:
            tower = [block]
            while tower[-1] in above:
                tower.append(above[tower[-1]])
            towers.append(tower)
    return towers
