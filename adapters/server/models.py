"""The request bodies of the env server, one pydantic model each, used by the HTTP routes and
by the WebSocket messages alike (so both refuse the same things with the same 422).

Every model refuses keys it does not know (a misspelled ``sed`` is an error, not a silently
missing seed) and values of the wrong JSON type (``"7"`` is not a seed, ``12`` not a reply).
"""

# no `from __future__ import annotations`: pydantic and FastAPI read the annotations at runtime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AttachRequest",
    "CreateSession",
    "ResetRequest",
    "RolloutRequest",
    "Sampling",
    "StepRequest",
]

_STRICT = ConfigDict(extra="forbid", strict=True)


class CreateSession(BaseModel):
    model_config = _STRICT

    env_id: str = Field(description="a registered id, e.g. grl/Sokoban-v0")
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class AttachRequest(BaseModel):
    model_config = _STRICT

    session_id: str = Field(description="one of your sessions (POST /sessions returned it)")


class ResetRequest(BaseModel):
    model_config = _STRICT

    seed: int | None = Field(default=None, ge=0, description="the episode's seed (>= 0)")
    options: dict[str, Any] | None = None


class StepRequest(BaseModel):
    model_config = _STRICT

    action: str | None = Field(
        description="the model's whole reply for this turn (null: a non-text reply)"
    )


class Sampling(BaseModel):
    model_config = _STRICT

    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | None = Field(default=None, ge=0)


class RolloutRequest(BaseModel):
    model_config = _STRICT

    env: str = Field(description="env id, e.g. grl/Sokoban-v0")
    model: str
    base_url: str = Field(
        description="OpenAI-compatible API root, ending in /v1; one the server allows"
    )
    ids: list[Annotated[int, Field(ge=0)]] = Field(
        description="episode seeds (>= 0), one group per id"
    )
    max_round: int | None = Field(default=None, ge=1, le=1000, description="turn limit")
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    group_size: int = Field(default=1, ge=1)
    max_new_tokens: int = Field(default=256, ge=1, le=1 << 16)
    sampling: Sampling = Field(default_factory=Sampling)
    api_key: str | None = None
    timeout: float = Field(default=60.0, gt=0, le=600)
