"""The ``agent-envs`` command, the flags of every command, and writing a benchmark's report.

``agent-envs COMMAND [flags]`` runs one of :data:`COMMANDS` exactly as ``python -m MODULE
[flags]`` runs it: the module's ``if __name__ == "__main__"`` block is the one entry point of
a command. The benchmark scripts are a group of their own, ``agent-envs bench NAME [flags]``
(:data:`BENCHMARKS`), so that ``agent-envs --help`` lists the five commands users run rather
than those five among twenty measurements. The tables name modules as strings: the listing
imports none of them (nor torch or tyro).

Every command reads its flags with :func:`parse`: one flag per field of its ``Args``
dataclass, the field's docstring as its help, its default shown. The syntax is the same
everywhere::

    --env-id grl/Sokoban-v0       a value (``env_id``: the field's name in kebab-case)
    --envs a b c                  a list: the words after the flag (never a,b,c)
    --fresh / --no-fresh          a bool: the flag alone, or ``--no-`` before it
    --threads None                an optional value back to ``None``

:func:`parse` lives on the package's ground floor (:mod:`agent_envs.flags`), so commands
below benchmarks in the import layers (``agent-envs serve``) read their flags the same way.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent_envs.flags import parse, running_as

__all__ = [
    "BENCHMARKS",
    "COMMANDS",
    "RESULTS_DIR",
    "finish_report",
    "main",
    "parse",
    "write_report",
]

#: where the benchmark scripts write their reports by default: ``benchmarks/results`` of the
#: current directory. They measure a checkout (their peers' venvs, ``../shared/data`` and git
#: history are found beside it), so run them from its root, as ``make bench`` does.
RESULTS_DIR = Path("benchmarks/results")

#: ``agent-envs NAME``: the module run and its line in ``agent-envs --help``
COMMANDS: dict[str, tuple[str, str]] = {
    "leaderboard": (
        "agent_envs.benchmarks.leaderboard",
        "evaluate agents on envs over published seed lists (the project's main job)",
    ),
    "train": (
        "agent_envs.benchmarks.train",
        "train an agent with TRL (SFT, then GRPO / GiGPO / LUFFY) and evaluate it",
    ),
    "train-tunix": (
        "agent_envs.benchmarks.train_tunix",
        "multi-turn RL of an agent on a grl/* env with Tunix (JAX; the [tunix] extra)",
    ),
    "serve": (
        "agent_envs.adapters.server",
        "serve every grl/* id over HTTP and WebSocket (or one id through OpenEnv)",
    ),
    "arena": (
        "agent_envs.benchmarks.arena",
        "the two-player leaderboard of TextArena games",
    ),
}

#: ``agent-envs bench NAME``: the benchmark scripts (each writes benchmarks/results/NAME.md)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "async-rollout": (
        "agent_envs.benchmarks.async_rollout",
        "episodes per second: the asynchronous collector against the lockstep one",
    ),
    "bird-attacks": (
        "agent_envs.benchmarks.bird_attacks",
        "hostile SQL and replies against the BIRD env: time and memory per attack",
    ),
    "bird-overhead": (
        "agent_envs.benchmarks.bird_overhead",
        "what the BIRD env's SQL guards cost per query against raw sqlite3",
    ),
    "collector-overhead": (
        "agent_envs.benchmarks.collector_overhead",
        "what the rollout collector itself costs per env-turn",
    ),
    "compute": (
        "agent_envs.benchmarks.compute",
        "collector tokens/s against raw model.generate; the loss pass's FLOP/s against peak",
    ),
    "cpu-allocator": (
        "agent_envs.benchmarks.cpu_allocator",
        "CPU training under glibc's allocator against tcmalloc",
    ),
    "forgeries": (
        "agent_envs.benchmarks.forgeries",
        "forged leaderboard runs against --validate: which check catches each",
    ),
    "generation-copy": (
        "agent_envs.benchmarks.generation_copy",
        "CPU RL steps generating on the trained model against a bfloat16 copy",
    ),
    "gsm8k-graders": (
        "agent_envs.benchmarks.gsm8k_graders",
        "GSM8K graders side by side: ours, lm-evaluation-harness's, math-verify's",
    ),
    "kv-cache": (
        "agent_envs.benchmarks.kv_cache",
        "turn-k generation time with and without prefix (KV cache) reuse",
    ),
    "omp-wait": (
        "agent_envs.benchmarks.omp_wait",
        "torch under OpenMP's spinning and sleeping wait policies on a loaded machine",
    ),
    "parse-worst-case": (
        "agent_envs.benchmarks.parse_worst_case",
        "the worst turn a hostile reply can cost: every registered id, 1 MB replies",
    ),
    "render-examples": (
        "agent_envs.benchmarks.render_examples",
        "regenerate the example pictures of benchmarks/results/renderers",
    ),
    "rl-micro-batch": (
        "agent_envs.benchmarks.rl_micro_batch",
        "RL step memory on CPU: one pass, gradient checkpointing, micro-batches",
    ),
    "rl-trim-padding": (
        "agent_envs.benchmarks.rl_trim_padding",
        "RL step time over a mixture of envs: passes over their own span or the step's",
    ),
    "server-load": (
        "agent_envs.benchmarks.server_load",
        "the env server under many concurrent clients, against OpenEnv's server",
    ),
    "sft-episode-rows": (
        "agent_envs.benchmarks.sft_episode_rows",
        "SFT tokens per epoch: one row per turn against one row per episode",
    ),
    "sft-shared-prefix": (
        "agent_envs.benchmarks.sft_shared_prefix",
        "SFT step cost: TRL's SFTTrainer against SharedPrefixSFTTrainer",
    ),
    "tetris-throughput": (
        "agent_envs.benchmarks.tetris_throughput",
        "Tetris turns against tetris-gymnasium's env.step",
    ),
    "textarena-overhead": (
        "agent_envs.benchmarks.textarena_overhead",
        "what the TextArena adapter costs per turn over raw TextArena",
    ),
    "throughput": (
        "agent_envs.benchmarks.throughput",
        "env throughput (generation, reset, turns, vector envs) against gym-sokoban",
    ),
    "tunix-bench": (
        "agent_envs.benchmarks.tunix_bench",
        "what the Tunix glue costs on CPU: TrainExample per episode, one update step",
    ),
    "vector-overhead": (
        "agent_envs.benchmarks.vector_overhead",
        "what the vector layer costs per env-step against a bare loop and Gymnasium",
    ),
    "vision-obs": (
        "agent_envs.benchmarks.vision_obs",
        "per-turn cost of the image observations of the grl/*-vision-v0 ids",
    ),
    "webshop-bench": (
        "agent_envs.benchmarks.webshop_bench",
        "WebShop: search quality and speed, step cost, index build, oracle, random",
    ),
}

_BENCH_LINE = "the benchmark scripts: `agent-envs bench --help` lists them"


def main(argv: Sequence[str] | None = None) -> None:
    """``agent-envs COMMAND [flags]`` (``argv``: the words after ``agent-envs``).

    Sets ``OMP_WAIT_POLICY=PASSIVE`` unless it is set: torch's OpenMP threads then sleep
    rather than spin while they wait, which saves several times the time on a shared machine
    (generation 4.1x faster at load 3.5 on 2 cores: ``agent-envs bench omp-wait``).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any command imports torch
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["bench"]:
        _dispatch("agent-envs bench", BENCHMARKS, words[1:])
    else:
        _dispatch("agent-envs", {**COMMANDS, "bench": ("", _BENCH_LINE)}, words)


