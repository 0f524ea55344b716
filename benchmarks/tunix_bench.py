"""What the Tunix glue costs on CPU: records → Tunix ``TrainExample`` per episode, and one
Tunix update step.

``agent-envs bench tunix-bench`` (in an environment with the ``[tunix]`` extra)
measures

* **batch**: multi-turn ``--env-id`` episodes (the env's random baseline as a scripted engine
  returning token ids, on the env-text BPE tokenizer of ``agent_envs.benchmarks.train_tunix``;
  sampling log-probs filled in so the old-log-prob path runs) turned into one ``TrainExample`` by
  :func:`agent_envs.adapters.tunix.build_train_example`, with GRPO advantages (one per episode) or
  GiGPO advantages laid out per token; milliseconds per episode at several batch sizes, median and
  range over ``--repeats`` (the batch's arrays are ready on the device when the clock stops).
  Goal: ≤ 1 ms per episode.
* **update**: one ``RLCluster.update_actor`` step of Tunix's GRPO loss (AdamW) on a batch of
  ``groups x group_size`` real rollouts of a random tiny Qwen2 (:class:`agent_envs.adapters.tunix.
  TunixEngine`), first call (JIT compilation included) and the median of ``--repeats`` later
  calls on the same shapes, wall and CPU seconds; the rollout of that batch for comparison.

Results go to ``benchmarks/results/tunix.md``. The machine is shared: figures are medians and
ranges of one run, compare them side by side within it.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, parse

RESULTS = RESULTS_DIR / "tunix.md"


@dataclass
class Args:
    """Benchmark settings (every field is a ``--flag``)."""

    env_id: str = "grl/Sokoban-v0"
    """env of the episodes"""
    batch_sizes: list[int] = field(default_factory=lambda: [8, 32, 128])
    """episodes per TrainExample (multiples of group_size)"""
    batch_turns: int = 10
    """turn limit of the batch-cost episodes"""
    repeats: int = 20
    """timed repetitions (medians reported)"""
    groups: int = 2
    """episode groups of the update batch"""
    group_size: int = 4
    """episodes per group"""
    update_turns: int = 3
    """turn limit of the update batch's episodes"""
    max_new_tokens: int = 16
    """generation budget per turn of the update batch"""
    models: list[str] = field(default_factory=lambda: ["2x64", "4x256"])
    """tiny Qwen2 sizes as LAYERSxWIDTH"""
    output: str = str(RESULTS)
    """Markdown output ("" to only print)"""


