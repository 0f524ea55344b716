"""The asynchronous rollout collector: no episode waits for another.

:class:`AsyncRolloutCollector` runs every episode as its own asyncio task: it asks the engine
for its next turn as soon as its own previous reply came back and its env stepped, so a short
reply or a short episode never waits for the slowest member of a batch (the lockstep
:class:`~agent_envs.adapters.loop.collector.RolloutCollector` sends one batch per turn and waits for
all of it). At most ``max_concurrency`` episodes run at once; a finished episode hands its env to
the next one.

**The same records.** Episodes are opened, recorded turn by turn (token-in token-out ids,
``ChatDelta``, limits, ``truncation_reason`` values) and ended by the lockstep collector's own
code (:class:`~agent_envs.adapters.loop.collector.EpisodeRecorder`), and returned in the same order
(one group of ``group_size`` members per seed, ``group_id`` = position of the seed). With a
deterministic engine (scripted policies that read only their own episode, greedy decoding)
the records equal the lockstep collector's for the same seeds (tested). Sampling engines
differ in one way: which request gets which per-request seed (``seed + k``, k counted in
request order) follows the order requests are made, which is not lockstep's.

**Engines.** An engine with ``async def agenerate(request) -> Generation`` is awaited per
request: :class:`~agent_envs.adapters.engines.openai_http.OpenAIEngine` (the openai SDK's
``AsyncOpenAI``) and :class:`~agent_envs.adapters.engines.vllm_async.VLLMAsyncEngine` (vLLM's
``AsyncLLM``). Any other
`Engine` (transformers, scripted) is wrapped in :class:`BatchingEngine`: its ``generate`` runs
in a worker thread on every request waiting when the previous batch returns. An engine that
raises, or returns a `Generation` with ``error``, ends that episode only
(``truncation_reason="error"``). Collective engines (``LockstepEngine``) need every rank in
the same call and are refused.

**Env calls** (``reset``, ``step``) run on the event loop's thread, between awaits: they are
microseconds to milliseconds for every env here except BIRD's SQL queries, which hold up
the other episodes' bookkeeping (not their requests in flight) while they run.

**Staleness.** The collector never changes weights, so the episodes of one :meth:`collect`
are on-policy as long as the trainer does not update the engine's weights during it. To
overlap rollout with training, run the next ``collect`` (or :meth:`stream`) while training
on the previous one and pass ``policy_version`` (a callable returning the trainer's current
version, bumped at each weight sync): each trajectory records the version every turn was
requested under (``metadata["policy_versions"]``), and :func:`staleness` is how many
versions its oldest turn lags behind a given version. With one batch collected ahead of the
trainer and weights synced after every optimizer step, the trainer consumes samples whose
staleness is at most 1; with ``k`` batches in flight, at most ``k``. Drop (or importance
correct) samples beyond your bound, as TRL's ``AsyncGRPOTrainer`` does with
``max_staleness``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from agent_envs.adapters.loop.collector import Episode, EpisodeRecorder
from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest

from agent_envs.core.records import Trajectory

__all__ = [
    "AsyncEngine",
    "AsyncRolloutCollector",
    "BatchingEngine",
    "acollect_episodes",
    "staleness",
]


@runtime_checkable
class AsyncEngine(Protocol):
    """An engine answering one request at a time from a running event loop."""

    name: str
    tokenizer: Any

    async def agenerate(self, request: GenerationRequest) -> Generation: ...


class BatchingEngine:
    """A batch `Engine` as an `AsyncEngine`: requests wait while a batch runs, and all that
    are waiting when it returns go into the next ``engine.generate`` call (at most
    ``max_batch_size``), run in a worker thread so the event loop keeps stepping envs.
    One batch runs at a time (engines such as transformers are not thread-safe)."""

    def __init__(self, engine: Engine, *, max_batch_size: int | None = None) -> None:
        if max_batch_size is not None and (
            isinstance(max_batch_size, bool)
            or not isinstance(max_batch_size, int)
            or max_batch_size < 1
        ):
            raise ValueError(
                f"max_batch_size must be a positive int or None, got {max_batch_size!r}"
            )
        self.engine = engine
        self.max_batch_size = max_batch_size
        self.name = getattr(engine, "name", type(engine).__name__)
        self.tokenizer = getattr(engine, "tokenizer", None)
        self.chat_delta = getattr(engine, "chat_delta", None)  # image-aware engines (VLMs)
        self.needs_env = bool(getattr(engine, "needs_env", False))
        self._waiting: list[tuple[GenerationRequest, asyncio.Future[Generation]]] = []
        self._runner: asyncio.Task[None] | None = None
        #: the size of every batch sent so far
        self.batch_sizes: list[int] = []

    async def agenerate(self, request: GenerationRequest) -> Generation:
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        await asyncio.sleep(0)  # let the episodes that are ready now join the first batch
        while self._waiting:
            size = self.max_batch_size or len(self._waiting)
            batch, self._waiting = self._waiting[:size], self._waiting[size:]
            requests = [request for request, _ in batch]
            self.batch_sizes.append(len(requests))
            try:
                generations = await asyncio.to_thread(self.engine.generate, requests)
                if len(generations) != len(requests):
                    raise RuntimeError(
                        f"engine {self.engine!r} returned {len(generations)} generations for "
                        f"{len(requests)} requests"
                    )
            except Exception as error:  # the engine failed the whole batch
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), generation in zip(batch, generations, strict=True):
                if not future.done():
                    future.set_result(generation)


def _plain_info(info: dict[str, Any]) -> dict[str, Any]:
    """A single env's info as the lockstep collector reads it out of a batched info: numpy
    scalars as Python values, private (``_``) keys left out."""
    return {
        key: value.item() if isinstance(value, np.generic) else value
        for key, value in info.items()
        if not key.startswith("_")
    }


def staleness(trajectory: Trajectory, current_version: int) -> int:
    """How many policy versions the oldest turn of ``trajectory`` lags ``current_version``
    (0 for a trajectory recorded without ``policy_version``)."""
    versions = trajectory.metadata.get("policy_versions") or [current_version]
    return int(current_version) - int(min(versions))


class AsyncRolloutCollector(EpisodeRecorder):
    """Collects episodes with ``engine``, each on its own, at most ``max_concurrency`` at once.

    Args:
        make_env: returns a fresh text env (the same class and arguments the lockstep
            collector's vector env builds, e.g. ``lambda: gymnasium.make(env_id).unwrapped``);
            called when an episode starts and no idle env is left, so at most
            ``max_concurrency`` envs exist.
        engine: an `AsyncEngine`, or any `Engine` (wrapped in :class:`BatchingEngine`).
        env_id: recorded in each trajectory (default: the first env's spec id).
        max_concurrency: episodes in flight at once (each has at most one request out).
        max_turns, max_new_tokens, max_total_tokens: as for
            :class:`~agent_envs.adapters.loop.collector.RolloutCollector`.
        policy_version: returns the trainer's current policy version; each turn records the
            version it was requested under in ``metadata["policy_versions"]`` (see
            :func:`staleness`).
        on_episode_end: called with each finished record as its episode ends, in the order
            episodes end (see :class:`~agent_envs.adapters.loop.collector.EpisodeRecorder`).
    """

    def __init__(
        self,
        make_env: Callable[[], Any],
        engine: Engine | AsyncEngine,
        *,
        env_id: str | None = None,
        max_concurrency: int = 8,
        max_turns: int | None = None,
        max_new_tokens: int = 256,
        max_total_tokens: int | None = None,
        policy_version: Callable[[], int] | None = None,
        on_episode_end: Callable[[Trajectory], None] | None = None,
    ) -> None:
        if not callable(make_env):
            raise ValueError(f"make_env must be a callable returning an env, got {make_env!r}")
        if (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ValueError(f"max_concurrency must be a positive int, got {max_concurrency!r}")
        if callable(getattr(engine, "wait_for_other_ranks", None)):
            raise ValueError(
                "engine is a collective LockstepEngine (every rank in the same generate call): "
                "use the lockstep RolloutCollector with it"
            )
        if policy_version is not None and not callable(policy_version):
            raise ValueError(f"policy_version must be a callable or None, got {policy_version!r}")
        if not callable(getattr(engine, "agenerate", None)):
            engine = BatchingEngine(engine)  # type: ignore[arg-type]
        first = make_env()
        spec = getattr(first, "spec", None)
        super().__init__(
            engine,  # type: ignore[arg-type]
            env_id=env_id or (spec.id if spec is not None else "unknown"),
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_total_tokens=max_total_tokens,
            on_episode_end=on_episode_end,
        )
        self.make_env = make_env
        self.max_concurrency = max_concurrency
        self.policy_version = policy_version
        self._idle_envs: list[Any] = [first]
        self.envs_made = 1

    # ----------------------------------------------------------------- public
    async def collect(
        self,
        seeds: int | Sequence[int],
        *,
        group_size: int = 1,
        options: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Trajectory]:
        """Run ``group_size`` episodes from each seed; the trajectories in the lockstep
        collector's order (groups in seed order, members in turn)."""
        groups = [group async for group in self._groups(seeds, group_size, options, metadata)]
        groups.sort(key=lambda group: group[0].group_id)
        return [trajectory for group in groups for trajectory in group]

    async def stream(
        self,
        seeds: int | Sequence[int],
        *,
        group_size: int = 1,
        options: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AsyncIterator[list[Trajectory]]:
        """Yield each group (its ``group_size`` trajectories) as soon as all its members are
        done, in the order groups finish: a trainer can start on the first groups while the
        others run."""
        async for group in self._groups(seeds, group_size, options, metadata):
            yield group

    def close(self) -> None:
        """Close the idle envs (the collector can still be used: it makes new ones)."""
        while self._idle_envs:
            self._idle_envs.pop().close()

    # ----------------------------------------------------------------- episodes
    async def _groups(
        self,
        seeds: int | Sequence[int],
        group_size: int,
        options: dict[str, Any] | None,
        metadata: dict[str, Any] | None,
    ) -> AsyncIterator[list[Trajectory]]:
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        seeds = [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
        slots = asyncio.Semaphore(self.max_concurrency)
        episodes = [
            [
                asyncio.create_task(
                    self._episode(slots, int(seed), group_id, options, metadata),
                    name=f"episode-{group_id * group_size + member}",
                )
                for member in range(group_size)
            ]
            for group_id, seed in enumerate(seeds)
        ]
        groups = [asyncio.ensure_future(asyncio.gather(*members)) for members in episodes]
        try:
            for done in asyncio.as_completed(groups):
                yield await done
        finally:  # an env error (or a consumer that stopped early) ends every other episode
            for members in episodes:
                for task in members:
                    task.cancel()
            await asyncio.gather(*groups, return_exceptions=True)

    async def _episode(
        self,
        slots: asyncio.Semaphore,
        seed: int,
        group_id: int,
        options: dict[str, Any] | None,
        metadata: dict[str, Any] | None,
    ) -> Trajectory:
        async with slots:
            env = self._idle_envs.pop() if self._idle_envs else self._new_env()
            try:
                return await self._run(env, seed, group_id, options, metadata)
            finally:
                self._idle_envs.append(env)

    def _new_env(self) -> Any:
        self.envs_made += 1
        return self.make_env()

    async def _run(
        self,
        env: Any,
        seed: int,
        group_id: int,
        options: dict[str, Any] | None,
        metadata: dict[str, Any] | None,
    ) -> Trajectory:
        observation, info = env.reset(seed=seed, options=options)
        episode = self._open(
            observation,
            _plain_info(info),
            env.get_wrapper_attr("instructions"),
            seed=seed,
            group_id=group_id,
            metadata=metadata,
        )
        versions: list[int] = []
        if self.policy_version is not None:
            episode.trajectory.metadata["policy_versions"] = versions
        turn = 0
        while not episode.done:
            if self.policy_version is not None:
                versions.append(int(self.policy_version()))
            generation = await self._generate(episode, env)
            if generation.error is not None:
                self._end(episode, truncation_reason="error", error=generation.error)
                break
            observation, reward, terminated, truncated, info = env.step(generation.text)
            self._record(
                episode,
                generation,
                observation,
                float(reward),
                bool(terminated),
                bool(truncated),
                _plain_info(info),
            )
            turn += 1
            if not episode.done and self.max_turns is not None and turn >= self.max_turns:
                self._end(episode, truncation_reason="max_turns")
        return episode.trajectory

    async def _generate(self, episode: Episode, env: Any) -> Generation:
        request = self._request(episode, env.unwrapped)
        try:
            return await self.engine.agenerate(request)  # type: ignore[attr-defined]
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a failing engine ends this episode, not the others
            return Generation("", finish_reason="error", error=repr(error))


async def acollect_episodes(
    env_id: str,
    engine: Engine | AsyncEngine,
    seeds: Sequence[int],
    *,
    group_size: int = 1,
    max_concurrency: int = 8,
    max_turns: int | None = None,
    max_new_tokens: int = 256,
    max_total_tokens: int | None = None,
    policy_version: Callable[[], int] | None = None,
    **env_kwargs: Any,
) -> list[Trajectory]:
    """The async twin of :func:`agent_envs.adapters.loop.collector.collect_episodes`: one group of
    ``group_size`` episodes per seed of the registered ``env_id``, the same records in the
    same order (``asyncio.run(acollect_episodes(...))`` from synchronous code)."""
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    def make_env() -> Any:
        # the env itself, as the lockstep collector's vector env builds it (no wrappers)
        return gymnasium.make(env_id, disable_env_checker=True, **env_kwargs).unwrapped

    collector = AsyncRolloutCollector(
        make_env,
        engine,
        env_id=env_id,
        max_concurrency=max_concurrency,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        max_total_tokens=max_total_tokens,
        policy_version=policy_version,
    )
    try:
        return await collector.collect(list(seeds), group_size=group_size)
    finally:
        collector.close()
