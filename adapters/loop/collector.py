"""The rollout collector: a text vector env and an engine, turn by turn, into `Trajectory` s.

Each turn the collector sends every live episode to the engine in **one** ``generate`` call,
steps exactly those envs (``step(actions, mask)``; finished episodes are neither sent nor
stepped) and records the turn. Groups: ``group_size=G`` runs G episodes from each seed.

**Token-in, token-out.** With a token engine the collector keeps each episode as token ids:
the first prompt is the chat template applied to ``[system, first observation]``; after each
turn it appends the tokens the model sampled, as sampled, and then the *delta* of the chat
template: the end of the assistant message the model did not sample itself plus the next user
message and generation prompt, rendered for the new message only (:class:`ChatDelta`). The
history is never re-tokenized, so the ids the trainer sees are the ids the model was
conditioned on, and each turn costs the same whatever the episode's length.

For a template that renders a conversation as the concatenation of its messages (ChatML as
Qwen2/2.5 and SmolLM2 use it: tested with SmolLM2's own template and a local one), these
ids equal a full re-render of the final conversation whenever the sampled tokens equal the
tokenization of the reply text. They cannot be equal for templates that rewrite past
turns: Qwen3 and DeepSeek-R1 drop the ``<think>`` part of earlier assistant messages, so a
re-render of the history differs from what the model saw while acting (the collector keeps
what the model saw; tested with such a template). Templates that render earlier messages
differently once a message is added (for example by moving the system prompt into the
latest user message) are detected by :class:`ChatDelta` when it is built, and refused.

**Limits.** ``max_turns`` (besides the env's own), ``max_new_tokens`` per turn and
``max_total_tokens`` per episode: a turn's generation budget is the smaller of
``max_new_tokens`` and the room left, and an episode whose next observation would leave no
room for one more token ends truncated with ``truncation_reason="context"``.

**Dead workers.** When a vector env's worker dies (see `agent_envs.vector`), the episodes it
ran end truncated with ``truncation_reason="worker_died"`` at the turn whose reply was lost
(that reply is not recorded); the other episodes carry on.

**Ranks in lockstep.** When the engine's ``generate`` is a collective across training ranks
(TRL's vLLM server mode), wrap it in :class:`~agent_envs.adapters.engines.lockstep.LockstepEngine`:
every rank then makes the same calls with equally many requests, and
:meth:`RolloutCollector.collect` calls its ``wait_for_other_ranks()`` after the last turn, so a rank
whose episodes ended early keeps answering the others' rounds until every rank is done.

**Image observations.** A vision env's observation ``{"text", "image"}`` (`agent_envs.core.
vision`) is recorded as its text in ``Step.observation`` and as a user message holding the
text and the picture (a PNG data URL, OpenAI format) in ``Trajectory.messages``, where
engines read the picture. An engine with a ``chat_delta`` (a :class:`ChatDelta` that encodes
images: `agent_envs.adapters.engines.transformers_vlm`) builds the token pieces, so each
observation's image placeholder tokens are in ``prompt_ids`` / ``turn_env_ids`` (env mask 0); with a
text tokenizer the token path sees the text part only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from agent_envs.adapters.loop.chat import ChatDelta
from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest
from agent_envs.renderers.image_obs import image_message
from gymnasium.vector import AutoresetMode

from agent_envs.core.records import Step, Trajectory

__all__ = ["WORKER_DIED", "Episode", "EpisodeRecorder", "RolloutCollector", "collect_episodes"]

#: The vector env's truncation reason for the episodes of a worker that died.
WORKER_DIED = "worker_died"


def _user_content(observation: Any) -> str | list[dict[str, Any]]:
    """A user message's content: the text, or for ``{"text", "image"}`` the text and image."""
    if isinstance(observation, dict):
        return image_message(observation["text"], observation["image"])["content"]
    return observation


def _text(observation: Any) -> str:
    return observation["text"] if isinstance(observation, dict) else observation


def _info_at(infos: dict[str, Any], index: int) -> dict[str, Any]:
    info = {}
    for key, values in infos.items():
        if key.startswith("_") or not infos.get("_" + key, np.ones(index + 1, bool))[index]:
            continue
        value = values[index]
        info[key] = value.item() if isinstance(value, np.generic) else value
    return info


