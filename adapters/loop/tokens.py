"""Token-exact multi-turn episodes, checked: :func:`check_token_records`.

A multi-turn episode is trained token-exactly when the ids the trainer sees are the ids the
model was conditioned on and sampled. Three things break that, silently: a loop that
re-renders and re-tokenizes the conversation every turn (BPE merges the sampled tokens
differently, templates such as Qwen3's drop earlier ``<think>`` blocks), a training
sequence rebuilt from the text afterwards, and a loss mask that does not sit on the sampled
tokens. The checker takes an episode's token records and reports the first place where one
of these happened, with its turn and position.

**Records** (:class:`EpisodeTokens`): per turn (:class:`TurnTokens`) the context the model
was given (``prompt_ids``, the whole conversation so far as ids), the ids it sampled
(``completion_ids``, as sampled, its stop token included when it sampled one) and the reply
text recorded for the turn; optionally the training sequence (``input_ids``) and its
``assistant_mask`` (1 = a token the loss trains on). Build them

- from a :class:`~agent_envs.core.records.Trajectory` (:meth:`EpisodeTokens.from_trajectory`:
  the per-turn contexts are derived from its token fields, so this checks the replies and the
  mask of the record alone);
- from what an engine actually received and returned: :class:`TokenRecorder` wraps any
  `Engine` and pairs each turn's request with the episode's record
  (:meth:`TokenRecorder.episode`), so the check compares the training data with the model's
  real inputs;
- by hand, from any other loop (a trainer's rows, a server's request log).

**Checks**, in turn order, the first failure reported as a :class:`Divergence`:

``prefix``
    turn ``t``'s prompt ids start with turn ``t-1``'s prompt ids followed by its sampled ids;
    ``position`` is the index in turn ``t``'s prompt ids where they differ;
``decode``
    turn ``t``'s sampled ids decode (special tokens skipped) to its recorded reply;
    ``position`` is the index of the first sampled token whose text leaves the reply;
``sequence``
    the training sequence starts with the last turn's prompt ids and sampled ids (tokens after
    them are allowed only with mask 0); ``position`` indexes ``input_ids``;
``mask``
    ``assistant_mask`` is 1 exactly on the sampled ids of every turn; ``position`` indexes
    ``input_ids``, ``turn`` is the turn whose tokens (or whose following template and
    observation tokens) hold it.

Framework-free: a tokenizer is only asked to ``decode`` (``decode(ids,
skip_special_tokens=True)``, Hugging Face's signature).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest

from agent_envs.core.records import Trajectory

__all__ = [
    "CHECKS",
    "Divergence",
    "EpisodeTokens",
    "TokenDivergenceError",
    "TokenRecorder",
    "TurnTokens",
    "assert_token_exact",
    "check_token_records",
]

#: the checks :func:`check_token_records` runs (module docstring)
CHECKS = ("prefix", "decode", "sequence", "mask")


@dataclass(frozen=True)
class TurnTokens:
    """One turn as the model saw it and produced it (``reply``: ``None`` skips ``decode``)."""

    prompt_ids: Sequence[int]
    completion_ids: Sequence[int]
    reply: str | None = None


@dataclass(frozen=True)
class EpisodeTokens:
    """An episode's token records: its turns, and optionally the sequence a trainer trains on
    (``input_ids``) with its ``assistant_mask`` (both or neither)."""

    turns: Sequence[TurnTokens]
    input_ids: Sequence[int] | None = None
    assistant_mask: Sequence[int] | None = None

    def __post_init__(self) -> None:
        if (self.input_ids is None) != (self.assistant_mask is None):
            raise ValueError("input_ids and assistant_mask go together: give both or neither")

    @classmethod
    def from_trajectory(cls, trajectory: Trajectory) -> EpisodeTokens:
        """The records of a `Trajectory` with token fields: turn ``t``'s prompt is
        ``prompt_ids`` plus every earlier turn's model and env ids, the training sequence is
        ``prompt_ids + completion_ids`` with :attr:`Trajectory.env_mask` after the prompt."""
        if not trajectory.has_tokens:
            raise ValueError(
                f"trajectory of {trajectory.env_id} seed {trajectory.seed} has no token fields"
            )
        prompt = list(trajectory.prompt_ids or ())
        completions = trajectory.turn_completion_ids or []
        env_turns = trajectory.turn_env_ids or [[] for _ in completions]
        turns = []
        context = list(prompt)
        for index, (sampled, env) in enumerate(zip(completions, env_turns, strict=True)):
            reply = trajectory.steps[index].reply if index < len(trajectory.steps) else None
            turns.append(TurnTokens(list(context), list(sampled), reply))
            context += list(sampled) + list(env)
        return cls(
            turns=turns,
            input_ids=prompt + trajectory.completion_ids,
            assistant_mask=[0] * len(prompt) + trajectory.env_mask,
        )

    def with_training(
        self, input_ids: Sequence[int], assistant_mask: Sequence[int]
    ) -> EpisodeTokens:
        """These turns with another training sequence (a trainer's row)."""
        return EpisodeTokens(self.turns, list(input_ids), list(assistant_mask))


@dataclass(frozen=True)
class Divergence:
    """The first place an episode's records stop being token-exact (see the module docstring
    for ``check`` and what ``position`` indexes). ``expected``/``actual``: the token ids found
    there (``None`` past the end of a sequence), the mask values (``mask``), or the recorded
    reply and the decoded text (``decode``)."""

    check: str
    turn: int
    position: int
    expected: Any
    actual: Any
    detail: str

    def __str__(self) -> str:
        return f"turn {self.turn}, position {self.position} [{self.check}]: {self.detail}"


class TokenDivergenceError(AssertionError):
    """Raised by :func:`assert_token_exact`; ``divergence`` is what was found."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(str(divergence))
        self.divergence = divergence


def _piece(tokenizer: Any, token: int | None) -> str:
    if token is None:
        return "end of sequence"
    if tokenizer is None:
        return str(token)
    return f"{token} {tokenizer.decode([token])!r}"


def _first_difference(expected: Sequence[int], actual: Sequence[int]) -> int | None:
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return index
    return None if len(actual) >= len(expected) else len(actual)


def _at(ids: Sequence[int], index: int) -> int | None:
    return int(ids[index]) if index < len(ids) else None


def _check_prefix(turns: Sequence[TurnTokens], tokenizer: Any) -> Divergence | None:
    for turn in range(1, len(turns)):
        before = turns[turn - 1]
        expected = list(before.prompt_ids) + list(before.completion_ids)
        actual = list(turns[turn].prompt_ids)
        index = _first_difference(expected, actual)
        if index is None:
            continue
        want, got = _at(expected, index), _at(actual, index)
        part = "sampled" if index >= len(before.prompt_ids) else "prompt"
        return Divergence(
            "prefix",
            turn,
            index,
            want,
            got,
            f"turn {turn}'s prompt ids do not extend turn {turn - 1}'s prompt + sampled ids "
            f"(they differ inside turn {turn - 1}'s {part} ids): expected "
            f"{_piece(tokenizer, want)}, got {_piece(tokenizer, got)}",
        )
    return None


def _check_decode(turns: Sequence[TurnTokens], tokenizer: Any) -> Divergence | None:
    if tokenizer is None:
        return None
    for turn, record in enumerate(turns):
        if record.reply is None:
            continue
        ids = [int(token) for token in record.completion_ids]
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if text == record.reply:
            continue
        position = len(ids)
        for end in range(1, len(ids) + 1):  # the first token whose text leaves the reply
            prefix = tokenizer.decode(ids[:end], skip_special_tokens=True)
            if prefix.endswith("\ufffd"):  # a character cut between its bytes
                continue
            if not record.reply.startswith(prefix):
                position = end - 1
                break
        got = _at(ids, position)
        return Divergence(
            "decode",
            turn,
            position,
            record.reply,
            text,
            f"turn {turn}'s sampled ids decode to {text[:80]!r}, not to the recorded reply "
            f"{record.reply[:80]!r}; first differing token: {_piece(tokenizer, got)}",
        )
    return None


def _turn_of(turns: Sequence[TurnTokens], position: int) -> int:
    """The turn whose sampled ids, or the env/template ids after them, hold ``position``."""
    for turn in range(len(turns) - 1, -1, -1):
        if position >= len(turns[turn].prompt_ids):
            return turn
    return 0


def _check_training(episode: EpisodeTokens, tokenizer: Any) -> Divergence | None:
    turns = episode.turns
    if episode.input_ids is None or episode.assistant_mask is None or not turns:
        return None
    ids = [int(token) for token in episode.input_ids]
    mask = [int(value) for value in episode.assistant_mask]
    if len(mask) != len(ids):
        return Divergence(
            "mask",
            len(turns) - 1,
            min(len(mask), len(ids)),
            len(ids),
            len(mask),
            f"assistant_mask has {len(mask)} entries for {len(ids)} input ids",
        )
    last = turns[-1]
    seen = list(last.prompt_ids) + list(last.completion_ids)
    index = _first_difference(seen, ids)
    if index is not None:
        want, got = _at(seen, index), _at(ids, index)
        return Divergence(
            "sequence",
            _turn_of(turns, index),
            index,
            want,
            got,
            "the training sequence is not the ids the model saw and sampled: expected "
            f"{_piece(tokenizer, want)}, got {_piece(tokenizer, got)}",
        )
    expected = [0] * len(ids)
    for record in turns:
        start = len(record.prompt_ids)
        for offset in range(len(record.completion_ids)):
            expected[start + offset] = 1
    for position, (want, got) in enumerate(zip(expected, mask, strict=True)):
        if want != got:
            turn = _turn_of(turns, position)
            what = "a sampled token" if want else "a template/observation token"
            return Divergence(
                "mask",
                turn,
                position,
                want,
                got,
                f"assistant_mask is {got} on {what} ({_piece(tokenizer, ids[position])}) "
                f"of turn {turn}",
            )
    return None


def check_token_records(
    records: EpisodeTokens | Trajectory, tokenizer: Any = None
) -> Divergence | None:
    """The first :class:`Divergence` of ``records`` (an :class:`EpisodeTokens`, or a
    `Trajectory` with token fields), or ``None`` when the episode is token-exact.

    ``tokenizer`` decodes the sampled ids for the ``decode`` check and names tokens in the
    report; without it ``decode`` is skipped. The checks run turn by turn in the order of
    :data:`CHECKS` (prefix and decode per turn, then the training sequence and its mask).
    """
    episode = EpisodeTokens.from_trajectory(records) if isinstance(records, Trajectory) else records
    for check in (_check_prefix, _check_decode):
        found = check(episode.turns, tokenizer)
        if found is not None:
            return found
    return _check_training(episode, tokenizer)


def assert_token_exact(records: EpisodeTokens | Trajectory, tokenizer: Any = None) -> None:
    """:func:`check_token_records`, raising :class:`TokenDivergenceError` on a divergence."""
    found = check_token_records(records, tokenizer)
    if found is not None:
        raise TokenDivergenceError(found)


@dataclass(frozen=True)
class _Call:
    prompt_ids: list[int] | None
    messages: list[dict[str, Any]]
    generation: Generation


class TokenRecorder:
    """An `Engine` that passes every request to ``engine`` and keeps what the model was given
    and what it returned, to check an episode's records against (:meth:`episode`).

    It has the wrapped engine's ``name``, ``tokenizer``, ``needs_env`` and ``chat_delta``, so
    the collector treats it as that engine.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = getattr(engine, "name", "recorded")
        self.tokenizer = getattr(engine, "tokenizer", None)
        self.needs_env = bool(getattr(engine, "needs_env", False))
        delta = getattr(engine, "chat_delta", None)
        if delta is not None:
            self.chat_delta = delta
        self.calls: list[_Call] = []
        self._matched: set[int] = set()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        generations = self.engine.generate(requests)
        for request, generation in zip(requests, generations, strict=True):
            prompt = None if request.prompt_ids is None else [int(t) for t in request.prompt_ids]
            messages = [dict(message) for message in request.messages or ()]
            self.calls.append(_Call(prompt, messages, generation))
        return generations

    def episode(self, trajectory: Trajectory) -> EpisodeTokens:
        """``trajectory``'s turns as the engine saw them, with the trajectory's training
        sequence (:meth:`EpisodeTokens.from_trajectory`). Turn ``t``'s request is a recorded
        one whose messages are the trajectory's conversation up to turn ``t`` and whose reply
        is the turn's (each request serves one turn of one episode)."""
        turns = []
        for turn, step in enumerate(trajectory.steps):
            history = trajectory.messages[: 2 + 2 * turn]
            index = next(
                (
                    number
                    for number, call in enumerate(self.calls)
                    if number not in self._matched
                    and call.generation.text == step.reply
                    and call.messages == history
                ),
                None,
            )
            if index is None:
                raise ValueError(
                    f"no recorded request for turn {turn} of {trajectory.env_id} seed "
                    f"{trajectory.seed}"
                )
            self._matched.add(index)
            call = self.calls[index]
            sampled = call.generation.token_ids
            if call.prompt_ids is None or sampled is None:
                raise ValueError(f"turn {turn}'s request or reply carries no token ids")
            turns.append(TurnTokens(call.prompt_ids, list(sampled), step.reply))
        recorded = EpisodeTokens.from_trajectory(trajectory)
        return EpisodeTokens(turns, recorded.input_ids, recorded.assistant_mask)
