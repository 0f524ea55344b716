"""The Blocksworld text env: a thin Gymnasium shell over `dynamics`, `generator` and `solver`."""

from __future__ import annotations

import operator
from typing import Any, ClassVar

import numpy as np

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.envs.blocksworld import dynamics, generator, prompts, solver
from agent_envs.envs.blocksworld.constants import (
    ILLEGAL_MOVE_PENALTY,
    OBSERVATION_MODES,
    TABLE,
    UNPARSEABLE_PENALTY,
)
from agent_envs.envs.blocksworld.parsing import decode_action, format_move
from agent_envs.envs.blocksworld.types import Move, State
from agent_envs.renderers import Grid, GridFrame, Tile

__all__ = ["BlocksworldEnv"]

# Rendered frames: block n is a toy block labelled n in the n-th colour, on a table.
_BLOCK_COLOURS = (
    (230, 80, 70), (60, 130, 230), (250, 200, 60), (80, 185, 100),
    (170, 95, 215), (245, 140, 50), (60, 200, 200), (235, 110, 170),
)  # fmt: skip
_LEGEND = {
    " ": Tile("blank"),
    "=": Tile("table"),
    **{str(n): Tile("block", "", colour, str(n)) for n, colour in enumerate(_BLOCK_COLOURS, 1)},
}


def _towers(state: State, title: str) -> Grid:
    """The towers left to right (by bottom block), one block per cell, a blank column
    between towers and the table as the bottom row; the size depends only on the number of
    blocks, so every frame of an episode has the same size."""
    size = len(state)
    columns = [" " * size] * (2 * size - 1)
    for index, tower in enumerate(dynamics.stacks(state)):
        columns[2 * index] = "".join(str(block) for block in reversed(tower)).rjust(size)
    rows = ["".join(column[r] for column in columns) for r in range(size)]
    return Grid((*rows, "=" * (2 * size - 1)), title)


