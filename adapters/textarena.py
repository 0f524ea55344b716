"""TextArena games through our API, and our ``grl/*`` envs as TextArena games.

**Their games as a** :class:`~agent_envs.core.TextEnv`: ``make("Sokoban-v0")`` (any id of
TextArena 0.7.4's registry with one or two players) returns a :class:`TextArenaEnv`. Two-player
games are played against a fixed opponent: ``"random"`` (a uniform choice among the moves the
game accepts, drawn from the env's own generator) or any callable ``opponent(observation) ->
reply`` (a TextArena ``Agent``, or an engine from `agent_envs.adapters.engines` through
:func:`engine_opponent`)::

    from agent_envs.adapters.textarena import make
    env = make("TicTacToe-v0", opponent="random", agent_player=0)
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("<answer>[4]</answer>")

TextArena's API, as measured on 0.7.4: ``reset(num_players, seed)`` returns ``None`` (and
seeds Python's *global* ``random``); ``get_observation()`` returns ``(player id, the player's
whole history as one string)`` and whose turn it is comes from that id; ``step(text)`` returns
``(done, info)``; ``close()`` returns ``(rewards per player, game info)``, the only rewards a
game gives; a badly formed or illegal move lets the same player retry once and a second one
ends the game at -1 for that player and +1 for the other.

**Our games as TextArena envs**: :func:`to_textarena` (or ``ta.make(id)`` after
:func:`register_grl_games`) returns a ``textarena.Env`` playing a ``grl/*`` env, so
TextArena's agents, wrappers and loops run on it (see :class:`GrlTextArenaEnv`).

**Network**: importing this module imports nothing from TextArena. Some TextArena games
download NLTK corpora when their module is imported, or ask an online model (a jury, a game
master): they are listed in :data:`NETWORK_GAMES` and ``make`` refuses them unless
``allow_network=True``. Every other game is made and played offline.
"""

from __future__ import annotations

import copy
import hashlib
import operator
import random
import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.core.parsing import ParsedReply
from agent_envs.optional import require

__all__ = [
    "MAX_MOVE_LENGTH",
    "NETWORK_GAMES",
    "TextArenaEnv",
    "engine_opponent",
    "game_name",
    "make",
    "raw_game",
    "register_grl_games",
    "to_ascii",
    "to_textarena",
]

#: TextArena 0.7.4 games (their folder under ``textarena/envs``) that reach the network when
#: made or played, and why; ``make`` refuses them unless ``allow_network=True``.
NETWORK_GAMES: dict[str, str] = {
    "Codenames": "nltk.download() when its module is imported",
    "Crosswords": "nltk.download() when its module is imported, and an OpenAI client",
    "Debate": "an online jury of models (OpenRouter)",
    "DontSayIt": "nltk.download() when its module is imported",
    "GuessWho": "an online game master (OpenRouter)",
    "Hangman": "nltk.download() when its module is imported",
    "LetterAuction": "nltk.download() when its module is imported",
    "ScenarioPlanning": "an online jury of models (OpenRouter)",
    "SpellingBee": "nltk.download() when its word list is built",
    "TwentyQuestions": "an online game master (OpenRouter)",
    "WordChains": "nltk.download() when its module is imported",
    "WordLadder": "nltk.download() when its module is imported",
    "WordSearch": "nltk.download() when its module is imported",
    "Wordle": "nltk.download() when its module is imported",
}

_LISTED_MOVES = re.compile(
    r"(?:available moves|valid moves|available actions(?: are)?)\s*:\s*(.*)", re.IGNORECASE
)
_QUOTED_MOVE = re.compile(r"'(\[[^\]\n]*\])'")
_INVALID_REASON = re.compile(r"attempted an invalid move\. Reason: (.*?) Please resubmit")
# everything outside ASCII_CHARSET (printable ASCII, newline, tab)
_OUTSIDE_CHARSET = re.compile(r"[^\x20-\x7e\n\t]")
_CUT_MARK = "[... earlier history cut ...]\n"
_MAX_OPPONENT_MOVES = 10_000
#: the ``random`` module's functions: bound methods of its hidden global generator
_RANDOM_FUNCTIONS = tuple(
    name
    for name, value in vars(random).items()
    if callable(value) and isinstance(getattr(value, "__self__", None), random.Random)
)

