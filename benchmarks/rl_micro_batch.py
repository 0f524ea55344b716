"""RL step memory on CPU: one pass, gradient checkpointing, micro-batches, side by side.

16 Blocksworld episodes in one forward/backward pass peaked at 22 GiB on CPU (one step,
``/usr/bin/time``) and a 48-step run was killed out of memory on a 24 GiB machine.
``agent-envs bench rl-micro-batch`` trains one small SFT model
(``agent_envs.benchmarks.train``, in a fresh process), then runs the GiGPO stage from it three ways
in each round, each in a fresh process, the order rotating: ``one-pass`` (all the step's episodes in
one forward/backward pass), ``checkpointing`` (the same with ``--gradient-checkpointing``:
activations recomputed in the backward) and ``micro-batch`` (``--rl-micro-batch M``: passes of M
episodes, the gradient accumulated, one optimizer step). Per side: the process's peak resident
memory (``ru_maxrss`` from ``os.wait4``; a side killed by a signal, as the kernel's out-of-memory
killer does, is reported as killed) and the mean RL step time. Results go to
``benchmarks/results/rl_micro_batch.md``.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse
from agent_envs.benchmarks.cpu_allocator import alternate, gigpo_from, median_range

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / "rl_micro_batch.md"
SIDES = ("one-pass", "checkpointing", "micro-batch")


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env: str = "grl/Blocksworld-v0"
    """the env trained"""
    rounds: int = 2
    """rounds; each runs the RL stage once per side"""
    sides: list[str] = field(default_factory=lambda: list(SIDES))
    """which of ``one-pass``, ``checkpointing``, ``micro-batch`` to run"""
    sft_episodes: int = 100
    """oracle episodes of the SFT stage (one epoch)"""
    rl_steps: int = 2
    """GiGPO steps per side"""
    rl_prompts: int = 4
    """episode groups per step"""
    num_generations: int = 4
    """episodes per group"""
    micro_batch: int = 4
    """episodes per pass on the micro-batched side"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def _cell(runs: list[dict[str, Any]], key: str, digits: int) -> str:
    values = [run[key] for run in runs if run.get(key) is not None]
    killed = sum(1 for run in runs if run["killed"])
    text = median_range(values, digits) if values else "-"
    return text + (f"; killed in {killed} of {len(runs)}" if killed and key == "peak_gib" else "")


def main(args: Args) -> str:
    unknown = sorted(set(args.sides) - set(SIDES))
    if unknown or not args.sides:
        raise SystemExit(f"--sides: choose from {list(SIDES)}, got {args.sides}")
    flags = {
        "one-pass": [],
        "checkpointing": ["--gradient-checkpointing"],
        "micro-batch": ["--rl-micro-batch", str(args.micro_batch)],
    }
    train = [
        sys.executable,
        "-m",
        "agent_envs.benchmarks.train",
        "--envs",
        args.env,
        "--no-progress",
    ]
    scratch = Path(tempfile.mkdtemp(prefix="rl_micro_batch_"))
    try:
        sft_run = scratch / "sft-run"
        sft = [*train, "--out", str(sft_run), "--stages", "sft", "--sft-epochs", "1"]
        subprocess.run([*sft, "--sft-episodes", str(args.sft_episodes)], cwd=ROOT, check=True)

        def run(side: str, folder: Path) -> dict[str, Any]:
            measured, steps = gigpo_from(
                sft_run,
                folder,
                train,
                [
                    "--rl-steps", str(args.rl_steps),
                    "--rl-prompts", str(args.rl_prompts),
                    "--num-generations", str(args.num_generations),
                    *flags[side],
                ],
            )  # fmt: skip
            if steps:
                measured["rl_step"] = statistics.mean(row["step_time"] for row in steps)
                measured["tokens"] = statistics.mean(
                    row["completions/mean_length"] for row in steps
                )
            return measured

        results = alternate(args.rounds, args.sides, run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    episodes = args.rl_prompts * args.num_generations
    heading = {
        "one-pass": f"one pass of {episodes}",
        "checkpointing": f"one pass of {episodes}, `--gradient-checkpointing`",
        "micro-batch": f"passes of {args.micro_batch}, `--rl-micro-batch {args.micro_batch}`",
    }
    lines = [
        "# RL steps on CPU: peak memory in one pass, with gradient checkpointing, in micro-batches",
        "",
        "`agent-envs bench rl-micro-batch` "
        f"(`--env {args.env} --rounds {args.rounds} --sft-episodes {args.sft_episodes} "
        f"--rl-steps {args.rl_steps} --rl-prompts {args.rl_prompts} --num-generations "
        f"{args.num_generations} --micro-batch {args.micro_batch}`) on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, Python "
        f"{platform.python_version()}. One SFT model (one epoch on {args.sft_episodes} oracle "
        f"episodes), then per round the GiGPO stage from it ({args.rl_steps} steps of "
        f"{episodes} episodes, LoRA, `agent_envs.benchmarks.train`'s defaults otherwise) once per "
        "side in "
        "fresh processes, the order rotating; median (min to max) over rounds. Peak memory is "
        "the stage process's peak resident set (model loading, generation and the loss "
        "included).",
        "",
        "| measure | " + " | ".join(heading[side] for side in args.sides) + " |",
        "|---|" + "---:|" * len(args.sides),
    ]
    for label, key, digits in (
        ("peak resident memory, GiB", "peak_gib", 2),
        (f"GiGPO step ({episodes} episodes), s", "rl_step", 1),
        ("mean completion tokens per episode", "tokens", 1),
    ):
        cells = " | ".join(_cell(results[side], key, digits) for side in args.sides)
        lines.append(f"| {label} | {cells} |")
    return finish_report(lines, args.output)


if __name__ == "__main__":
    prog = "agent-envs bench rl-micro-batch"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
