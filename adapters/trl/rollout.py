"""TRL glue: multi-turn episodes of any ``grl/*`` env as GRPO rollouts (TRL's public API only).

Three pieces, used together::

    from trl import GRPOConfig, GRPOTrainer
    from agent_envs.adapters.trl import (
        episode_return_reward, make_episode_dataset, make_rollout_func,
    )

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(1000)),
        rollout_func=make_rollout_func("grl/Sokoban-v0", max_new_tokens=128,
                                       max_total_tokens=2048),
        args=GRPOConfig(num_generations=8, ...),
    )

- :func:`make_episode_dataset`: one row per episode; the ``prompt`` column is the episode key
  (a JSON string with the env id and seed), which is what TRL hands to ``rollout_func``.
- :func:`make_rollout_func`: TRL passes each key ``num_generations`` times; every copy is an
  episode from the same seed, hence the same start state (a GRPO group). Episodes run through the
  :class:`~agent_envs.adapters.loop.collector.RolloutCollector`, on ``trainer.vllm_generation`` when
  the trainer uses vLLM, otherwise on the trainer's own model with ``transformers``. It returns, one
  row per prompt: ``prompt_ids`` (template of the system message and first observation),
  ``completion_ids`` (the whole multi-turn episode after it), ``logprobs`` (sampled-token
  log-probabilities, 0 on env tokens), ``env_mask`` (1 = model token, 0 = env/template token: TRL
  multiplies it into the loss mask), and ``episode_return``, ``success``, ``num_turns``,
  ``engine_error``, ``env_id`` and ``rollout_seconds`` (the batch's wall time, shared out
  over its rows), which TRL forwards to reward functions. An episode that ended
  with an engine error, or whose env worker died (``truncation_reason="worker_died"``), gets an
  all-zero ``env_mask`` (no loss) and no reward.
- :func:`episode_return_reward`: the reward function returning each episode's return
  (:func:`success_reward`: 1 for a solved episode). Both log each env's mean through TRL's
  ``log_metric`` (``episodes/return/<env_id>``, ``episodes/success/<env_id>``, and the
  rollout's wall seconds per episode, ``episodes/seconds/<env_id>``), so a run over several
  envs (:func:`route_by_env`) has a curve per env and shows which env its steps wait on.

Per-token advantages: ``make_rollout_func(..., advantages=AdvantageConfig(...))`` adds
``token_advantages`` (GRPO, Dr. GRPO, RLOO or GiGPO from :mod:`agent_envs.adapters.advantages`,
computed over each group's records) and ``off_policy`` (LUFFY's oracle rows, ``off_policy=k`` per
group, from the start state or, with ``oracle_start="recovery"``, from where a failed episode
of the group stood after its first turn); train them with
:class:`agent_envs.adapters.trl.grpo_trainer.TokenAdvantageGRPOTrainer`.

:func:`make_environment_factory` (with :func:`make_tool_dataset`) builds the other TRL
route, ``environment_factory``, for tool-calling models: the env's turn as a documented tool
method and ``get_reward()``.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from agent_envs.adapters import advantages as estimators
from agent_envs.adapters.loop.collector import RolloutCollector
from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig
from agent_envs.adapters.trl.config import AdvantageConfig

from agent_envs.core.records import Trajectory

__all__ = [
    "GenerationCopy",
    "episode_key",
    "episode_return_reward",
    "make_episode_dataset",
    "make_rollout_func",
    "parse_episode_key",
    "route_by_env",
    "success_reward",
]


def episode_key(env_id: str, seed: int) -> str:
    """The ``prompt`` of one episode: ``{"env_id": ..., "seed": ...}`` as compact JSON."""
    return json.dumps({"env_id": env_id, "seed": int(seed)}, separators=(",", ":"))


def parse_episode_key(prompt: Any) -> tuple[str, int]:
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        prompt = prompt[-1].get("content", "")
    try:
        data = json.loads(prompt)
        return str(data["env_id"]), int(data["seed"])
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(
            f"prompt {prompt!r} is not an episode key; build the dataset with "
            "make_episode_dataset()"
        ) from error


def make_episode_dataset(env_id: str, seeds: Iterable[int], **env_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` with one row per seed: ``prompt`` (the episode key), ``env_id``,
    ``seed`` and ``instructions`` (for reading logs; rollouts do not use it).

    ``env_kwargs`` are checked by building the env once (a bad argument raises here, not in
    the middle of training); pass the same ones to :func:`make_rollout_func`.
    """
    import datasets
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    seeds = [int(seed) for seed in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    env = gymnasium.make(env_id, **env_kwargs)
    instructions = env.unwrapped.instructions
    env.close()
    return datasets.Dataset.from_dict(
        {
            "prompt": [episode_key(env_id, seed) for seed in seeds],
            "env_id": [env_id] * len(seeds),
            "seed": seeds,
            "instructions": [instructions] * len(seeds),
        }
    )


class _TRLServerEngine:
    """TRL's vLLM generation in server mode (``trainer.vllm_generation.generate``): the
    trainer's sampling settings; each reply is cut to the request's budget."""

    def __init__(self, generation: Any, tokenizer: Any) -> None:
        self.generation = generation
        self.tokenizer = tokenizer
        self.name = "trl-vllm"

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        prompts = [list(request.prompt_ids or ()) for request in requests]
        _, completions, logprobs, _ = self.generation.generate(
            prompts=prompts, images=None, num_generations=1
        )
        if logprobs is None:
            logprobs = [[] for _ in completions]
        generations = []
        for request, ids, values in zip(requests, completions, logprobs, strict=True):
            ids = list(ids)[: request.max_new_tokens]
            stops = set(request.stop_token_ids)
            stop_at = next((i for i, token in enumerate(ids) if token in stops), None)
            if stop_at is not None:
                ids = ids[: stop_at + 1]
            sampled = [float(step[0]) if step and step[0] is not None else 0.0 for step in values]
            sampled += [0.0] * (len(ids) - len(sampled))
            text_ids = ids[:-1] if stop_at is not None else ids
            generations.append(
                Generation(
                    text=self.tokenizer.decode(text_ids, skip_special_tokens=True),
                    token_ids=ids,
                    logprobs=sampled[: len(ids)],
                    finish_reason="stop" if stop_at is not None else "length",
                )
            )
        return generations


class GenerationCopy:
    """A copy of a model in another dtype for generating episodes (LoRA adapters merged),
    made again whenever the model's weights changed (an optimizer step writes them in place).

    On CPU, decoding one token reads every weight, and a bfloat16 copy halves those bytes; under
    autocast each step would cast the fp32 weights again, and the LoRA layers add their own matmuls.
    Measured on a 2-core Xeon inside ``agent_envs.benchmarks.train``'s GRPO stage (SmolLM2-135M, 8
    Blocksworld episodes, 34 turns): 15.5 s on the copy against 27.9 s on the trained model. Making
    the copy costs one deep copy and merge per optimizer step (~1 s here). The episodes' logprobs
    are the copy's (TRL scores the tokens again with the trained model).
    """

    def __init__(self, dtype: str = "bfloat16") -> None:
        import torch

        value = getattr(torch, dtype, None) if isinstance(dtype, str) else None
        if not isinstance(value, torch.dtype) or not value.is_floating_point:
            raise ValueError(f"generation dtype must name a torch float dtype, got {dtype!r}")
        self.dtype = value
        self._model: Any = None
        self._version: Any = None

    def __call__(self, model: Any) -> Any:
        from agent_envs.adapters.engines.transformers import weights_version

        version = weights_version(model)
        if self._model is None or version is None or version != self._version:
            self._model = None  # free the old copy before making the new one
            self._model = self._copy(model)
            self._version = version
        return self._model

    def _copy(self, model: Any) -> Any:
        import copy

        import torch

        with torch.no_grad():
            duplicate = copy.deepcopy(model)
            if hasattr(duplicate, "merge_and_unload"):  # a peft model: fold the adapters in
                duplicate = duplicate.merge_and_unload()
            duplicate = duplicate.to(self.dtype)
        for module in duplicate.modules():
            _drop_forward_wrappers(module)
        duplicate.eval()
        duplicate.requires_grad_(False)
        return duplicate


def _drop_forward_wrappers(module: Any) -> None:
    """Give ``module`` its class's ``forward`` back where an instance attribute wraps it
    (accelerate's mixed-precision wrapper, autocast and outputs cast to float32, comes along
    with a copy of a prepared model: a bfloat16 copy's forward ran 4.5x slower under it)."""
    import inspect

    patched = module.__dict__.get("forward")
    if patched is None:
        return
    inner = inspect.unwrap(getattr(patched, "__func__", patched))
    if inner is inspect.unwrap(type(module).forward):
        del module.__dict__["forward"]
        module.__dict__.pop("_original_forward", None)


def _trainer_engine(trainer: Any, generation_copy: GenerationCopy | None = None) -> Any:
    """vLLM when the trainer runs it, else ``transformers`` on the trainer's model (or, with
    ``generation_copy``, on its copy in that dtype).

    Colocated vLLM without tensor parallelism or sleep mode: `VLLMEngine` on the trainer's
    ``LLM`` (per-request budgets and stop tokens). Otherwise (server mode, tensor-parallel
    or sleeping colocated engines): ``trainer.vllm_generation.generate``, which handles the
    gathering and waking TRL needs, with the trainer's sampling settings
    (``max_completion_length`` tokens per call, cut to the turn's budget).
    """
    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    args = trainer.args
    sampling = SamplingConfig(
        temperature=float(args.temperature),
        top_p=float(args.top_p),
        top_k=int(args.top_k or 0),
    )
    if getattr(trainer, "use_vllm", False):
        generation = trainer.vllm_generation
        plain_colocate = (
            getattr(generation, "mode", None) == "colocate"
            and getattr(args, "vllm_tensor_parallel_size", 1) == 1
            and not getattr(args, "vllm_enable_sleep_mode", False)
        )
        if plain_colocate:
            from agent_envs.adapters.engines.vllm import VLLMEngine

            return VLLMEngine(generation.llm, tokenizer=tokenizer, sampling=sampling)
        return _TRLServerEngine(generation, tokenizer)
    from agent_envs.adapters.engines.transformers import TransformersEngine

    model = trainer.accelerator.unwrap_model(trainer.model)
    if generation_copy is not None:
        model = generation_copy(model)
    return TransformersEngine(model, tokenizer, sampling=sampling, name="trainer-model")


logger = logging.getLogger(__name__)

#: endings that are no behaviour of the policy: an engine failure, a dead env worker
_FAILED_ENDINGS = ("error", "worker_died")


def _is_error(trajectory: Trajectory) -> bool:
    return trajectory.truncation_reason in _FAILED_ENDINGS


def _rows(
    trajectories: list[Trajectory],
    pad_token_id: int,
    token_advantages: list[np.ndarray] | None = None,
) -> dict[str, list[Any]]:
    output: dict[str, list[Any]] = {
        "prompt_ids": [],
        "completion_ids": [],
        "logprobs": [],
        "env_mask": [],
        "episode_return": [],
        "success": [],
        "num_turns": [],
        "engine_error": [],
        "env_id": [],
    }
    if token_advantages is not None:
        output["token_advantages"] = []
        output["off_policy"] = []
        output["replayed_turns"] = []
    for index, trajectory in enumerate(trajectories):
        completion = trajectory.completion_ids
        mask = _trained_mask(trajectory)
        logprobs = trajectory.completion_logprobs or [0.0] * len(completion)
        error = _is_error(trajectory)
        if error:  # an engine failure is no behaviour to learn from: no token reaches the loss
            mask = [0] * len(completion)
        if not completion:  # no turn fitted in the context: one inert token
            completion, mask, logprobs = [pad_token_id], [0], [0.0]
        output["prompt_ids"].append(list(trajectory.prompt_ids or ()))
        output["completion_ids"].append(completion)
        output["logprobs"].append(logprobs)
        output["env_mask"].append(mask)
        output["episode_return"].append(trajectory.episode_return)
        output["success"].append(trajectory.success)
        output["num_turns"].append(trajectory.num_turns)
        output["engine_error"].append(error)
        output["env_id"].append(trajectory.env_id)
        if token_advantages is not None:
            values = [float(value) for value in token_advantages[index]]
            output["token_advantages"].append(values or [0.0] * len(completion))
            output["off_policy"].append(estimators.is_off_policy(trajectory))
            output["replayed_turns"].append(int(trajectory.metadata.get("replayed_turns", 0)))
    return output


def _recovery_starts(group: list[Trajectory], k: int) -> list[Trajectory]:
    """Up to ``k`` sampled episodes of a group to recover from: failed, no engine error, token
    records, and still running after their first turn."""
    return [
        trajectory
        for trajectory in group
        if not trajectory.success
        and not _is_error(trajectory)
        and trajectory.num_turns >= 2
        and trajectory.turn_completion_ids
    ][:k]


class _ReplayEngine:
    """The oracle, except on the first turn of each sub-env given a start: there it replays
    that episode's first reply, text and token ids (``envs``: the collecting vector env's
    unwrapped sub-envs, in order, one per start)."""

    needs_env = True
    name = "oracle"

    def __init__(self, oracle: Any, envs: list[Any], starts: list[Trajectory]) -> None:
        self.oracle = oracle
        self.tokenizer = oracle.tokenizer
        self._first = {
            id(env): Generation(start.steps[0].reply, token_ids=list(start.turn_completion_ids[0]))
            for env, start in zip(envs, starts, strict=True)
        }

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        replies: list[Generation | None] = [None] * len(requests)
        for index, request in enumerate(requests):
            if any(message["role"] == "assistant" for message in request.messages or ()):
                continue  # past the first turn: the oracle's
            first = self._first.get(id(request.env))
            replies[index] = (
                copy.deepcopy(first)
                if first is not None
                else Generation(  # a copy of the env (a worker process): nothing to replay on
                    "", finish_reason="error", error="recovery replay needs in-process envs"
                )
            )
        rest = [index for index, reply in enumerate(replies) if reply is None]
        oracle = self.oracle.generate([requests[index] for index in rest])
        for index, reply in zip(rest, oracle, strict=True):
            replies[index] = reply
        return replies  # type: ignore[return-value]


def _trained_mask(trajectory: Trajectory) -> list[int]:
    """:attr:`Trajectory.env_mask` with the tokens of replayed turns (``metadata
    ["replayed_turns"]``, see :class:`AdvantageConfig`'s ``oracle_start``) set to 0."""
    mask = trajectory.env_mask
    replayed = int(trajectory.metadata.get("replayed_turns", 0))
    if replayed and trajectory.turn_completion_ids is not None:
        env_turns = trajectory.turn_env_ids or [[] for _ in trajectory.turn_completion_ids]
        end = sum(
            len(model) + len(env)
            for model, env in zip(
                trajectory.turn_completion_ids[:replayed], env_turns[:replayed], strict=True
            )
        )
        mask[:end] = [0] * end
    return mask


def _groups(keys: list[tuple[str, int]], group_size: int | None) -> list[list[int]]:
    """Row indices of each group: the rows of one key, in chunks of ``group_size`` (TRL's
    sampler puts the copies of a prompt next to each other; a key may recur as a new group)."""
    by_key: dict[tuple[str, int], list[int]] = {}
    for row, key in enumerate(keys):
        by_key.setdefault(key, []).append(row)
    groups = []
    for key, rows in by_key.items():
        size = group_size or len(rows)
        if len(rows) % size:
            raise ValueError(
                f"this process got {len(rows)} rows of {key}, not a multiple of "
                f"num_generations={size}: per-token advantages need whole groups on every "
                "process (make per_device_train_batch_size * steps_per_generation a multiple "
                "of num_generations)"
            )
        groups += [rows[start : start + size] for start in range(0, len(rows), size)]
    return sorted(groups)


def _group_size(trainer: Any) -> int | None:
    if trainer is None:
        return None
    training = getattr(getattr(trainer, "model", None), "training", True)
    return int(trainer.num_generations if training else trainer.num_generations_eval)


def make_rollout_func(
    env_id: str,
    *,
    max_new_tokens: int = 256,
    max_total_tokens: int = 4096,
    max_turns: int | None = None,
    engine: Any = None,
    on_trajectories: Callable[[list[Trajectory]], None] | None = None,
    advantages: AdvantageConfig | str | None = None,
    generation_dtype: str | GenerationCopy | None = None,
    **env_kwargs: Any,
) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """The ``rollout_func(prompts, trainer) -> dict`` for ``GRPOTrainer`` (module docstring).

    Args:
        env_id: the registered id; every prompt must be a key of this id.
        max_new_tokens: generation budget of one turn.
        max_total_tokens: token budget of one episode, prompt included (longer episodes end
            with ``truncation_reason="context"``).
        max_turns: the collector's turn limit (``None``: the env's own).
        engine: generate with this engine instead of the trainer's (tests, custom serving).
        on_trajectories: called with each batch's trajectories, one per row (logging, saving
            as JSONL).
        advantages: an :class:`AdvantageConfig` (or an estimator name): the rows also carry
            ``token_advantages`` (one per completion token, 0 on env tokens), ``off_policy``
            and ``replayed_turns`` (turns given no loss), which
            :class:`agent_envs.adapters.trl.grpo_trainer.TokenAdvantageGRPOTrainer` trains with.
            ``None``: TRL computes advantages from the rewards.
        generation_dtype: generate with ``transformers`` on a copy of the trainer's model in
            this dtype (e.g. ``"bfloat16"``; LoRA merged), made again after every optimizer
            step (:class:`GenerationCopy`); or a :class:`GenerationCopy`, to share one copy
            between the rollout functions of several envs; ``None``: on the trainer's model
            itself. Not used with vLLM or ``engine``.
        env_kwargs: the env's keyword arguments, as given to :func:`make_episode_dataset`.

    Episodes that ended with an engine error (``truncation_reason="error"``) get an all-zero
    ``env_mask`` and ``engine_error=True``: the reward functions here return ``None`` for them
    (TRL then leaves them out of its group statistics), per-token advantages leave them out of
    the group statistics and give them 0, and their count is logged.
    """
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if env_id not in gymnasium.registry:
        raise ValueError(f"env_id {env_id!r} is not registered")
    if isinstance(advantages, str):
        advantages = AdvantageConfig(estimator=advantages)
    if advantages is not None and not isinstance(advantages, AdvantageConfig):
        raise ValueError(
            f"advantages must be an AdvantageConfig, an estimator name or None, got {advantages!r}"
        )
    if isinstance(generation_dtype, GenerationCopy):
        generation_copy: GenerationCopy | None = generation_dtype
    else:
        generation_copy = GenerationCopy(generation_dtype) if generation_dtype else None
    vector_envs: dict[int, Any] = {}

    def vector_env(num_envs: int) -> Any:
        if num_envs not in vector_envs:
            vector_envs[num_envs] = gymnasium.make_vec(
                env_id, num_envs=num_envs, autoreset_mode="disabled", **env_kwargs
            )
        return vector_envs[num_envs]

    def collect(run_engine: Any, seeds: list[int]) -> list[Trajectory]:
        if not seeds:
            return []
        collector = RolloutCollector(
            vector_env(len(seeds)),
            run_engine,
            env_id=env_id,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_total_tokens=max_total_tokens,
        )
        return collector.collect(seeds)

    def mix_oracle(sampled: list[Trajectory], tokenizer: Any, k: int) -> list[Trajectory]:
        """LUFFY's groups: each group's sampled episodes, then ``k`` oracle episodes."""
        from agent_envs.adapters.engines.scripted import oracle_engine

        oracle = oracle_engine(tokenizer=tokenizer, rationale=advantages.oracle_rationale)
        groups = [[sampled[row] for row in rows] for rows in estimators.episode_groups(sampled)]
        starts = [
            _recovery_starts(group, k) if advantages.oracle_start == "recovery" else []
            for group in groups
        ]
        plain = [group[0].seed for group, found in zip(groups, starts, strict=True) if not found]
        from_reset = iter(collect(oracle, plain))
        recovering = [start for found in starts for start in found]
        recovered: list[Trajectory] = []
        if recovering:
            replay = _ReplayEngine(
                oracle, vector_env(len(recovering)).get_attr("unwrapped"), recovering
            )
            recovered = collect(replay, [start.seed for start in recovering])
        for trajectory in recovered:
            trajectory.metadata["replayed_turns"] = 1
        remaining = iter(recovered)
        mixed: list[Trajectory] = []
        for group, found in zip(groups, starts, strict=True):
            off = [next(remaining) for _ in found] if found else [next(from_reset)]
            mixed += estimators.mix_off_policy(group, off, k=k)
        return mixed

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        keys = [parse_episode_key(prompt) for prompt in prompts]
        for key_env, _ in keys:
            if key_env != env_id:
                raise ValueError(f"prompt for {key_env!r} given to the rollout_func of {env_id!r}")
        if (
            advantages is not None
            and trainer is not None
            and not getattr(trainer, "uses_token_advantages", False)
        ):
            raise ValueError(
                "make_rollout_func(advantages=...) needs "
                "agent_envs.adapters.trl.grpo_trainer.TokenAdvantageGRPOTrainer (GRPOTrainer "
                f"ignores per-token advantages), got {type(trainer).__name__}"
            )
        groups = _groups(keys, _group_size(trainer) if advantages is not None else None)
        k = advantages.off_policy if advantages is not None else 0
        if k and any(len(rows) <= k for rows in groups):
            raise ValueError(
                f"off_policy={k} oracle rows leave no sampled row in groups of "
                f"{min(len(rows) for rows in groups)}"
            )
        run_engine = engine if engine is not None else _trainer_engine(trainer, generation_copy)
        began = time.perf_counter()
        sampled_rows = [row for rows in groups for row in rows[: len(rows) - k]]
        sampled = collect(run_engine, [keys[row][1] for row in sampled_rows])
        group_of = {row: number for number, rows in enumerate(groups) for row in rows}
        for trajectory, row in zip(sampled, sampled_rows, strict=True):
            trajectory.group_id = group_of[row]
        mixed = mix_oracle(sampled, run_engine.tokenizer, k) if k else sampled
        trajectories: list[Trajectory] = [None] * len(keys)  # type: ignore[list-item]
        for trajectory, row in zip(mixed, [row for rows in groups for row in rows], strict=True):
            trajectories[row] = trajectory
        errors = sum(_is_error(trajectory) for trajectory in trajectories)
        if errors:
            logger.warning(
                "%d of %d episodes ended with an engine error; they are left out of training",
                errors,
                len(trajectories),
            )
        if on_trajectories is not None:
            on_trajectories(trajectories)
        tokenizer = run_engine.tokenizer
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        values = None if advantages is None else _token_advantages(trajectories, advantages)
        rows = _rows(trajectories, pad, values)
        rows["rollout_seconds"] = [(time.perf_counter() - began) / len(keys)] * len(keys)
        return rows

    return rollout_func


def _token_advantages(trajectories: list[Trajectory], config: AdvantageConfig) -> list[np.ndarray]:
    """Per-token advantages of every row; rows of engine errors are left out of the group
    statistics and get zeros."""
    kept = [index for index, trajectory in enumerate(trajectories) if not _is_error(trajectory)]
    turns = config.turn_advantages([trajectories[index] for index in kept])
    values = [np.zeros(len(trajectory.completion_ids)) for trajectory in trajectories]
    for index, turn_values in zip(kept, turns, strict=True):
        trajectory = trajectories[index]
        values[index] = estimators.token_advantages(trajectory, turn_values)
        if trajectory.metadata.get("replayed_turns"):
            values[index] *= np.asarray(_trained_mask(trajectory))
    return values


def episode_return_reward(
    completions: list[Any],
    episode_return: list[float],
    engine_error: list[bool] | None = None,
    env_id: list[str] | None = None,
    rollout_seconds: list[float] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    **_: Any,
) -> list[float | None]:
    """TRL reward function: each episode's return (summed env rewards); ``None`` (no reward,
    left out of TRL's group statistics) for an episode that ended with an engine error, whose
    count it logs as ``episodes/engine_errors`` through TRL's ``log_metric``, with each env's
    mean return as ``episodes/return/<env_id>`` and the wall seconds its rollout took per
    episode as ``episodes/seconds/<env_id>``."""
    errors = engine_error or [False] * len(episode_return)
    if log_metric is not None:
        log_metric("episodes/engine_errors", float(sum(errors)))
        _log_by_env(log_metric, "episodes/return", episode_return, errors, env_id)
        if rollout_seconds is not None:
            every = [False] * len(rollout_seconds)  # an engine error took its time too
            _log_by_env(log_metric, "episodes/seconds", rollout_seconds, every, env_id)
    return [
        None if error else float(value) for value, error in zip(episode_return, errors, strict=True)
    ]


def success_reward(
    completions: list[Any],
    success: list[bool],
    engine_error: list[bool] | None = None,
    env_id: list[str] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    **_: Any,
) -> list[float | None]:
    """TRL reward function: 1.0 for an episode that met the env's success predicate, else 0;
    ``None`` for an episode that ended with an engine error. Logs each env's success rate as
    ``episodes/success/<env_id>``."""
    errors = engine_error or [False] * len(success)
    if log_metric is not None:
        _log_by_env(log_metric, "episodes/success", [float(v) for v in success], errors, env_id)
    return [
        None if error else (1.0 if value else 0.0)
        for value, error in zip(success, errors, strict=True)
    ]


def _log_by_env(
    log_metric: Callable[[str, float], None],
    name: str,
    values: Sequence[float],
    errors: Sequence[bool],
    env_id: Sequence[str] | None,
) -> None:
    """Log the mean of ``values`` over each env's episodes as ``<name>/<env_id>``, engine errors
    left out: a run over several envs (:func:`route_by_env`) gets a curve per env beside TRL's
    mean over all of them. Nothing without ``env_id`` (the rollout's column)."""
    if env_id is None:
        return
    by_env: dict[str, list[float]] = {}
    for value, error, env in zip(values, errors, env_id, strict=True):
        if not error:
            by_env.setdefault(env, []).append(float(value))
    for env, kept in by_env.items():
        log_metric(f"{name}/{env}", sum(kept) / len(kept))


def route_by_env(funcs: dict[str, Callable[..., dict[str, list[Any]]]]) -> Callable[..., Any]:
    """One ``rollout_func`` over several ids: each prompt goes to the function of the env its
    episode key names (``funcs``: env id → ``rollout_func``), and the rows come back in the
    prompts' order. TRL trains several envs in one run this way."""

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        by_env: dict[str, list[int]] = {}
        for index, prompt in enumerate(prompts):
            by_env.setdefault(parse_episode_key(prompt)[0], []).append(index)
        output: dict[str, list[Any]] = {}
        order: list[int] = []
        for env_id, indices in by_env.items():
            rows = funcs[env_id]([prompts[index] for index in indices], trainer)
            for key, values in rows.items():
                output.setdefault(key, []).extend(values)
            order += indices
        position = {index: row for row, index in enumerate(order)}
        return {
            key: [values[position[index]] for index in range(len(prompts))]
            for key, values in output.items()
        }

    return rollout_func
