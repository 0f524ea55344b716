"""TRL glue: multi-turn episodes of any ``grl/*`` env as GRPO rollouts (TRL's public API only).

Three pieces, used together::

    from trl import GRPOConfig, GRPOTrainer
    from adapters.trl import episode_return_reward, make_episode_dataset, make_rollout_func

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
  episode from the same seed, hence the same start state (a GRPO group). Episodes run through
  the :class:`~adapters.rollout.RolloutCollector`, on ``trainer.vllm_generation`` when the
  trainer uses vLLM, otherwise on the trainer's own model with ``transformers``. It returns,
  one row per prompt: ``prompt_ids`` (template of the system message and first observation),
  ``completion_ids`` (the whole multi-turn episode after it), ``logprobs`` (sampled-token
  log-probabilities, 0 on env tokens), ``env_mask`` (1 = model token, 0 = env/template token:
  TRL multiplies it into the loss mask), and ``episode_return``, ``success``, ``num_turns``,
  which TRL forwards to reward functions.
- :func:`episode_return_reward`: the reward function returning each episode's return.

:func:`make_environment_factory` (with :func:`make_tool_dataset`) builds the other TRL
route, ``environment_factory``, for tool-calling models: the env's turn as a documented tool
method and ``get_reward()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from adapters.engines.base import Generation, GenerationRequest, SamplingConfig
from adapters.rollout import RolloutCollector
from agent_envs.core.records import Trajectory

__all__ = [
    "episode_key",
    "episode_return_reward",
    "make_environment_factory",
    "make_episode_dataset",
    "make_rollout_func",
    "make_tool_dataset",
    "success_reward",
]


def episode_key(env_id: str, seed: int) -> str:
    """The ``prompt`` of one episode: ``{"env_id": ..., "seed": ...}`` as compact JSON."""
    return json.dumps({"env_id": env_id, "seed": int(seed)}, separators=(",", ":"))


def _parse_key(prompt: Any) -> tuple[str, int]:
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


def make_tool_dataset(env_id: str, seeds: Iterable[int], **env_kwargs: Any) -> Any:
    """The dataset for :func:`make_environment_factory`: one row per seed, ``prompt`` a user
    message asking to play the episode with the ``play`` tool (TRL appends the first
    observation to it), ``seed`` the episode's seed."""
    dataset = make_episode_dataset(env_id, seeds, **env_kwargs)
    request = (
        f"Play this {env_id.split('/')[-1]} episode. Call the play tool once per turn with "
        "your answer; the current state follows.\n"
    )
    return dataset.map(lambda row: {"prompt": [{"role": "user", "content": request}]})


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


def _trainer_engine(trainer: Any) -> Any:
    """vLLM when the trainer runs it, else ``transformers`` on the trainer's model.

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
            from adapters.engines.vllm import VLLMEngine

            return VLLMEngine(generation.llm, tokenizer=tokenizer, sampling=sampling)
        return _TRLServerEngine(generation, tokenizer)
    from adapters.engines.transformers import TransformersEngine

    model = trainer.accelerator.unwrap_model(trainer.model)
    return TransformersEngine(model, tokenizer, sampling=sampling, name="trainer-model")


def _rows(trajectories: list[Trajectory], pad_token_id: int) -> dict[str, list[Any]]:
    output: dict[str, list[Any]] = {
        "prompt_ids": [],
        "completion_ids": [],
        "logprobs": [],
        "env_mask": [],
        "episode_return": [],
        "success": [],
        "num_turns": [],
    }
    for trajectory in trajectories:
        completion = trajectory.completion_ids
        mask = trajectory.env_mask
        logprobs = trajectory.completion_logprobs or [0.0] * len(completion)
        if not completion:  # no turn fitted in the context: one inert token
            completion, mask, logprobs = [pad_token_id], [0], [0.0]
        output["prompt_ids"].append(list(trajectory.prompt_ids or ()))
        output["completion_ids"].append(completion)
        output["logprobs"].append(logprobs)
        output["env_mask"].append(mask)
        output["episode_return"].append(trajectory.episode_return)
        output["success"].append(trajectory.success)
        output["num_turns"].append(trajectory.num_turns)
    return output


def make_rollout_func(
    env_id: str,
    *,
    max_new_tokens: int = 256,
    max_total_tokens: int = 4096,
    max_turns: int | None = None,
    engine: Any = None,
    on_trajectories: Callable[[list[Trajectory]], None] | None = None,
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
        on_trajectories: called with each batch's trajectories (logging, saving as JSONL).
        env_kwargs: the env's keyword arguments, as given to :func:`make_episode_dataset`.
    """
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if env_id not in gymnasium.registry:
        raise ValueError(f"env_id {env_id!r} is not registered")
    vector_envs: dict[int, Any] = {}

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        keys = [_parse_key(prompt) for prompt in prompts]
        for key_env, _ in keys:
            if key_env != env_id:
                raise ValueError(f"prompt for {key_env!r} given to the rollout_func of {env_id!r}")
        num_envs = len(keys)
        if num_envs not in vector_envs:
            vector_envs[num_envs] = gymnasium.make_vec(
                env_id, num_envs=num_envs, autoreset_mode="disabled", **env_kwargs
            )
        run_engine = engine if engine is not None else _trainer_engine(trainer)
        collector = RolloutCollector(
            vector_envs[num_envs],
            run_engine,
            env_id=env_id,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            max_total_tokens=max_total_tokens,
        )
        trajectories = collector.collect([seed for _, seed in keys])
        groups: dict[tuple[str, int], int] = {}
        for trajectory, key in zip(trajectories, keys, strict=True):
            trajectory.group_id = groups.setdefault(key, len(groups))
        if on_trajectories is not None:
            on_trajectories(trajectories)
        tokenizer = run_engine.tokenizer
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        return _rows(trajectories, pad)

    return rollout_func


