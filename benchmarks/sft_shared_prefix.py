"""SFT step cost: TRL's ``SFTTrainer`` against ``SharedPrefixSFTTrainer`` on the same batches.

``agent-envs bench sft-shared-prefix`` builds both trainers on one dataset of oracle
rows (``agent_envs.adapters.sft.sft_rows``, prompt-completion, one row per turn) of ``--env-id``
over the embedded SmolLM2-135M-Instruct (or the checkpoint folder ``--model``) with the LoRA and
bf16 settings of ``agent_envs.benchmarks.train``, then times ``compute_loss`` + ``backward`` of the
same collated batch under each trainer, in ABBA order per repeat (a new batch each repeat), in CPU
seconds of this process on ``--threads`` torch threads (the work done, which other processes
on a shared machine barely change) and in wall seconds (on ``--device cuda``: wall seconds
up to the GPU's last kernel, the figure that counts there). It reports the median seconds
per step of each, the ratio (median and range over repeats), the fraction of tokens the
shared prefixes saved, and the largest loss difference between the two (bf16 autocast:
rounding, not a different loss). Results go to ``benchmarks/results/sft_shared_prefix.md``.
"""

from __future__ import annotations

import copy
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report

RESULTS = RESULTS_DIR / "sft_shared_prefix.md"


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env_id: str = "grl/Sokoban-v0"
    """the env whose oracle rows are trained on"""
    episodes: int = 64
    """oracle episodes (train seeds of ``agent_envs.benchmarks.train``)"""
    batch_size: int = 16
    """rows per step"""
    repeats: int = 4
    """batches per trainer"""
    threads: int = 1
    """torch threads"""
    bf16: bool = True
    """bfloat16 autocast, as ``agent_envs.benchmarks.train`` trains"""
    model: str = "smollm2"
    """``smollm2`` (the embedded model) or a checkpoint folder (e.g. one of the same shapes
    with random weights: the timings depend on shapes only)"""
    device: str = "cpu"
    """``cpu``, ``cuda`` or ``auto`` (as ``agent_envs.benchmarks.train --device``)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def _trainers(args: Args, folder: str) -> tuple[Any, Any]:
    import datasets
    from agent_envs.adapters.engines.device import resolve_device
    from agent_envs.adapters.engines.transformers import save_smollm2_checkpoint
    from agent_envs.adapters.trl.sft_trainer import SharedPrefixSFTTrainer
    from agent_envs.adapters.trl.stages import lora_config
    from agent_envs.benchmarks import train
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    base = args.model
    if args.model == "smollm2":
        base = os.path.join(folder, "base")
        save_smollm2_checkpoint(base)
    rows, _ = train.oracle_sft_rows(args.env_id, train.train_seeds(args.env_id, args.episodes))
    dataset = datasets.Dataset.from_list(rows)
    tokenizer = AutoTokenizer.from_pretrained(base)
    models = [AutoModelForCausalLM.from_pretrained(base) for _ in range(2)]
    defaults = train.Args()  # the training run's LoRA (r=32, all linear layers)
    lora = lora_config(defaults.lora_r, defaults.lora_alpha)
    built = []
    classes = (SFTTrainer, SharedPrefixSFTTrainer)
    for name, cls, model in zip(("a", "b"), classes, models, strict=True):
        config = SFTConfig(
            output_dir=os.path.join(folder, name),
            use_cpu=resolve_device(args.device) == "cpu",
            bf16=args.bf16,
            report_to="none",
            save_strategy="no",
            per_device_train_batch_size=args.batch_size,
            max_length=1024,
            completion_only_loss=True,
            gradient_checkpointing=False,
            seed=0,
        )
        built.append(
            cls(
                model=model,
                processing_class=tokenizer,
                train_dataset=dataset,
                args=config,
                peft_config=copy.deepcopy(lora),
            )
        )
    return built[0], built[1]


def _step(trainer: Any, batch: dict[str, Any]) -> tuple[float, float, float]:
    """``(cpu s, wall s, loss)`` of one loss + backward on ``batch``."""
    model = trainer.model
    model.train()
    model.zero_grad(set_to_none=True)
    cpu, wall = time.process_time(), time.perf_counter()
    with trainer.compute_loss_context_manager():
        loss = trainer.compute_loss(model, {key: value.clone() for key, value in batch.items()})
    loss.backward()
    if loss.is_cuda:
        import torch

        torch.cuda.synchronize()
    return time.process_time() - cpu, time.perf_counter() - wall, float(loss)


def main(args: Args) -> str:
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        plain, shared = _trainers(args, folder)
        loader = plain.get_train_dataloader()
        if len(loader) < args.repeats + 1:
            raise SystemExit(
                f"--episodes {args.episodes}: their rows make {len(loader)} batches of "
                f"--batch-size {args.batch_size}; --repeats {args.repeats} needs "
                f"{args.repeats + 1} (one warm-up)"
            )
        batches = iter(loader)
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "shared": []}
        loss_gap, tokens = 0.0, []
        _step(plain, plain._prepare_inputs(next(batches)))  # warm-up, untimed
        for _ in range(args.repeats):
            batch = plain._prepare_inputs(next(batches))
            tokens.append(int(batch["attention_mask"].sum()))
            losses = {}
            for name in ("plain", "shared", "shared", "plain"):
                trainer = plain if name == "plain" else shared
                cpu, wall, loss = _step(trainer, batch)
                times[name].append((cpu, wall))
                losses.setdefault(name, loss)
            loss_gap = max(loss_gap, abs(losses["plain"] - losses["shared"]))
        saved = shared._metrics["train"]["shared_prefix/tokens_saved"]
    text = _report(args, times, loss_gap, statistics.mean(saved), statistics.mean(tokens))
    print(text)
    write_report(text, args.output)
    return text


def _report(
    args: Args,
    times: dict[str, list[tuple[float, float]]],
    loss_gap: float,
    saved: float,
    tokens: float,
) -> str:
    def pairs(which: int) -> list[float]:  # per repeat: plain / shared (2 timings each)
        plain, shared = times["plain"], times["shared"]
        return [
            (plain[2 * i][which] + plain[2 * i + 1][which])
            / (shared[2 * i][which] + shared[2 * i + 1][which])
            for i in range(args.repeats)
        ]

    lines = [
        "# SFT step: SFTTrainer vs SharedPrefixSFTTrainer",
        "",
        f"`agent-envs bench sft-shared-prefix` — {args.env_id} oracle rows, batch "
        f"{args.batch_size} ({tokens:.0f} unpadded tokens per batch on average), SmolLM2-135M-"
        f"Instruct{'' if args.model == 'smollm2' else f' shapes (`{args.model}`)'} with LoRA "
        f"r=32 on all linear layers, bf16 autocast {args.bf16}, {args.threads} torch "
        f"thread(s), {args.repeats} batches, ABBA order; {_machine(args)}.",
        "",
        "| trainer | CPU s / step (median) | wall s / step (median) |",
        "|---|---:|---:|",
    ]
    for name, label in (("plain", "`SFTTrainer`"), ("shared", "`SharedPrefixSFTTrainer`")):
        cpu = statistics.median(t[0] for t in times[name])
        wall = statistics.median(t[1] for t in times[name])
        lines.append(f"| {label} | {cpu:.2f} | {wall:.2f} |")
    cpu_ratio, wall_ratio = pairs(0), pairs(1)
    lines += [
        "",
        f"- Speed-up (SFTTrainer / shared), CPU seconds: {statistics.median(cpu_ratio):.2f}× "
        f"(range {min(cpu_ratio):.2f}–{max(cpu_ratio):.2f}× over repeats); wall: "
        f"{statistics.median(wall_ratio):.2f}× ({min(wall_ratio):.2f}–{max(wall_ratio):.2f}×).",
        f"- Tokens the shared prefixes kept from running: {saved:.1%} of the batch.",
        f"- Largest loss difference on the same batch: {loss_gap:.2e} (bf16 rounding; "
        "`tests/adapters/test_sft_trainer.py` checks loss and gradients equal in fp32).",
        "",
    ]
    return "\n".join(lines)


def _machine(args: Args) -> str:
    from agent_envs.adapters.engines.device import resolve_device

    cpus = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    if resolve_device(args.device) == "cuda":
        import torch

        return f"{torch.cuda.get_device_name()} ({cpus})"
    return f"{cpus} (shared)"


if __name__ == "__main__":
    prog = "agent-envs bench sft-shared-prefix"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
