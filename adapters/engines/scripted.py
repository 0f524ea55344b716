"""Scripted agents (random, oracle, any ``policy(env, observation) -> reply``) as engines.

They read the live env of each request (see `agent_envs.core.policies`). Given a
``tokenizer``, they also return token ids, the reply's tokens followed by the request's first
stop token, as a model that ended its turn would: the collector can then build token-level
records from scripted episodes (oracle SFT data, benchmarks of the collector itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_envs.adapters.loop.engine import Generation, GenerationRequest

from agent_envs.core.policies import OraclePolicy, RandomPolicy

__all__ = ["PolicyEngine", "oracle_engine", "random_engine"]


class PolicyEngine:
    """Answers each request with ``policy(request.env.unwrapped, last observation)``."""

    #: the collector passes each live env in the request
    needs_env = True

    def __init__(
        self,
        policy: Callable[[Any, str], str],
        *,
        tokenizer: Any = None,
        name: str | None = None,
    ) -> None:
        self.policy = policy
        self.tokenizer = tokenizer
        self.name = name or getattr(policy, "name", type(policy).__name__)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        generations = []
        for request in requests:
            if request.env is None:
                generations.append(
                    Generation("", finish_reason="error", error="scripted engine needs the env")
                )
                continue
            env = getattr(request.env, "unwrapped", request.env)
            observation = request.messages[-1]["content"] if request.messages else ""
            try:
                text = self.policy(env, observation)
            except Exception as error:  # a policy bug ends this episode, not the batch
                generations.append(Generation("", finish_reason="error", error=repr(error)))
                continue
            token_ids = None
            if self.tokenizer is not None:
                token_ids = self.tokenizer.encode(text, add_special_tokens=False)
                token_ids += list(request.stop_token_ids[:1])
            generations.append(Generation(text, token_ids=token_ids))
        return generations


def random_engine(seed: int | None = None, *, tokenizer: Any = None) -> PolicyEngine:
    """The env's uniform random baseline, from its own generator seeded with ``seed``."""
    return PolicyEngine(RandomPolicy(seed), tokenizer=tokenizer, name="random")


def oracle_engine(*, tokenizer: Any = None, rationale: bool = False) -> PolicyEngine:
    """The env's expert (solver or gold answer); ``rationale``: its worked reasoning before
    the answer, where the env has one (``OraclePolicy``)."""
    return PolicyEngine(OraclePolicy(rationale), tokenizer=tokenizer, name="oracle")