def episode_return_reward(
    completions: list[Any], episode_return: list[float], **_: Any
) -> list[float]:
    """TRL reward function: each episode's return (summed env rewards)."""
    return [float(value) for value in episode_return]


def success_reward(completions: list[Any], success: list[bool], **_: Any) -> list[float]:
    """TRL reward function: 1.0 for an episode that met the env's success predicate, else 0."""
    return [1.0 if value else 0.0 for value in success]


def make_environment_factory(env_id: str, **env_kwargs: Any) -> type:
    """A class for TRL's ``environment_factory`` (tool-calling models): ``reset(**row)``
    starts the episode of the row's ``seed`` and returns its first observation, the public
    method ``play`` is the tool (one turn: the env's answer format, documented with this env's
    instructions), ``get_reward()`` is the episode return so far.

    TRL calls ``reset`` with the dataset row and appends the observation it returns to the
    row's last prompt message, so use :func:`make_tool_dataset` (conversational prompts and
    a ``seed`` column). The tool's docstring is the env's own instructions, so the model sees
    the rules, the legend and the answer format in the tool schema.
    """
    import gymnasium

    import agent_envs  # noqa: F401

    probe = gymnasium.make(env_id, **env_kwargs)
    instructions = probe.unwrapped.instructions
    probe.close()

    class TextEnvironment:
        def __init__(self) -> None:
            self.env = gymnasium.make(env_id, **env_kwargs)
            self.reward = 0.0
            self.done = False
            self.info: dict[str, Any] = {}

        def reset(self, seed: int | None = None, **_: Any) -> str:
            observation, self.info = self.env.reset(seed=None if seed is None else int(seed))
            self.reward = 0.0
            self.done = False
            return observation

        def play(self, answer: str) -> str:
            if self.done:
                return "The episode is over."
            observation, reward, terminated, truncated, self.info = self.env.step(answer)
            self.reward += float(reward)
            self.done = bool(terminated or truncated)
            return observation + ("\nThe episode is over." if self.done else "")

        def get_reward(self) -> float:
            return self.reward

    TextEnvironment.play.__doc__ = (
        f"Play one turn of {env_id}.\n\n{instructions}\n\n"
        "Args:\n    answer: your reply for this turn, containing <answer>...</answer>.\n\n"
        "Returns:\n    The next observation (and whether the episode is over)."
    )
    parts = env_id.split("/")[-1].split("-")[:-1]  # "Sokoban-8x8-v0" -> Sokoban8x8
    TextEnvironment.__name__ = "".join(part[:1].upper() + part[1:] for part in parts) + "Tool"
    TextEnvironment.__qualname__ = TextEnvironment.__name__
    return TextEnvironment
