"""Scripted policies every env supports: a uniform random baseline and the oracle.

A policy is a callable ``policy(env, observation) -> reply`` on the *unwrapped* env (it reads
the env's hooks, not just the text), returning a reply in the env's answer format.
"""

from __future__ import annotations

import numpy as np

from agent_envs.core.env import TextEnv
from agent_envs.core.parsing import AnswerFormat

__all__ = ["OraclePolicy", "RandomPolicy", "format_answer"]


def format_answer(actions: list[str], answer_format: AnswerFormat) -> str:
    """``["Up", "Left"]`` → ``"<answer>Up || Left</answer>"`` (at most the per-turn limit)."""
    if answer_format.max_actions_per_turn is not None:
        actions = actions[: answer_format.max_actions_per_turn]
    joiner = f" {answer_format.separator} " if answer_format.separator else ""
    return f"<answer>{joiner.join(actions)}</answer>"


class RandomPolicy:
    """Answers each turn with the env's random baseline actions, from its own generator."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, env: TextEnv, observation: str) -> str:
        return format_answer(env.random_actions(self.rng), env.answer_format)


class OraclePolicy:
    """Answers each turn with the next actions of the env's expert; with ``rationale=True``
    the expert's worked reasoning (:meth:`TextEnv.oracle_rationale`, where the env has one)
    comes first, on its own lines before the answer tag (demonstrations for SFT)."""

    name = "oracle"

    def __init__(self, rationale: bool = False) -> None:
        self.rationale = rationale

    def __call__(self, env: TextEnv, observation: str) -> str:
        actions = env.oracle_actions()
        if not actions:
            return "The oracle has no action to take from here."
        answer = format_answer(actions, env.answer_format)
        reasoning = env.oracle_rationale().strip() if self.rationale else ""
        return f"{reasoning}\n{answer}" if reasoning else answer
