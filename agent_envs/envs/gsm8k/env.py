"""The GSM8K text env: a thin Gymnasium shell over `data`, `generator` and `grading`."""

from __future__ import annotations

import os
import re
from fractions import Fraction
from typing import Any, ClassVar, SupportsFloat

import numpy as np

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.core.parsing import ParsedReply
from agent_envs.core.spaces import text_space
from agent_envs.envs.gsm8k import data, generator, grading, prompts
from agent_envs.renderers import TextFrame

__all__ = ["SOURCES", "GSM8KEnv"]

SOURCES: tuple[str, ...] = ("generated", "jsonl", "hf")
_FEEDBACK_ROOM = 512  # characters around the question: feedback, verdict, "Question: "
_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")  # the official solutions' calculator annotations


class GSM8KEnv(TextEnv):
    """Grade-school math word problems (GSM8K): answer with one number.

    ## Action
    The model's reply. Its final answer is read by ``answer_mode``
    (:mod:`agent_envs.envs.gsm8k.grading`):

    * ``"strict"``: a marked answer: the content of the last ``<answer>...</answer>``; without
      that tag, of the last ``\\boxed{}``; else the rest of the line after the last
      ``#### <number>``.
    * ``"flexible"``: the marked answer if it holds a digit, else the last number anywhere.

    A marked answer must hold exactly one number: two numbers, a range, an expression or a time
    (``18 or 20``, ``18-20``, ``5-3``, ``12:30``) is an answer that is not a number, never its
    last number. Only text after a closing ``</think>`` is read. Commas, grouping spaces, ``$``,
    ``%``, signs, decimals, fractions (``3/4``, ``1 1/2``, ``\\frac{3}{4}``), scientific
    notation (``1e6``, ``1.5x10^3``, ``10^3``) and trailing units are handled; values are
    compared exactly.

    ## Observation
    ``Question: <the problem>`` in ASCII. After a wrong answer with turns left: ``Incorrect:
    <answer> is not the answer. Try again (<k> turns left).`` and the question again. At the
    end: ``Correct: <answer> is the answer.``, or ``No turns left; the answer was <gold>.``
    After an unreadable reply or an answer that is not a number, one line of feedback
    (``Invalid answer: ...``) comes first.

    ## Starting state
    One problem, chosen by ``source``: ``"generated"`` draws a procedural word problem
    (:mod:`agent_envs.envs.gsm8k.generator`) from the episode's RNG; ``"jsonl"`` and ``"hf"``
    draw uniformly from the ``split`` of the official data (a jsonl file or folder at
    ``data_path``; the Hub's ``openai/gsm8k``, config ``main``). ``reset(options={"item":
    {"question": ..., "answer": "... #### 72"}})`` poses one item in the official format;
    ``reset(options={"index": i})`` poses problem ``i`` of the loaded split.

    ## Rewards
    1 for a correct answer, 0 for a wrong one. A reply with no readable answer earns
    ``format_penalty``; an answer that is not a single number (``<answer>seventy</answer>``,
    ``<answer>18 or 20</answer>``) earns ``invalid_action_penalty``. Success
    (``info["success"]``) is a correct answer.

    ## Episode end
    Terminated: a correct answer, or the last of ``max_turns`` turns played (the last reply is
    final, whether or not it holds a gradable answer). With ``max_turns=1`` every reply ends
    the episode; with more, a wrong or unreadable answer earns feedback and another turn. The
    env itself never truncates (``info["truncation_reason"]`` stays ``None``, ``truncated``
    stays ``False``: the ids are registered without ``max_episode_steps``, so ``gymnasium.make``
    adds no ``TimeLimit``).

    ## Information
    The common keys of :data:`agent_envs.core.env.COMMON_INFO_KEYS` (``parsed_actions`` holds
    the number read, as written), plus ``answer`` (str or None: the number graded this turn,
    canonical, e.g. ``"1000"``), ``gold_answer`` (str: the gold number, canonical),
    ``attempts`` (int: answers graded so far) and ``problem_id`` (str: ``"train/17"``,
    ``"generated/shopping"`` or ``"item"``).

    ## Arguments
    ``gymnasium.make("grl/GSM8K-v0", source="generated", data_path=None, split="train",
    answer_mode="strict", max_turns=1, format_penalty=-0.1, invalid_action_penalty=-0.1,
    render_mode=None)``

    ``data_path`` is read only with ``source="jsonl"``; ``split`` is ``"train"`` or
    ``"test"`` and applies to ``"jsonl"`` and ``"hf"`` (generated problems have no split).
    ``source="hf"`` needs the `datasets` package (``pip install "agent-envs[train]"``).

    ## Version history
    * v0: first release; GRL's single-turn and 5-turn retry settings, reward 1 per correct
      answer.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "render_fps": 4,
    }
    action_separator: ClassVar[str | None] = None
    last_turn_terminates: ClassVar[bool] = True
    reset_options: ClassVar[tuple[str, ...]] = ("item", "index")
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "answer",
        "gold_answer",
        "attempts",
        "problem_id",
    )

    def __init__(
        self,
        *,
        source: str = "generated",
        data_path: str | os.PathLike[str] | None = None,
        split: str = "train",
        answer_mode: str = "strict",
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
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if split not in data.SPLITS:
            raise ValueError(f"split must be one of {data.SPLITS}, got {split!r}")
        if answer_mode not in grading.ANSWER_MODES:
            raise ValueError(
                f"answer_mode must be one of {grading.ANSWER_MODES}, got {answer_mode!r}"
            )
        if source == "jsonl" and data_path is None:
            raise ValueError("data_path is required with source='jsonl'")
        if source != "jsonl" and data_path is not None:
            raise ValueError(
                f"data_path is read only with source='jsonl', got source={source!r}: pass"
                " source='jsonl' to load it"
            )
        if source == "generated" and split != "train":
            raise ValueError(
                f"split={split!r} needs a dataset (source='jsonl' or 'hf'); generated problems"
                " have no split"
            )
        self.source = source
        self.data_path = None if data_path is None else os.fspath(data_path)
        self.split = split
        self.answer_mode = answer_mode
        self.problems: data.ProblemSet | None = None
        if source == "jsonl":
            self.problems = data.load_jsonl(self.data_path, split)
        elif source == "hf":
            self.problems = data.load_hf(split)
        self._problem: data.Problem | None = None
        self._question = ""
        self._gold = Fraction(0)
        self._gold_text = ""
        self._attempts: list[str] = []
        self._solved_with: str | None = None
        self._wrong_answer: str | None = None
        self._turn_answer: str | None = None

    @property
    def instructions(self) -> str:
        return prompts.instructions(
            max_turns=self.max_turns,
            answer_mode=self.answer_mode,
            format_penalty=self.format_penalty,
            invalid_action_penalty=self.invalid_action_penalty,
            answer_format=self.answer_format,
        )

    @property
    def problem(self) -> data.Problem:
        """The current problem in the official format (``question``, ``answer``, ``id``)."""
        if self._problem is None:
            raise RuntimeError("call reset() before reading the problem")
        return self._problem

    # ----------------------------------------------------------------- the turn
    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play one turn (clears the previous turn's answer first)."""
        if not (self._terminated or self._truncated):
            self._wrong_answer = None
        self._turn_answer = None
        return super().step(action)

    def _parse(self, reply: object) -> ParsedReply:
        """GSM8K reads the whole reply (``####``, ``\\boxed{}``, or any number in flexible
        mode), not only the answer tag."""
        return grading.read_answer(reply, self.answer_mode)

    # ----------------------------------------------------------------- TextEnv hooks
    def _new_episode(self, options: dict[str, Any]) -> None:
        item = options["item"]
        index = options["index"]
        if item is not None and index is not None:
            raise ValueError("reset options 'item' and 'index' exclude each other")
        if item is not None:
            problem = data.problem_from_item(item)
        elif index is not None:
            problem = self._problem_at(index)
        elif self.problems is not None:
            problem = self.problems[int(self.np_random.integers(len(self.problems)))]
        else:
            problem = generator.generate(self.np_random)
        self._problem = problem
        self._question = prompts.ascii_text(problem.question.strip())
        self._gold = grading.gold_number(problem.answer)
        self._gold_text = grading.format_number(self._gold)
        self._attempts = []
        self._solved_with = None
        self._wrong_answer = None
        self._turn_answer = None
        needed = len(self._question) + _FEEDBACK_ROOM
        if needed > self.observation_space.max_length:
            self.observation_space = text_space(needed)

    # ----------------------------------------------------------------- rendering
    def frame(self) -> TextFrame:
        """The problem as a card: the question, the answers graded so far and the verdict."""
        over = self._terminated or self._truncated
        if self._solved_with is not None:
            status = f"Correct: {self._solved_with}"
        elif over:
            status = f"Not solved; the answer was {self._gold_text}"
        else:
            status = f"Turn {self._turn}/{self.max_turns}"
        attempts = ", ".join(self._attempts) if self._attempts else "none yet"
        sections = (("Question", self._question), ("Answers graded", attempts))
        return TextFrame(f"GSM8K  {self.problem.id}", sections, status)

    def _problem_at(self, index: object) -> data.Problem:
        if self.problems is None:
            raise ValueError("reset option 'index' needs a dataset (source='jsonl' or 'hf')")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"reset option 'index' must be an int, got {index!r}")
        if not 0 <= index < len(self.problems):
            raise ValueError(
                f"reset option 'index' must be in [0, {len(self.problems)}), got {index}"
            )
        return self.problems[int(index)]

    def _decode_action(self, text: str) -> Fraction | str:
        """The number, or the text itself when it holds none (an invalid answer)."""
        number = grading.parse_number(text)
        return text if number is None else number

    def _execute(self, action: Fraction | str) -> ActionResult:
        if isinstance(action, str):
            return ActionResult(0.0, False, False, False, prompts.NOT_A_NUMBER)
        answer = grading.format_number(action)
        self._attempts.append(answer)
        self._turn_answer = answer
        if action == self._gold:
            self._solved_with = answer
            return ActionResult(1.0, True, True, True)
        self._wrong_answer = answer
        return ActionResult(0.0, True, True, False)

    def _render_text(self) -> str:
        over = self._terminated or self._truncated
        return prompts.observation(
            self._question,
            solved_with=self._solved_with,
            wrong_answer=self._wrong_answer,
            turns_left=0 if over else self.max_turns - self._turn,
            gold=self._gold_text,
        )

    def _is_success(self) -> bool:
        return self._solved_with is not None

    def _state_bytes(self) -> bytes:
        problem = self.problem
        fields = (problem.id, problem.question, problem.answer, *self._attempts)
        solved = b"1" if self._solved_with is not None else b"0"
        return solved + "\x1f".join(fields).encode("utf-8", "backslashreplace")

    def _extra_info(self) -> dict[str, Any]:
        return {
            "answer": self._turn_answer,
            "gold_answer": self._gold_text,
            "attempts": len(self._attempts),
            "problem_id": self.problem.id,
        }

    # ----------------------------------------------------------------- expert and baseline
    def oracle_actions(self) -> list[str]:
        """The gold answer (``[]`` once solved)."""
        return [] if self._solved_with is not None else [self._gold_text]

    def oracle_rationale(self) -> str:
        """The gold solution's steps, its calculator notes (``<<48/2=24>>``) and its ``####``
        line left out (``""`` once solved)."""
        if self._solved_with is not None:
            return ""
        steps = self.problem.answer.partition("####")[0]
        return prompts.ascii_text(_CALCULATOR_NOTE.sub("", steps)).strip()

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """A guess: a number drawn uniformly from those in the question (0-100 if none)."""
        values = [grading.parse_number(token) for token in grading.find_numbers(self._question)]
        values = [value for value in values if value is not None]
        if not values:
            return [str(int(rng.integers(0, 101)))]
        return [grading.format_number(values[int(rng.integers(len(values)))])]