def _timed(function: Callable[[], Any], repeats: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def _fmt(values: Sequence[float], scale: float = 1.0, digits: int = 3) -> str:
    median = statistics.median(values) * scale
    return (
        f"{median:.{digits}f} ({min(values) * scale:.{digits}f}–{max(values) * scale:.{digits}f})"
    )


def batch_rows(args: Args, tokenizer: Any) -> list[str]:
    import jax
    from agent_envs.adapters import advantages as estimators
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.loop.collector import collect_episodes
    from agent_envs.adapters.tunix import build_train_example

    largest = max(args.batch_sizes)
    records = collect_episodes(
        args.env_id,
        random_engine(0, tokenizer=tokenizer),
        list(range(largest // args.group_size)),
        group_size=args.group_size,
        max_turns=args.batch_turns,
    )
    for record in records:  # as a model engine would: one log-prob per sampled token
        record.turn_logprobs = [[-1.0] * len(turn) for turn in record.turn_completion_ids]
    pad = tokenizer.pad_token_id
    rows = []
    for size in args.batch_sizes:
        batch = records[:size]

        def grpo(batch: list[Any] = batch) -> None:
            values = estimators.episode_advantages(batch)
            jax.block_until_ready(build_train_example(batch, values, pad_id=pad, pad_multiple=64))

        def gigpo(batch: list[Any] = batch) -> None:
            turns = estimators.gigpo(batch, gamma=0.95, omega=1.0)
            values = [estimators.token_advantages(t, a) for t, a in zip(batch, turns, strict=True)]
            jax.block_until_ready(build_train_example(batch, values, pad_id=pad, pad_multiple=64))

        tokens = statistics.mean(len(t.prompt_ids) + len(t.completion_ids) for t in batch)
        turns = statistics.mean(t.num_turns for t in batch)
        for name, function in (("GRPO, per episode", grpo), ("GiGPO, per token", gigpo)):
            function()  # warm-up: first device transfer
            walls, _ = _timed(function, args.repeats)
            per_episode = [wall / size for wall in walls]
            rows.append(
                f"| {size} | {turns:.1f} | {tokens:.0f} | {name} | {_fmt(per_episode, 1e3)} |"
            )
    return rows


def update_rows(args: Args, tokenizer: Any) -> list[str]:
    import gymnasium
    import jax
    from agent_envs.adapters import advantages as estimators
    from agent_envs.adapters import tunix as glue
    from agent_envs.adapters.loop.collector import RolloutCollector
    from flax import nnx

    import agent_envs  # noqa: F401

    rows = []
    for spec in args.models:
        layers, width = (int(part) for part in spec.split("x"))
        model = glue.tiny_qwen2(len(tokenizer), seed=0, layers=layers, width=width)
        params = sum(leaf.size for leaf in jax.tree.leaves(nnx.state(model, nnx.Param)))
        cluster = glue.make_cluster(
            model, tokenizer, learning_rate=1e-3, max_new_tokens=args.max_new_tokens
        )
        vec = gymnasium.make_vec(
            args.env_id,
            num_envs=args.groups * args.group_size,
            group_size=args.group_size,
            autoreset_mode="disabled",
        )
        collector = RolloutCollector(
            vec,
            glue.TunixEngine(cluster),
            max_turns=args.update_turns,
            max_new_tokens=args.max_new_tokens,
            max_total_tokens=1024,
        )
        seeds = list(range(args.groups))
        first_rollout, _ = _timed(lambda: collector.collect(seeds), 1)  # noqa: B023
        later_rollouts, _ = _timed(lambda: collector.collect(seeds), 3)  # noqa: B023
        records = collector.collect(seeds)
        vec.close()
        values = estimators.episode_advantages(records, estimator="drgrpo")
        pad = cluster.rollout.pad_id()
        example = glue.build_train_example(records, values, pad_id=pad, pad_multiple=64)
        shape = f"{example.prompt_ids.shape[1]} + {example.completion_ids.shape[1]}"

        def step(cluster: Any = cluster, example: Any = example) -> None:
            glue.update(cluster, example)
            jax.block_until_ready(nnx.state(cluster.actor_trainer.model, nnx.Param))

        first_wall, first_cpu = _timed(step, 1)
        walls, cpus = _timed(step, args.repeats // 4 or 1)
        rows.append(
            f"| {layers} x {width} ({params / 1e6:.2f} M) | {len(records)} x ({shape}) "
            f"| {first_wall[0]:.2f} / {first_cpu[0]:.2f} | {_fmt(walls, digits=3)} "
            f"| {statistics.median(cpus):.3f} | {first_rollout[0]:.2f} | {_fmt(later_rollouts)} |"
        )
    return rows


def main(args: Args) -> str:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import jax
    import tunix  # noqa: F401  (fails early without the [tunix] extra)
    from agent_envs.benchmarks.train_tunix import env_tokenizer

    load = os.getloadavg()[0]
    tokenizer = env_tokenizer(args.env_id)
    batch = batch_rows(args, tokenizer)
    update = update_rows(args, tokenizer)
    versions = f"jax {jax.__version__}, google-tunix {_version('google-tunix')}"
    lines = [
        "# Tunix glue: records → TrainExample, and one CPU update",
        "",
        f"`agent-envs bench tunix-bench` on {platform.machine()}, {os.cpu_count()} "
        f"CPUs, Python {platform.python_version()}, {versions}, JAX backend "
        f"`{jax.default_backend()}`; `{args.env_id}`, tokenizer: BPE trained on the env's text "
        f"({len(tokenizer)} tokens). Load average {load:.1f} when it started (a shared "
        "machine: wall seconds above CPU seconds are time spent waiting for a core).",
        "",
        "## Records → `TrainExample` (goal ≤ 1 ms per episode)",
        "",
        "`agent_envs.adapters.advantages` + `agent_envs.adapters.tunix.build_train_example` "
        "(padding to multiples of "
        "64, arrays on the device); random-baseline episodes of up to "
        f"{args.batch_turns} turns in groups of {args.group_size}; milliseconds per episode, "
        f"median (range) of {args.repeats} runs.",
        "",
        "| episodes | turns (mean) | tokens per episode (mean) | advantages | ms per episode |",
        "|---:|---:|---:|---|---:|",
        *batch,
        "",
        "## One Tunix update on CPU",
        "",
        "`RLCluster.update_actor` with Tunix's GRPO loss and AdamW "
        "(`agent_envs.adapters.tunix.update`, "
        f"rollout weights synced) on {args.groups} groups x {args.group_size} Sokoban episodes "
        f"of {args.update_turns} turns (≤ {args.max_new_tokens} new tokens per turn) sampled by "
        "a random tiny Qwen2 through `TunixEngine`; batch = rows x (prompt + completion "
        "tokens, padded). Seconds: first call (JIT compilation included) wall / CPU, then the "
        f"median (range) of {args.repeats // 4 or 1} later calls; rollout of the batch "
        "(first, then median (range) of 3).",
        "",
        "| model (layers x width, params) | batch | first update s wall / CPU "
        "| update s wall | update s CPU | first rollout s | rollout s |",
        "|---|---|---:|---:|---:|---:|---:|",
        *update,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return text


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs bench tunix-bench",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    main(parse_args())
