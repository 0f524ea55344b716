"""A tiny TextEnv for testing the core: walk a counter from 0 to ``goal``."""

from __future__ import annotations

from typing import Any, ClassVar

from agent_envs.core.env import ActionResult, TextEnv


class CounterEnv(TextEnv):
    """Count from 0 to ``goal``: ``inc`` adds one, ``dec`` subtracts one (illegal at 0), ``wait``
    does nothing. Reaching ``goal`` pays +1 and ends the episode.

    Extra info: ``count``.
    """

    extra_info_keys: ClassVar[tuple[str, ...]] = ("count",)

    def __init__(self, *, goal: int = 3, start_high: int = 0, **kwargs: Any) -> None:
        kwargs.setdefault("max_turns", 4)
        kwargs.setdefault("invalid_action_penalty", -0.5)
        super().__init__(**kwargs)
        self.goal = goal
        self.start_high = start_high
        self.count = 0

    @property
    def instructions(self) -> str:
        return f"Reach {self.goal}. Actions: inc, dec, wait."

    def _new_episode(self, options):
        self.count = int(self.np_random.integers(0, self.start_high + 1))

    def _decode_action(self, text):
        return text.strip().lower() if text.strip().lower() in ("inc", "dec", "wait") else None

    def _execute(self, action):
        if action == "dec" and self.count == 0:
            return ActionResult(-1.0, False, False, False)
        before = self.count
        self.count += {"inc": 1, "dec": -1, "wait": 0}[action]
        done = self.count == self.goal
        return ActionResult(1.0 if done else 0.0, True, self.count != before, done)

    def _render_text(self):
        return f"count={self.count}"

    def _is_success(self):
        return self.count == self.goal

    def _state_bytes(self):
        return str(self.count).encode()

    def _extra_info(self):
        return {"count": self.count}

    def random_actions(self, rng):
        return [("inc", "dec", "wait")[int(i)] for i in rng.integers(0, 3, 2)]
