"""The one small interface every inference engine implements.

An engine answers a batch of :class:`GenerationRequest` s with one :class:`Generation` each,
in order, in one call (the collector makes one call per turn for every live episode). A
request carries both views of the episode so each engine reads the one it needs:

- token engines (transformers, vLLM, the HTTP completion endpoint) continue ``prompt_ids``
  (the whole episode so far as token ids) and return the sampled ``token_ids`` as sampled;
- chat engines (the HTTP chat endpoint) send ``messages``;
- scripted agents read the live ``env``.

An engine never raises for one bad request: it returns a `Generation` whose ``error`` says
what went wrong, and the collector ends that episode (the rest of the batch goes on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Engine", "Generation", "GenerationRequest", "SamplingConfig"]


@dataclass(frozen=True)
class SamplingConfig:
    """How to sample: ``temperature=0`` is greedy; ``top_p``/``top_k`` as usual (``top_k=0``:
    off); ``seed`` makes sampling reproducible in engines that take one (each engine says
    how)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.temperature, (int, float)) or self.temperature < 0:
            raise ValueError(f"temperature must be a number >= 0, got {self.temperature!r}")
        if not isinstance(self.top_p, (int, float)) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0, got {self.top_k!r}")


@dataclass
class GenerationRequest:
    """One episode's next reply: its context and its token budget for this turn."""

    max_new_tokens: int
    prompt_ids: list[int] | None = None
    messages: list[dict[str, str]] | None = None
    env: Any = None
    stop_token_ids: tuple[int, ...] = ()


@dataclass
class Generation:
    """One reply. ``token_ids``/``logprobs`` are ``None`` when the engine has none (scripted
    agents, HTTP servers that return no token data); ``finish_reason`` is ``"stop"``,
    ``"length"`` or ``"error"``."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """``name`` identifies the agent in records; ``tokenizer`` is the Hugging Face tokenizer of
    a token engine (``None`` for engines that work on text only)."""

    name: str
    tokenizer: Any

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]: ...