_get_random_functions = operator.itemgetter(*_RANDOM_FUNCTIONS)


def _functions_of(generator: random.Random) -> dict[str, Any]:
    """``generator``'s methods under the names the ``random`` module gives its own."""
    return {name: getattr(generator, name) for name in _RANDOM_FUNCTIONS}


class _RandomBinding:
    """A ``with`` block in which the ``random`` module's functions are ``functions`` (from
    :func:`_functions_of`); the bindings found on entry come back on exit. One object per
    block, so blocks nest. (A plain class: a ``contextlib.contextmanager`` generator costs
    about 0.6 us more per block, and one block runs on every turn.)"""

    __slots__ = ("functions", "outside")
    _namespace = vars(random)

    def __init__(self, functions: dict[str, Any]) -> None:
        self.functions = functions

    def __enter__(self) -> None:
        self.outside = _get_random_functions(self._namespace)
        self._namespace.update(self.functions)

    def __exit__(self, *_: object) -> None:
        self._namespace.update(zip(_RANDOM_FUNCTIONS, self.outside, strict=True))


#: Longest move sent to a game: some TextArena move regexes backtrack quadratically on long
#: text (ConnectFour's ``.*\[(?:col\s*)?(\d+)\].*``), so longer moves are our invalid action.
MAX_MOVE_LENGTH = 2_000
_MESSAGE_LENGTH = 200
# room kept in the observation for the base class's feedback line
_FEEDBACK_ROOM = 512


def game_name(textarena_id: str) -> str:
    """The game folder of a TextArena id: ``"TicTacToe-v0-train"`` → ``"TicTacToe"``."""
    registry = require("textarena", "textarena").envs.registration.ENV_REGISTRY
    if not isinstance(textarena_id, str) or textarena_id not in registry:
        raise ValueError(f"textarena_id {textarena_id!r} is not a registered TextArena id")
    entry = registry[textarena_id].entry_point
    module = entry.split(":")[0] if isinstance(entry, str) else entry.__module__
    return module.split(".")[2]


def to_ascii(text: str) -> str:
    """``text`` inside our ASCII charset: what the charset has is kept, ``\r`` becomes a
    newline and anything else (TextArena prints a few glyphs, such as Sokoban's box on goal)
    ``?``. Every TextArena view we show (here and in `agent_envs.adapters.pettingzoo`) goes
    through it."""
    if _OUTSIDE_CHARSET.search(text) is None:
        return text
    return _OUTSIDE_CHARSET.sub(lambda found: "\n" if found.group() == "\r" else "?", text)


class _GrowingText:
    """TextArena's observation, its ASCII form and a hash of it, updated by the part that is
    new: the history an observation shows grows by appending, so each turn reads only the new
    part (not the whole history) to check the charset and to hash."""

    def __init__(self) -> None:
        self.set("")

    def set(self, text: str) -> None:
        self.text = ""
        self.new = ""
        self.ascii = ""
        self._hasher = hashlib.blake2b(digest_size=8)
        self.extend_to(text)

    def extend_to(self, text: str) -> None:
        if not text.startswith(self.text):
            self.set(text)
            return
        new = text[len(self.text) :]
        self.new = new
        self.text = text
        self.ascii += to_ascii(new)
        self._hasher.update(new.encode("utf-8", "surrogatepass"))

    def hash_with(self, tail: str) -> str:
        """The digest of ``text + tail`` (as ``hashlib.blake2b(digest_size=8)``)."""
        hasher = self._hasher.copy()
        hasher.update(tail.encode("utf-8", "surrogatepass"))
        return hasher.hexdigest()

    def __getstate__(self) -> str:  # hash objects do not pickle
        return self.text

    def __setstate__(self, text: str) -> None:
        self.set(text)