class BlocksworldEnv(TextEnv):
    """Blocksworld for language models: restack numbered blocks into a goal arrangement.

    ## Action
    The model's reply. The last ``<answer>...</answer>`` holds up to ``max_actions_per_turn``
    actions joined by ``||``; each is ``move X to Y``: put block ``X`` on block ``Y``, or on the
    table when ``Y`` is ``table`` or ``0``. Case-insensitive; ``block X``, ``onto``, ``on``,
    ``on top of``, ``the table``, a final period and one pair of enclosing ``()`` or ``[]``
    (GRL's ``(move 2 to 0)``) are accepted too; the full grammar is in
    :mod:`agent_envs.envs.blocksworld.parsing`. Anything else is an unknown action.

    A move is illegal, and changes nothing, when ``X`` or ``Y`` names no block, ``X`` is ``Y``,
    ``X`` has a block on top, or ``Y`` is a block with a block on top (so moving a block onto
    the block it already sits on is illegal). Moving a table block to the table is legal and
    changes nothing.

    ## Observation
    The current state, then the goal state, in GRL's format for ``observation_mode``:

    * ``"text"``: ``Current state: Block 1 is on the table. Block 2 is on top of Block 1.``
      on one line, ``Goal state: ...`` on the next.
    * ``"1d"``: ``Current representation:``, a line ``[0, 1, 0]`` (what block 1, 2, 3 sits
      on; 0 is the table), a blank line, ``Goal representation:`` and the goal's list.
    * ``"2d"``: ``Graphical representation (Current):``, the towers side by side (each block
      ``_`` over ``|n|`` over ``-``, top row first), a blank line,
      ``Graphical representation (Goal):`` and the goal's towers.

    After an unreadable answer, an unknown action or an illegal move, one line of feedback
    precedes it.

    ## Starting state
    A start and a goal drawn independently and uniformly from all states of ``num_blocks``
    blocks (13, 73 and 501 states for 3, 4 and 5 blocks), the goal redrawn until it differs from
    the start; or ``reset(options={"start": [...], "goal": [...]})`` in the 1d encoding.

    ## Rewards
    GRL's scheme: -1 per legal move, +10 instead of -1 for the move that reaches the goal, -1
    for an illegal move, -5 when the reply cannot be read. On :class:`TextEnv`'s turn semantics
    (actions run in order; the first invalid one ends the turn):

    * legal move: its `ActionResult` reward, -1 or +10;
    * illegal move: attempted (it counts toward the action budget), earns 0 itself, and the turn
      gets ``invalid_action_penalty`` (default -1, GRL's illegal-move reward) once;
    * action outside the grammar: not attempted, and the turn gets ``invalid_action_penalty``;
    * no readable ``<answer>``: nothing runs, the turn earns ``format_penalty`` (default -5).

    A turn's reward is the sum over what it ran, e.g. ``move 3 to table || move 1 to 1`` is
    -1 + 0 - 1 = -2.

    ## Episode end
    Terminated: the current state is the goal (``info["success"]``). Truncated: ``max_turns``
    turns played or ``max_actions_per_episode`` actions executed
    (``info["truncation_reason"]``).

    ## Information
    The common keys of :data:`agent_envs.core.env.COMMON_INFO_KEYS`, plus
    ``optimal_plan_length`` (int: moves of a shortest plan from the episode's start, by
    breadth-first search), ``blocks_in_place`` (int: blocks that sit on what they sit on in the
    goal) and ``num_blocks`` (int).

    ## Arguments
    ``gymnasium.make("grl/Blocksworld-v0", num_blocks=3, observation_mode="text",
    max_turns=11, max_actions_per_turn=5, max_actions_per_episode=20, format_penalty=-5.0,
    invalid_action_penalty=-1.0, render_mode=None)``

    ``num_blocks`` is 2 to 8; ``observation_mode`` is ``"text"``, ``"1d"`` or ``"2d"``. The
    budgets are GRL's (11 turns, 5 actions per turn, 20 per episode).

    ## Version history
    * v0: first release; GRL's rules, observation formats, rewards and budgets. Differences
      from GRL: pairs are generated from the seed (GRL reads fixed lists); a turn stops at its
      first invalid action (GRL runs the rest and takes 0.1 off the turn); an action outside
      the grammar costs -1 (GRL: -5; here -5 is for a reply without a readable answer, which
      GRL charges 0.1); the 2d drawing uses ``-`` for GRL's macron (U+00AF); observations
      have no leading blank line.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "render_fps": 4,
    }
    action_separator: ClassVar[str | None] = "||"
    reset_options: ClassVar[tuple[str, ...]] = ("start", "goal")
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "optimal_plan_length",
        "blocks_in_place",
        "num_blocks",
    )

    def __init__(
        self,
        *,
        num_blocks: int = 3,
        observation_mode: str = "text",
        max_turns: int = 11,
        max_actions_per_turn: int | None = 5,
        max_actions_per_episode: int | None = 20,
        format_penalty: float = UNPARSEABLE_PENALTY,
        invalid_action_penalty: float = ILLEGAL_MOVE_PENALTY,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            max_turns=max_turns,
            max_actions_per_turn=max_actions_per_turn,
            max_actions_per_episode=max_actions_per_episode,
            format_penalty=format_penalty,
            invalid_action_penalty=invalid_action_penalty,
            render_mode=render_mode,
        )
        generator.check_settings(num_blocks=num_blocks)
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(
                f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}"
            )
        self.num_blocks = num_blocks
        self.observation_mode = observation_mode
        self._state: State | None = None
        self._goal: State | None = None
        self._optimal_plan_length = 0
        self._oracle_plans: dict[State, list[Move]] = {}

    @property
    def instructions(self) -> str:
        return prompts.instructions(
            num_blocks=self.num_blocks,
            mode=self.observation_mode,
            max_turns=self.max_turns,
            max_actions_per_episode=self.max_actions_per_episode,
            format_penalty=self.format_penalty,
            invalid_action_penalty=self.invalid_action_penalty,
            answer_format=self.answer_format,
        )

    @property
    def state(self) -> State:
        """The current state: ``state[i - 1]`` is what block ``i`` sits on (0: the table)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the state")
        return self._state

    @property
    def goal(self) -> State:
        """The goal state, in the same encoding as :attr:`state`."""
        if self._goal is None:
            raise RuntimeError("call reset() before reading the goal")
        return self._goal

    # ----------------------------------------------------------------- TextEnv hooks
    def _new_episode(self, options: dict[str, Any]) -> None:
        start, goal = options["start"], options["goal"]
        if start is None and goal is None:
            start, goal = generator.generate(self.np_random, num_blocks=self.num_blocks)
        else:
            start, goal = self._option_state("start", start), self._option_state("goal", goal)
            if start == goal:
                raise ValueError("reset options 'start' and 'goal' must differ")
        self._state, self._goal = start, goal
        plan = solver.solve(start, goal)
        self._optimal_plan_length = len(plan)
        self._oracle_plans = self._plans_along(start, plan)

    def _option_state(self, name: str, value: Any) -> State:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"reset option {name!r} must be a list of ints, got {value!r}")
        try:
            state = tuple(operator.index(below) for below in value)
        except TypeError:
            raise ValueError(
                f"reset option {name!r} must be a list of ints, got {value!r}"
            ) from None
        if len(state) != self.num_blocks:
            raise ValueError(
                f"reset option {name!r} must list {self.num_blocks} blocks, got {len(state)}"
            )
        problem = dynamics.check_state(state)
        if problem is not None:
            raise ValueError(f"reset option {name!r} is not a state: {problem}")
        return state

    def _decode_action(self, text: str) -> Move | None:
        return decode_action(text)

    def _execute(self, action: Move) -> ActionResult:
        problem = dynamics.check_move(self._state, action)
        transition = dynamics.step(self._state, action, self._goal)
        self._state = transition.state
        return ActionResult(
            transition.reward,
            transition.legal,
            transition.moved,
            transition.solved,
            "" if problem is None else problem,
        )

    def _render_text(self) -> str:
        return prompts.observation(self._state, self._goal, self.observation_mode)

    def _is_success(self) -> bool:
        return self._state == self._goal

    def _state_bytes(self) -> bytes:
        return bytes(self._state) + b"|" + bytes(self._goal)

    def _extra_info(self) -> dict[str, Any]:
        return {
            "optimal_plan_length": self._optimal_plan_length,
            "blocks_in_place": dynamics.blocks_in_place(self._state, self._goal),
            "num_blocks": self.num_blocks,
        }

    # ----------------------------------------------------------------- rendering
    def frame(self) -> GridFrame:
        """The current and the goal towers side by side as a frame description, with the
        blocks in place and the turn and action counts."""
        turns, actions, ended = self._budget_caption()
        in_place = f"In place {dynamics.blocks_in_place(self.state, self.goal)}/{self.num_blocks}"
        counts = [in_place, turns, actions]
        if self._is_success():
            outcome = "Goal reached!"
        elif ended:
            outcome = ended
        else:
            moves = self._optimal_plan_length
            outcome = f"Shortest plan from the start: {moves} move" + "s" * (moves != 1)
        grids = (_towers(self.state, "Current"), _towers(self.goal, "Goal"))
        title = f"Blocksworld, {self.num_blocks} blocks"
        return GridFrame(grids, _LEGEND, title, ("   ".join(counts), outcome))

    # ----------------------------------------------------------------- expert and baseline
    def oracle_actions(self) -> list[str]:
        """A shortest move sequence from the current state to the goal (``[]`` at the goal).

        Plans are cached along their path, so following them searches once per episode."""
        plan = self._oracle_plans.get(self._state)
        if plan is None:
            self._oracle_plans = self._plans_along(
                self._state, solver.solve(self._state, self._goal)
            )
            plan = self._oracle_plans[self._state]
        return [format_move(move) for move in plan]

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """A random turn: 1 to ``max_actions_per_turn`` (5 if unlimited) moves, each drawn uniformly
        from every ``move X to Y`` with X a block and Y the table or another block (legal or
        not)."""
        most = self.answer_format.max_actions_per_turn or 5
        count = int(rng.integers(1, most + 1))
        n = self.num_blocks
        moves = []
        for index in rng.integers(0, n * n, count):
            # index // n picks the block; index % n the table (0) or the k-th other block.
            block, other = divmod(int(index), n)
            block += 1
            dest = TABLE if other == 0 else other if other < block else other + 1
            moves.append(format_move(Move(block, dest)))
        return moves

    def _plans_along(self, state: State, plan: list[Move]) -> dict[State, list[Move]]:
        """``{state on the plan's path: the rest of the plan}``."""
        plans = {}
        for index, move in enumerate(plan):
            plans[state] = plan[index:]
            state = dynamics.step(state, move, self._goal).state
        plans[state] = []
        return plans
