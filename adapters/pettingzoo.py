"""PettingZoo envs: two-player TextArena games, and self-play on our ``grl/*`` envs.

- :class:`TextArenaAECEnv` (``textarena_aec_env("TicTacToe-v0")``): a two-player TextArena
  game as an AEC env; agents ``player_0`` and ``player_1`` (TextArena's player ids).
- :class:`SelfPlayAECEnv` (``self_play_aec_env("grl/Sokoban-v0")``): two agents take turns,
  each on its own copy of one ``grl/*`` env started from the same seed (a race on the same
  puzzle); :func:`self_play_parallel_env` is its parallel form (both agents reply at once),
  through PettingZoo's own ``aec_to_parallel``.

Spaces are ``gymnasium.spaces.Text`` (our ASCII charset); actions are replies (strings).
Observations are :class:`TextObservation` s: ``str`` s that also carry the ``dtype`` of the
Text space, because ``pettingzoo.test.api_test`` compares an observation's ``dtype`` with the
space's (``Text.dtype`` is ``'<U'``; a plain ``str`` has none, and ``numpy.str_`` gives
``'<U{length}'``). Agents that ended are stepped once more with ``None`` (PettingZoo's
``_was_dead_step``) before they leave ``agents``. Importing this module needs
``pettingzoo`` (``pip install agent-envs[pettingzoo]``); the TextArena env also
``agent-envs[textarena]``.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np
from agent_envs.adapters.textarena import (
    MAX_MOVE_LENGTH,
    NETWORK_GAMES,
    game_name,
    raw_game,
    to_ascii,
)

from agent_envs.core.spaces import ASCII_CHARSET, MAX_REPLY_LENGTH
from agent_envs.optional import require

# The envs below subclass PettingZoo's AECEnv, so importing this module needs PettingZoo
# (the package agent_envs.adapters does not import it).
AECEnv = require("pettingzoo", "pettingzoo").AECEnv

__all__ = [
    "SelfPlayAECEnv",
    "TextArenaAECEnv",
    "TextObservation",
    "self_play_aec_env",
    "self_play_parallel_env",
    "textarena_aec_env",
]

_TEXT_DTYPE = np.dtype(str)


class TextObservation(str):
    """A text observation that tells PettingZoo's checker its dtype (that of ``Text``)."""

    dtype = _TEXT_DTYPE


def _text_space(max_length: int) -> Any:
    from gymnasium import spaces

    return spaces.Text(max_length=max_length, min_length=0, charset=ASCII_CHARSET)


class _TextAgents:
    """Spaces and observations shared by every agent of a text AEC env: one Text space for
    all agents, each agent's latest view in ``self._views``."""

    _observation_space: Any
    _action_space: Any
    _views: dict[str, str]

    def observation_space(self, agent: str) -> Any:
        return self._observation_space

    def action_space(self, agent: str) -> Any:
        return self._action_space

    def observe(self, agent: str) -> TextObservation:
        return TextObservation(self._views.get(agent, ""))


