"""What the rollout collector itself costs per env-turn, early and late in an episode.

``agent-envs bench collector-overhead`` runs the `RolloutCollector` with a real
tokenizer (SmolLM2-135M-Instruct's, from the GGUF file of the embedded default model; ``--tokenizer
tiny`` uses a BPE tokenizer trained on the spot instead) and a scripted engine (the env's
random baseline, tokenizing its replies like a model's), so no model time hides the
collector's. Each turn's wall time is split into

* **engine**: the engine's ``generate`` call (the scripted policy and tokenizing its replies),
* **env**: the vector env's ``step`` of the live envs,
* **collector**: everything else: building requests, reading infos, the records, the
  chat-template delta of the next observation and its tokenization.

The collector share divided by the live envs of the turn is the overhead per env-turn,
reported at turn 1 and turn 20 (median over ``--repeats`` batches). Because the history is
never re-tokenized, turn 20 should cost about what turn 1 costs: targets ≤ 1 ms per env-turn
and a turn-20/turn-1 ratio ≤ 1.5. Results go to ``benchmarks/results/collector_overhead.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report

RESULTS = RESULTS_DIR / "collector_overhead.md"


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env_id: str = "grl/Sokoban-10x10-3box-v0"
    """an env whose episodes last 20+ turns under the random baseline"""
    num_envs: int = 16
    """sub-envs per batch (one episode each)"""
    repeats: int = 5
    """batches collected; medians are reported"""
    turns: int = 20
    """turns per episode (the collector's max_turns)"""
    tokenizer: str = "smollm2"
    """"smollm2" (the real tokenizer of the embedded model) or "tiny" (trained here)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


class _TimedVector:
    """Forwards to the vector env, timing ``step``."""

    def __init__(self, vec: Any) -> None:
        self._vec = vec
        self.step_seconds = 0.0

    def step(self, actions: Any, mask: Any = None) -> Any:
        start = time.perf_counter()
        try:
            return self._vec.step(actions, mask)
        finally:
            self.step_seconds += time.perf_counter() - start

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vec, name)


class _TimedEngine:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.needs_env = engine.needs_env
        self.name = engine.name
        self.seconds = 0.0

    def generate(self, requests: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.engine.generate(requests)
        finally:
            self.seconds += time.perf_counter() - start


def _tokenizer(kind: str) -> Any:
    if kind == "smollm2":
        from agent_envs.adapters.engines.transformers import load_smollm2

        return load_smollm2(tokenizer_only=True)[1]
    if kind == "tiny":
        from tests.adapters.conftest import build_tokenizer

        return build_tokenizer()
    raise ValueError(f"tokenizer must be 'smollm2' or 'tiny', got {kind!r}")


def _full_rerender_seconds(
    tokenizer: Any, trajectories: list[Any], turns: tuple[int, ...]
) -> dict[int, float]:
    """For comparison: what re-tokenizing the whole conversation after turn ``t`` would cost
    per env-turn (the template rendered and tokenized from the start)."""
    result = {}
    for turn in turns:
        samples = []
        for trajectory in trajectories:
            messages = trajectory.messages[: 2 + 2 * turn]
            if len(messages) < 2 + 2 * turn:
                continue
            start = time.perf_counter()
            text = tokenizer.apply_chat_template(messages, tokenize=False)
            tokenizer.encode(text, add_special_tokens=False)
            samples.append(time.perf_counter() - start)
        result[turn] = statistics.median(samples) if samples else float("nan")
    return result


def measure(args: Args) -> dict[str, Any]:
    import gymnasium
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.loop.collector import RolloutCollector

    import agent_envs  # noqa: F401

    tokenizer = _tokenizer(args.tokenizer)
    vec = _TimedVector(
        gymnasium.make_vec(args.env_id, num_envs=args.num_envs, autoreset_mode="disabled")
    )
    engine = _TimedEngine(random_engine(0, tokenizer=tokenizer))
    per_turn: dict[int, list[dict[str, float]]] = {}

    class TimedCollector(RolloutCollector):
        turn_index = 0

        def _turn(self, episodes: list[Any]) -> None:
            live = sum(not episode.done for episode in episodes)
            vec.step_seconds = engine.seconds = 0.0
            start = time.perf_counter()
            super()._turn(episodes)
            total = time.perf_counter() - start
            TimedCollector.turn_index += 1
            per_turn.setdefault(TimedCollector.turn_index, []).append(
                {
                    "live": live,
                    "collector": (total - vec.step_seconds - engine.seconds) / live,
                    "engine": engine.seconds / live,
                    "env": vec.step_seconds / live,
                    "context": statistics.mean(
                        len(episode.context) for episode in episodes if not episode.done
                    )
                    if any(not episode.done for episode in episodes)
                    else 0.0,
                }
            )

    collector = TimedCollector(
        vec, engine, env_id=args.env_id, max_turns=args.turns, max_new_tokens=64
    )
    collector.collect(list(range(args.num_envs)))  # warm-up (template compile, caches)
    per_turn.clear()
    alive_at_last = []
    for repeat in range(args.repeats):
        TimedCollector.turn_index = 0
        trajectories = collector.collect(
            [1000 * (repeat + 1) + index for index in range(args.num_envs)]
        )
        alive_at_last.append(sum(t.num_turns >= args.turns for t in trajectories))
    vec.close()
    naive = _full_rerender_seconds(tokenizer, trajectories, (1, args.turns))

    def median(turn: int, key: str) -> float:
        return statistics.median(row[key] for row in per_turn[turn])

    if args.turns not in per_turn:
        raise RuntimeError(f"no episode of {args.env_id} lasted {args.turns} turns")
    rows = {
        turn: {key: median(turn, key) for key in ("collector", "engine", "env", "context", "live")}
        for turn in (1, args.turns)
    }
    for turn in rows:
        rows[turn]["naive"] = naive[turn]
    return {
        "rows": rows,
        "ratio": rows[args.turns]["collector"] / rows[1]["collector"],
        "alive": alive_at_last,
        "tokenizer": type(tokenizer).__name__,
    }


def to_markdown(args: Args, result: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = [
        "# Rollout collector overhead per env-turn",
        "",
        f"`agent-envs bench collector-overhead` on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}: `{args.env_id}`, "
        f"{args.num_envs} sub-envs (sync), random baseline as a scripted engine returning "
        f"token ids, tokenizer `{args.tokenizer}` ({result['tokenizer']}), median of "
        f"{args.repeats} batches of {args.turns}-turn episodes.",
        "",
        "| turn | live envs | context tokens after the turn (mean) | collector µs/env-turn | "
        "engine µs/env-turn | env step µs/env-turn | full re-render µs (not done) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for turn, row in rows.items():
        lines.append(
            f"| {turn} | {row['live']:.0f} | {row['context']:.0f} | "
            f"{row['collector'] * 1e6:.0f} | {row['engine'] * 1e6:.0f} | {row['env'] * 1e6:.0f} | "
            f"{row['naive'] * 1e6:.0f} |"
        )
    collector_late = rows[args.turns]["collector"] * 1e3
    lines += [
        "",
        f"Turn-{args.turns}/turn-1 collector ratio: **{result['ratio']:.2f}** (target ≤ 1.5); "
        f"turn-{args.turns} overhead **{collector_late:.3f} ms** per env-turn (target ≤ 1 ms).",
        "",
        "The collector's cost is rendering the chat template for the one new user message and "
        "tokenizing that delta; the history is never re-tokenized, so it does not grow with "
        "the context. The last column is, for comparison, what rendering and tokenizing the "
        "whole conversation after that turn costs (what a collector that re-tokenizes the "
        "history would pay each turn).",
        "",
    ]
    return "\n".join(lines)


def main(args: Args) -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = measure(args)
    text = to_markdown(args, result)
    print(text)
    write_report(text, args.output)
    return text


if __name__ == "__main__":
    prog = "agent-envs bench collector-overhead"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
