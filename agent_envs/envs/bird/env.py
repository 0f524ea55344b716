"""The BIRD text-to-SQL env: a thin Gymnasium shell over `data`, `sandbox` and `grading`."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, ClassVar, SupportsFloat

import numpy as np

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.envs.bird import prompts
from agent_envs.envs.bird.builtin import ensure_builtin
from agent_envs.envs.bird.data import BirdDataset, item_from_dict
from agent_envs.envs.bird.grading import BIRD_TIMEOUT, submission_reward
from agent_envs.envs.bird.parsing import decode_action
from agent_envs.envs.bird.sandbox import Sandbox, SandboxPool
from agent_envs.envs.bird.schema import read_tables, render_schema
from agent_envs.envs.bird.types import EpisodeState, QueryKind, SqlAction
from agent_envs.renderers import TextFrame

__all__ = ["BirdEnv"]

#: Memory an EXECUTE result (and a schema lookup) may take, as ``worker.row_cost`` counts it.
MAX_RESULT_BYTES = 8 * 2**20
#: Rows an EXECUTE reads at most (it shows ``display_rows`` and counts up to this many).
EXECUTE_ROW_CAP = 1_000
#: The gold query gets at least this many seconds (BIRD's evaluator allows 30).
GOLD_TIMEOUT = BIRD_TIMEOUT
_SOURCES = ("builtin", "files")


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _check_number(name: str, value: object, low: float, high: float, *, low_open: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (low < value if low_open else low <= value) and value <= high
    if not ok:
        bound = "(" if low_open else "["
        raise ValueError(f"{name} must be a number in {bound}{low:g}, {high:g}], got {value!r}")


def _load_dataset(
    source: str | None, data_path: str | None, db_root: str | None, cache_dir: str | None
) -> BirdDataset:
    if source is None:
        source = "files" if data_path is not None else "builtin"
    if source not in _SOURCES:
        raise ValueError(f"source must be None or one of {_SOURCES}, got {source!r}")
    if source == "builtin":
        if data_path is not None or db_root is not None:
            raise ValueError("data_path and db_root are for source='files', not 'builtin'")
        questions, databases = ensure_builtin(cache_dir)
        return BirdDataset.from_files(questions, databases)
    if cache_dir is not None:
        raise ValueError("cache_dir is for source='builtin', not 'files'")
    if data_path is None:
        raise ValueError("data_path is required with source='files'")
    questions = Path(data_path).expanduser().resolve()
    if not questions.is_file():
        what = "is a directory, not a question file" if questions.is_dir() else "does not exist"
        raise ValueError(f"data_path {str(data_path)!r} {what} (resolved: {questions})")
    if db_root is None:
        guesses = [questions.parent / name for name in ("dev_databases", "train_databases")]
        found = [guess for guess in guesses if guess.is_dir()]
        if not found:
            raise ValueError(
                f"db_root is required: no dev_databases/ or train_databases/ beside {data_path}"
            )
        return BirdDataset.from_files(questions, found[0])
    return BirdDataset.from_files(questions, Path(db_root).expanduser().resolve())


class BirdEnv(TextEnv):
    """BIRD text-to-SQL: answer a question about a SQLite database with one query.

    ## Action
    The model's reply. The last ``<answer>...</answer>`` holds one action (no separator:
    ``||`` is SQL's concatenation operator)::

        answer := [prefix] sql          prefix := "EXECUTE" [":"] | "SUBMIT" [":"]  (any case)

    | answer                       | effect                                               |
    |------------------------------|------------------------------------------------------|
    | ``SELECT ...``               | submit: the query is graded                          |
    | ``SUBMIT: SELECT ...``       | submit (same as above)                               |
    | ``EXECUTE: SELECT ...``      | run the query, see its first ``display_rows`` rows   |

    The SQL may sit in a Markdown fence (```sql ... ```). EXECUTE is legal only while
    executions are left (``max_executions``, 0 in the single-shot preset); otherwise it is
    an illegal action. Only one read-only statement runs (``SELECT``/``WITH``/``VALUES``),
    in a worker process under the guards of :mod:`agent_envs.envs.bird.sandbox` and
    :mod:`agent_envs.envs.bird.worker`; ``random()`` and ``randomblob()`` are seeded afresh
    for every query, so a query gives the same rows every time.

    | limit  | EXECUTE (exploration)               | SUBMIT (graded)                      |
    |--------|-------------------------------------|--------------------------------------|
    | time   | ``query_timeout`` (5 s)             | ``submit_timeout`` (30 s, as BIRD)   |
    | rows   | 1000 read, ``display_rows`` shown   | ``max_rows`` (none, as BIRD)         |
    | memory | 8 MiB result (``MAX_RESULT_BYTES``) | 64 MiB gold set; rows streamed       |

    Every query stops within 1.1 times its time limit (plus the milliseconds a kill takes),
    whatever it calls: past it the worker is killed, and the next query starts a fresh one.
    No query grows the env's process or the worker's by more than 256 MiB, nor writes more
    than 64 MiB to disk (temporary data, such as a sort, stays in the worker's memory).

    ## Observation
    First: ``Database: <db_id>``, the schema (each table's CREATE statement followed by one
    comment line per column: its description from ``database_description/*.csv`` and up to
    ``sample_values`` example values), then ``Question:`` and ``Evidence:``. After each turn:
    that turn's outcome (the rows or error of an EXECUTE; ``correct``, ``wrong result`` or the
    error of a SUBMIT) and a status line of turns, executions and submissions left. ASCII
    only: non-ASCII text from the data is written as ``\\uXXXX`` escapes (typographic quotes
    and dashes as ASCII look-alikes); every part is length-capped.

    ## Starting state
    A question drawn uniformly from the source with ``self.np_random``; or
    ``reset(options={"index": i})`` for the ``i``-th question; or one question in BIRD's
    format through ``reset(options={"item": {"db_id", "question", "evidence", "SQL"}})``
    (``question_id`` and ``difficulty`` optional, other keys ignored; the database must exist
    under the source's ``db_root``).

    ## Rewards
    A SUBMIT scores by execution accuracy, as BIRD's Mini-Dev evaluator computes it
    (bird-bench/mini_dev ``evaluation/evaluation_ex.py``: ``execute_model`` →
    ``evaluation_utils.execute_sql`` → ``calculate_ex``, ``meta_time_out=30``; see
    :mod:`agent_envs.envs.bird.grading` for the deliberate differences): 1 when the set of
    result rows of the submitted query equals that of the gold query, with no row cap and
    ``submit_timeout`` seconds; errors, time-outs and memory-limit stops score 0. The k-th
    submission, if correct, earns ``submit_discount ** (k - 1)`` (1 with the default discount
    1; GRL's step-discounted ``1 / 2**(k-1)`` with 0.5); a wrong one earns 0. An EXECUTE earns
    0. An illegal EXECUTE or an empty SQL adds ``invalid_action_penalty``; a turn whose answer
    cannot be read earns ``format_penalty`` (neither counts as a submission, as in GRL, where
    only readable SQL reaches the env).

    ## Episode end
    Terminated: a correct submission (``info["success"]``), ``max_submissions`` wrong ones,
    or, without EXECUTE (``max_executions=0``: every turn is an attempt at the answer), the
    last of ``max_turns`` turns, whatever it held. Truncated: with EXECUTE, ``max_turns``
    turns played without a final submission (``info["truncation_reason"] == "max_turns"``).

    ## Information
    The common keys of :data:`agent_envs.core.env.COMMON_INFO_KEYS`, plus ``db_id`` (str),
    ``question_id`` (int or None), ``difficulty`` (str or None), ``executions_left`` (int),
    ``submissions_left`` (int) and ``query_error`` (str or None: the error of this turn's
    query, e.g. ``"no such column: x"`` or a time-limit stop).

    ## Arguments
    ``gymnasium.make("grl/BIRD-v0", source=None, data_path=None, db_root=None,
    cache_dir=None, max_executions=0, max_submissions=1, submit_discount=1.0,
    query_timeout=5.0, submit_timeout=30.0, max_rows=None, display_rows=10, sample_values=3,
    max_turns=1, format_penalty=-0.1, invalid_action_penalty=-0.1, render_mode=None)``

    * ``source``: ``"builtin"`` (three generated databases, 36 questions, no download; the
      default without ``data_path``) or ``"files"`` (BIRD's files; the default with it).
    * ``data_path``: ``dev.json``, ``train.json``, a Mini-Dev json or JSON lines.
      ``db_root``: the folder of ``<db_id>/<db_id>.sqlite`` (default: ``dev_databases/`` or
      ``train_databases/`` beside ``data_path``). Questions whose database is missing are
      skipped with one warning.
    * ``cache_dir``: where the built-in databases are generated (default
      ``~/.cache/agent_envs/bird``).
    * ``query_timeout``: seconds per EXECUTE query (exploration; schema lookups too).
      ``submit_timeout``: seconds per graded SUBMIT (BIRD's ``meta_time_out``, 30; the gold
      query gets at least 30). ``max_rows``: row cap of a graded result (``None``: none, as
      in BIRD; a larger result scores 0); an EXECUTE reads at most 1000 rows (fewer with
      ``max_rows``) and shows the first ``display_rows``.

    | id                       | max_turns | max_executions | max_submissions | discount |
    |--------------------------|-----------|----------------|-----------------|----------|
    | ``grl/BIRD-v0``          | 1         | 0              | 1               | 1.0      |
    | ``grl/BIRD-Agentic-v0``  | 6         | 5              | 1               | 1.0      |
    | ``grl/BIRD-5turn-v0``    | 5         | 0              | 5               | 0.5      |

    ## Version history
    * v0: first release; BIRD's execution accuracy, GRL's single-shot and 5-turn settings.
      Later, same id: queries run in a worker process with a hard deadline and memory
      limits; graded SUBMITs get BIRD's evaluator settings (30 s, no row cap);
      ``random()`` is seeded instead of refused; temporary data (sorts) stays in the
      worker's memory, never on disk; denied queries say what was denied.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "render_fps": 4,
    }
    action_separator: ClassVar[str | None] = None
    normalize_unicode: ClassVar[bool] = False  # keep SQL string literals exactly as written
    observation_max_length: ClassVar[int] = prompts.MAX_OBSERVATION_CHARS
    reset_options: ClassVar[tuple[str, ...]] = ("item", "index")
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "db_id",
        "question_id",
        "difficulty",
        "executions_left",
        "submissions_left",
        "query_error",
    )

    def __init__(
        self,
        *,
        source: str | None = None,
        data_path: str | None = None,
        db_root: str | None = None,
        cache_dir: str | None = None,
        max_executions: int = 0,
        max_submissions: int = 1,
        submit_discount: float = 1.0,
        query_timeout: float = 5.0,
        submit_timeout: float = BIRD_TIMEOUT,
        max_rows: int | None = None,
        display_rows: int = 10,
        sample_values: int = 3,
        max_turns: int = 1,
        format_penalty: float = -0.1,
        invalid_action_penalty: float = -0.1,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            max_turns=max_turns,
            max_actions_per_turn=1,
            max_actions_per_episode=None,
            format_penalty=format_penalty,
            invalid_action_penalty=invalid_action_penalty,
            render_mode=render_mode,
        )
        _check_int("max_executions", max_executions, 0)
        _check_int("max_submissions", max_submissions, 1)
        _check_number("submit_discount", submit_discount, 0.0, 1.0, low_open=True)
        _check_number("query_timeout", query_timeout, 0.0, 86_400.0, low_open=True)
        _check_number("submit_timeout", submit_timeout, 0.0, 86_400.0, low_open=True)
        if max_rows is not None:
            _check_int("max_rows", max_rows, 1)
        _check_int("display_rows", display_rows, 1)
        _check_int("sample_values", sample_values, 0)
        self.max_executions = max_executions
        self.max_submissions = max_submissions
        self.submit_discount = float(submit_discount)
        self.query_timeout = float(query_timeout)
        self.submit_timeout = float(submit_timeout)
        self.max_rows = max_rows
        self.display_rows = display_rows
        self.sample_values = sample_values
        self.dataset = _load_dataset(source, data_path, db_root, cache_dir)
        self._pool = SandboxPool(
            timeout=self.query_timeout, max_rows=EXECUTE_ROW_CAP, max_bytes=MAX_RESULT_BYTES
        )
        self._state: EpisodeState | None = None
        self._problem = ""
        self._turn_text = ""
        self._query_error: str | None = None

    @property
    def instructions(self) -> str:
        return prompts.instructions(
            max_executions=self.max_executions,
            max_submissions=self.max_submissions,
            submit_discount=self.submit_discount,
            max_turns=self.max_turns,
            query_timeout=self.query_timeout,
            submit_timeout=self.submit_timeout,
            display_rows=self.display_rows,
            format_penalty=self.format_penalty,
            invalid_action_penalty=self.invalid_action_penalty,
            answer_format=self.answer_format,
        )

    @property
    def state(self) -> EpisodeState:
        """The current episode (plain data: the question, counters, the last feedback)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the state")
        return self._state

    @property
    def last_turn_terminates(self) -> bool:  # type: ignore[override]
        """Without EXECUTE every turn is an attempt at the final answer, so the last turn
        ends the episode as terminated; with EXECUTE, running out of turns truncates it."""
        return self.max_executions == 0

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        self._turn_text = ""
        self._query_error = None
        return super().step(action)

    def close(self) -> None:
        self._pool.close()
        super().close()

    # ----------------------------------------------------------------- rendering
    def frame(self) -> TextFrame:
        """The episode as a card: question, evidence, the database's tables and the result
        of the last EXECUTE or SUBMIT, with the budgets left (or the outcome) below."""
        state = self.state
        item = state.item
        sections = (
            ("Question", item.question),
            ("Evidence", item.evidence or "(none)"),
            ("Tables", ", ".join(self._schema(item.db_id)[1])),
            ("Last result", state.feedback or "(nothing run yet)"),
        )
        title = f"BIRD  {item.db_id}" + (f"  ({item.difficulty})" if item.difficulty else "")
        status = "Solved." if state.solved else self._status()
        return TextFrame(title, sections, status)

    # ----------------------------------------------------------------- TextEnv hooks
    def _new_episode(self, options: dict[str, Any]) -> None:
        record = options["item"]
        index = options["index"]
        items = self.dataset.items
        if record is not None:
            if index is not None:
                raise ValueError("reset options 'item' and 'index' exclude each other")
            item = item_from_dict(record, "options['item']")
            if not self.dataset.has_db(item.db_id):
                raise ValueError(
                    f"options['item']: database {item.db_id!r} not found under "
                    f"{self.dataset.db_root}"
                )
        else:
            if index is None:
                index = int(self.np_random.integers(len(items)))
            elif (
                isinstance(index, bool)
                or not isinstance(index, (int, np.integer))
                or not 0 <= index < len(items)
            ):
                raise ValueError(
                    f"options['index'] must be an int in [0, {len(items)}), got {index!r}"
                )
            item = items[int(index)]
        self._state = EpisodeState(item)
        self._problem = prompts.problem_text(item, self._schema(item.db_id)[0])
        self._turn_text = ""
        self._query_error = None

    def _decode_action(self, text: str) -> SqlAction | None:
        return decode_action(text)

    def _execute(self, action: SqlAction) -> ActionResult:
        state = self._state
        if action.kind is QueryKind.EXECUTE:
            if state.executions >= self.max_executions:
                why = "no EXECUTE left" if self.max_executions else "EXECUTE is not available here"
                return ActionResult(0.0, False, False, False, f"{why}; SUBMIT your final query")
            sandbox = self._sandbox(state.item.db_id)
            cap = EXECUTE_ROW_CAP if self.max_rows is None else min(self.max_rows, EXECUTE_ROW_CAP)
            result = sandbox.run(action.sql, max_rows=cap)
            count = state.executions + 1
            self._turn_text = (
                f"EXECUTE {count} of {self.max_executions}: "
                + prompts.describe_result(result, self.display_rows)
            )
            self._query_error = result.error
            self._state = dataclasses.replace(state, executions=count, feedback=self._turn_text)
            return ActionResult(0.0, True, True, False)
        count = state.submissions + 1
        verdict = self._sandbox(state.item.db_id).grade(
            action.sql,
            state.item.sql,
            timeout=self.submit_timeout,
            gold_timeout=max(self.submit_timeout, GOLD_TIMEOUT),
            max_rows=self.max_rows,
        )
        if verdict.correct:
            outcome = "correct."
        elif verdict.error is None:
            outcome = "wrong result."
        else:
            outcome = (
                f"error: {prompts.clip(prompts.to_ascii(verdict.error), prompts.MAX_ERROR_CHARS)}"
            )
        self._turn_text = f"SUBMIT {count} of {self.max_submissions}: {outcome}"
        self._query_error = verdict.error
        self._state = dataclasses.replace(
            state, submissions=count, solved=verdict.correct, feedback=self._turn_text
        )
        done = verdict.correct or count >= self.max_submissions
        reward = submission_reward(verdict.correct, count, self.submit_discount)
        return ActionResult(reward, True, True, done)

    def _render_text(self) -> str:
        if self._turn == 0:
            return self._problem
        lines = [self._turn_text] if self._turn_text else []
        lines.append(self._status())
        return "\n".join(lines)

    def _is_success(self) -> bool:
        return self._state.solved

    def _state_bytes(self) -> bytes:
        state = self._state
        fields = (
            state.item.db_id,
            state.item.question,
            state.item.evidence,
            state.item.sql,
            str(state.executions),
            str(state.submissions),
            str(int(state.solved)),
            state.feedback,
        )
        return "\x1f".join(fields).encode("utf-8", "surrogatepass")

    def _extra_info(self) -> dict[str, Any]:
        state = self._state
        return {
            "db_id": state.item.db_id,
            "question_id": state.item.question_id,
            "difficulty": state.item.difficulty,
            "executions_left": self.max_executions - state.executions,
            "submissions_left": self.max_submissions - state.submissions,
            "query_error": self._query_error,
        }

    # ----------------------------------------------------------------- helpers
    def _sandbox(self, db_id: str) -> Sandbox:
        return self._pool.get(self.dataset.db_path(db_id))

    def _schema(self, db_id: str) -> tuple[str, tuple[str, ...]]:
        """The schema text and table names of a database (cached on the dataset)."""
        cached = self.dataset.schemas.get(db_id)
        if cached is None:
            tables = read_tables(self._sandbox(db_id), self.sample_values)
            text = render_schema(tables, self.dataset.descriptions(db_id))
            cached = (text, tuple(table.name for table in tables))
            self.dataset.schemas[db_id] = cached
        return cached

    def _status(self) -> str:
        state = self._state
        over = (
            state.solved
            or state.submissions >= self.max_submissions
            or self._turn >= self.max_turns
        )
        if over:
            return "The episode is over."
        parts = [f"Turns left: {self.max_turns - self._turn}"]
        if self.max_executions:
            parts.append(f"EXECUTE left: {self.max_executions - state.executions}")
        parts.append(f"SUBMIT left: {self.max_submissions - state.submissions}")
        return "; ".join(parts) + "."

    # ----------------------------------------------------------------- expert and baseline
    def oracle_actions(self) -> list[str]:
        """The gold SQL, submitted; ``[]`` once the episode is over."""
        state = self.state
        if state.solved or state.submissions >= self.max_submissions:
            return []
        return [state.item.sql]

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """A random query on a random table of the current database (an EXECUTE half of the
        time when executions are allowed)."""
        tables = self._schema(self._state.item.db_id)[1] if self._state is not None else ()
        if tables:
            table = '"' + tables[int(rng.integers(len(tables)))].replace('"', '""') + '"'
            templates = (f"SELECT * FROM {table} LIMIT 5", f"SELECT COUNT(*) FROM {table}")
            sql = templates[int(rng.integers(len(templates)))]
        else:
            sql = "SELECT 1"
        if self.max_executions and rng.random() < 0.5:
            return [f"EXECUTE: {sql}"]
        return [sql]
