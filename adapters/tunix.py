"""Tunix (JAX/NNX) glue: multi-turn episodes of any ``grl/*`` env as Tunix training batches.

Tunix's learners sample single-turn completions with ``RLCluster.generate(prompts=...)``. Here
that step is our synchronous multi-turn rollout, the batch is built straight from its records
(no dataloader), and Tunix keeps its part: the model, the GRPO loss, the optimizer step
(``RLCluster.update_actor``), weight sync and metric logging::

    from agent_envs.adapters.advantages import episode_advantages
    from agent_envs.adapters.loop.collector import RolloutCollector
    from agent_envs.adapters.tunix import TunixEngine, build_train_example, make_cluster, update

    cluster = make_cluster(model, hf_tokenizer, learning_rate=1e-6)  # an RLCluster
    collector = RolloutCollector(vec_env, TunixEngine(cluster), max_total_tokens=1024)
    records = collector.collect(seeds)                           # rollout
    example = build_train_example(                               # batch
        records, episode_advantages(records), pad_id=cluster.rollout.pad_id())
    update(cluster, example)                                     # Tunix's update

- :class:`TunixTokenizer`: a Hugging Face tokenizer that also takes a prompt given as token ids
  (Tunix's rollout otherwise only takes strings and re-tokenizes them); :func:`make_cluster`
  builds the ``RLCluster`` with it (and installs Tunix's GRPO loss).
- :class:`TunixEngine`: an `Engine` for the
  :class:`~agent_envs.adapters.loop.collector.RolloutCollector`:
  the cluster's rollout generates on each episode's token ids and returns the sampled ids and
  their log-probabilities, so the same collector and the same `Trajectory` records drive Tunix
  models. Tunix's sampler drops the stop token it sampled from its output, so the collector
  appends it as a template token: the model is conditioned on it but it carries no loss
  weight (the same as in Tunix's own agentic learner).
- :func:`build_train_example`: records and advantages → Tunix's ``TrainExample``; per-episode
  advantages (GRPO, Dr. GRPO, RLOO) or per-token ones (GiGPO's per-turn values broadcast over
  each turn's tokens), which Tunix's GRPO loss takes as they are.
- :func:`update`: one Tunix optimizer step, then the rollout's weights follow.
- ``TunixTaskEnv``: any registered id as a Tunix agentic environment (``BaseTaskEnv``), for
  Tunix's own agentic GRPO learner (built on first access: it subclasses a Tunix class).

The training loop is ``benchmarks/train_tunix.py``. Install with ``pip install
agent-envs[tunix]`` in an environment of its own: google-tunix 0.1.7 pins
``safetensors<0.8``, which the ``[train]`` extra's transformers 5.x refuses. This module
imports Tunix and JAX only inside the functions that need them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from agent_envs.adapters.loop.engine import Generation, GenerationRequest

from agent_envs.core.records import Trajectory
from agent_envs.optional import require

__all__ = [
    "TunixEngine",
    "TunixTaskEnv",  # noqa: F822  (module __getattr__)
    "TunixTokenizer",
    "build_train_example",
    "make_cluster",
    "single_device_mesh",
    "tiny_qwen2",
    "update",
]


# --------------------------------------------------------------------- tokenizer
class TunixTokenizer:
    """A Hugging Face tokenizer in the interface Tunix's ``TokenizerAdapter`` accepts
    (``encode``, ``decode``, ``bos_id``, ``eos_id``, ``pad_id``), whose ``encode`` also takes a
    prompt that is already token ids and returns it unchanged.

    ``bos_id()`` is ``None``: Tunix's sampler would otherwise put a BOS token in front of every
    prompt, and the prompts here are complete (a chat template writes its own BOS). ``pad_id``
    falls back to the EOS token when the tokenizer has no pad token, as Tunix does.
    """

    def __init__(self, tokenizer: Any) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer must have an eos_token_id")
        self.tokenizer = tokenizer

    def encode(self, text: str | Sequence[int], **kwargs: Any) -> list[int]:
        if isinstance(text, str):
            kwargs.setdefault("add_special_tokens", False)
            return list(self.tokenizer.encode(text, **kwargs))
        return [int(token) for token in text]

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str:
        return self.tokenizer.decode([int(token) for token in ids], **kwargs)

    def bos_id(self) -> None:
        return None

    def eos_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(self.eos_id() if pad is None else pad)

    def apply_chat_template(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "tokenizer":  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.tokenizer, name)


# --------------------------------------------------------------------- cluster
def single_device_mesh() -> Any:
    """A 1 x 1 ``("fsdp", "tp")`` mesh on the first device, with Auto axes (``jax.make_mesh``
    builds Explicit axes, which Tunix's models reject)."""
    require("tunix", "tunix")
    import jax

    return jax.sharding.Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("fsdp", "tp"))


