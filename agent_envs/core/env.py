"""`TextEnv`: the single-env contract every agent-envs environment implements.

One ``step`` is one **turn**: the action is the model's whole reply. The base class owns
everything that is the same in every env — reading the answer out of the reply, the turn and
action budgets, the format penalty, the common info keys, seeding, the chat transcript — and a
subclass supplies the game through six small hooks:

=====================  ==============================================================
``_new_episode``       build the start state from ``self.np_random`` (and ``options``)
``_decode_action``     one action string → an env action, or ``None`` if not an action
``_execute``           apply one decoded action → :class:`ActionResult`
``_render_text``       the current observation text (ASCII)
``_is_success``        the env's documented success predicate
``_state_bytes``       a canonical byte string of the state, for ``info["state_hash"]``
=====================  ==============================================================

Turn semantics, in order:

1. The reply is parsed with :func:`~agent_envs.core.parsing.parse_reply`. If no answer can
   be read, nothing is executed, ``format_ok`` is false and ``format_penalty`` is the reward.
2. Actions beyond ``max_actions_per_turn`` and beyond the episode's remaining action budget
   are dropped, not executed.
3. Actions run in order until the task ends or one is invalid. An unknown action is not
   executed; an illegal one is attempted (it counts toward the budget and earns the env's
   reward for it). Either way the rest of the answer is dropped and
   ``invalid_action_penalty`` is added once.
4. ``terminated`` when the task ended; otherwise ``truncated`` when the action budget is spent
   (``truncation_reason="action_budget"``) or ``max_turns`` turns were played (``"max_turns"``),
   except that envs with ``last_turn_terminates`` end as terminated on their last turn.

Envs that read replies differently (a whole-reply number grader, say) override ``_parse``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, NamedTuple, SupportsFloat

import gymnasium as gym

from agent_envs.core.parsing import AnswerFormat, ParsedReply, parse_reply
from agent_envs.core.spaces import reply_space, text_space

__all__ = ["COMMON_INFO_KEYS", "ActionResult", "TextEnv"]

COMMON_INFO_KEYS: tuple[str, ...] = (
    "action_valid",
    "format_ok",
    "parsed_actions",
    "num_actions",
    "action_effective",
    "success",
    "turn",
    "truncation_reason",
    "episode_seed",
    "state_hash",
)
_SEED_BOUND = 2**63 - 1


class ActionResult(NamedTuple):
    """What one executed action did. ``message`` (ASCII) says why an invalid action was
    illegal; it is shown to the model in the turn's feedback line."""

    reward: float
    valid: bool
    effective: bool
    done: bool
    message: str = ""