class TextArenaAECEnv(_TextAgents, AECEnv):
    """A two-player TextArena game as a PettingZoo AEC env.

    Whose turn it is comes from TextArena's ``get_observation()`` player id (some games
    let the same player move again, or start with player 1). ``observe(agent)`` is that
    agent's latest view (TextArena's whole history for it, ASCII). A move the game rejects
    leaves the turn with the same agent (``infos[agent]["action_valid"]`` is ``False``);
    TextArena ends the game at the second one. Rewards are 0 until the game ends; then
    TextArena's ``close()`` rewards (+1/-1, 0 for a draw) go to both agents, which are
    terminated. A move that is not a string, or is longer than
    `agent_envs.adapters.textarena.MAX_MOVE_LENGTH`, is sent as ``""`` (which the game rejects).
    ``max_moves`` truncates both agents (moves, rejected ones included).
    ``seed`` of ``reset`` is passed to TextArena's ``reset``; Python's global ``random``
    state is swapped for the env's own around every TextArena call, as in
    `agent_envs.adapters.textarena.TextArenaEnv`."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "textarena_aec_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self, textarena_id: str, *, max_moves: int = 500, render_mode: str | None = None
    ) -> None:
        super().__init__()
        ta = require("textarena", "textarena")
        name = game_name(textarena_id)
        if name in NETWORK_GAMES:
            raise ValueError(f"textarena_id {textarena_id!r} needs the network")
        if isinstance(max_moves, bool) or not isinstance(max_moves, int) or max_moves < 1:
            raise ValueError(f"max_moves must be a positive int, got {max_moves!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.textarena_id = textarena_id
        self.max_moves = max_moves
        self.render_mode = render_mode
        self._random_state = random.Random(0).getstate()
        with self._own_random():
            self.game = ta.make(textarena_id)
        self.possible_agents = ["player_0", "player_1"]
        self._observation_space = _text_space(65_536)
        self._action_space = _text_space(MAX_REPLY_LENGTH)
        self._views: dict[str, str] = {}

    @contextmanager
    def _own_random(self) -> Any:
        outside = random.getstate()
        random.setstate(self._random_state)
        try:
            yield
        finally:
            self._random_state = random.getstate()
            random.setstate(outside)

    def _state(self) -> Any:
        return raw_game(self.game).state

    def _take_turn(self) -> None:
        player, view = self.game.get_observation()
        self.agent_selection = f"player_{player}"
        text = to_ascii(view)
        self._views[self.agent_selection] = text[-self._observation_space.max_length :]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: {"action_valid": True} for agent in self.agents}
        self._views = {}
        self._moves = 0
        with self._own_random():
            # a fresh game: TextArena's LLMObservationWrapper keeps old episodes' history
            self.game = require("textarena", "textarena").make(self.textarena_id)
            self.game.reset(num_players=2, seed=seed)
            self._take_turn()

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        for name in self.agents:
            self.rewards[name] = 0.0
        move = action if isinstance(action, str) and len(action) <= MAX_MOVE_LENGTH else ""
        state = self._state()
        turn = state.turn
        self._moves += 1
        with self._own_random():
            self.game.step(move)
            state = self._state()
            seat = int(agent.removeprefix("player_"))
            rejected = state.turn == turn or bool(state.game_info[seat].get("invalid_move"))
            self.infos[agent] = {"action_valid": not rejected}
            if state.done:
                rewards, game_info = self.game.close()
                for name in self.agents:
                    player = int(name.removeprefix("player_"))
                    self.rewards[name] = float((rewards or {}).get(player, 0.0))
                    self.terminations[name] = True
                    reason = game_info.get(player, {}).get("reason")
                    self.infos[name] = {**self.infos[name], "end_reason": reason}
            else:
                self._take_turn()
                if self._moves >= self.max_moves:
                    self.truncations = {name: True for name in self.agents}
        self._accumulate_rewards()
        if self.render_mode == "ansi":
            self.render()

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        return self._views.get(self.agent_selection, "")

    def close(self) -> None:
        pass


class SelfPlayAECEnv(_TextAgents, AECEnv):
    """Two agents take turns on their own copies of one ``grl/*`` env, both reset with
    the same seed; each agent's observation, reward, termination, truncation and info are
    its own env's (info: the env's info dict); ``reset``'s ``options`` are not used. An
    agent whose env ended is terminated or truncated as its env says and, at the end of that
    round, steps once more with ``None`` and leaves; the other plays on."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "grl_self_play_v0",
        "render_modes": [],
        "is_parallelizable": True,
    }

    def __init__(self, env_id: str, **env_kwargs: Any) -> None:
        super().__init__()
        import gymnasium

        import agent_envs  # noqa: F401  (registers the grl/* ids)

        self.env_id = env_id
        self.possible_agents = ["player_0", "player_1"]
        self.envs = {agent: gymnasium.make(env_id, **env_kwargs) for agent in self.possible_agents}
        base = self.envs["player_0"].unwrapped
        self._observation_space = base.observation_space
        self._action_space = base.action_space
        self._views: dict[str, str] = {}
        self.render_mode = None

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        if seed is None:
            seed = int(np.random.default_rng().integers(2**63 - 1))
        self.infos = {}
        for agent in self.agents:
            view, info = self.envs[agent].reset(seed=seed)
            self._views[agent] = view
            self.infos[agent] = info
        self._order = list(self.agents)
        self.agent_selection = self._order[0]

    def _next_live_agent(self, after: str) -> str:
        order = self._order
        start = order.index(after)
        for offset in range(1, len(order) + 1):
            candidate = order[(start + offset) % len(order)]
            if candidate in self.agents and not (
                self.terminations[candidate] or self.truncations[candidate]
            ):
                return candidate
        return after

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        for name in self.agents:
            self.rewards[name] = 0.0
        view, reward, terminated, truncated, info = self.envs[agent].step(action)
        self._views[agent] = view
        self.rewards[agent] = float(reward)
        self.terminations[agent] = bool(terminated)
        self.truncations[agent] = bool(truncated)
        self.infos[agent] = info
        following = self._next_live_agent(agent)
        self.agent_selection = following
        self._accumulate_rewards()
        if self._order.index(following) <= self._order.index(agent):
            # at the end of a cycle, agents that ended are selected to step with None and
            # leave (within a cycle the order stays player_0, player_1, as aec_to_parallel
            # expects)
            self._deads_step_first()

    def render(self) -> None:
        return None

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


def textarena_aec_env(textarena_id: str, **kwargs: Any) -> Any:
    """A two-player TextArena game as a :class:`TextArenaAECEnv`."""
    return TextArenaAECEnv(textarena_id, **kwargs)


def self_play_aec_env(env_id: str, **env_kwargs: Any) -> Any:
    """Self-play on a ``grl/*`` env as a :class:`SelfPlayAECEnv`."""
    return SelfPlayAECEnv(env_id, **env_kwargs)


def self_play_parallel_env(env_id: str, **env_kwargs: Any) -> Any:
    """:func:`self_play_aec_env` as a PettingZoo ``ParallelEnv`` (PettingZoo's
    ``aec_to_parallel``: both agents reply at once, each on its own env)."""
    from pettingzoo.utils.conversions import aec_to_parallel

    return aec_to_parallel(self_play_aec_env(env_id, **env_kwargs))
