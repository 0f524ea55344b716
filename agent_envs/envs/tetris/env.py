"""The Tetris text env: a thin Gymnasium shell over `dynamics`, `generator` and `oracle`."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.core.spaces import text_space
from agent_envs.envs.tetris import dynamics, oracle, prompts
from agent_envs.envs.tetris.constants import (
    ACTION_NAMES,
    EMPTY,
    FILLED,
    MAX_HEIGHT,
    MAX_WIDTH,
    PIECE_SETS,
    RULES,
)
from agent_envs.envs.tetris.generator import PieceQueue, check_sequence
from agent_envs.envs.tetris.parsing import action_table, decode_action
from agent_envs.envs.tetris.types import Game, TetrisState, Transition
from agent_envs.renderers import Grid, GridFrame, Tile

__all__ = ["TetrisEnv"]

_FEEDBACK_ROOM = 200  # characters reserved for the one-line feedback of an invalid turn
_PREVIEW_ROOM = 16  # the "Next: T" / "Game over." line
_SEED_BOUND = 2**63 - 1
_ORACLE_PIECES = 4  # pieces the oracle is shown: it chains and looks ahead within these
_SMALL_BOARD = 25  # cells; on boards this small the oracle looks two pieces ahead, else one
# Rendered frames: a falling piece is drawn in its letter's colour (guideline colours for the
# tetrominoes), locked blocks in grey.
_PIECE_COLOURS = {
    "I": (0, 200, 220), "O": (240, 200, 0), "T": (160, 70, 210), "S": (60, 190, 70),
    "Z": (225, 55, 55), "J": (40, 100, 230), "L": (240, 140, 20), "V": (40, 170, 230),
    "H": (240, 120, 40), "C": (80, 200, 120),
}  # fmt: skip
_LEGEND = {
    EMPTY: Tile("empty", "empty"),
    FILLED: Tile("cell", "locked block", (128, 134, 148)),
    " ": Tile("blank"),
    **{name: Tile("cell", "", colour) for name, colour in _PIECE_COLOURS.items()},
}


class TetrisEnv(TextEnv):
    """Tetris for language models: the full game, and GRL's small boards.

    ## Action
    The model's reply. The last ``<answer>...</answer>`` holds up to ``max_actions_per_turn``
    actions joined by ``||``; each is one of (case, spaces, ``-`` and ``_`` ignored):

    | name      | effect                                                     | rules      |
    |-----------|------------------------------------------------------------|------------|
    | Left      | shift the piece one column left                            | all        |
    | Right     | shift the piece one column right                           | all        |
    | Down      | move it one row down; if it cannot, it locks               | all        |
    | Drop      | hard drop: as far down as it goes, then lock               | standard   |
    | RotateCW  | quarter turn clockwise, with simple wall kicks             | standard   |
    | RotateCCW | quarter turn counterclockwise, with simple wall kicks      | standard   |

    Rotation turns the piece inside its bounding box (SRS orientations); a rotated piece that
    does not fit is tried 1 column left, 1 right, 2 left, 2 right, and the rotation does
    nothing if none fits (no floor kicks). A blocked move is valid but not effective. With
    ``rules="grl"`` only ``Left``, ``Right``, ``Down`` exist (the others are unknown actions),
    and a piece locks as soon as it rests on the floor or a block after any action.

    ## Observation
    The board, top row first, one row per line: ``_`` empty, ``#`` locked block, ``X`` the
    visible cells of the falling piece (GRL's glyphs). With ``rules="standard"`` a last line
    ``Next: <letter>`` names the next piece (``Game over.`` once the game is lost). After an
    unreadable answer or an unknown action, one line of feedback precedes the board.

    ## Starting state
    An empty ``width`` x ``height`` board (or the board drawn in
    ``reset(options={"board": text})`` with rows of ``_`` and ``#``) and the first piece.
    Pieces come from a seeded sequence (``sequence="bag"``: shuffled bags of the whole set,
    the 7-bag for tetrominoes; ``"balanced"``: GRL's weighted draw) drawn from a Generator
    seeded by ``np_random`` at reset. ``pieces`` is ``"tetromino"`` (I O T S Z J L),
    ``"domino"`` (V vertical, H horizontal) or ``"cell"`` (one cell). Standard rules spawn a
    piece centred with its top cell in the top row; GRL rules at a uniformly drawn column
    with its lowest cell in the top row (the rest above the board, not shown).

    ## Rewards
    Per executed action: ``rules="grl"``: -0.1, plus +10 per line cleared (GRL's).
    ``rules="standard"``: no action cost; clearing 1, 2, 3, 4 lines with one piece pays +1,
    +3, +5, +8 (the guideline score table 100/300/500/800 divided by 100), also when gravity
    locks the piece. A turn whose answer cannot be read earns ``format_penalty``; a turn with
    an unknown action adds ``invalid_action_penalty``.

    ## Episode end
    Terminated: ``goal_lines`` lines cleared (``info["success"]``, the success predicate), or
    the game is lost (``info["game_over"]``): a piece locks with a cell above the board, a new
    piece has no room to spawn, or (GRL rules) a block is in the top row after a lock.
    Truncated: ``max_turns`` turns played or ``max_actions_per_episode`` actions executed
    (``info["truncation_reason"]``). Standard rules add gravity: after every turn (whatever
    the reply) the piece falls one row, locking if it cannot.

    ## Information
    The common keys of :data:`agent_envs.core.env.COMMON_INFO_KEYS`, plus ``score`` (int,
    guideline points: 100/300/500/800 for 1-4 lines at once), ``lines`` (int, lines cleared),
    ``pieces_placed`` (int), ``game_over`` (bool), ``current_piece`` (str letter, ``""`` once
    the game is over) and ``next_piece`` (str letter).

    ## Arguments
    ``gymnasium.make("grl/Tetris-v0", width=10, height=20, pieces="tetromino",
    rules="standard", sequence="bag", goal_lines=10, max_turns=100, max_actions_per_turn=10,
    max_actions_per_episode=None, format_penalty=-0.1, invalid_action_penalty=-0.1,
    render_mode=None)``

    Registered configurations (``max_turns`` / ``max_actions_per_turn`` /
    ``max_actions_per_episode``):

    | id                       | board | pieces    | rules    | goal     | budgets     |
    |--------------------------|-------|-----------|----------|----------|-------------|
    | grl/Tetris-v0            | 10x20 | tetromino | standard | 10 lines | 100/10/None |
    | grl/Tetris-4x4-cell-v0   | 4x4   | cell      | grl      | 1 line   | 11/5/40     |
    | grl/Tetris-3x3-domino-v0 | 3x3   | domino    | grl      | 1 line   | 11/5/40     |
    | grl/Tetris-4x4-domino-v0 | 4x4   | domino    | grl      | 1 line   | 11/5/40     |

    With GRL's own piece draw (``sequence="balanced"``) about one 3x3-domino episode in five
    opens with H H H or V V H, which no player can turn into a line; the presets deal 2-bags.

    ## Version history
    * v0: first release; full game with 7-bag, simple kicks, gravity per turn; GRL's
      rules, glyphs, rewards and budgets on its small boards.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "render_fps": 4,
    }
    action_separator: ClassVar[str | None] = "||"
    reset_options: ClassVar[tuple[str, ...]] = ("board",)
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "score",
        "lines",
        "pieces_placed",
        "game_over",
        "current_piece",
        "next_piece",
    )

    def __init__(
        self,
        *,
        width: int = 10,
        height: int = 20,
        pieces: str = "tetromino",
        rules: str = "standard",
        sequence: str = "bag",
        goal_lines: int = 10,
        max_turns: int = 100,
        max_actions_per_turn: int | None = 10,
        max_actions_per_episode: int | None = None,
        format_penalty: float = -0.1,
        invalid_action_penalty: float = -0.1,
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
        if pieces not in PIECE_SETS:
            raise ValueError(f"pieces must be one of {tuple(PIECE_SETS)}, got {pieces!r}")
        if rules not in RULES:
            raise ValueError(f"rules must be one of {tuple(RULES)}, got {rules!r}")
        check_sequence(sequence)
        piece_set = PIECE_SETS[pieces]
        widest = max(piece.orientations[0].span for piece in piece_set)
        tallest = max(o.last_row - o.first_row + 1 for p in piece_set for o in p.orientations)
        for name, value, low, high in (
            ("width", width, max(2, widest), MAX_WIDTH),
            ("height", height, max(2, tallest), MAX_HEIGHT),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(
                    f"{name} must be an int in [{low}, {high}] for {pieces} pieces, got {value!r}"
                )
        if isinstance(goal_lines, bool) or not isinstance(goal_lines, int) or goal_lines < 1:
            raise ValueError(f"goal_lines must be a positive int, got {goal_lines!r}")
        self.width = width
        self.height = height
        self.pieces = pieces
        self.rules = rules
        self.sequence = sequence
        self.goal_lines = goal_lines
        self.game = Game(width, height, piece_set, RULES[rules])
        self._actions = action_table(self.game.rules.actions)
        self._oracle_lookahead = 2 if width * height <= _SMALL_BOARD else 1
        self.observation_space = text_space(height * (width + 1) + _PREVIEW_ROOM + _FEEDBACK_ROOM)
        self._state: TetrisState | None = None
        self._queue: PieceQueue | None = None
        self._board_rows: tuple[int, ...] | None = None
        self._board_text = ""

    @property
    def instructions(self) -> str:
        return prompts.instructions(
            game=self.game,
            sequence=self.sequence,
            goal_lines=self.goal_lines,
            max_turns=self.max_turns,
            max_actions_per_episode=self.max_actions_per_episode,
            answer_format=self.answer_format,
        )

    @property
    def state(self) -> TetrisState:
        """The current position (plain data: row bitmasks, falling piece, counters)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the state")
        return self._state

    # ----------------------------------------------------------------- TextEnv hooks
    def _new_episode(self, options: dict[str, Any]) -> None:
        board = options["board"]
        rows = (0,) * self.height if board is None else self._parse_board(board)
        # The queue draws from its own Generator, seeded once from np_random: looking ahead
        # (the oracle does) never changes what np_random gives later.
        self._queue_seed = int(self.np_random.integers(_SEED_BOUND))
        self._queue = PieceQueue(np.random.default_rng(self._queue_seed), self.game, self.sequence)
        self._state = dynamics.spawn(self.game, rows, self._queue.pop())

    def _problem_spec(self) -> Any:
        """The start (first observation) and every piece the episode can deal, ``(kind,
        left)`` pairs: at most one piece a turn and one per action, plus the first."""
        actions = self.answer_format.max_actions_per_turn or 1
        horizon = self.max_turns * (actions + 1) + 1
        queue = PieceQueue(np.random.default_rng(self._queue_seed), self.game, self.sequence)
        return {"start": self._observations[0], "pieces": queue.upcoming(horizon)}

    def _parse_board(self, text: object) -> tuple[int, ...]:
        if not isinstance(text, str):
            raise ValueError(f"options['board'] must be a str, got {type(text).__name__}")
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        if len(lines) != self.height or any(len(line) != self.width for line in lines):
            raise ValueError(f"options['board'] must have {self.height} rows of {self.width} cells")
        if set("".join(lines)) - {EMPTY, FILLED}:
            raise ValueError(f"options['board'] may only hold {EMPTY!r} and {FILLED!r}")
        full = (1 << self.width) - 1
        rows = tuple(sum(1 << c for c, ch in enumerate(line) if ch == FILLED) for line in lines)
        if full in rows:
            raise ValueError("options['board'] must not hold a full row")
        return rows

    def _decode_action(self, text: str) -> int | None:
        return decode_action(text, self._actions)

    def _execute(self, action: int) -> ActionResult:
        transition = dynamics.step(self.game, self._state, action, self._queue.peek())
        return self._apply(transition)

    def _apply(self, transition: Transition) -> ActionResult:
        state = self._state = transition.state
        if transition.locked:
            self._queue.pop()
        done = transition.game_over or state.lines >= self.goal_lines
        return ActionResult(transition.reward, True, transition.effective, done)

    def _end_turn(self) -> ActionResult | None:
        """Gravity (standard rules): after every turn the piece falls one row."""
        if not self.game.rules.gravity:
            return None
        return self._apply(dynamics.fall(self.game, self._state, self._queue.peek()))

    def _render_text(self) -> str:
        rows = self._state.rows
        if rows is not self._board_rows:  # the locked blocks change only when a piece locks
            self._board_rows = rows
            self._board_text = dynamics.board_text(self.game, rows)
        return dynamics.render(self.game, self._state, self._queue.peek()[0], self._board_text)

    def _is_success(self) -> bool:
        return self._state.lines >= self.goal_lines

    def _state_bytes(self) -> bytes:
        return dynamics.state_bytes(self.game, self._state, self._queue.peek()[0])

    def _extra_info(self) -> dict[str, Any]:
        state = self._state
        pieces = self.game.pieces
        return {
            "score": state.score,
            "lines": state.lines,
            "pieces_placed": state.placed,
            "game_over": state.kind < 0,
            "current_piece": pieces[state.kind].name if state.kind >= 0 else "",
            "next_piece": pieces[self._queue.peek()[0]].name,
        }

    # ----------------------------------------------------------------- rendering
    def frame(self) -> GridFrame:
        """The current position as a frame description: the board with the falling piece in
        its colour, a "Next" panel when the rules show the next piece, score and lines."""
        game, state = self.game, self.state
        rows = [list(line) for line in dynamics.board_text(game, state.rows).split("\n")]
        if state.kind >= 0:
            piece = game.pieces[state.kind]
            for r, c in piece.orientations[state.rotation].cells:
                if 0 <= state.top + r < game.height:
                    rows[state.top + r][state.left + c] = piece.name
        grids = [Grid(tuple("".join(row) for row in rows), "Board")]
        if game.rules.preview:
            upcoming = game.pieces[self._queue.peek()[0]]
            size = max(piece.box for piece in game.pieces)  # one panel size for every piece
            box = [[" "] * size for _ in range(size)]
            for r, c in upcoming.orientations[0].cells:
                box[r][c] = upcoming.name
            grids.append(Grid(tuple("".join(row) for row in box), "Next"))
        counts = f"Score {state.score}   Lines {state.lines}/{self.goal_lines}"
        counts += f"   Pieces {state.placed}   Turn {self._turn}/{self.max_turns}"
        if state.kind < 0:
            outcome = "Game over."
        elif self._is_success():
            outcome = "Goal reached!"
        elif self._truncated:
            outcome = "Out of turns or actions."
        else:
            outcome = f"Falling: {game.pieces[state.kind].name}"
        title = f"Tetris {game.width}x{game.height} ({self.rules} rules)"
        return GridFrame(tuple(grids), _LEGEND, title, (counts, outcome))

    # ----------------------------------------------------------------- expert and baseline
    def oracle_actions(self) -> list[str]:
        """The placement search's actions for the falling piece (and the next ones while they
        fit in one turn); ``[]`` once the game is over. It looks two pieces ahead on boards of
        at most 25 cells (GRL's), one on larger ones. See `oracle`."""
        if self._state is None or self._state.kind < 0:
            return []
        # Chain the next pieces only up to the per-turn limit; without a limit, plan one.
        limit = self.answer_format.max_actions_per_turn or 1
        upcoming = self._queue.upcoming(_ORACLE_PIECES)
        actions = oracle.plan(
            self.game, self._state, upcoming, limit, self.goal_lines, self._oracle_lookahead
        )
        return [ACTION_NAMES[action] for action in actions]

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """A random turn: 1 to ``max_actions_per_turn`` (at most 5) uniform random actions of
        this rule set."""
        most = min(self.answer_format.max_actions_per_turn or 5, 5)
        names = [ACTION_NAMES[action] for action in self.game.rules.actions]
        count = int(rng.integers(1, most + 1))
        return [names[index] for index in rng.integers(0, len(names), count)]
