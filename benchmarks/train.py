"""Train an agent on ``grl/*`` envs on CPU and measure it on the leaderboard.

``agent-envs train`` runs the whole pipeline, one stage after another, each
stage resumable (a finished stage is read back, an interrupted one continues from its last
checkpoint)::

    smollm2 (zero-shot)  ─►  sft  ─►  grpo   ─┐
                                 ├─►  gigpo  ─┼─►  eval (leaderboard)  ─►  curves (PNG)
                                 └─►  luffy  ─┘

- **sft**: the env's oracle trajectories on train seeds → TRL ``SFTTrainer`` with LoRA
  (peft; :class:`agent_envs.adapters.trl.sft_trainer.SharedPrefixSFTTrainer` runs each batch's
  shared system prompt once, same gradients), loss on the oracle's replies only (prompt-completion
  rows: one per turn, the history up to that turn's observation as the prompt; or, with
  ``--sft-rows episode``, one row per episode with the loss on every reply). The adapter is
  merged into the base weights and saved as a plain checkpoint folder.
- **grpo**, **gigpo**, **luffy**: RL from the SFT model with TRL's ``GRPOTrainer`` extended by
  :class:`agent_envs.adapters.trl.grpo_trainer.TokenAdvantageGRPOTrainer`: multi-turn episodes from
  :func:`agent_envs.adapters.trl.make_rollout_func`, advantages from
  :mod:`agent_envs.adapters.advantages` (``grpo``: the episode's group-normalised return on every
  model token; ``gigpo``: episode plus anchor-state step advantages per turn; ``luffy``: GRPO (or
  ``--luffy-estimator gigpo``) over groups with ``luffy_k`` oracle episodes of the same seed, from
  the start or (``--luffy-start recovery``) from where a failed episode of the group stood after its
  first turn, trained with LUFFY's policy shaping), LoRA again, merged.
- **eval**: one leaderboard run (``agent_envs.benchmarks.leaderboard``) with ``random``, ``oracle``,
  ``smollm2``, ``smollm2-sft``, ``smollm2-sft-grpo``, ``smollm2-sft-gigpo``,
  ``smollm2-sft-luffy`` on the first ``eval_seeds`` published eval seeds of every env, greedy.
  Train seeds are drawn from ``[TRAIN_SEED_BASE, TRAIN_SEED_BASE + 2**30)`` and checked
  disjoint from every published eval seed the leaderboard can use.
  Each model an RL stage kept (``--keep-steps N``: ``<stage>/model-stepN/``) plays too, as
  ``<agent>-stepN`` (e.g. ``smollm2-sft-gigpo-step40``): no hand merges.
- **curves** (:mod:`agent_envs.benchmarks.train_report`): success and return of the training
  episodes against the RL step, one line per estimator, as PNG, and the eval's greedy success
  of each kept model against its step (``curve_eval.png``).

**Problems, not only seeds.** Every eval episode's problem (``TextEnv.problem_key()``) is
checked against the problems the stages trained on (the SFT episodes' seeds and the RL prompts'
seeds, recorded in each ``stage.json``): the report gives each trained row on all eval seeds
and on the held-out problems, with paired intervals counted over problems
(:mod:`agent_envs.benchmarks.leaderboard.problems`). Where a preset has too few problems for
any to be held out (``grl/Blocksworld-v0``), ``--problem-split FRACTION`` trains only on the
problems of a seeded part of the problem space and the eval reports the rest.
``agent-envs train --summary`` writes the one-page summary of the committed runs
(:data:`agent_envs.benchmarks.train_report.SUMMARY_RUNS`).

Every stage writes ``<out>/<stage>/stage.json`` (settings, wall and CPU seconds, metrics) and
``<out>/<stage>/log.jsonl`` (TRL's log history). To train a finished RL stage further, delete
its ``stage.json`` and ``model/`` and rerun with a larger ``--rl-steps``: it continues from its
last checkpoint on the next train seeds, and its times include the steps before. The GPU
recipe is the same script with other flags (see the README, "Train an agent"; ``--device
auto`` trains and plays on a GPU when torch sees one): a bigger ``--model``, ``--no-lora``,
``--use-vllm`` (TRL's colocated vLLM generates the episodes), larger groups and more steps;
``--stage-time-limit`` fits each training stage into a lease.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_envs.adapters.engines.device import device_name, resolve_device
from agent_envs.adapters.trl.allocator import check_allocator, use_allocator
from agent_envs.adapters.trl.stages import (
    Stage,
    StageClock,
    load_model,
    lora_config,
    save_merged,
)
from agent_envs.benchmarks.cli import parse

__all__ = [
    "RL_STAGES",
    "SFT_ROWS",
    "STAGES",
    "TRAIN_SEED_BASE",
    "Args",
    "StageClock",
    "agent_names",
    "main",
    "oracle_sft_rows",
    "problem_split",
    "problems_of",
    "rl_seeds",
    "rl_seeds_by_env",
    "sft_seeds",
    "stage_train_seeds",
    "train_seeds",
    "trained_problems",
]

RL_STAGES = ("grpo", "gigpo", "luffy")
STAGES = ("sft", *RL_STAGES, "eval", "curves")
#: train seeds start here; published eval seeds are 31-bit hashes, checked disjoint anyway
TRAIN_SEED_BASE = 1_000_000_007


def agent_names(args: Args) -> dict[str, str]:
    """Leaderboard name of the base model (``"base"``) and of each trained stage:
    ``smollm2``, ``smollm2-sft``, ``smollm2-sft-grpo``, ... (``base-...`` for another model)."""
    prefix = "smollm2" if args.model == "smollm2" else "base"
    return {"base": prefix, "sft": f"{prefix}-sft"} | {
        stage: f"{prefix}-sft-{stage}" for stage in RL_STAGES
    }


@dataclass
class Args:
    """Settings of one training run (each field is a ``--flag``)."""

    out: Path = Path("runs/train")
    """run folder: one sub-folder per stage"""
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    """stages to run, in pipeline order (finished ones are skipped)"""
    envs: list[str] = field(default_factory=lambda: ["grl/Sokoban-v0", "grl/Blocksworld-v0"])
    """ids trained (SFT on all of them; RL cycles through them) and evaluated"""
    env_kwargs: list[str] = field(default_factory=list)
    """keyword arguments of an env beyond its registered ones, ``ENV_ID=JSON`` (the
    leaderboard's ``--env-kwargs``: e.g. BIRD on its official files); every stage builds the
    env with them, the eval records them in its run folder"""
    model: str = "smollm2"
    """base model: ``smollm2`` (the embedded SmolLM2-135M-Instruct) or a checkpoint folder"""
    seed: int = 0
    """torch / sampling seed"""
    device: str = "auto"
    """where the models train and play (training episodes and eval): ``cuda``, ``cpu``, or
    ``auto`` (``cuda`` when torch sees a GPU)"""
    allocator: str = "auto"
    """memory allocator of the process (``agent_envs.adapters.trl.allocator``): ``tcmalloc`` (the
    command starts again with it preloaded; an error if it is not installed), ``auto`` (tcmalloc
    when installed: GRPO steps on CPU ran 1.41x faster, ``benchmarks/results/cpu_allocator.md``) or
    ``system``"""
    stage_time_limit: float = 0.0
    """wall seconds after which a training stage stops at the end of its current step and
    finishes there, as if it had reached its last step (0: no limit); its ``stage.json``
    records the steps it reached (for a fixed lease of a GPU)"""
    lora: bool = True
    """train LoRA adapters (peft) instead of every weight"""
    lora_r: int = 32
    """LoRA rank"""
    lora_alpha: int = 64
    """LoRA alpha"""
    bf16: bool = True
    """bfloat16 autocast (GPUs; CPUs with AVX512-BF16 / AMX run it ~1.3-2x faster)"""
    threads: int | None = None
    """torch threads (default: torch's choice)"""
    gradient_checkpointing: bool = False
    """recompute activations in the backward pass: more time, far less memory (an RL step of
    16 grl/Blocksworld-v0 episodes was killed at 24 GB without it and peaked near 5 GB with it)"""
    # SFT
    sft_episodes: int = 600
    """oracle episodes per env"""
    sft_epochs: float = 2.0
    """passes over the SFT rows"""
    sft_lr: float = 5e-4
    """SFT learning rate"""
    sft_batch_size: int = 8
    """SFT rows per optimizer step"""
    sft_micro_batch: int = 0
    """SFT rows per forward/backward pass (0: the whole ``--sft-batch-size``); the step
    accumulates the passes' gradients (TRL's ``gradient_accumulation_steps``), for long rows:
    a batch of 8 BIRD rows (~2,100 tokens each) was killed at 14 GB in one pass"""
    sft_rationale: bool = True
    """demonstrations (SFT rows and the luffy stage's oracle episodes) write the oracle's worked
    reasoning before the answer where the env has one (``TextEnv.oracle_rationale``: GSM8K's
    solution steps; the other envs have none); give the replies room with ``--max-new-tokens``"""
    sft_shared_prefix: bool = True
    """run each batch's shared system prompt once (``agent_envs.adapters.trl.sft_trainer``; same
    gradients)"""
    sft_rows: str = "turn"
    """what one SFT row is: ``turn`` (the turn's history as the prompt, the reply as the
    completion: TRL's completion-only loss) or ``episode`` (the whole episode, the loss on
    every reply and its end-of-turn token: TRL's ``assistant_only_loss``). Each reply sees the
    same history either way; ``episode`` runs that history once, not once per later turn
    (WebShop's oracle rows: 3.7x fewer tokens, ``benchmarks/results/sft_episode_rows.md``),
    in fewer, larger rows: fewer optimizer steps per epoch at the same batch size"""
    # RL
    rl_steps: int = 30
    """optimizer steps per RL stage"""
    rl_prompts: int = 4
    """episode groups per step"""
    num_generations: int = 4
    """episodes per group (the group size G)"""
    rl_micro_batch: int = 0
    """episodes per forward/backward pass of an RL step (0: all ``rl_prompts *
    num_generations`` at once); the step accumulates the gradient over the passes and takes
    one optimizer step, so it trains as one pass would (up to float rounding) with a smaller
    peak memory (TRL's ``gradient_accumulation_steps`` over one generation batch; 16
    Blocksworld episodes on CPU: 22 GiB in one pass, 10 GiB in passes of 4,
    ``benchmarks/results/rl_micro_batch.md``)"""
    keep_steps: list[int] = field(default_factory=list)
    """RL steps whose models each RL stage also keeps (``<stage>/model-step{N}/``, LoRA merged)
    and the eval plays beside the final one, as ``<agent>-step{N}``"""
    rl_lr: float = 2e-5
    """RL learning rate"""
    rl_beta: float = 0.0
    """weight of the KL penalty to the SFT model (TRL's ``beta``, its k3 estimate per token;
    with LoRA the reference is the model with its adapter switched off, without LoRA TRL
    holds a second copy). It is weighed against the advantages, which are on the return's
    scale (Blocksworld GiGPO token advantages: std ~8), so 1.0 there is about 0.12 against
    unit-scale advantages; measured runs (0.3 and 1.0) in
    ``benchmarks/results/training/blocksworld/rerun300/training.md``"""
    temperature: float = 1.0
    """sampling temperature of training episodes"""
    drop_zero_advantage: bool = True
    """leave episodes with no non-zero advantage out of the loss's token count (DAPO's filter)"""
    rl_trim_padding: bool = True
    """run each RL forward/backward pass over its own episodes' span, not the whole step's
    padded width (``TokenAdvantageGRPOTrainer(trim_padding=...)``; same values)"""
    max_new_tokens: int = 32
    """generation budget per turn (training and eval)"""
    max_total_tokens: int = 1024
    """token budget of one episode (prompt included)"""
    gigpo_gamma: float = 0.95
    """GiGPO's step-return discount"""
    gigpo_omega: float = 1.0
    """GiGPO's weight of the step advantage"""
    luffy_k: int = 1
    """oracle episodes in each LUFFY group (of ``num_generations``)"""
    luffy_estimator: str = "grpo"
    """advantages of the luffy stage over its mixed groups: ``grpo`` or ``gigpo``"""
    luffy_start: str = "reset"
    """where the luffy stage's oracle episodes start: ``reset`` (LUFFY) or ``recovery`` (the
    state a failed sampled episode of the group was in after its first turn, that turn replayed
    without loss: ``agent_envs.adapters.trl.AdvantageConfig``'s ``oracle_start``)"""
    generation_dtype: str = "auto"
    """dtype of a model copy that generates the training episodes (``bfloat16``, ``float16``
    ...; LoRA merged, made again after each optimizer step:
    ``agent_envs.adapters.trl.GenerationCopy``; GRPO steps on CPU ran 1.23x faster,
    ``benchmarks/results/generation_copy.md``), ``model`` (generate on the trained model itself) or
    ``auto`` (``bfloat16`` on CPU, ``model`` on a GPU)"""
    use_vllm: bool = False
    """generate training episodes with TRL's colocated vLLM (GPU recipe)"""
    # eval
    eval_seeds: int = 100
    """published eval seeds per env, every agent"""
    eval_out: Path = Path("benchmarks/results/training/leaderboard")
    """leaderboard run folder of the eval stage"""
    eval_batch_size: int = 16
    """episodes per generate call in the eval"""
    eval_zero_shot: bool = True
    """put the zero-shot base model in the eval (on envs it cannot solve it plays every turn of
    every episode: the slowest agent by far)"""
    curves_out: Path = Path("benchmarks/results/training")
    """where the learning-curve PNGs and ``training.md`` go"""
    problem_split: float = 0.0
    """train only on problems in a seeded part of each env's problem space of this fraction
    (``agent_envs.benchmarks.leaderboard.problems.in_train_part``); the eval reports the
    problems outside it as held out (0: no split; for presets with few problems, e.g.
    ``grl/Blocksworld-v0``, where every eval problem is also a training problem)"""
    problem_split_seed: int = 0
    """which split ``--problem-split`` draws"""
    summary: bool = False
    """write ``benchmarks/results/training/summary.md`` and ``summary.png`` from the committed
    run folders (:data:`agent_envs.benchmarks.train_report.SUMMARY_RUNS`) instead of running
    stages"""
    progress: bool = True
    """progress bars"""


# --------------------------------------------------------------------------- seeds
def problem_split(args: Args) -> tuple[float, int] | None:
    """``(fraction, seed)`` of ``--problem-split``, ``None`` without one; a ``SystemExit``
    naming the flag for a fraction outside (0, 1)."""
    fraction = args.problem_split
    if fraction == 0:
        return None
    if not 0 < fraction < 1:
        raise SystemExit(
            f"--problem-split: the fraction of problems trained on must be in (0, 1) "
            f"(0: no split), got {fraction}"
        )
    return float(fraction), int(args.problem_split_seed)


def env_kwargs_of(args: Args) -> dict[str, dict[str, Any]]:
    """``env_id -> keyword arguments`` of ``--env-kwargs`` (``main`` builds each env once with
    them, to refuse what it refuses before a stage runs)."""
    from agent_envs.benchmarks.leaderboard.run import env_overrides

    return env_overrides(args.env_kwargs, args.envs)


def train_seeds(
    env_id: str,
    count: int,
    *,
    stream: int = 0,
    split: tuple[float, int] | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[int]:
    """``count`` train seeds of ``env_id`` (stream 0: SFT; 1+: RL), disjoint from the
    leaderboard's published eval seeds (checked against the first 10,000 of them); with a
    ``split`` (:func:`problem_split`), only seeds whose problem (on the env built with
    ``env_kwargs``) is in its train part."""
    from agent_envs.benchmarks.leaderboard import eval_seeds
    from agent_envs.benchmarks.leaderboard.problems import in_train_part, problem_keys
    from agent_envs.benchmarks.leaderboard.run import registered_env

    spec = registered_env(env_id, env_kwargs) if env_kwargs else None

    rng = random.Random(f"{env_id}#train#{stream}")
    forbidden = set(eval_seeds(env_id, 10_000))
    seeds: list[int] = []
    seen: set[int] = set()
    while len(seeds) < count:
        if split and len(seen) > 1000 * count:
            raise SystemExit(
                f"--problem-split {split[0]}: {len(seen)} seeds of {env_id} gave only "
                f"{len(seeds)} of the {count} train seeds in its train part"
            )
        batch = []
        while len(batch) < count - len(seeds):
            seed = TRAIN_SEED_BASE + rng.randrange(2**30)
            if seed not in forbidden and seed not in seen:
                seen.add(seed)
                batch.append(seed)
        if split:
            keys = problem_keys(env_id, batch, spec)
            batch = [seed for seed in batch if in_train_part(keys[seed], *split)]
        seeds += batch
    return seeds


# --------------------------------------------------------------------------- stages
def base_model_dir(args: Args) -> Path:
    """A plain checkpoint folder of the base model (the embedded SmolLM2 is converted once)."""
    if args.model != "smollm2":
        return Path(args.model)
    from agent_envs.adapters.engines.transformers import save_smollm2_checkpoint

    folder = args.out / "base"
    if not (folder / "config.json").exists():
        print("[base] converting the embedded SmolLM2-135M-Instruct to a plain checkpoint")
        save_smollm2_checkpoint(str(folder))
    return folder


def generation_dtype(args: Args) -> str | None:
    """The dtype of the copy that generates RL episodes (``--generation-dtype``), ``None`` to
    generate on the trained model; a ``SystemExit`` naming the flag for a bad value."""
    choice = args.generation_dtype
    if choice == "auto":
        choice = "bfloat16" if resolve_device(args.device) == "cpu" else "model"
    if choice == "model":
        return None
    from agent_envs.adapters.trl import GenerationCopy

    try:
        GenerationCopy(choice)
    except ValueError as error:
        raise SystemExit(f"--generation-dtype: {error} (or model, auto)") from None
    return choice


def _lora(args: Args) -> Any:
    return lora_config(args.lora_r, args.lora_alpha) if args.lora else None


def _common_config(args: Args, stage: Stage) -> dict[str, Any]:
    return dict(
        output_dir=str(stage.checkpoints),
        use_cpu=resolve_device(args.device) == "cpu",
        bf16=args.bf16,
        report_to="none",
        logging_steps=1,
        save_strategy="steps",
        save_steps=5,
        save_total_limit=1,
        seed=args.seed,
        dataloader_num_workers=0,
        disable_tqdm=not args.progress,
        gradient_checkpointing=args.gradient_checkpointing,
    )


def sft_seeds(args: Args) -> dict[str, list[int]]:
    """``env_id -> seeds`` of the SFT episodes: the first ``sft_episodes`` SFT train seeds of
    each env (of the ``--problem-split`` train part, with one)."""
    split, kwargs = problem_split(args), env_kwargs_of(args)
    return {
        env_id: train_seeds(env_id, args.sft_episodes, split=split, env_kwargs=kwargs.get(env_id))
        for env_id in args.envs
    }


SFT_ROWS = {"turn": "prompt_completion", "episode": "messages"}


def oracle_sft_rows(
    env_id: str,
    seeds: Sequence[int],
    rationale: bool = False,
    rows: str = "turn",
    env_kwargs: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], float]:
    """``(rows, oracle success rate)``: SFT rows of the oracle's episodes of ``env_id`` (built
    with ``env_kwargs``) on ``seeds``, one per turn (prompt-completion) or one per episode
    (``rows="episode"``: messages), each reply with the oracle's worked reasoning first with
    ``rationale``."""
    from agent_envs.adapters.sft import collect_oracle_trajectories, sft_rows

    trajectories = collect_oracle_trajectories(
        env_id, seeds, rationale=rationale, **(env_kwargs or {})
    )
    columns = ("prompt", "completion") if rows == "turn" else ("messages",)
    table = [
        {column: row[column] for column in columns}
        for row in sft_rows(trajectories, format=SFT_ROWS[rows])
    ]
    return table, sum(t.success for t in trajectories) / len(trajectories)


def run_sft(args: Args, stage: Stage) -> None:
    """Oracle trajectories of every env → SFTTrainer (completion-only loss) → merged model."""
    import datasets
    from agent_envs.adapters.sft import sft_chat_template
    from agent_envs.adapters.trl.sft_trainer import SharedPrefixSFTTrainer
    from trl import SFTConfig, SFTTrainer

    checkpoint = stage.last_checkpoint()
    clock = StageClock(checkpoint)
    rows: list[dict[str, Any]] = []
    oracle_success = {}
    seeds, kwargs = sft_seeds(args), env_kwargs_of(args)
    for env_id in args.envs:
        env_rows, oracle_success[env_id] = oracle_sft_rows(
            env_id, seeds[env_id], args.sft_rationale, args.sft_rows, kwargs.get(env_id)
        )
        rows += env_rows
    random.Random(args.seed).shuffle(rows)
    dataset = datasets.Dataset.from_list(rows)
    model, tokenizer = load_model(base_model_dir(args))
    micro, passes = sft_batch(args)
    chat_template = tokenizer.chat_template
    episodes = args.sft_rows == "episode"
    if episodes:  # the same text, the replies marked for assistant_only_loss
        tokenizer.chat_template = sft_chat_template(tokenizer)
    config = SFTConfig(
        **_common_config(args, stage),
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=passes,
        num_train_epochs=args.sft_epochs,
        learning_rate=args.sft_lr,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,
        max_length=args.max_total_tokens,
        completion_only_loss=not episodes,
        assistant_only_loss=episodes,
    )
    trainer = (SharedPrefixSFTTrainer if args.sft_shared_prefix else SFTTrainer)(
        model=model,
        processing_class=tokenizer,
        train_dataset=dataset,
        args=config,
        peft_config=_lora(args),
        callbacks=[clock.callback(args.stage_time_limit)],
    )
    trainer.train(resume_from_checkpoint=checkpoint)
    tokenizer.chat_template = chat_template  # the model plays with its own template
    save_merged(trainer.model, tokenizer, stage.model_dir)
    stage.write_log(trainer.state.log_history)
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    stage.finish(
        clock,
        device=device_name(args.device),
        rows=len(rows),
        oracle_success=oracle_success,
        train_seeds=seeds,
        steps=trainer.state.global_step,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        settings=_settings(args),
    )


def rollout_func_of(args: Args, estimator: str) -> Any:
    """The RL stage's ``rollout_func``: one per env, routed by each prompt's episode key, all
    generating on one model copy."""
    from agent_envs.adapters.trl import GenerationCopy, make_rollout_func, route_by_env

    dtype = generation_dtype(args)
    generation_copy = GenerationCopy(dtype) if dtype else None  # one copy for every env
    config = advantage_config(args, estimator)
    kwargs = env_kwargs_of(args)
    return route_by_env(
        {
            env_id: make_rollout_func(
                env_id,
                max_new_tokens=args.max_new_tokens,
                max_total_tokens=args.max_total_tokens,
                advantages=config,
                generation_dtype=generation_copy,
                **kwargs.get(env_id, {}),
            )
            for env_id in args.envs
        }
    )


def rl_seeds(args: Args, steps: int | None = None) -> list[tuple[str, int]]:
    """``(env_id, seed)`` of the RL prompts of the first ``steps`` steps (default
    ``--rl-steps``), ``rl_prompts`` a step in order, envs interleaved so every step sees each
    env (of the ``--problem-split`` train part, with one)."""
    needed = (args.rl_steps if steps is None else steps) * args.rl_prompts
    per_env = -(-needed // len(args.envs))
    split, kwargs = problem_split(args), env_kwargs_of(args)
    seeds = {
        env_id: train_seeds(env_id, per_env, stream=1, split=split, env_kwargs=kwargs.get(env_id))
        for env_id in args.envs
    }
    pairs = [(env_id, seeds[env_id][index]) for index in range(per_env) for env_id in args.envs]
    return pairs[:needed]


def rl_seeds_by_env(args: Args, steps: int) -> dict[str, list[int]]:
    """``env_id -> seeds`` of the RL prompts of the first ``steps`` steps (:func:`rl_seeds`)."""
    seeds: dict[str, list[int]] = {env_id: [] for env_id in args.envs}
    for env_id, seed in rl_seeds(args, steps):
        seeds[env_id].append(seed)
    return seeds


def _rl_dataset(args: Args) -> Any:
    """The RL prompts (:func:`rl_seeds`) as episode keys."""
    import datasets
    from agent_envs.adapters.trl import episode_key

    keys = [episode_key(env_id, seed) for env_id, seed in rl_seeds(args)]
    return datasets.Dataset.from_list([{"prompt": key} for key in keys])


def sft_batch(args: Args) -> tuple[int, int]:
    """Rows per SFT pass (``--sft-micro-batch``) and passes per optimizer step, checked."""
    micro = args.sft_micro_batch or args.sft_batch_size
    if micro < 1 or args.sft_batch_size % micro:
        raise SystemExit(
            f"--sft-micro-batch: {args.sft_micro_batch} does not divide --sft-batch-size "
            f"{args.sft_batch_size}"
        )
    return micro, args.sft_batch_size // micro


def rl_batch(args: Args) -> tuple[int, int]:
    """Episodes per RL step and per forward/backward pass (``--rl-micro-batch``), checked."""
    episodes = args.rl_prompts * args.num_generations
    micro = args.rl_micro_batch or episodes
    if micro < 1 or episodes % micro:
        raise SystemExit(
            f"--rl-micro-batch: {args.rl_micro_batch} does not divide the {episodes} episodes "
            f"of a step (--rl-prompts {args.rl_prompts} x --num-generations "
            f"{args.num_generations})"
        )
    return episodes, micro


def advantage_config(args: Args, stage: str) -> Any:
    """The RL stage's :class:`agent_envs.adapters.trl.AdvantageConfig`; the luffy flags checked."""
    from agent_envs.adapters.trl import ORACLE_STARTS, AdvantageConfig

    if args.luffy_estimator not in ("grpo", "gigpo"):
        raise SystemExit(f"--luffy-estimator: grpo or gigpo, got {args.luffy_estimator!r}")
    if args.luffy_start not in ORACLE_STARTS:
        raise SystemExit(f"--luffy-start: one of {ORACLE_STARTS}, got {args.luffy_start!r}")
    luffy = stage == "luffy"
    return AdvantageConfig(
        estimator=args.luffy_estimator if luffy else stage,
        gamma=args.gigpo_gamma,
        omega=args.gigpo_omega,
        off_policy=args.luffy_k if luffy else 0,
        oracle_start=args.luffy_start,
        oracle_rationale=args.sft_rationale,
    )


def kl_beta(args: Args) -> float:
    """``--rl-beta``, checked."""
    beta = args.rl_beta
    if not (beta >= 0 and math.isfinite(beta)):
        raise SystemExit(f"--rl-beta: the KL weight must be a finite number >= 0, got {beta}")
    return float(beta)


def run_rl(args: Args, stage: Stage, sft: Stage) -> None:
    """RL from the SFT model with one estimator (the stage's name)."""
    from agent_envs.adapters.trl import episode_return_reward, success_reward
    from agent_envs.adapters.trl.grpo_trainer import TokenAdvantageGRPOTrainer
    from trl import GRPOConfig

    episodes, micro = rl_batch(args)
    checkpoint = stage.last_checkpoint()
    clock = StageClock(checkpoint)
    model, tokenizer = load_model(sft.model_dir)
    config = GRPOConfig(
        **_common_config(args, stage),
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=episodes // micro,
        num_generations=args.num_generations,
        max_steps=args.rl_steps,
        learning_rate=args.rl_lr,
        lr_scheduler_type="constant",
        temperature=args.temperature,
        max_completion_length=args.max_total_tokens,
        beta=kl_beta(args),
        reward_weights=[1.0, 0.0],  # success is logged, the return is the reward
        shuffle_dataset=False,
        use_vllm=args.use_vllm,
        vllm_mode="colocate",
    )
    trainer = TokenAdvantageGRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[episode_return_reward, success_reward],
        train_dataset=_rl_dataset(args),
        rollout_func=rollout_func_of(args, stage.name),
        args=config,
        peft_config=_lora(args),
        drop_zero_advantage=args.drop_zero_advantage,
        trim_padding=args.rl_trim_padding,
        callbacks=[clock.callback(args.stage_time_limit), stage.keep_models(args.keep_steps)],
    )
    trainer.train(resume_from_checkpoint=checkpoint)
    save_merged(trainer.model, tokenizer, stage.model_dir)
    stage.write_log(trainer.state.log_history)
    stage.finish(
        clock,
        device=device_name(args.device),
        steps=trainer.state.global_step,
        train_seeds=rl_seeds_by_env(args, trainer.state.global_step),
        settings=_settings(args),
    )


def run_eval(args: Args) -> dict[str, Any]:
    """The leaderboard run of every trained stage next to random, oracle and (unless
    ``--no-eval-zero-shot``) the zero-shot base model."""
    from agent_envs.benchmarks import leaderboard

    names = agent_names(args)
    agents = ["random", "oracle"]
    if args.eval_zero_shot:
        agents.append("smollm2" if args.model == "smollm2" else f"base=hf:{args.model}")
    for stage_name in ("sft", *RL_STAGES):
        stage = Stage(args.out, stage_name)
        if stage.model_dir.exists():
            agents.append(f"{names[stage_name]}=hf:{stage.model_dir}")
        for step, folder in stage.kept_models().items():
            agents.append(f"{names[stage_name]}-step{step}=hf:{folder}")
    run = leaderboard.Args(
        preset="grl",  # model agents play the env's own turn budget
        envs=list(args.envs),
        env_kwargs=list(args.env_kwargs),
        agents=agents,
        seeds=args.eval_seeds,
        model_seeds=args.eval_seeds,
        model_max_turns=None,
        max_new_tokens=args.max_new_tokens,
        temperature=0.0,
        batch_size=args.eval_batch_size,
        out=args.eval_out,
        replay_frames=False,
        progress=args.progress,
        device=args.device,
    )
    return leaderboard.main(run)


def stage_train_seeds(record: dict[str, Any]) -> dict[str, list[int]]:
    """``env_id -> seeds`` a finished stage trained on, from its ``stage.json`` record: the
    ``train_seeds`` it records, or (records from before they did) the seeds its recorded
    settings draw (SFT: ``sft_episodes`` per env; RL: the prompts of the steps it reached)."""
    if "train_seeds" in record:
        return record["train_seeds"]
    settings = record["settings"]
    args = Args(
        envs=list(ast.literal_eval(settings["envs"])),
        env_kwargs=list(ast.literal_eval(settings.get("env_kwargs", "[]"))),
        sft_episodes=int(settings["sft_episodes"]),
        rl_prompts=int(settings["rl_prompts"]),
        problem_split=float(settings.get("problem_split", 0.0)),
        problem_split_seed=int(settings.get("problem_split_seed", 0)),
    )
    if record["stage"] == "sft":
        return sft_seeds(args)
    return rl_seeds_by_env(args, record["steps"])


def problems_of(records: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    """``env_id -> problem keys`` the stages of ``records`` trained on (each env built with
    the ``--env-kwargs`` its stage recorded)."""
    from agent_envs.benchmarks.leaderboard.problems import problem_keys
    from agent_envs.benchmarks.leaderboard.run import env_overrides, registered_env

    keys: dict[str, set[str]] = {}
    for record in records:
        played = stage_train_seeds(record)
        items = ast.literal_eval(record.get("settings", {}).get("env_kwargs", "[]"))
        kwargs = env_overrides(items, list(played))
        for env_id, seeds in played.items():
            spec = registered_env(env_id, kwargs[env_id]) if env_id in kwargs else None
            found = problem_keys(env_id, sorted(seeds), spec)
            keys.setdefault(env_id, set()).update(found.values())
    return keys


def trained_problems(args: Args) -> dict[str, set[str]]:
    """``env_id -> problem keys`` every finished stage of the run trained on."""
    stages = [Stage(args.out, name) for name in ("sft", *RL_STAGES)]
    trained = problems_of([stage.record() for stage in stages if stage.done])
    return {env_id: trained.get(env_id, set()) for env_id in args.envs}


def _settings(args: Args) -> dict[str, Any]:
    return {key: str(value) for key, value in dataclasses.asdict(args).items()}


# --------------------------------------------------------------------------- main
def main(args: Args) -> None:
    """Run the requested stages in pipeline order, skipping finished ones (``--summary``:
    write the summary page instead)."""
    from agent_envs.benchmarks import train_report
    from agent_envs.benchmarks.leaderboard.run import check_env_overrides

    if args.summary:
        print(*train_report.write_summary(), sep="\n")
        return
    problem_split(args)
    check_env_overrides(args.env_kwargs, args.envs)
    for stage in args.stages:
        if stage not in STAGES:
            raise SystemExit(f"--stages: unknown stage {stage!r}; choose from {STAGES}")
    sft_batch(args)
    if args.sft_rows not in SFT_ROWS:
        raise SystemExit(f"--sft-rows: choose from {list(SFT_ROWS)}, got {args.sft_rows!r}")
    check_allocator(args.allocator)
    generation_dtype(args)
    rl_batch(args)
    kl_beta(args)
    advantage_config(args, "luffy")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    sft = Stage(args.out, "sft")
    for name in STAGES:
        if name not in args.stages:
            continue
        stage = Stage(args.out, name)
        if name in ("eval", "curves"):
            print(f"[{name}]")
            if name == "eval":
                run_eval(args)
            else:
                print(*train_report.run_curves(args), train_report.write_report(args), sep="\n")
            continue
        if stage.done:
            print(f"[{name}] already done: {stage.record_path}")
            continue
        stage.dir.mkdir(parents=True, exist_ok=True)
        print(f"[{name}]")
        if name == "sft":
            run_sft(args, stage)
        else:
            if not sft.done:
                raise SystemExit(f"[{name}] needs the sft stage first")
            run_rl(args, stage, sft)


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs train",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parsed = parse_args(sys.argv[1:])
    use_allocator(parsed.allocator)
    main(parsed)