def tiny_qwen2(vocab_size: int, *, seed: int = 0, layers: int = 2, width: int = 32) -> Any:
    """A randomly initialised Tunix Qwen2 (``layers`` layers, ``width`` wide, 4 heads of
    ``width // 4``, 2 KV heads, tied embeddings) for tests, benchmarks and CPU demos."""
    require("tunix", "tunix")
    from flax import nnx
    from tunix.models.qwen2 import model as qwen2

    if width % 4:
        raise ValueError(f"width must be a multiple of 4, got {width!r}")
    config = qwen2.ModelConfig(
        num_layers=layers,
        vocab_size=vocab_size,
        embed_dim=width,
        hidden_dim=2 * width,
        num_heads=4,
        head_dim=width // 4,
        num_kv_heads=2,
        rope_theta=10_000,
        norm_eps=1e-6,
        use_tied_embedding=True,
    )
    return qwen2.Qwen2(config, rngs=nnx.Rngs(seed))


def _unused_reward(prompts: Sequence[Any], completions: Sequence[Any], **_: Any) -> list[float]:
    raise RuntimeError("rewards come from the environments; this reward function is not called")


def make_cluster(
    model: Any,
    tokenizer: Any,
    *,
    mesh: Any = None,
    learning_rate: float = 1e-5,
    weight_decay: float = 0.0,
    max_grad_norm: float | None = 1.0,
    temperature: float = 1.0,
    eval_temperature: float = 0.0,
    max_new_tokens: int = 64,
    kv_cache_size: int = 2048,
    beta: float = 0.0,
    epsilon: float = 0.2,
    loss_agg_mode: str = "sequence-mean-token-mean",
    reference: Any = None,
) -> Any:
    """An ``RLCluster`` whose actor, reference and rollout share ``mesh`` (default
    :func:`single_device_mesh`), with Tunix's GRPO loss installed on its actor trainer (by
    constructing Tunix's ``GRPOLearner``, whose sampling loop is not used). The optimizer is
    AdamW (``learning_rate``, ``weight_decay``; 0 by default, so a batch whose advantages are
    all 0 leaves the weights exactly as they were) after clipping to ``max_grad_norm``.

    ``tokenizer`` is a Hugging Face tokenizer (wrapped in :class:`TunixTokenizer` here). The
    rollout config has a ``"train"`` mode at ``temperature`` and an ``"eval"`` mode at
    ``eval_temperature`` (0: greedy); ``kv_cache_size`` must hold a padded prompt plus
    ``max_new_tokens``. ``beta > 0`` adds Tunix's KL penalty against ``reference`` (required
    then; fill ``TrainExample.ref_per_token_logps`` with ``get_ref_per_token_logps``).
    """
    require("tunix", "tunix")
    import optax
    from tunix.rl import rl_cluster
    from tunix.rl.grpo import grpo_learner
    from tunix.rl.rollout import base_rollout

    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got {learning_rate!r}")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    if beta > 0 and reference is None:
        raise ValueError("beta > 0 needs a reference model (reference=...)")
    mesh = single_device_mesh() if mesh is None else mesh
    optimizer = optax.adamw(learning_rate, weight_decay=weight_decay)
    if max_grad_norm is not None:
        optimizer = optax.chain(optax.clip_by_global_norm(max_grad_norm), optimizer)

    def rollout(temp: float) -> Any:
        return base_rollout.RolloutConfig(
            max_tokens_to_generate=max_new_tokens,
            temperature=temp,
            top_p=1.0 if temp > 0 else None,
            max_prompt_length=64,
            kv_cache_size=kv_cache_size,
            return_logprobs=True,
        )

    roles = (rl_cluster.Role.ACTOR, rl_cluster.Role.REFERENCE, rl_cluster.Role.ROLLOUT)
    config = rl_cluster.ClusterConfig(
        role_to_mesh={role: mesh for role in roles},
        rollout_engine="vanilla",
        offload_to_cpu=False,
        training_config=rl_cluster.RLTrainingConfig(
            actor_optimizer=optimizer, eval_every_n_steps=1_000_000, max_steps=None
        ),
        rollout_config={
            rl_cluster.Mode.TRAIN: rollout(temperature),
            rl_cluster.Mode.EVAL: rollout(eval_temperature),
        },
    )
    cluster = rl_cluster.RLCluster(
        actor=model, reference=reference, tokenizer=TunixTokenizer(tokenizer), cluster_config=config
    )
    grpo_learner.GRPOLearner(
        cluster,
        grpo_learner.GRPOConfig(
            num_generations=2, beta=beta, epsilon=epsilon, loss_agg_mode=loss_agg_mode
        ),
        reward_fns=_unused_reward,
    )
    return cluster