def _dispatch(prog: str, table: Mapping[str, tuple[str, str]], words: list[str]) -> None:
    if not words or words[0] in ("-h", "--help"):
        print(_listing(prog, table), file=sys.stdout if words else sys.stderr)
        raise SystemExit(0 if words else 2)
    name, flags = words[0], words[1:]
    if name not in table:
        print(f"{_listing(prog, table)}\n\n{prog}: unknown command {name!r}", file=sys.stderr)
        raise SystemExit(2)
    _run(table[name][0], f"{prog} {name}", flags)


def _run(module: str, prog: str, flags: Sequence[str]) -> None:
    """Runs ``module`` as ``python -m module *flags`` does, its usage line naming ``prog``."""
    saved = sys.argv
    sys.argv = [prog, *flags]
    try:
        with running_as(prog):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved


def _listing(prog: str, table: Mapping[str, tuple[str, str]]) -> str:
    width = max(map(len, table))
    lines = [f"usage: {prog} COMMAND [flags]   ({prog} COMMAND --help: its flags)", ""]
    lines += ["commands:"] + [f"  {name:<{width}}  {line}" for name, (_, line) in table.items()]
    return "\n".join(lines)


def finish_report(lines: Sequence[str], output: str | Path) -> str:
    """Joins a report's ``lines``, prints it, writes it to ``output`` (see `write_report`) and
    returns it."""
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(text, output)
    return text


def write_report(text: str, output: str | Path) -> None:
    """Writes ``text`` (UTF-8) to the file ``output``, making its folder; ``""`` writes nothing."""
    if output:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