def _messages_text(messages: Any) -> str:
    """TextArena's message list (``-raw`` ids, no observation wrapper) as
    ``LLMObservationWrapper`` prints it."""
    return "".join(
        f"\n[{'GAME' if sender == -1 else f'Player {sender}'}] {message}"
        for sender, message, *_ in messages or ()
    )


def raw_game(game: Any) -> Any:
    """The innermost TextArena env under ``game``'s wrappers (where its ``state`` lives)."""
    ta = require("textarena", "textarena")
    while isinstance(game, ta.Wrapper):
        game = game.env
    return game


def _candidate_moves(name: str, raw: Any) -> list[str]:
    """Moves to try, for games that do not list their legal moves in the observation."""
    game_state = raw.state.game_state or {}
    if name == "ConnectFour":
        return [f"[col {column}]" for column in range(raw.num_cols)]
    if name == "Nim":
        return [
            f"[{pile} {count}]"
            for pile, size in enumerate(game_state["piles"])
            for count in range(1, size + 1)
        ]
    if name == "TowerOfHanoi":
        return [f"[{a} {b}]" for a in "ABC" for b in "ABC" if a != b]
    if name == "Minesweeper":
        return [f"[{row} {col}]" for row in range(raw.rows) for col in range(raw.cols)]
    return []


class _WrappedGame:
    """A TextArena wrapper chain in picklable form (TextArena's ``Wrapper.__getattr__``
    recurses forever when ``pickle`` rebuilds a wrapper, measured on 0.7.4)."""

    def __init__(self, game: Any) -> None:
        ta = require("textarena", "textarena")
        self.layers: list[tuple[type, dict[str, Any]]] = []
        while isinstance(game, ta.Wrapper):
            attrs = {k: v for k, v in vars(game).items() if k != "env"}
            self.layers.append((type(game), attrs))
            game = game.env
        self.raw = game

    def rebuild(self) -> Any:
        game = self.raw
        for cls, attrs in reversed(self.layers):
            layer = object.__new__(cls)
            vars(layer).update(attrs)
            vars(layer)["env"] = game
            game = layer
        return game


def engine_opponent(engine: Any, *, max_new_tokens: int = 256) -> Callable[[str], str]:
    """An opponent that asks ``engine`` (an `agent_envs.adapters.engines` engine that reads chat
    messages, e.g. the OpenAI-compatible one) for each move, given TextArena's observation
    as one user message; its whole reply goes to the game."""
    from agent_envs.adapters.loop.engine import GenerationRequest

    def opponent(observation: str) -> str:
        request = GenerationRequest(
            max_new_tokens=max_new_tokens, messages=[{"role": "user", "content": observation}]
        )
        return engine.generate([request])[0].text

    return opponent