def update(cluster: Any, example: Any) -> None:
    """One Tunix optimizer step on ``example`` (``RLCluster.update_actor``), then the rollout's
    weights follow the trained ones (the cluster trains its own copy:
    ``cluster.actor_trainer.model``) and ``cluster.global_steps`` counts the step."""
    require("tunix", "tunix")
    from tunix.rl import utils as rl_utils

    cluster.update_actor([example], None)
    if not rl_utils.is_sharing_weights(cluster.actor_trainer.model, cluster.rollout.model()):
        cluster.sync_weights()
    cluster.global_steps += 1


# --------------------------------------------------------------------- engine
class TunixEngine:
    """Generation through an ``RLCluster``'s rollout, on token ids, with the sampled tokens'
    log-probabilities (an `Engine` for the rollout collector).

    Args:
        cluster: a Tunix ``RLCluster`` built with a :class:`TunixTokenizer`.
        mode: ``"train"`` or ``"eval"``: which of the cluster's rollout configs sets the
            temperature, ``top_p`` and ``top_k`` (a dict config may hold one per mode).
            Temperature 0 is greedy.
        seed: call ``k`` of this engine's life samples with ``seed + k``, so calls (turns,
            training steps) draw fresh randomness and a run is reproducible.
        name: the agent name written into records.

    One ``generate`` call is one rollout call on the whole batch: its token budget is the
    largest request's, and each reply is cut to its own request's ``max_new_tokens`` (a prefix
    of a sample is a sample). ``finish_reason`` is ``"stop"`` when the model sampled a stop
    token, ``"length"`` otherwise. The batch is padded to a power of two with copies of its
    first prompt, which bounds how many shapes the sampler compiles for as episodes finish.
    Tunix pads prompts to a power of two: the rollout config's ``kv_cache_size`` must hold
    the padded longest prompt plus a turn's budget (a ``ValueError`` names it otherwise). Only
    Tunix's ``"vanilla"`` rollout engine takes token-id prompts (tested); vLLM and SGLang
    rollouts take strings.
    """

    def __init__(self, cluster: Any, *, mode: str = "train", seed: int = 0, name: str = "tunix"):
        require("tunix", "tunix")
        from tunix.rl import rl_cluster

        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        adapter = cluster.tokenizer
        inner = getattr(adapter, "tokenizer", None)
        if not isinstance(inner, TunixTokenizer):
            raise ValueError(
                "cluster must be built with tokenizer=TunixTokenizer(hf_tokenizer) so its "
                f"rollout takes token ids, got {type(inner).__name__}"
            )
        self.cluster = cluster
        self.mode = rl_cluster.Mode(mode)
        self.seed = seed
        self.name = name
        #: the Hugging Face tokenizer (the collector renders chat templates with it)
        self.tokenizer = inner.tokenizer
        self.calls = 0

    def rollout_config(self, max_tokens: int, stop_token_ids: Sequence[int]) -> Any:
        """The cluster's rollout config for this engine's mode, set for one call."""
        config = self.cluster.get_rollout_config(self.mode)
        changes: dict[str, Any] = {
            "max_tokens_to_generate": max_tokens,
            "return_logprobs": True,
            "seed": self.seed + self.calls,
        }
        if stop_token_ids:
            changes["eos_tokens"] = [int(token) for token in stop_token_ids]
        if config.temperature == 0:  # Tunix samples greedily only without top_p/top_k
            changes.update(top_p=None, top_k=None)
        return dataclasses.replace(config, **changes)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        batches: dict[tuple[int, ...], list[int]] = {}
        for index, request in enumerate(requests):
            if request.prompt_ids is None:
                results[index] = Generation(
                    "", finish_reason="error", error="TunixEngine needs prompt_ids"
                )
            elif request.max_new_tokens < 1:
                results[index] = Generation("", token_ids=[], logprobs=[], finish_reason="length")
            else:
                batches.setdefault(tuple(request.stop_token_ids), []).append(index)
        for stop_ids, members in batches.items():
            for index, generation in zip(
                members, self._generate([requests[i] for i in members], stop_ids), strict=True
            ):
                results[index] = generation
        return [result for result in results if result is not None]

    def _generate(
        self, requests: list[GenerationRequest], stop_token_ids: tuple[int, ...]
    ) -> list[Generation]:
        budget = max(request.max_new_tokens for request in requests)
        prompts = [list(request.prompt_ids or ()) for request in requests]
        size = 1 << (len(prompts) - 1).bit_length()
        prompts += [prompts[0]] * (size - len(prompts))
        config = self.rollout_config(budget, stop_token_ids)
        longest = max(len(prompt) for prompt in prompts)
        padded = config.max_prompt_length  # Tunix's sampler pads prompts to this, or
        if padded < longest:  # to the next power of two when the longest is longer
            padded = 1 << (longest - 1).bit_length()
        if padded + budget > config.kv_cache_size:
            raise ValueError(
                f"kv_cache_size={config.kv_cache_size} of the cluster's rollout config cannot "
                f"hold a {longest}-token prompt (padded to {padded}) plus {budget} new tokens: "
                "raise it, or lower the collector's max_total_tokens"
            )
        self.calls += 1
        output = self.cluster.rollout.generate(prompts, config)
        generations = []
        for row, request in enumerate(requests):
            tokens = [int(token) for token in np.asarray(output.tokens[row]).tolist()]
            logprobs = [float(value) for value in np.asarray(output.logprobs[row]).tolist()]
            stopped = len(tokens) < budget
            if len(tokens) >= request.max_new_tokens:
                tokens = tokens[: request.max_new_tokens]
                stopped = False
            logprobs = logprobs[: len(tokens)]
            generations.append(
                Generation(
                    self.tokenizer.decode(tokens, skip_special_tokens=True),
                    token_ids=tokens,
                    logprobs=logprobs,
                    finish_reason="stop" if stopped else "length",
                )
            )
        return generations


