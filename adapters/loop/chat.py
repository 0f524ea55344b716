"""Chat-template bookkeeping for token-in, token-out episodes: :class:`ChatDelta`.

The collector builds each episode's token ids incrementally: the ids the model sampled, as
sampled, then the template's *delta* for the next user message, rendered for that message
only (see :mod:`agent_envs.adapters.loop.collector`). :class:`ChatDelta` computes those pieces
for one tokenizer and refuses templates that re-render earlier messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ChatDelta"]

_PROBE_USER = "probe-user-message"
_PROBE_REPLY = "probe-assistant-reply"
_REWRITES = (
    "the chat template re-renders earlier messages when one is added; the collector cannot "
    "append observations incrementally with it"
)


class ChatDelta:
    """Chat-template pieces of one tokenizer, for building an episode's ids incrementally.

    ``prompt_ids(messages)``: the opening prompt. ``turn_ids(completion_ids, observation)``:
    the env/template ids that follow a sampled turn. ``stop_token_ids``: the tokens that end an
    assistant turn (the template's end-of-message token and the tokenizer's EOS).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        base = [
            {"role": "system", "content": "probe-system"},
            {"role": "user", "content": _PROBE_USER},
            {"role": "assistant", "content": _PROBE_REPLY},
        ]
        self._base = base
        self._base_text = self._render(base, generation_prompt=False)
        opening = self._render(base[:2], generation_prompt=True)
        if not self._base_text.startswith(opening):
            raise ValueError(_REWRITES)
        after_reply = self._base_text.rfind(_PROBE_REPLY)
        if after_reply < 0:
            raise ValueError("the tokenizer's chat template does not print assistant messages")
        #: what the template writes after an assistant message's content
        self.closer = self._base_text[after_reply + len(_PROBE_REPLY) :]
        stops: list[int] = []
        closer_ids = self._encode(self.closer)
        special = set(getattr(tokenizer, "all_special_ids", ()))
        if closer_ids and closer_ids[0] in special:
            stops.append(closer_ids[0])
        eos = tokenizer.eos_token_id
        for token in eos if isinstance(eos, list) else [eos]:
            if token is not None and token not in stops:
                stops.append(int(token))
        self.stop_token_ids: tuple[int, ...] = tuple(stops)
        self._stop_text = {token: tokenizer.decode([token]) for token in stops}

    def _render(self, messages: list[dict[str, str]], *, generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        messages = [{**m, "content": self._content(m["content"])} for m in messages]
        return self._encode(self._render(messages, generation_prompt=True))

    def _content(self, content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        """A message's content as a text template takes it: typed parts → their text."""
        if isinstance(content, str):
            return content
        return "".join(part["text"] for part in content if part.get("type") == "text")

    def user_delta(self, observation: str | list[dict[str, Any]]) -> str:
        """The template text a new user message (text, or typed content parts) and the
        generation prompt add."""
        message = {"role": "user", "content": self._content(observation)}
        full = self._render([*self._base, message], generation_prompt=True)
        if not full.startswith(self._base_text):
            raise ValueError(_REWRITES)
        return full[len(self._base_text) :]

    def closing_text(self, completion_ids: Sequence[int]) -> str:
        """What must follow a sampled turn to close the assistant message: the closer minus
        the stop token the model sampled itself (all of it when the turn was cut short)."""
        if completion_ids:
            stop_text = self._stop_text.get(completion_ids[-1])
            if stop_text and self.closer.startswith(stop_text):
                return self.closer[len(stop_text) :]
        return self.closer

    def turn_ids(
        self, completion_ids: Sequence[int], observation: str | list[dict[str, Any]]
    ) -> list[int]:
        return self._encode(self.closing_text(completion_ids) + self.user_delta(observation))
