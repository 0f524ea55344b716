"""Multi-turn RL of an agent on a ``grl/*`` env with Tunix (JAX): Tunix keeps the model, the
GRPO loss and the optimizer step; our rollout collector plays the episodes.

``agent-envs train-tunix`` runs, for each of ``--steps`` steps::

    rollout   ``groups`` x ``group_size`` episodes (a group shares its seed), turn by turn,
              through the cluster's rollout on token ids
              (:class:`agent_envs.adapters.tunix.TunixEngine`)
    batch     the records as one Tunix ``TrainExample`` (env mask = completion mask)
    advantages  GRPO / Dr. GRPO / RLOO per episode, or GiGPO per turn (per-token advantages)
    update    one Tunix optimizer step (``RLCluster.update_actor``), rollout weights synced
    log       one JSON line per step in ``<out>/log.jsonl`` (return, success, turns, tokens,
              advantage and timing figures), the same figures buffered into Tunix's metrics

``--oracle-per-group k`` adds the oracle's episode of each group's seed to the group ``k``
times (a random tiny model's groups all have the same return, hence zero advantage and no
update; the oracle's success gives them a spread). Those rows have no sampling log-probs, so
the batch has none either and Tunix takes the current policy as the old one (ratio 1): the
oracle rows get the plain advantage-weighted log-likelihood gradient, without LUFFY's policy
shaping.

Every ``--val-every`` steps (and after the last) ``--val-episodes`` validation episodes on
fixed seeds at temperature 0. Training seeds start at ``TRAIN_SEED_BASE`` and never meet the
validation seeds (``0 .. val_episodes - 1``).

On CPU the default is a tiny randomly initialised Qwen2 (``--model tiny``) on a small BPE
tokenizer trained on the env's own text (:func:`env_tokenizer`): it shows that the loop runs
end to end, it does not learn Sokoban in minutes. ``--model`` also takes a Qwen2/Qwen2.5
safetensors checkpoint folder (its tokenizer is read from the same folder; not run here); the
TPU/GPU recipe is in the README, "Training with Tunix (JAX)".
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.benchmarks.cli import parse

__all__ = ["ESTIMATORS", "TRAIN_SEED_BASE", "Args", "env_tokenizer", "main", "parse_args"]

ESTIMATORS = ("grpo", "drgrpo", "rloo", "gigpo")
#: training seeds start here (validation uses 0 .. val_episodes - 1)
TRAIN_SEED_BASE = 1_000_000_007


@dataclass
class Args:
    """Settings of one run (each field is a ``--flag``)."""

    out: Path = Path("runs/tunix")
    """run folder: settings.json and log.jsonl"""
    env_id: str = "grl/Sokoban-v0"
    """the registered id trained and validated"""
    model: str = "tiny"
    """``tiny`` (a random Qwen2 on --tokenizer) or a Qwen2/Qwen2.5 safetensors folder"""
    tokenizer: str = "env"
    """tokenizer of the tiny model: ``env`` (a BPE trained here on the env's text) or a folder"""
    tiny_layers: int = 2
    """layers of the tiny model"""
    tiny_width: int = 64
    """width of the tiny model"""
    fsdp: int = 1
    """devices on the mesh's "fsdp" axis (accelerators: fsdp x tp devices)"""
    tp: int = 1
    """devices on the mesh's "tp" (tensor parallel) axis"""
    seed: int = 0
    """model initialisation and sampling seed"""
    steps: int = 10
    """optimizer steps"""
    groups: int = 2
    """episode groups per step (one seed each)"""
    group_size: int = 4
    """episodes per group (G)"""
    oracle_per_group: int = 0
    """oracle episodes added to each group (LUFFY-style off-policy rows; see main)"""
    estimator: str = "grpo"
    """advantages: grpo, drgrpo, rloo (per episode) or gigpo (per turn)"""
    gigpo_gamma: float = 0.95
    """GiGPO's step-return discount"""
    gigpo_omega: float = 1.0
    """GiGPO's weight of the step advantage"""
    learning_rate: float = 1e-3
    """AdamW learning rate (1e-3 suits the tiny model; ~1e-6 for a real one)"""
    beta: float = 0.0
    """KL penalty against the initial model (0: off, no reference model kept)"""
    epsilon: float = 0.2
    """PPO clip range"""
    temperature: float = 1.0
    """sampling temperature of training episodes"""
    max_turns: int = 5
    """turn limit of an episode"""
    max_new_tokens: int = 32
    """generation budget per turn"""
    max_total_tokens: int = 1024
    """token budget of an episode, prompt included"""
    kv_cache_size: int = 2048
    """the sampler's KV cache (a padded prompt plus one turn's budget must fit)"""
    val_every: int = 5
    """validation every this many steps (0: only after the last)"""
    val_episodes: int = 4
    """validation episodes (seeds 0 .. n-1, greedy)"""


def _check(args: Args) -> None:
    if args.estimator not in ESTIMATORS:
        raise SystemExit(f"--estimator must be one of {ESTIMATORS}, got {args.estimator!r}")
    positive = ("steps", "groups", "group_size", "max_turns", "max_new_tokens", "val_episodes")
    for name in (*positive, "fsdp", "tp"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.group_size < 2:
        raise SystemExit(
            f"--group-size must be >= 2 (group-relative advantages), got {args.group_size}"
        )


# --------------------------------------------------------------------------- set-up
#: ChatML, as Qwen2.5 and SmolLM2 render it
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def env_tokenizer(env_id: str, *, vocab_size: int = 600, episodes: int = 20) -> Any:
    """A byte-level BPE tokenizer trained on ``env_id``'s instructions and first observations
    (seeds ``0 .. episodes - 1``) and answer-tag replies, with a ChatML template: offline, in
    about a second, small enough for a tiny model's embedding."""
    import gymnasium
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    env = gymnasium.make(env_id)
    texts = [env.unwrapped.instructions]
    for seed in range(episodes):
        texts.append(env.reset(seed=seed)[0])
    env.close()
    texts += [
        f"<think>I move {a}.</think><answer>{a} || {a}</answer>"
        for a in ["Up", "Down", "Left", "Right"]
    ]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        texts,
        trainer=trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHATML
    return tokenizer


def load_tokenizer(args: Args) -> Any:
    from transformers import AutoTokenizer

    if args.model != "tiny":
        return AutoTokenizer.from_pretrained(args.model)
    if args.tokenizer == "env":
        return env_tokenizer(args.env_id)
    return AutoTokenizer.from_pretrained(args.tokenizer)


def load_model(args: Args, vocab_size: int, mesh: Any) -> Any:
    from agent_envs.adapters.tunix import tiny_qwen2

    if args.model == "tiny":
        return tiny_qwen2(
            vocab_size, seed=args.seed, layers=args.tiny_layers, width=args.tiny_width
        )
    from transformers import AutoConfig
    from tunix.models.qwen2 import model as qwen2
    from tunix.models.qwen2 import params

    hf = AutoConfig.from_pretrained(args.model)
    config = qwen2.ModelConfig(
        num_layers=hf.num_hidden_layers,
        vocab_size=hf.vocab_size,
        embed_dim=hf.hidden_size,
        hidden_dim=hf.intermediate_size,
        num_heads=hf.num_attention_heads,
        head_dim=hf.hidden_size // hf.num_attention_heads,
        num_kv_heads=hf.num_key_value_heads,
        rope_theta=int(getattr(hf, "rope_theta", None) or hf.rope_parameters["rope_theta"]),
        norm_eps=hf.rms_norm_eps,
        use_tied_embedding=bool(hf.tie_word_embeddings),
    )
    return params.create_model_from_safe_tensors(args.model, config, mesh)


def make_mesh(args: Args) -> Any:
    """``fsdp x tp`` devices with Auto axes (``jax.make_mesh`` makes Explicit ones, which
    Tunix's models reject)."""
    import jax
    from agent_envs.adapters.tunix import single_device_mesh

    size = args.fsdp * args.tp
    if size == 1:
        return single_device_mesh()
    devices = jax.devices()
    if len(devices) < size:
        raise SystemExit(f"--fsdp x --tp = {size} devices, this machine has {len(devices)}")
    grid = np.array(devices[:size]).reshape(args.fsdp, args.tp)
    return jax.sharding.Mesh(grid, ("fsdp", "tp"))


def advantages_of(args: Args, records: list[Any]) -> list[Any] | np.ndarray:
    """Per-episode advantages, or GiGPO's per-turn values laid out per token."""
    from agent_envs.adapters import advantages as estimators

    if args.estimator != "gigpo":
        return estimators.episode_advantages(records, estimator=args.estimator)
    turns = estimators.gigpo(records, gamma=args.gigpo_gamma, omega=args.gigpo_omega)
    return [estimators.token_advantages(t, a) for t, a in zip(records, turns, strict=True)]


def episode_figures(records: Sequence[Any]) -> dict[str, float]:
    model = sum(sum(t.env_mask) for t in records if t.has_tokens)
    tokens = sum(len(t.completion_ids) for t in records if t.has_tokens)
    return {
        "return": float(np.mean([t.episode_return for t in records])),
        "success": float(np.mean([t.success for t in records])),
        "turns": float(np.mean([t.num_turns for t in records])),
        "completion_tokens": tokens / len(records),
        "model_token_fraction": model / tokens if tokens else 0.0,
        "errors": float(sum(t.error is not None for t in records)),
    }


# --------------------------------------------------------------------------- main
def main(args: Args) -> list[dict[str, Any]]:
    """Train, validate and log; returns the log records."""
    _check(args)
    import gymnasium
    from agent_envs.adapters import advantages as estimators
    from agent_envs.adapters import tunix as glue
    from agent_envs.adapters.engines.scripted import oracle_engine
    from agent_envs.adapters.loop.collector import RolloutCollector, collect_episodes

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    args.out.mkdir(parents=True, exist_ok=True)
    settings = {key: str(value) for key, value in dataclasses.asdict(args).items()}
    (args.out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    tokenizer = load_tokenizer(args)
    mesh = make_mesh(args)
    model = load_model(args, len(tokenizer), mesh)
    reference = load_model(args, len(tokenizer), mesh) if args.beta > 0 else None
    cluster = glue.make_cluster(
        model,
        tokenizer,
        mesh=mesh,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        eval_temperature=0.0,
        max_new_tokens=args.max_new_tokens,
        kv_cache_size=args.kv_cache_size,
        beta=args.beta,
        epsilon=args.epsilon,
        reference=reference,
    )
    pad = cluster.rollout.pad_id()

    def collector(num_envs: int, group_size: int, engine: Any) -> RolloutCollector:
        vec = gymnasium.make_vec(
            args.env_id, num_envs=num_envs, group_size=group_size, autoreset_mode="disabled"
        )
        return RolloutCollector(
            vec,
            engine,
            env_id=args.env_id,
            max_turns=args.max_turns,
            max_new_tokens=args.max_new_tokens,
            max_total_tokens=args.max_total_tokens,
        )

    train = collector(
        args.groups * args.group_size, args.group_size, glue.TunixEngine(cluster, seed=args.seed)
    )
    val = collector(args.val_episodes, 1, glue.TunixEngine(cluster, mode="eval"))
    log: list[dict[str, Any]] = []
    path = args.out / "log.jsonl"
    path.write_text("")

    def write(record: dict[str, Any]) -> None:
        log.append(record)
        with path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}
        print(json.dumps(shown), flush=True)

    def validate(step: int) -> None:
        started = time.perf_counter()
        records = val.collect(list(range(args.val_episodes)))
        figures = episode_figures(records)
        write({"step": step, "split": "val", **figures, "seconds": time.perf_counter() - started})
        # Tunix's EVAL buffer needs a TRAIN buffer first: validation goes under "val/"
        cluster.buffer_metrics({f"val/{k}": (v, np.mean) for k, v in figures.items()})

    validate(0)
    for step in range(1, args.steps + 1):
        clock = [time.perf_counter()]
        seeds = [TRAIN_SEED_BASE + (step - 1) * args.groups + g for g in range(args.groups)]
        records = train.collect(seeds)  # rollout
        if args.oracle_per_group:
            oracle = collect_episodes(
                args.env_id,
                oracle_engine(tokenizer=tokenizer),
                seeds,
                max_turns=args.max_turns,
                max_new_tokens=args.max_new_tokens,
                max_total_tokens=args.max_total_tokens,
            )
            records = estimators.mix_off_policy(records, oracle, k=args.oracle_per_group)
        clock.append(time.perf_counter())
        values = advantages_of(args, records)  # advantages
        example = glue.build_train_example(records, values, pad_id=pad, pad_multiple=64)  # batch
        if args.beta > 0:
            example = example.replace(
                ref_per_token_logps=cluster.get_ref_per_token_logps(
                    example.prompt_ids, example.completion_ids, pad, cluster.rollout.eos_id()
                )
            )
        clock.append(time.perf_counter())
        glue.update(cluster, example)  # update
        clock.append(time.perf_counter())
        flat = [np.ravel(np.asarray(v)) for v in values]
        figures = {  # episode figures of the model's own episodes (oracle rows left out)
            **episode_figures([t for t in records if not estimators.is_off_policy(t)]),
            "advantage_abs_mean": float(np.mean(np.abs(np.concatenate(flat)))),
            "zero_variance_groups": estimators.diagnostics(records)["zero_variance_fraction"],
        }
        cluster.buffer_metrics({f"rollout/{k}": (v, np.mean) for k, v in figures.items()})
        write(
            {
                "step": step,
                "split": "train",
                **figures,
                "rollout_s": clock[1] - clock[0],
                "batch_s": clock[2] - clock[1],
                "update_s": clock[3] - clock[2],
            }
        )
        if args.val_every and step % args.val_every == 0 and step != args.steps:
            validate(step)
    validate(args.steps)
    for vec_collector in (train, val):
        vec_collector.vector_env.close()
    return log


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs train-tunix",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    main(parse_args())