# --------------------------------------------------------------------- batches
def _lengths(value: int | None, name: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return value


def _padded(length: int, multiple: int) -> int:
    return max(multiple, -(-length // multiple) * multiple)


def build_train_example(
    trajectories: Sequence[Trajectory],
    advantages: npt.ArrayLike | Sequence[npt.ArrayLike],
    *,
    pad_id: int,
    prompt_length: int | None = None,
    completion_length: int | None = None,
    pad_multiple: int = 1,
) -> Any:
    """One Tunix ``TrainExample`` (``tunix.rl.common.TrainExample``) from token-level records.

    Row ``i`` is ``trajectories[i]``:

    - ``prompt_ids`` / ``prompt_mask``: :attr:`Trajectory.prompt_ids` left-padded with
      ``pad_id`` to ``prompt_length``; the mask is 1 on the prompt, 0 on padding.
    - ``completion_ids`` / ``completion_mask``: :attr:`Trajectory.completion_ids` (every turn's
      model tokens and the env/template tokens between them) right-padded to
      ``completion_length``; the mask is :attr:`Trajectory.env_mask` (1 = model token, 0 =
      env/template token) then 0 on padding, so environment tokens carry no loss weight. An
      episode that ended with an engine error (``Trajectory.error``) gets an all-zero mask.
    - ``advantages``: one number per trajectory (GRPO, Dr. GRPO, RLOO:
      :func:`agent_envs.adapters.advantages.episode_advantages`) gives shape ``[B]``; one array
      per trajectory aligned with its ``completion_ids``
      (:func:`agent_envs.adapters.advantages.token_advantages`, e.g. of
      :func:`~agent_envs.adapters.advantages.gigpo`'s per-turn values) gives per-token
      advantages ``[B, T]`` (0 on padding), which Tunix's GRPO loss takes as they are.
    - ``old_per_token_logps``: the sampling log-probabilities of the rollout
      (:attr:`Trajectory.completion_logprobs`, 0 on env tokens and padding), or ``None`` when
      any record has none (scripted or off-policy rows): Tunix then takes the current policy as
      the old one (importance ratio 1: the on-policy gradient).
    - ``ref_per_token_logps``: ``None`` (fill it with ``RLCluster.get_ref_per_token_logps``
      when the KL penalty is on).

    ``prompt_length``/``completion_length`` ``None``: the batch's longest, rounded up to a
    multiple of ``pad_multiple`` (fixed or rounded shapes let Tunix reuse its compiled step).
    A record longer than a given length raises ``ValueError`` naming it; a record without
    token fields raises too.
    """
    require("tunix", "tunix")
    import jax.numpy as jnp
    from tunix.rl import common

    _lengths(prompt_length, "prompt_length")
    _lengths(completion_length, "completion_length")
    if isinstance(pad_multiple, bool) or not isinstance(pad_multiple, int) or pad_multiple < 1:
        raise ValueError(f"pad_multiple must be a positive int, got {pad_multiple!r}")
    if not trajectories:
        raise ValueError("trajectories must not be empty")
    for trajectory in trajectories:
        if not trajectory.has_tokens:
            raise ValueError(
                f"trajectory of {trajectory.env_id} seed {trajectory.seed} has no token fields "
                "(collect it with a token engine)"
            )
    prompts = [trajectory.prompt_ids or [] for trajectory in trajectories]
    completions = [trajectory.completion_ids for trajectory in trajectories]
    masks = [trajectory.env_mask for trajectory in trajectories]
    longest_prompt = max(len(ids) for ids in prompts)
    longest_completion = max(max(len(ids) for ids in completions), 1)
    width_p = prompt_length or _padded(longest_prompt, pad_multiple)
    width_c = completion_length or _padded(longest_completion, pad_multiple)
    if longest_prompt > width_p:
        raise ValueError(f"a prompt has {longest_prompt} tokens > prompt_length={width_p}")
    if longest_completion > width_c:
        raise ValueError(
            f"a completion has {longest_completion} tokens > completion_length={width_c}"
        )

    rows = len(trajectories)
    prompt_ids = np.full((rows, width_p), pad_id, dtype=np.int32)
    prompt_mask = np.zeros((rows, width_p), dtype=np.bool_)
    completion_ids = np.full((rows, width_c), pad_id, dtype=np.int32)
    completion_mask = np.zeros((rows, width_c), dtype=np.int32)
    for row, (prompt, completion, mask) in enumerate(zip(prompts, completions, masks, strict=True)):
        if prompt:
            prompt_ids[row, width_p - len(prompt) :] = prompt
            prompt_mask[row, width_p - len(prompt) :] = True
        completion_ids[row, : len(completion)] = completion
        if trajectories[row].error is None:
            completion_mask[row, : len(mask)] = mask

    logprobs = [trajectory.completion_logprobs for trajectory in trajectories]
    old_logps = None
    if all(values is not None for values in logprobs):
        old_logps = np.zeros((rows, width_c), dtype=np.float32)
        for row, values in enumerate(logprobs):
            old_logps[row, : len(values)] = values  # type: ignore[arg-type]

    return common.TrainExample(
        prompt_ids=jnp.asarray(prompt_ids),
        prompt_mask=jnp.asarray(prompt_mask),
        completion_ids=jnp.asarray(completion_ids),
        completion_mask=jnp.asarray(completion_mask),
        advantages=jnp.asarray(_advantages(advantages, completions, width_c)),
        ref_per_token_logps=None,
        old_per_token_logps=None if old_logps is None else jnp.asarray(old_logps),
    )


def _advantages(
    advantages: npt.ArrayLike | Sequence[npt.ArrayLike],
    completions: list[list[int]],
    width: int,
) -> np.ndarray:
    rows = len(completions)
    if len(advantages) != rows:  # type: ignore[arg-type]
        raise ValueError(
            f"advantages must have one entry per trajectory ({rows}), got {len(advantages)}"  # type: ignore[arg-type]
        )
    if all(np.ndim(value) == 0 for value in advantages):  # type: ignore[union-attr]
        return np.asarray(advantages, dtype=np.float32)
    table = np.zeros((rows, width), dtype=np.float32)
    for row, (values, completion) in enumerate(zip(advantages, completions, strict=True)):  # type: ignore[call-overload]
        values = np.asarray(values, dtype=np.float32)
        if values.shape != (len(completion),):
            raise ValueError(
                f"advantages[{row}] must be one per completion token ({len(completion)}) or "
                f"a single number, got shape {values.shape}"
            )
        table[row, : len(completion)] = values
    return table


# --------------------------------------------------------------------- agentic env
def _scalar(value: Any) -> Any:
    array = np.asarray(value)
    return array.reshape(-1)[0].item() if array.size else None


class _TaskEnvBody:
    """Any registered ``grl/*`` id as a Tunix agentic environment (``BaseTaskEnv``), so Tunix's
    own ``tunix.rl.agentic`` GRPO learner trains on it::

        from agent_envs.adapters.tunix import TunixTaskEnv   # imports Tunix (module __getattr__)
        GRPOLearner(cluster, GRPOConfig(system_prompt=instructions, ...),
                    env_class=TunixTaskEnv, env_kwargs={"env_id": "grl/Sokoban-v0"})

    The learner builds one env per dataset row with ``env_class(row, group_id=...,
    pair_index=...)``; the row's ``seed`` (an int, or a length-1 array as Tunix's batching
    makes it) seeds the episode, so the G envs of a group start from the same state.

    - reset: ``{"prompts": first observation, "instructions": env.instructions, "seed": ...}``
      (Tunix's ``ModelAgent`` turns ``prompts`` into the user message; the env's instructions
      belong in the learner's ``system_prompt``, as the rollout collector puts them in the
      system message).
    - step(reply): the env's turn on the reply text (an ``Action``'s ``action`` or a string);
      returns the next observation, the reward, ``done = terminated or truncated`` and the
      env's info plus ``terminated``/``truncated``. Like the env, it never raises on a reply.
    - ``max_steps``: the learner's hard turn cap (default: the env's ``max_turns``, else its
      spec's ``max_episode_steps``, else 100); the env ends its own episodes before it.

    Tunix's multi-turn learner wants ``RolloutConfig.max_tokens_to_generate ==
    GRPOConfig.max_response_length`` and ``return_logprobs=True``; it gives the first reply
    the whole budget and counts env tokens against it too, so a model that does not stop
    spends an episode's budget on one reply before the env sees it.

    Args:
        single_example: the dataset row (needs ``seed``; ``options`` is passed to reset).
        env_id: the registered id.
        make_kwargs: keyword arguments of ``gymnasium.make``.
        max_steps: see above.
        **kwargs: ``group_id``, ``pair_index`` and whatever else the learner passes (kept in
            ``extra_kwargs``).
    """

    def __init__(
        self,
        single_example: dict[str, Any] | None = None,
        *,
        env_id: str,
        make_kwargs: dict[str, Any] | None = None,
        max_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        import gymnasium

        import agent_envs  # noqa: F401  (registers the grl/* ids)

        task = dict(single_example or {})
        if "seed" not in task:
            raise ValueError(f"single_example must have a 'seed', got keys {sorted(task)}")
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        self.env_id = env_id
        self.env = gymnasium.make(env_id, **(make_kwargs or {}))
        if max_steps is None:
            spec = self.env.spec
            max_steps = getattr(self.env.unwrapped, "max_turns", None) or (
                spec.max_episode_steps if spec is not None else None
            )
        super().__init__(task=task, max_steps=int(max_steps or 100), **kwargs)  # type: ignore[call-arg]

    def _initial_observation(self) -> dict[str, Any]:
        seed = _scalar(self.task["seed"])  # type: ignore[attr-defined]
        options = self.task.get("options")  # type: ignore[attr-defined]
        observation, info = self.env.reset(
            seed=None if seed is None else int(seed), options=options
        )
        return {
            "prompts": observation,
            "instructions": self.env.unwrapped.instructions,
            "seed": info.get("episode_seed", seed),
        }

    def _step_impl(self, action: Any) -> Any:
        from tunix.rl.agentic.environments import base_environment

        text = getattr(action, "action", action)
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        observation, reward, terminated, truncated, info = self.env.step(text)
        return base_environment.EnvStepResult(
            observation=observation,
            reward=float(reward),
            done=bool(terminated or truncated),
            info={**info, "terminated": bool(terminated), "truncated": bool(truncated)},
        )

    def close(self) -> None:
        self.env.close()


@functools.cache
def _task_env_class() -> type:
    require("tunix", "tunix")
    from tunix.rl.agentic.environments import base_environment

    return type(
        "TunixTaskEnv",
        (_TaskEnvBody, base_environment.BaseTaskEnv),
        {"__doc__": _TaskEnvBody.__doc__, "__module__": __name__, "__qualname__": "TunixTaskEnv"},
    )


def __getattr__(name: str) -> Any:
    """``TunixTaskEnv`` is built on first access (it subclasses Tunix's ``BaseTaskEnv``)."""
    if name == "TunixTaskEnv":
        return _task_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
