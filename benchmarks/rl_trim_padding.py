"""RL step time on CPU over a mixture of envs: each pass over its own span, or the whole step's.

TRL's ``GRPOTrainer`` pads a step's episodes to the longest prompt and the longest completion of
the step and cuts the padded batch into passes of ``--rl-micro-batch`` rows without trimming:
on a mixture where one env's prompt is several times longer than the others' (BIRD's schema),
every pass runs that length. ``TokenAdvantageGRPOTrainer(trim_padding=True)`` (the default; the
stage's ``--no-rl-trim-padding`` gives TRL's pass) runs each pass over its own rows' span.
``agent-envs bench rl-trim-padding`` runs the GiGPO stage of ``agent_envs.benchmarks.train``
from one SFT model both ways in each round, each in a fresh process, the order alternating, and
reports per side the step time, the part of it spent playing the episodes (the envs' rollout
wall seconds, logged per env as ``episodes/seconds/<env_id>``), the rest (the update: the
reference and policy passes, the backward and the optimizer step), the loss and the tokens
trained. Results go to ``benchmarks/results/rl_trim_padding.md``.
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
from agent_envs.benchmarks.cpu_allocator import alternate, gigpo_from, table_rows

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / "rl_trim_padding.md"
SIDES = ("untrimmed", "trimmed")
FLAGS = {"untrimmed": ["--no-rl-trim-padding"], "trimmed": ["--rl-trim-padding"]}


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    envs: list[str] = field(
        default_factory=lambda: ["grl/Sokoban-v0", "grl/Tetris-4x4-cell-v0", "grl/BIRD-v0"]
    )
    """the envs trained together (a mixture with one long prompt shows the padding)"""
    rounds: int = 2
    """rounds; each runs the RL stage once per side"""
    sft_run: str = ""
    """a run folder whose ``base/`` and ``sft/`` stages to start from ("" to train one here)"""
    sft_episodes: int = 24
    """oracle episodes per env of the SFT stage trained here (one epoch, one row per episode)"""
    rl_steps: int = 1
    """GiGPO steps per side"""
    rl_prompts: int = 3
    """episode groups per step (a multiple of the envs: each step plays each env)"""
    num_generations: int = 4
    """episodes per group"""
    micro_batch: int = 1
    """episodes per forward/backward pass"""
    max_new_tokens: int = 192
    """generation budget per turn"""
    max_total_tokens: int = 4608
    """token budget of an episode"""
    rl_beta: float = 1.0
    """KL weight (above 0: a reference pass per micro-batch too)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def step_parts(rows: list[dict[str, Any]], episodes_per_env: float) -> dict[str, float]:
    """Mean step, rollout and update seconds, loss and tokens (prompts and completions, no
    padding) of a stage's log rows; a step's rollout is the sum over envs of their mean seconds
    per episode times the episodes each env plays a step."""
    steps = [row for row in rows if "step_time" in row]
    rollout_s = statistics.mean(
        episodes_per_env * sum(v for k, v in row.items() if k.startswith("episodes/seconds/"))
        for row in steps
    )
    step = statistics.mean(row["step_time"] for row in steps)
    return {
        "rl_step": step,
        "rollout": rollout_s,
        "update": step - rollout_s,
        "loss": statistics.mean(row["loss"] for row in steps),
        "tokens": steps[-1]["num_tokens"] / len(steps),  # TRL counts them cumulatively
    }


def main(args: Args) -> str:
    if args.rl_prompts % len(args.envs):
        raise SystemExit(
            f"--rl-prompts: {args.rl_prompts} is not a multiple of the {len(args.envs)} envs"
        )
    common = [
        sys.executable, "-m", "agent_envs.benchmarks.train",
        "--envs", *args.envs,
        "--sft-rows", "episode", "--sft-micro-batch", "1",
        "--max-new-tokens", str(args.max_new_tokens),
        "--max-total-tokens", str(args.max_total_tokens),
        "--no-progress",
    ]  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix="rl_trim_padding_"))
    try:
        sft_run = Path(args.sft_run).resolve() if args.sft_run else scratch / "sft-run"
        if not args.sft_run:
            subprocess.run(
                [*common, "--out", str(sft_run), "--stages", "sft", "--sft-epochs", "1",
                 "--sft-episodes", str(args.sft_episodes)],
                cwd=ROOT, check=True,
            )  # fmt: skip
        episodes = args.rl_prompts * args.num_generations

        def run(side: str, folder: Path) -> dict[str, Any]:
            measured, steps = gigpo_from(
                sft_run,
                folder,
                common,
                [
                    "--rl-steps", str(args.rl_steps),
                    "--rl-prompts", str(args.rl_prompts),
                    "--num-generations", str(args.num_generations),
                    "--rl-micro-batch", str(args.micro_batch),
                    "--rl-beta", str(args.rl_beta),
                    *FLAGS[side],
                ],
            )  # fmt: skip
            return {**measured, **step_parts(steps, episodes / len(args.envs))}

        results = alternate(args.rounds, SIDES, run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    same = [
        a["loss"] == b["loss"] and a["tokens"] == b["tokens"]
        for a, b in zip(results["untrimmed"], results["trimmed"], strict=True)
    ]
    lines = [
        "# RL steps on a mixture of envs: each pass over its own span, or the whole step's",
        "",
        "`agent-envs bench rl-trim-padding` "
        f"(`--envs {' '.join(args.envs)} --rounds {args.rounds} --rl-steps {args.rl_steps} "
        f"--rl-prompts {args.rl_prompts} --num-generations {args.num_generations} "
        f"--micro-batch {args.micro_batch} --max-new-tokens {args.max_new_tokens} "
        f"--max-total-tokens {args.max_total_tokens} --rl-beta {args.rl_beta}"
        + (f" --sft-run {args.sft_run}" if args.sft_run else f" --sft-episodes {args.sft_episodes}")
        + f"`) on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, Python "
        f"{platform.python_version()}. Per round the GiGPO stage ({args.rl_steps} "
        f"step{'s' if args.rl_steps > 1 else ''} of {episodes} episodes, passes of "
        f"{args.micro_batch}, LoRA) from one SFT model, once "
        "untrimmed (`--no-rl-trim-padding`: TRL's pass over the whole step's padded width) and "
        "once trimmed (each pass over its own rows' span), in fresh processes, the order "
        "alternating; median (min to max) over rounds, and untrimmed ÷ trimmed round by round. "
        "Rollout: the envs' logged wall seconds per episode times the episodes; update: the "
        "step less its rollout. Both sides trained on the same episodes (equal loss and "
        f"tokens) in {sum(same)} of {len(same)} rounds.",
        "",
        "| measure | untrimmed | trimmed | untrimmed ÷ trimmed |",
        "|---|---:|---:|---:|",
        *table_rows(
            results,
            SIDES,
            [
                (f"GiGPO step ({episodes} episodes), s", "rl_step", 1),
                ("rollout, s", "rollout", 1),
                ("update (step − rollout), s", "update", 1),
                ("peak resident memory, GiB", "peak_gib", 2),
                ("loss", "loss", 4),
                ("tokens trained per step", "tokens", 0),
            ],
        ),
    ]
    return finish_report(lines, args.output)


if __name__ == "__main__":
    prog = "agent-envs bench rl-trim-padding"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