def _check_positive(name: str, value: object, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        expected = "a positive int or None" if allow_none else "a positive int"
        raise ValueError(f"{name} must be {expected}, got {value!r}")


class TextEnv(gym.Env[str, str]):
    """Base class of every text env; see the module docstring for the turn semantics.

    Args:
        max_turns: turns per episode, the one turn budget (ids are registered without
            ``max_episode_steps``: the env truncates itself, see ``agent_envs.registration``).
        max_actions_per_turn: actions read from one reply (``None``: no limit).
        max_actions_per_episode: the episode's action budget (``None``: no budget).
        format_penalty: reward of a turn whose answer could not be read.
        invalid_action_penalty: added once to a turn that contained an invalid action.
        render_mode: ``None`` or one of ``metadata["render_modes"]``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    #: Separator of several actions in one answer (``None``: the answer is one action).
    action_separator: ClassVar[str | None] = "||"
    #: NFKC-normalise non-ASCII replies before parsing (see `AnswerFormat`).
    normalize_unicode: ClassVar[bool] = True
    #: Upper bound on the length of any observation this env prints.
    observation_max_length: ClassVar[int] = 8192
    #: The names ``reset(options=...)`` accepts; others raise ``ValueError``. ``_new_episode``
    #: receives a dict with every name (``None`` where not given).
    reset_options: ClassVar[tuple[str, ...]] = ()
    #: End the episode as *terminated* on its last turn (instead of truncating it): for envs
    #: whose turns are attempts at one final answer (GSM8K, single-shot SQL).
    last_turn_terminates: ClassVar[bool] = False

    def __init__(
        self,
        *,
        max_turns: int,
        max_actions_per_turn: int | None = None,
        max_actions_per_episode: int | None = None,
        format_penalty: float = -0.1,
        invalid_action_penalty: float = -0.1,
        render_mode: str | None = None,
    ) -> None:
        _check_positive("max_turns", max_turns, allow_none=False)
        _check_positive("max_actions_per_turn", max_actions_per_turn, allow_none=True)
        _check_positive("max_actions_per_episode", max_actions_per_episode, allow_none=True)
        for name, value in (
            ("format_penalty", format_penalty),
            ("invalid_action_penalty", invalid_action_penalty),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.max_turns = max_turns
        self.max_actions_per_episode = max_actions_per_episode
        self.format_penalty = float(format_penalty)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.render_mode = render_mode
        self.answer_format = AnswerFormat(
            self.action_separator, max_actions_per_turn, self.normalize_unicode
        )
        self.observation_space = text_space(self.observation_max_length)
        self.action_space = reply_space()
        self._turn = 0
        self._actions_taken = 0
        self._episode_seed: int | None = None
        self._terminated = False
        self._truncated = False
        self._observations: list[str] = []
        self._replies: list[str] = []
        self._renderer: Any = (
            None  # a agent_envs.renderers.FrameRenderer, made on first picture render
        )

    # ----------------------------------------------------------------- hooks (subclasses)
    def _parse(self, reply: object) -> ParsedReply:
        """Read the actions out of a reply; the default is the shared answer-tag parser."""
        return parse_reply(reply, self.answer_format)

    @property
    def instructions(self) -> str:
        """The rules, the legend and the answer format: the system prompt of an episode."""
        raise NotImplementedError

    def _new_episode(self, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def _decode_action(self, text: str) -> Any | None:
        raise NotImplementedError

    def _execute(self, action: Any) -> ActionResult:
        raise NotImplementedError

    def _render_text(self) -> str:
        raise NotImplementedError

    def _is_success(self) -> bool:
        raise NotImplementedError

    def _state_bytes(self) -> bytes:
        raise NotImplementedError

    def _end_turn(self) -> ActionResult | None:
        """What happens at the end of every turn that did not end the task, whatever the
        reply (e.g. gravity in Tetris); its reward is added and its ``done`` ends the task."""
        return None

    def _extra_info(self) -> dict[str, Any]:
        """Env-specific info keys (documented in the subclass docstring)."""
        return {}

    #: Names of the keys `_extra_info` adds (tests hold the docstring and info to it).
    extra_info_keys: ClassVar[tuple[str, ...]] = ()

    def oracle_actions(self) -> list[str]:
        """The expert's remaining actions from the current state (solver or gold answer)."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle")

    def oracle_rationale(self) -> str:
        """The expert's worked reasoning for its next actions, as a demonstration writes it
        before the answer (``""``: none; GSM8K: the gold solution's steps). Only demonstrations
        that ask for it use it (:class:`~agent_envs.core.policies.OraclePolicy`)."""
        return ""

    def random_actions(self, rng: Any) -> list[str]:
        """One turn of a uniform random baseline, drawn from ``rng``."""
        raise NotImplementedError(f"{type(self).__name__} has no random baseline")

    def _problem_spec(self) -> Any:
        """What makes this episode's problem, JSON-serialisable (for :meth:`problem_key`): by
        default the first observation, which shows the start state and the goal; an env whose
        dynamics draw randomness after reset (Tetris's pieces) adds those draws."""
        return self._observations[0]

    def problem_key(self) -> str:
        """A key of the current episode's problem: its start state, its goal and every random
        draw its dynamics will make, canonically (16 hex digits of a SHA-256). Two episodes with
        equal keys play the same game: the same replies get the same observations and rewards.
        Seeds differ more often than problems do (``grl/Blocksworld-v0`` has a few hundred
        problems), so train/eval overlap and intervals over problems use this key."""
        if not self._observations:
            raise RuntimeError("call reset() before problem_key()")
        text = json.dumps(self._problem_spec(), sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]

    # ----------------------------------------------------------------- the Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode. Without ``seed``, one is drawn from the env's generator, so every
        episode has an ``info["episode_seed"]`` that reproduces it."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.reset_options))
        if unknown:
            raise ValueError(
                f"unknown reset options {unknown}; {type(self).__name__} accepts "
                f"{list(self.reset_options)}"
            )
        if seed is None:
            seed = int(self.np_random.integers(_SEED_BOUND))
        super().reset(seed=seed)
        self._episode_seed = seed
        self._turn = 0
        self._actions_taken = 0
        self._terminated = False
        self._truncated = False
        self._new_episode({name: given.get(name) for name in self.reset_options})
        observation = self._render_text()
        self._observations = [observation]
        self._replies = []
        info = self._info(True, True, [], 0, False, None)
        if self.render_mode == "human":
            self.render()
        return observation, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play one turn: ``action`` is the model's whole reply. Never raises on its content."""
        if self._terminated or self._truncated:
            return self._after_end(action)
        self._turn += 1
        parsed = self._parse(action)
        reward, valid, effective, done, executed, feedback = self._play(parsed)
        if not done:
            end = self._end_turn()
            if end is not None:
                reward += end.reward
                done = end.done
        truncation_reason = None
        if not done:
            budget = self.max_actions_per_episode
            if budget is not None and self._actions_taken >= budget:
                truncation_reason = "action_budget"
            elif self._turn >= self.max_turns:
                if self.last_turn_terminates:
                    done = True
                else:
                    truncation_reason = "max_turns"
        self._terminated = done
        self._truncated = truncation_reason is not None
        observation = self._render_text()
        if feedback:
            observation = f"{feedback}\n{observation}"
        self._replies.append(action if isinstance(action, str) else repr(action))
        self._observations.append(observation)
        info = self._info(
            valid, parsed.format_ok, list(parsed.actions), executed, effective, truncation_reason
        )
        if self.render_mode == "human":
            self.render()
        return observation, reward, done, self._truncated, info

    def frame(self) -> Any:
        """The current state as a frame description (`agent_envs.renderers.frames`) for the picture
        render modes; envs that list ``"rgb_array"``/``"human"`` implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not describe frames")

    def render(self) -> Any:
        """``"ansi"``: the observation text, as the model reads it (in colour:
        ``agent_envs.renderers.ansi.to_ansi(env.frame())``); ``"rgb_array"``: an ``(H, W, 3)`` uint8
        image of :meth:`frame` (size in `agent_envs.renderers.raster`); ``"human"``: that image in a
        window, redrawn on every reset and step."""
        if self.render_mode == "ansi":
            return self._render_text()
        if self.render_mode is None:
            return None
        if self._renderer is None:
            from agent_envs.renderers import FrameRenderer

            caption = type(self).__name__.removesuffix("Env")
            self._renderer = FrameRenderer(caption, self.metadata.get("render_fps", 4))
        return self._renderer.render(self.frame(), self.render_mode)

    def _budget_caption(self) -> tuple[str, str, str]:
        """Caption parts for frames: ``"Turn t/T"``, ``"Actions a/A"`` (``"Actions a"`` without
        an action budget) and, when a budget ended the episode, ``"Out of actions."`` or
        ``"Out of turns."`` (else ``""``)."""
        budget = self.max_actions_per_episode
        actions = f"Actions {self._actions_taken}" + ("" if budget is None else f"/{budget}")
        ended = ""
        if self._truncated:
            spent = budget is not None and self._actions_taken >= budget
            ended = "Out of actions." if spent else "Out of turns."
        return f"Turn {self._turn}/{self.max_turns}", actions, ended

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
        super().close()

    # ----------------------------------------------------------------- helpers
    def _play(self, parsed: ParsedReply) -> tuple[float, bool, bool, bool, int, str]:
        """Execute the parsed actions; returns (reward, valid, effective, done, executed,
        feedback)."""
        if not parsed.format_ok:
            return self.format_penalty, False, False, False, 0, f"Invalid answer: {parsed.error}."
        actions = parsed.actions
        budget = self.max_actions_per_episode
        if budget is not None:
            actions = actions[: budget - self._actions_taken]
        reward = 0.0
        effective = False
        done = False
        executed = 0
        for index, text in enumerate(actions):
            decoded = self._decode_action(text)
            result = None if decoded is None else self._execute(decoded)
            if result is None or not result.valid:
                if result is not None:
                    reward += result.reward
                    executed += 1
                self._actions_taken += executed
                why = "unknown" if result is None else result.message or "illegal here"
                where = f" {index + 1} of {len(actions)}" if len(actions) > 1 else ""
                feedback = f"Invalid action{where}: {why}"
                if index + 1 < len(actions):
                    feedback += "; the rest of the answer was not executed"
                feedback += "."
                return (
                    reward + self.invalid_action_penalty,
                    False,
                    effective,
                    False,
                    executed,
                    feedback,
                )
            reward += result.reward
            effective = effective or result.effective
            executed += 1
            if result.done:
                done = True
                break
        self._actions_taken += executed
        return reward, True, effective, done, executed, ""

    def _after_end(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A step after the episode ended executes nothing (Gymnasium leaves this undefined;
        we answer with the final state and zero reward instead of raising)."""
        info = self._info(False, self._parse(action).format_ok, [], 0, False, None)
        return self._observations[-1], 0.0, self._terminated, self._truncated, info

    def _info(
        self,
        action_valid: bool,
        format_ok: bool,
        parsed_actions: list[str],
        num_actions: int,
        action_effective: bool,
        truncation_reason: str | None,
    ) -> dict[str, Any]:
        """The common info keys (:data:`COMMON_INFO_KEYS`) of the current state, then the
        env's own."""
        info = {
            "action_valid": action_valid,
            "format_ok": format_ok,
            "parsed_actions": parsed_actions,
            "num_actions": num_actions,
            "action_effective": action_effective,
            "success": self._is_success(),
            "turn": self._turn,
            "truncation_reason": truncation_reason,
            "episode_seed": self._episode_seed,
            "state_hash": self.state_hash(),
        }
        extra = self._extra_info()
        if extra:
            info.update(extra)
        return info

    def state_hash(self) -> str:
        """A short hex digest of the state, stable across processes and Python versions."""
        return hashlib.blake2b(self._state_bytes(), digest_size=8).hexdigest()

    @property
    def turn(self) -> int:
        return self._turn

    @property
    def episode_seed(self) -> int | None:
        return self._episode_seed

    def messages(
        self, window: int | None = None, *, keep_first_observation: bool = False
    ) -> list[dict[str, str]]:
        """The episode so far as OpenAI chat messages: system = instructions, user =
        observations, assistant = replies. ``window=k`` keeps the last ``k`` turns (the
        system message and the current observation are always kept);
        ``keep_first_observation`` also keeps the episode's first observation (where dataset
        envs put the task: the question, the schema) when the window drops it."""
        if window is not None:
            _check_positive("window", window, allow_none=False)
        first = 0 if window is None else max(0, len(self._replies) - window)
        messages = [{"role": "system", "content": self.instructions}]
        if keep_first_observation and first > 0:
            messages.append({"role": "user", "content": self._observations[0]})
        for index in range(first, len(self._replies)):
            messages.append({"role": "user", "content": self._observations[index]})
            messages.append({"role": "assistant", "content": self._replies[index]})
        if self._observations:
            messages.append({"role": "user", "content": self._observations[-1]})
        return messages
