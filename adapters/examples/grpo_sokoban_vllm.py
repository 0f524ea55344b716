"""GRPO on multi-turn Sokoban with TRL and vLLM (one GPU, vLLM colocated with training).

Run on a CUDA machine with ``pip install 'agent-envs[train,vllm]'``::

    python -m agent_envs.adapters.examples.grpo_sokoban_vllm --model Qwen/Qwen2.5-1.5B-Instruct

Each dataset row is one Sokoban episode key (env id + seed); TRL hands every key to the
rollout function ``num_generations`` times, and each copy plays a whole episode from the same
start state on vLLM (``LLM.generate`` on token ids, sampled-token logprobs). The completion
TRL trains on is the whole episode; ``env_mask`` zeroes the observation and template tokens
out of the loss, and the reward is the episode return. Trajectories of every batch are
appended to ``<output_dir>/trajectories.jsonl``. Not run in CI (it needs a GPU).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Args:
    """Every field is a command-line flag."""

    model: str = "Qwen/Qwen2.5-1.5B-Instruct"
    """a chat model (Hugging Face id or local folder)"""
    env_id: str = "grl/Sokoban-v0"
    """the registered env to train on"""
    num_seeds: int = 2000
    """episode keys in the dataset (seeds 0..num_seeds-1)"""
    num_generations: int = 8
    """episodes per seed: the GRPO group"""
    per_device_train_batch_size: int = 16
    """episodes per optimisation step (a multiple of num_generations)"""
    max_new_tokens: int = 256
    """tokens the model may write per turn"""
    max_total_tokens: int = 4096
    """tokens per episode, prompt included"""
    learning_rate: float = 1e-6
    max_steps: int = 200
    temperature: float = 1.0
    gpu_memory_utilization: float = 0.3
    """share of GPU memory vLLM may take beside training"""
    output_dir: str = "runs/grpo-sokoban"
    seed: int = 0


def main(args: Args) -> None:
    from agent_envs.adapters.trl import (
        episode_return_reward,
        make_episode_dataset,
        make_rollout_func,
    )
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from agent_envs.core.records import write_jsonl

    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    log = output / "trajectories.jsonl"

    def save(trajectories):
        with open(log, "a", encoding="utf-8") as handle:
            write_jsonl(trajectories, handle)

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype="bfloat16")
    config = GRPOConfig(
        output_dir=args.output_dir,
        use_vllm=True,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=args.gpu_memory_utilization,
        vllm_max_model_length=args.max_total_tokens,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.per_device_train_batch_size,
        max_completion_length=args.max_total_tokens,
        learning_rate=args.learning_rate,
        max_steps=args.max_steps,
        temperature=args.temperature,
        bf16=True,
        logging_steps=1,
        seed=args.seed,
        report_to="none",
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset(args.env_id, seeds=range(args.num_seeds)),
        rollout_func=make_rollout_func(
            args.env_id,
            max_new_tokens=args.max_new_tokens,
            max_total_tokens=args.max_total_tokens,
            on_trajectories=save,
        ),
        args=config,
    )
    trainer.train()
    trainer.save_model(str(output / "final"))


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Args(**vars(parser.parse_args()))


if __name__ == "__main__":
    main(_parse())
