"""RL steps on CPU generating on the trained model against a bfloat16 copy, side by side.

``agent-envs bench generation-copy`` runs the small pipeline of
``agent_envs.benchmarks.cpu_allocator`` (SFT, GRPO, eval; ``agent_envs.benchmarks.train`` in fresh
processes, tcmalloc on both sides) once with ``--generation-dtype model`` (the training episodes are
sampled from the LoRA-wrapped model under bfloat16 autocast) and once with ``--generation-dtype
bfloat16`` (from :class:`agent_envs.adapters.trl.GenerationCopy`: LoRA merged, weights in bfloat16,
made again after each optimizer step) in each round, order alternating. The two sides sample with
different arithmetic, so their episodes differ a little: the RL steps' mean completion
lengths are reported next to their times. Results go to
``benchmarks/results/generation_copy.md``.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_envs.benchmarks import cpu_allocator
from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse
from agent_envs.benchmarks.cpu_allocator import alternate, one_pipeline, table_rows

RESULTS = RESULTS_DIR / "generation_copy.md"
SIDES = ("model", "bfloat16")


@dataclass
class Args(cpu_allocator.Args):
    """Benchmark settings (every field is a command-line flag; ``eval_seeds`` is unused)."""

    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def main(args: Args) -> str:
    def run(side: str, folder: Path) -> dict[str, Any]:
        flags = ("--generation-dtype", side)
        return one_pipeline(args, "tcmalloc", folder, flags, evaluate=False)

    results = alternate(args.rounds, SIDES, run)
    lines = [
        "# RL steps on CPU: generating on the trained model or on a bfloat16 copy",
        "",
        "`agent-envs bench generation-copy` "
        f"(`--env {args.env} --rounds {args.rounds} --sft-episodes {args.sft_episodes} "
        f"--rl-steps {args.rl_steps}`) on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, tcmalloc on both sides. "
        "Each round runs `agent_envs.benchmarks.train` (SFT, then GRPO steps of 2 groups x 4 "
        "episodes) "
        "once per side in fresh processes, order alternating; median (min to max) over rounds. "
        "`model`: episodes sampled from the LoRA-wrapped model under bfloat16 autocast; "
        "`bfloat16`: from `agent_envs.adapters.trl.GenerationCopy` (LoRA merged, bfloat16 weights, "
        "made again after each optimizer step). The sides' episodes differ a little (different "
        "arithmetic), hence the completion lengths.",
        "",
        "| measure | model | bfloat16 copy | model ÷ copy |",
        "|---|---:|---:|---:|",
    ]
    lines += table_rows(
        results,
        SIDES,
        [
            ("GRPO step (8 episodes), s", "rl_step", 1),
            ("mean completion tokens per episode", "rl_tokens", 1),
            ("SFT step, s (unchanged by the flag)", "sft_step", 2),
        ],
    )
    return finish_report(lines, args.output)


if __name__ == "__main__":
    prog = "agent-envs bench generation-copy"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