class TextArenaEnv(TextEnv):
    """A TextArena game (one or two players) as a text env; two-player games against a fixed
    opponent.

    Action: the model's reply; the move is the text inside the last ``<answer>...</answer>``
    (``reply_format="answer"``), or the whole reply as TextArena reads it
    (``reply_format="raw"``). TextArena's ``ActionFormattingWrapper`` (in most ids' default
    wrappers) puts brackets around a move that has none, so ``<answer>4</answer>`` plays
    ``[4]`` in TicTacToe.

    Observation: TextArena's observation for our player (its whole history, as its id's
    default wrappers print it), in ASCII (other glyphs become ``?``), cut from the front to
    ``observation_max_length - 512`` characters (room for the feedback line). After the game
    ends: the last observation and the game's end reason.

    Turn: our move, then the opponent's moves until it is our turn again or the game ended.
    A reply whose answer cannot be read sends nothing to the game (``format_penalty``), nor
    does an empty move or one longer than ``MAX_MOVE_LENGTH`` characters (our invalid action,
    ``invalid_action_penalty``: some games' move patterns take quadratic time on long text).
    A move the game rejects is our invalid action (``action_valid=False``,
    ``invalid_action_penalty``), and the game lets us retry once; a second rejected move in a
    row ends the game at TextArena's -1.

    Rewards: the game's reward for our player from TextArena's ``close()`` (two players: +1
    win, 0 draw, -1 loss; one player: 1 solved, else the game's own partial score), given on
    the turn the game ends, plus the penalties above. Success: the game ended and our reward
    is at least 1 (solved, or won).

    Episode end: terminated when the game ends; truncated after ``max_turns`` turns.

    Randomness: the ``seed`` of ``reset`` is passed to TextArena's ``reset`` and reproduces
    the game. TextArena's games draw from Python's global ``random``; with ``own_random=True``
    (the default) every call into TextArena runs with the ``random`` module's functions
    (``random.choice``, ``random.seed``, ...) bound to this env's own generator, and the
    caller's bindings put back after it (2-4 us a turn, ``benchmarks/textarena_overhead.py``),
    so envs in one process (a vector env) do not disturb each other or the caller's stream,
    and copies continue like the original. Code that kept a reference to a function of the
    module (``from random import choice``) still draws from the global generator;
    TextArena's games do not.
    ``own_random=False`` leaves the global generator shared, as raw TextArena does. Games
    that draw from NumPy's global generator (SpellingBee, IteratedStagHunt) are not covered.

    Information (besides the common keys): ``player_id`` (our seat), ``game_rewards`` (the
    rewards TextArena's ``close()`` gave, player id → reward, ``None`` before the end),
    ``end_reason`` (the game's reason, ``None`` before the end), ``opponent_moves`` (the
    opponent's moves played since our last move, as sent).

    Arguments: ``make(textarena_id, *, opponent="random", agent_player=0, max_turns=100,
    reply_format="answer", format_penalty=-0.1, invalid_action_penalty=-0.1,
    allow_network=False, own_random=True)``; ``agent_player`` is 0, 1 or ``"random"`` (drawn
    per episode).
    """

    action_separator: ClassVar[str | None] = None
    observation_max_length: ClassVar[int] = 65_536
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "player_id",
        "game_rewards",
        "end_reason",
        "opponent_moves",
    )

    def __init__(
        self,
        textarena_id: str,
        *,
        opponent: str | Callable[[str], str] = "random",
        agent_player: int | str = 0,
        max_turns: int = 100,
        reply_format: str = "answer",
        format_penalty: float = -0.1,
        invalid_action_penalty: float = -0.1,
        allow_network: bool = False,
        own_random: bool = True,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            max_turns=max_turns,
            format_penalty=format_penalty,
            invalid_action_penalty=invalid_action_penalty,
            render_mode=render_mode,
        )
        ta = require("textarena", "textarena")
        self.game = game_name(textarena_id)
        if self.game in NETWORK_GAMES and allow_network is not True:
            raise ValueError(
                f"textarena_id {textarena_id!r} needs the network "
                f"({NETWORK_GAMES[self.game]}); pass allow_network=True to make it anyway"
            )
        if opponent != "random" and not callable(opponent):
            raise ValueError(f"opponent must be 'random' or a callable, got {opponent!r}")
        if agent_player not in (0, 1, "random"):
            raise ValueError(f"agent_player must be 0, 1 or 'random', got {agent_player!r}")
        if not isinstance(own_random, bool):
            raise ValueError(f"own_random must be a bool, got {own_random!r}")
        if reply_format not in ("answer", "raw"):
            raise ValueError(f"reply_format must be 'answer' or 'raw', got {reply_format!r}")
        self.textarena_id = textarena_id
        self.opponent = opponent
        self.agent_player = agent_player
        self.reply_format = reply_format
        self.own_random = own_random
        self._random = random.Random(0)
        self._random_functions = _functions_of(self._random)
        with self._own_random():
            self._game = ta.make(textarena_id)
        self._raw_game = raw_game(self._game)
        self.num_players = self._probe_players()
        if self.num_players == 1 and agent_player == 1:
            raise ValueError(f"agent_player=1 but {textarena_id!r} is a one-player game")
        self._seat = 0
        self._view = _GrowingText()
        self._result: tuple[dict[int, float], dict[Any, Any]] | None = None
        self._opponent_moves: list[str] = []

    # ----------------------------------------------------------------- TextArena calls
    def _own_random(self, *, trial: bool = False) -> AbstractContextManager[None]:
        """A ``with`` block with the ``random`` module's functions bound to this env's own
        generator (``trial``: to a copy of it, so moves tried on copies of the game leave the
        game's stream as is); the caller's bindings come back after it."""
        if not self.own_random:
            return nullcontext()
        if trial:
            generator = random.Random()
            generator.setstate(self._random.getstate())
            return _RandomBinding(_functions_of(generator))
        if self._random_functions["random"].__self__ is not self._random:  # a copy
            self._random_functions = _functions_of(self._random)
        return _RandomBinding(self._random_functions)

    def _probe_players(self) -> int:
        for count in (1, 2):
            probe = copy.deepcopy(self._game)
            try:
                with self._own_random():
                    probe.reset(num_players=count, seed=0)
            except (AssertionError, ValueError):
                continue
            return count
        raise ValueError(f"textarena_id {self.textarena_id!r} is not a one- or two-player game")

    @property
    def _state(self) -> Any:
        return self._raw_game.state

    def _play_opponents(self) -> None:
        """Let the opponent move until it is our turn or the game ended; store our view."""
        self._opponent_moves = []
        for _ in range(_MAX_OPPONENT_MOVES):
            if self._state.done:
                return
            player, observation = self._game.get_observation()
            if player == self._seat:
                self._see(observation)
                return
            if not isinstance(observation, str):  # a -raw id: the new messages
                observation = _messages_text(observation)
            move = self._opponent_move(observation)
            self._opponent_moves.append(move)
            self._game.step(move)
        raise RuntimeError(f"the opponent made {_MAX_OPPONENT_MOVES} moves in a row")

    def _see(self, observation: Any) -> None:
        """Take our player's observation: the history string of ids with TextArena's
        observation wrappers, or (``-raw`` ids) the list of new messages, which we append."""
        if isinstance(observation, str):
            self._view.extend_to(observation)
        else:
            self._view.extend_to(self._view.text + _messages_text(observation))

    def _opponent_move(self, observation: str) -> str:
        if self.opponent != "random":
            reply = self.opponent(observation)
            return reply if isinstance(reply, str) else ""
        moves = self._legal_moves(observation)
        if not moves:
            return "[]"
        return moves[int(self.np_random.integers(len(moves)))]

    def _legal_moves(self, observation: str) -> list[str]:
        """The moves the game lists in ``observation``; otherwise the candidate moves the game
        accepts (each tried on a copy); empty when neither is known."""
        for line in reversed(observation.splitlines()):
            listed = _LISTED_MOVES.search(line)
            if listed:
                quoted = _QUOTED_MOVE.findall(listed.group(1))
                if quoted:
                    return quoted
                words = [word.strip(" '.") for word in listed.group(1).split(",")]
                return [f"[{word}]" for word in words if word]
        accepted = []
        stream = random.getstate()  # trials must not draw from the game's stream
        for move in _candidate_moves(self.game, self._raw_game):
            trial = copy.deepcopy(self._raw_game)
            turn = trial.state.turn
            trial.step(move)
            invalid = trial.state.game_info[trial.state.current_player_id].get("invalid_move")
            if trial.state.turn > turn and not invalid:
                accepted.append(move)
            random.setstate(stream)
        return accepted

    # ----------------------------------------------------------------- TextEnv hooks
    @property
    def instructions(self) -> str:
        return (
            f"You play the TextArena game {self.textarena_id}. Each observation is the game "
            "so far as the game prints it, with its rules and the move format at the top. "
            + (
                "The game's text shows moves in its own format (TicTacToe's '[4]'); write "
                "that move inside <answer>...</answer>, e.g. <answer>[4]</answer>: only the "
                "answer is sent to the game, and a move outside the tag is not read."
                if self.reply_format == "answer"
                else "Your whole reply is sent to the game as your move."
            )
        )

    def _parse(self, reply: object) -> ParsedReply:
        if self.reply_format == "answer":
            return super()._parse(reply)
        if not isinstance(reply, str) or not reply.strip():
            return ParsedReply((), False, "the reply must be non-empty text")
        return ParsedReply((reply,), True, None)

    def _new_episode(self, options: dict[str, Any]) -> None:
        if self.agent_player == "random" and self.num_players == 2:
            self._seat = int(self.np_random.integers(2))
        else:
            self._seat = 0 if self.agent_player == "random" else int(self.agent_player)
        self._result = None
        self._reported = False
        self._view.set("")
        with self._own_random():
            # A fresh game per episode: TextArena's LLMObservationWrapper keeps every earlier
            # episode's history when its env is reset (measured on 0.7.4).
            self._game = require("textarena", "textarena").make(self.textarena_id)
            self._game.reset(num_players=self.num_players, seed=self._episode_seed)
            self._raw_game = raw_game(self._game)
            self._play_opponents()
            self._finish_if_done()

    def _decode_action(self, text: str) -> str | None:
        return text if text.strip() and len(text) <= MAX_MOVE_LENGTH else None

    def _execute(self, action: str) -> ActionResult:
        state = self._state
        turn = state.turn
        with self._own_random():
            self._game.step(action)
            rejected = state.turn == turn or bool(state.game_info[self._seat].get("invalid_move"))
            if not rejected:
                self._play_opponents()
            elif not state.done:
                self._opponent_moves = []
                self._see(self._game.get_observation()[1])
            self._finish_if_done()
        message = ""
        if rejected:
            found = _INVALID_REASON.findall(self._view.new)
            message = found[-1] if found else "the game rejected the move"
        # The game's end (reward from close()) is reported by _end_turn, which also runs after
        # a rejected move (a second rejected move ends the game).
        message = to_ascii(message[:_MESSAGE_LENGTH])
        return ActionResult(0.0, not rejected, not rejected, False, message)

    def _finish_if_done(self) -> None:
        if self._state.done and self._result is None:
            rewards, game_info = self._game.close()
            self._result = ({int(k): float(v) for k, v in (rewards or {}).items()}, game_info)
            self._reported = False

    def _end_turn(self) -> ActionResult | None:
        if self._result is None or self._reported:
            return None
        self._reported = True
        return ActionResult(self._reward(), True, True, True)

    def _render_text(self) -> str:
        text = self._view.ascii
        if self._result is not None:
            text += to_ascii(f"\n[GAME OVER] {self._reason()} Your reward: {self._reward():+g}.")
        limit = self.observation_max_length - _FEEDBACK_ROOM
        if len(text) > limit:
            text = _CUT_MARK + text[len(text) - limit + len(_CUT_MARK) :]
        return text

    def _reward(self) -> float:
        return 0.0 if self._result is None else self._result[0].get(self._seat, 0.0)

    def _reason(self) -> str | None:
        if self._result is None:
            return None
        info = self._result[1].get(self._seat, {}) if isinstance(self._result[1], dict) else {}
        return str(info.get("reason", "The game ended."))

    def _is_success(self) -> bool:
        return self._result is not None and self._reward() >= 1

    def _hash_tail(self) -> str:
        state = self._state
        return (
            f"|{self.textarena_id}|{self._episode_seed}|{self._seat}|{state.turn}|"
            f"{state.current_player_id}|{state.done}|{self._reward()}"
        )

    def _state_bytes(self) -> bytes:
        # TextArena's game states hold arbitrary Python objects; a game is a function of its
        # seed and its moves, which the history-keeping observation records.
        return (self._view.text + self._hash_tail()).encode("utf-8", "surrogatepass")

    def state_hash(self) -> str:
        """``blake2b(_state_bytes(), digest_size=8)``, hashing only the observation's new
        part each turn."""
        return self._view.hash_with(self._hash_tail())

    def _extra_info(self) -> dict[str, Any]:
        return {
            "player_id": self._seat,
            "game_rewards": None if self._result is None else dict(self._result[0]),
            "end_reason": self._reason(),
            "opponent_moves": list(self._opponent_moves),
        }

    def random_actions(self, rng: Any) -> list[str]:
        """One legal move drawn from ``rng`` (see :meth:`legal_moves`); ``[]`` if none known."""
        moves = self.legal_moves()
        return [moves[int(rng.integers(len(moves)))]] if moves else []

    def legal_moves(self, observation: str | None = None) -> list[str]:
        """The moves the game accepts now from the player whose turn it is: those it lists in
        ``observation`` (default: our last one; an opponent passes its own), else the
        candidates of the few games that list none (ConnectFour, Nim, TowerOfHanoi,
        Minesweeper), each tried on a copy of the game; ``[]`` when neither is known."""
        if self._state.done:
            return []
        with self._own_random(trial=True):
            return self._legal_moves(self._view.text if observation is None else observation)

    def simulate(self, moves: list[str]) -> dict[str, Any]:
        """Play ``moves`` in turn on a copy of the game (this env is not changed): for
        look-ahead agents. Returns ``accepted`` (one bool per move played), ``done`` and
        ``rewards`` (TextArena's, once the game ended) and ``mover`` (the player who made
        the first move)."""
        accepted: list[bool] = []
        with self._own_random(trial=True):
            trial = copy.deepcopy(self._raw_game)
            mover = trial.state.current_player_id
            for move in moves:
                if trial.state.done:
                    break
                turn = trial.state.turn
                trial.step(move)
                accepted.append(trial.state.turn > turn)
        rewards = dict(trial.state.rewards or {}) if trial.state.done else None
        return {"accepted": accepted, "done": trial.state.done, "rewards": rewards, "mover": mover}

    # ----------------------------------------------------------------- copies
    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state["_game"] = _WrappedGame(self._game)
        del state["_raw_game"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["_game"] = state["_game"].rebuild()
        state["_raw_game"] = raw_game(state["_game"])
        vars(self).update(state)

    def __deepcopy__(self, memo: dict[int, Any]) -> TextArenaEnv:
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        state = copy.deepcopy(self.__getstate__(), memo)
        clone.__setstate__(state)
        return clone


def make(textarena_id: str, **kwargs: Any) -> TextArenaEnv:
    """A TextArena game as a :class:`TextArenaEnv`; keywords as documented there."""
    return TextArenaEnv(textarena_id, **kwargs)


# --------------------------------------------------------------------- the reverse direction
_GRL_DOC = """A ``grl/*`` env as a ``textarena.Env`` (one player), made by :func:`to_textarena`.

    ``reset(num_players=1, seed)`` resets our env with ``seed``; the first observation is our
    env's instructions (a PROMPT message) and its observation (GAME_BOARD);
    ``get_observation()`` returns ``(0, messages)`` as every TextArena game does (wrap it in
    ``LLMObservationWrapper`` for one string); ``step(reply)`` plays one turn of our env and
    returns ``(done, {"reward", "action_valid"})``; ``close()`` returns ``({0: episode
    return}, game info)`` with ``success`` and ``episode_return`` in ``game_info[0]``. Invalid
    replies are handled by our env (penalty, ``action_valid=False``), not by TextArena's
    retry rule. The class subclasses ``textarena.Env``, so it is built when first asked for
    (``agent_envs.adapters.textarena.GrlTextArenaEnv``), not when this module is imported."""


def _grl_env_class() -> type:
    ta = require("textarena", "textarena")

    cached = globals().get("_GRL_CLASS")
    if cached is not None:
        return cached

    class GrlTextArenaEnv(ta.Env):
        __doc__ = _GRL_DOC

        def __init__(self, env_id: str, **env_kwargs: Any) -> None:
            import gymnasium

            import agent_envs  # noqa: F401  (registers the grl/* ids)

            self.env_id = env_id
            self.env = gymnasium.make(env_id, **env_kwargs)
            self.state: Any = None
            self._return = 0.0

        def reset(self, num_players: int, seed: int | None = None) -> None:
            if num_players != 1:
                raise ValueError(f"num_players must be 1 for {self.env_id}, got {num_players}")
            # seed=None: the state must not reseed Python's global random; our env seeds itself
            self.state = ta.SinglePlayerState(num_players=1, seed=None)
            observation, _ = self.env.reset(seed=seed)
            self._return = 0.0
            instructions = self.env.unwrapped.instructions
            self.state.reset(game_state={"observation": observation})
            self.state.add_observation(instructions, ta.ObservationType.PROMPT)
            self.state.add_observation(observation, ta.ObservationType.GAME_BOARD)

        def step(self, action: str) -> tuple[bool, dict[str, Any]]:
            self.state.add_observation(
                action, ta.ObservationType.PLAYER_ACTION, from_id=self.state.current_player_id
            )
            observation, reward, terminated, truncated, info = self.env.step(action)
            self._return += float(reward)
            self.state.game_state["observation"] = observation
            self.state.add_observation(observation, ta.ObservationType.GAME_BOARD)
            if terminated or truncated:
                reason = "Solved." if info["success"] else "The episode ended unsolved."
                self.state.set_outcome(reward=self._return, reason=reason)
                self.state.game_info[0].update(
                    success=bool(info["success"]), episode_return=self._return
                )
            self.state.step_info = {"reward": float(reward), "action_valid": info["action_valid"]}
            return self.state.step()

    GrlTextArenaEnv.__module__ = __name__
    GrlTextArenaEnv.__qualname__ = "GrlTextArenaEnv"
    globals()["_GRL_CLASS"] = GrlTextArenaEnv
    return GrlTextArenaEnv


def __getattr__(name: str) -> Any:
    if name == "GrlTextArenaEnv":
        return _grl_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_textarena(
    env_id: str, *, wrappers: tuple[str, ...] = ("LLMObservationWrapper",), **env_kwargs: Any
) -> Any:
    """A ``grl/*`` env as a TextArena env, wrapped in TextArena's ``wrappers`` (by name)."""
    ta = require("textarena", "textarena")
    game = _grl_env_class()(env_id, **env_kwargs)
    for name in wrappers:
        game = getattr(ta.wrappers, name)(game)
    return game


def register_grl_games(env_ids: tuple[str, ...] | None = None) -> list[str]:
    """Register ``grl/*`` ids in TextArena's registry (``ta.make("grl/Sokoban-v0")``), with
    TextArena's LLM observation wrapper; already registered ids are left as they are."""
    ta = require("textarena", "textarena")
    from agent_envs.registration import PRESETS

    registry = ta.envs.registration.ENV_REGISTRY
    ids = list(PRESETS) if env_ids is None else list(env_ids)
    for env_id in ids:
        if env_id not in PRESETS:
            raise ValueError(f"env_ids: {env_id!r} is not a registered grl/* id")
        if env_id not in registry:
            ta.register(
                id=env_id,
                entry_point=_grl_env_class(),
                default_wrappers=[ta.wrappers.LLMObservationWrapper],
                env_id=env_id,
            )
    return ids