class Episode:
    """The collector's running state of one sub-env's episode."""

    __slots__ = ("context", "done", "observation", "tokens", "trajectory")

    def __init__(self, trajectory: Trajectory, observation: str, tokens: bool) -> None:
        self.trajectory = trajectory
        self.observation = observation
        self.context: list[int] = []
        self.done = False
        self.tokens = tokens


class EpisodeRecorder:
    """What both collectors do to one episode, whatever drives it: open its record, build its
    next request, record a turn (token ids as in the module docstring), end it. The lockstep
    :class:`RolloutCollector` and `agent_envs.adapters.loop.async_collector.AsyncRolloutCollector`
    share it, so their records are built by the same code.

    ``on_episode_end`` is called with each episode's finished record the moment it ends
    (solved, out of turns, truncated or failed), before the batch returns: a progress bar
    can move per episode, and a caller can write each record as soon as it is complete.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        env_id: str,
        max_turns: int | None = None,
        max_new_tokens: int = 256,
        max_total_tokens: int | None = None,
        on_episode_end: Callable[[Trajectory], None] | None = None,
    ) -> None:
        for name, value in (
            ("max_turns", max_turns),
            ("max_new_tokens", max_new_tokens),
            ("max_total_tokens", max_total_tokens),
        ):
            if value is None and name != "max_new_tokens":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if on_episode_end is not None and not callable(on_episode_end):
            raise ValueError(f"on_episode_end must be a callable or None, got {on_episode_end!r}")
        self.on_episode_end = on_episode_end
        self.engine = engine
        self.env_id = env_id
        self.max_turns = max_turns
        self.max_new_tokens = max_new_tokens
        self.max_total_tokens = max_total_tokens
        tokenizer = getattr(engine, "tokenizer", None)
        self.delta: ChatDelta | None = getattr(engine, "chat_delta", None)  # image-aware
        if self.delta is None and tokenizer is not None:
            self.delta = ChatDelta(tokenizer)
        self.needs_env = bool(getattr(engine, "needs_env", False))

    def _open(
        self,
        observation: str,
        info: dict[str, Any],
        instructions: str,
        *,
        seed: int,
        group_id: int,
        metadata: dict[str, Any] | None,
    ) -> Episode:
        """A new episode's record, from its reset."""
        trajectory = Trajectory(
            env_id=self.env_id,
            seed=info.get("episode_seed", seed),
            group_id=group_id,
            messages=[
                {"role": "system", "content": instructions},
                {"role": "user", "content": _user_content(observation)},
            ],
            final_observation=_text(observation),
            agent=getattr(self.engine, "name", None),
            metadata=dict(metadata or {}),
        )
        episode = Episode(trajectory, _text(observation), tokens=self.delta is not None)
        if self.delta is not None:
            episode.context = self.delta.prompt_ids(trajectory.messages)
            trajectory.prompt_ids = list(episode.context)
            trajectory.turn_completion_ids = []
            trajectory.turn_env_ids = []
            trajectory.turn_logprobs = []
            if self._room(episode) < 1:
                self._end(episode, truncation_reason="context")
        return episode

    def _request(self, episode: Episode, env: Any) -> GenerationRequest:
        """The episode's next turn (``env``: the live unwrapped env, for scripted engines)."""
        return GenerationRequest(
            max_new_tokens=self._room(episode),
            prompt_ids=episode.context if episode.tokens else None,
            messages=episode.trajectory.messages,
            env=env if self.needs_env else None,
            stop_token_ids=self.delta.stop_token_ids if self.delta else (),
        )

    def _room(self, episode: Episode) -> int:
        if self.max_total_tokens is None or not episode.tokens:
            return self.max_new_tokens
        return min(self.max_new_tokens, self.max_total_tokens - len(episode.context))

    def _record(
        self,
        episode: Episode,
        generation: Generation,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> None:
        trajectory = episode.trajectory
        trajectory.steps.append(
            Step(
                observation=episode.observation,
                reply=generation.text,
                parsed_actions=list(info.get("parsed_actions", [])),
                reward=reward,
                info=info,
                state_hash=info.get("state_hash"),
            )
        )
        content = _user_content(observation)
        trajectory.messages.append({"role": "assistant", "content": generation.text})
        trajectory.messages.append({"role": "user", "content": content})
        trajectory.final_observation = episode.observation = _text(observation)
        trajectory.success = bool(info.get("success", False))
        if episode.tokens:
            if generation.token_ids is None:
                self._drop_tokens(episode)
            else:
                completion = list(generation.token_ids)
                trajectory.turn_completion_ids.append(completion)  # type: ignore[union-attr]
                if generation.logprobs is None or trajectory.turn_logprobs is None:
                    trajectory.turn_logprobs = None
                else:
                    trajectory.turn_logprobs.append(list(generation.logprobs))
                episode.context += completion
                trajectory.turn_env_ids.append([])  # type: ignore[union-attr]
        if terminated or truncated:
            trajectory.terminated = terminated
            trajectory.truncated = truncated and not terminated
            trajectory.truncation_reason = info.get("truncation_reason")
            self._finish(episode)
            return
        if episode.tokens:
            assert self.delta is not None
            delta = self.delta.turn_ids(trajectory.turn_completion_ids[-1], content)  # type: ignore[index]
            if self.max_total_tokens is not None and (
                len(episode.context) + len(delta) + 1 > self.max_total_tokens
            ):
                self._end(episode, truncation_reason="context")
                return
            trajectory.turn_env_ids[-1] = delta  # type: ignore[index]
            episode.context += delta

    def _drop_tokens(self, episode: Episode) -> None:
        """The engine gave no token ids for a turn: the episode keeps text only."""
        trajectory = episode.trajectory
        episode.tokens = False
        episode.context = []
        trajectory.prompt_ids = None
        trajectory.turn_completion_ids = None
        trajectory.turn_env_ids = None
        trajectory.turn_logprobs = None

    def _end(self, episode: Episode, *, truncation_reason: str, error: str | None = None) -> None:
        """End ``episode`` truncated by the collector (its turn, token or engine limits)."""
        trajectory = episode.trajectory
        trajectory.truncated = True
        trajectory.truncation_reason = truncation_reason
        trajectory.error = error
        if trajectory.turn_env_ids:
            trajectory.turn_env_ids[-1] = []
        self._finish(episode)

    def _finish(self, episode: Episode) -> None:
        episode.done = True
        if self.on_episode_end is not None:
            self.on_episode_end(episode.trajectory)


class RolloutCollector(EpisodeRecorder):
    """Collects episodes from ``vector_env`` (a `TextVectorEnv` with autoreset disabled) with
    ``engine``.

    Args:
        vector_env: e.g. ``gymnasium.make_vec(env_id, num_envs=N, group_size=G,
            autoreset_mode="disabled")``; one episode per sub-env per :meth:`collect`.
        engine: any `Engine`. With a ``tokenizer`` the episodes carry token fields.
        env_id: recorded in each trajectory (default: the vector env's spec id).
        max_turns: the collector's turn limit (``None``: the env's own).
        max_new_tokens: generation budget of one turn.
        max_total_tokens: token budget of one episode, prompt included (``None``: none).
        on_episode_end: called with each finished record as its episode ends (see
            :class:`EpisodeRecorder`).
    """

    def __init__(
        self,
        vector_env: Any,
        engine: Engine,
        *,
        env_id: str | None = None,
        max_turns: int | None = None,
        max_new_tokens: int = 256,
        max_total_tokens: int | None = None,
        on_episode_end: Callable[[Trajectory], None] | None = None,
    ) -> None:
        if getattr(vector_env, "autoreset_mode", None) is not AutoresetMode.DISABLED:
            raise ValueError(
                "vector_env must be built with autoreset_mode='disabled' (one episode per "
                f"sub-env), got {getattr(vector_env, 'autoreset_mode', None)!r}"
            )
        spec = getattr(vector_env, "spec", None)
        super().__init__(
            engine,
            env_id=env_id or (spec.id if spec is not None else "unknown"),
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_total_tokens=max_total_tokens,
            on_episode_end=on_episode_end,
        )
        self.vector_env = vector_env

    # ----------------------------------------------------------------- public
    def collect(
        self,
        seeds: int | Sequence[int],
        *,
        options: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Trajectory]:
        """Run one episode in every sub-env and return them in sub-env order.

        ``seeds``: one per group (``num_envs // group_size`` of them; the G members of a group
        share it) or a single int for a one-group vector env.
        """
        vec = self.vector_env
        group_size = getattr(vec, "group_size", 1)
        seeds = [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
        if len(seeds) * group_size != vec.num_envs:
            raise ValueError(
                f"seeds must have num_envs/group_size={vec.num_envs // group_size} entries, "
                f"got {len(seeds)}"
            )
        env_seeds = [int(seed) for seed in seeds for _ in range(group_size)]
        observations, infos = vec.reset(seed=env_seeds, options=options)
        instructions = vec.get_attr("instructions")
        episodes = [
            self._open(
                observation,
                _info_at(infos, index),
                instructions[index],
                seed=env_seeds[index],
                group_id=index // group_size,
                metadata=metadata,
            )
            for index, observation in enumerate(observations)
        ]
        turn = 0
        while any(not episode.done for episode in episodes):
            self._turn(episodes)
            turn += 1
            if self.max_turns is not None and turn >= self.max_turns:
                for episode in episodes:
                    if not episode.done:
                        self._end(episode, truncation_reason="max_turns")
        wait = getattr(self.engine, "wait_for_other_ranks", None)
        if callable(wait):  # a LockstepEngine: answer other ranks' rounds until all are done
            wait()
        return [episode.trajectory for episode in episodes]

    # ----------------------------------------------------------------- one turn
    def _turn(self, episodes: list[Episode]) -> None:
        vec = self.vector_env
        live = [index for index, episode in enumerate(episodes) if not episode.done]
        envs = vec.get_attr("unwrapped") if self.needs_env else None
        requests = [
            self._request(episodes[index], None if envs is None else envs[index]) for index in live
        ]
        generations = self.engine.generate(requests)
        if len(generations) != len(requests):
            raise RuntimeError(
                f"engine {self.engine!r} returned {len(generations)} generations for "
                f"{len(requests)} requests"
            )
        actions = [""] * vec.num_envs
        mask = np.zeros(vec.num_envs, dtype=np.bool_)
        answered: dict[int, Generation] = {}
        for index, generation in zip(live, generations, strict=True):
            if generation.error is not None:
                self._end(episodes[index], truncation_reason="error", error=generation.error)
                continue
            actions[index] = generation.text
            mask[index] = True
            answered[index] = generation
        if not answered:
            return
        observations, rewards, terminations, truncations, infos = vec.step(actions, mask)
        for index, generation in answered.items():
            info = _info_at(infos, index)
            if info.get("truncation_reason") == WORKER_DIED:
                # the env's worker died: the reply's outcome is lost, the episode ends here
                self._end(episodes[index], truncation_reason=WORKER_DIED)
                continue
            self._record(
                episodes[index],
                generation,
                observations[index],
                float(rewards[index]),
                bool(terminations[index]),
                bool(truncations[index]),
                info,
            )


def collect_episodes(
    env_id: str,
    engine: Engine,
    seeds: Sequence[int],
    *,
    group_size: int = 1,
    max_turns: int | None = None,
    max_new_tokens: int = 256,
    max_total_tokens: int | None = None,
    **env_kwargs: Any,
) -> list[Trajectory]:
    """One group of ``group_size`` episodes per seed of the registered ``env_id``."""
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    vec = gymnasium.make_vec(
        env_id,
        num_envs=len(seeds) * group_size,
        group_size=group_size,
        autoreset_mode="disabled",
        **env_kwargs,
    )
    try:
        collector = RolloutCollector(
            vec,
            engine,
            env_id=env_id,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_total_tokens=max_total_tokens,
        )
        return collector.collect(list(seeds))
    finally:
        vec.close()
