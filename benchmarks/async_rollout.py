"""Episodes per second: the asynchronous collector against the lockstep one, on a skewed
workload, through a real OpenAI-compatible server on loopback.

``agent-envs bench async-rollout`` starts ``transformers serve`` on 127.0.0.1
(continuous batching, CPU, a local checkpoint folder written here; the process runs under
``timeout`` and is killed by its pid at the end) and collects the same ``--episodes`` episodes of
``grl/Sokoban-v0`` four ways, at most ``--concurrency`` (C) requests in flight in each:

* **C episodes at a time.** *lockstep, rounds of C*: the lockstep `RolloutCollector` over a
  vector env of C sub-envs, ``episodes / C`` times (the batch is the concurrency: a round
  waits for its longest episode, a turn for its slowest reply); *async, C episodes*:
  `AsyncRolloutCollector` with ``max_concurrency=C`` (a finished episode's slot goes to the
  next seed at once).
* **All episodes at once, C requests in flight.** *lockstep, one batch*: one vector env of
  all ``episodes`` sub-envs, the HTTP engine sending at most C of each turn's requests at
  once (a turn still waits for its slowest reply); *async, all episodes*:
  ``max_concurrency=episodes`` with the same engine bound of C requests.

The ratios compare async C episodes with both lockstep collectors, and async all episodes
with lockstep one batch. The workload is skewed both ways, identically for the four: each
reply's token budget is ``--short-tokens`` or, for one request in ``--long-every``,
``--long-tokens`` (chosen from a hash of the episode's first observation and its turn), and
each episode lasts a number of turns drawn from ``--turns`` by its seed (a wrapper truncates
it then). Decoding is greedy and the model is a randomly initialised one that never stops
early, so every reply uses its whole budget and the four runs do the same generation work
(checked: equal completion token totals). ``--model tiny`` (default) is a 2-layer Llama
with SmolLM2's tokenizer and chat template (a small model whose decode steps batch well on a
CPU); ``--model smollm2`` serves the real SmolLM2-135M-Instruct checkpoint (slow here: its
batched steps cost about as much as the single ones on 2 shared cores, so no scheduling can
gain much). The four collectors run in turn ``--repeats`` times (order rotated each repeat) and the
ratio of episodes per second is taken within each repeat: the median and range go to
``benchmarks/results/async_rollout.md``. Goal: async ≥ 1.5× lockstep at equal concurrency.
"""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

RESULTS = RESULTS_DIR / "async_rollout.md"
ENV_ID = "grl/Sokoban-v0"
LONGEST = 1 << 16  # the collectors' own budget: never the binding one (SkewedReplies sets it)


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    episodes: int = 24
    """episodes per collection"""
    concurrency: int = 8
    """requests in flight at once, in every collector"""
    repeats: int = 3
    """collections per collector (interleaved)"""
    short_tokens: int = 16
    """token budget of most replies"""
    long_tokens: int = 160
    """token budget of one reply in --long-every"""
    long_every: int = 4
    """one reply in this many (by hash) gets --long-tokens"""
    turns: list[int] = field(default_factory=lambda: [1, 1, 2, 2, 3, 5])
    """episode lengths in turns, one picked per episode by its seed"""
    model: str = "tiny"
    """"tiny" (2-layer Llama, SmolLM2 tokenizer) or "smollm2" (the real checkpoint)"""
    server_timeout: int = 1800
    """seconds after which the server process is killed whatever happens"""
    cb_blocks: int = 2048
    """KV-cache blocks of 32 tokens the server allocates (bounds its memory: left to itself,
    ``transformers serve`` on CPU grew past 14 GB here and was killed)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


# --------------------------------------------------------------------------- the workload
class SkewedLength(gymnasium.Wrapper):
    """Ends each episode (truncated, ``truncation_reason="max_turns"``) after the number of
    turns its seed picks from ``lengths``."""

    def __init__(self, env: gymnasium.Env, lengths: tuple[int, ...]) -> None:
        super().__init__(env)
        self.lengths = lengths
        self.limit = lengths[0]
        self.turns = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self.limit = self.lengths[(seed or 0) % len(self.lengths)]
        self.turns = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        if not terminated and self.turns >= self.limit:
            truncated = True
            info = {**info, "truncation_reason": "max_turns"}
        return observation, reward, terminated, truncated, info


class SkewedReplies:
    """Forwards to the HTTP engine with each request's token budget set by a hash of its
    episode (first observation) and turn; counts the completion tokens the server reports."""

    def __init__(self, engine: Any, args: Args) -> None:
        self.engine = engine
        self.args = args
        self.name = engine.name
        self.tokenizer = engine.tokenizer
        self.completion_tokens = 0
        self.server: Server | None = None

    def _budget(self, request: Any) -> Any:
        key = f"{request.messages[1]['content']}|{len(request.messages)}".encode()
        long = zlib.crc32(key) % self.args.long_every == 0
        budget = self.args.long_tokens if long else self.args.short_tokens
        return replace(request, max_new_tokens=budget)

    def _count(self, generation: Any) -> Any:
        self.completion_tokens += int(generation.usage.get("completion_tokens", 0))
        return generation

    def generate(self, requests: Any) -> list[Any]:
        generations = self.engine.generate([self._budget(request) for request in requests])
        return [self._count(generation) for generation in generations]

    async def agenerate(self, request: Any) -> Any:
        return self._count(await self.engine.agenerate(self._budget(request)))


def _make_env(lengths: tuple[int, ...]) -> Any:
    return SkewedLength(gymnasium.make(ENV_ID, disable_env_checker=True).unwrapped, lengths)


# --------------------------------------------------------------------------- the server
def _checkpoint(kind: str, folder: Path) -> Path:
    from agent_envs.adapters.engines.transformers import load_smollm2, save_smollm2_checkpoint

    if kind == "smollm2":
        save_smollm2_checkpoint(str(folder))
        return folder
    if kind != "tiny":
        raise ValueError(f"model must be 'tiny' or 'smollm2', got {kind!r}")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    _, tokenizer = load_smollm2(tokenizer_only=True)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """``transformers serve FOLDER --continuous-batching`` on 127.0.0.1, under ``timeout``."""

    def __init__(self, folder: Path, limit: int, cb_blocks: int) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        cli = Path(sys.executable).with_name("transformers")
        command = ["timeout", str(limit), str(cli), "serve", str(folder), "--host", "127.0.0.1",
                   "--port", str(self.port), "--device", "cpu", "--continuous-batching",
                   "--cb-block-size", "32", "--cb-num-blocks", str(cb_blocks),
                   "--cb-max-batch-tokens", "512", "--log-level", "error"]  # fmt: skip
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop)
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def wait(self, timeout: float = 180.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {self.process.returncode}")
            try:
                if httpx.get(self.url.removesuffix("/v1") + "/health", timeout=1).is_success:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError("transformers serve did not become healthy")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # its own session: timeout and serve
            self.process.wait(timeout=10)
        self.log.close()


# --------------------------------------------------------------------------- the collectors
def _engine(server: Server, folder: Path, args: Args) -> SkewedReplies:
    from agent_envs.adapters.engines.openai_http import OpenAIEngine
    from agent_envs.adapters.loop.engine import SamplingConfig

    http = OpenAIEngine(
        server.url, str(folder), sampling=SamplingConfig(temperature=0.0),
        max_concurrency=args.concurrency, timeout=300.0, max_retries=2,
    )  # fmt: skip
    engine = SkewedReplies(http, args)
    engine.server = server
    return engine


def _lockstep(engine: SkewedReplies, seeds: list[int], batch: int, lengths: tuple) -> list:
    from agent_envs.adapters.loop.collector import RolloutCollector

    from agent_envs.vector import TextVectorEnv

    trajectories = []
    vec = TextVectorEnv([lambda: _make_env(lengths)] * batch, autoreset_mode="disabled")
    try:
        collector = RolloutCollector(vec, engine, env_id=ENV_ID, max_new_tokens=LONGEST)
        for start in range(0, len(seeds), batch):
            trajectories += collector.collect(seeds[start : start + batch])
    finally:
        vec.close()
    return trajectories


def _async(engine: SkewedReplies, seeds: list[int], concurrency: int, lengths: tuple) -> list:
    from agent_envs.adapters.loop.async_collector import AsyncRolloutCollector

    collector = AsyncRolloutCollector(
        lambda: _make_env(lengths), engine, env_id=ENV_ID, max_concurrency=concurrency,
        max_new_tokens=LONGEST,
    )  # fmt: skip
    try:
        return asyncio.run(collector.collect(seeds))
    finally:
        collector.close()


def _run(name: str, engine: SkewedReplies, args: Args, lengths: tuple) -> dict[str, Any]:
    seeds = list(range(args.episodes))
    engine.completion_tokens = 0
    start = time.perf_counter()
    if name == ROUNDS:
        trajectories = _lockstep(engine, seeds, args.concurrency, lengths)
    elif name == ONE_BATCH:
        trajectories = _lockstep(engine, seeds, args.episodes, lengths)
    elif name == ASYNC_C:
        trajectories = _async(engine, seeds, args.concurrency, lengths)
    else:
        trajectories = _async(engine, seeds, args.episodes, lengths)
    seconds = time.perf_counter() - start
    errors = [t.error for t in trajectories if t.error is not None]
    if errors:
        server_log = engine.server.tail() if engine.server is not None else ""
        raise RuntimeError(
            f"{name}: {len(errors)} episodes failed, e.g. {errors[0]}\nserver: {server_log}"
        )
    return {
        "seconds": seconds,
        "eps": len(trajectories) / seconds,
        "tokens": engine.completion_tokens,
        "turns": sum(t.num_turns for t in trajectories),
        "replies": [[step.reply for step in t.steps] for t in trajectories],
    }


ROUNDS, ASYNC_C = "lockstep, rounds of C", "async, C episodes"
ONE_BATCH, ASYNC_ALL = "lockstep, one batch", "async, all episodes"
NAMES = (ROUNDS, ASYNC_C, ONE_BATCH, ASYNC_ALL)
PAIRS = ((ASYNC_C, ROUNDS), (ASYNC_C, ONE_BATCH), (ASYNC_ALL, ONE_BATCH))


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # so the server is stopped on the way out


def main(args: Args) -> str:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    lengths = tuple(args.turns)
    if args.episodes % args.concurrency:
        raise ValueError(f"episodes must be a multiple of concurrency={args.concurrency}")
    with tempfile.TemporaryDirectory(prefix="async-rollout-") as tmp:
        folder = _checkpoint(args.model, Path(tmp) / "model")
        server = Server(folder, args.server_timeout, args.cb_blocks)
        try:
            server.wait()
            engine = _engine(server, folder, args)
            warm = replace(args, episodes=args.concurrency)
            _run(ASYNC_C, engine, warm, lengths)  # warm-up (first requests compile, allocate)
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in NAMES}
            for repeat in range(args.repeats):
                order = NAMES[repeat % len(NAMES) :] + NAMES[: repeat % len(NAMES)]
                for name in order:
                    runs[name].append(_run(name, engine, args, lengths))
                    print(f"repeat {repeat} {name}: {runs[name][-1]['eps']:.2f} episodes/s")
        finally:
            server.stop()
    report = _report(args, lengths, runs)
    print(report)
    if args.output:
        Path(args.output).write_text(report)
    return report


def _report(args: Args, lengths: tuple, runs: dict[str, list[dict[str, Any]]]) -> str:
    first = runs[ASYNC_C][0]
    same_work = all(run["tokens"] == first["tokens"] for name in NAMES for run in runs[name])
    same_replies = all(run["replies"] == first["replies"] for name in NAMES for run in runs[name])
    lines = [
        "# Asynchronous vs lockstep rollout",
        "",
        f"`agent-envs bench async-rollout` on {platform.machine()}, "
        f"{os.cpu_count()} CPUs "
        f"(shared with other jobs), Python {platform.python_version()}: `{ENV_ID}`, "
        f"{args.episodes} episodes per collection, at most {args.concurrency} requests in "
        f"flight, `transformers serve --continuous-batching` on 127.0.0.1 (CPU) serving "
        f"model `{args.model}`, greedy, chat endpoint. Skew: reply budgets {args.short_tokens} "
        f"tokens, one in {args.long_every} {args.long_tokens} tokens; episode lengths "
        f"{list(lengths)} turns by seed. {args.repeats} repeats, collectors interleaved.",
        "",
        f"Every collection did the same work: {first['turns']} turns, {first['tokens']} "
        f"completion tokens ({'equal' if same_work else 'NOT equal'} in every run; replies "
        f"{'identical' if same_replies else 'not identical'} across runs).",
        "",
        "| collector | episodes/s (median) | range | seconds (median) |",
        "|---|---:|---:|---:|",
    ]
    for name in NAMES:
        eps = [run["eps"] for run in runs[name]]
        seconds = statistics.median(run["seconds"] for run in runs[name])
        lines.append(
            f"| {name} | {statistics.median(eps):.2f} | {min(eps):.2f}–{max(eps):.2f} | "
            f"{seconds:.1f} |"
        )
    lines += ["", "| ratio (same repeat) | median | range |", "|---|---:|---:|"]
    for ours, theirs in PAIRS:
        ratios = [a["eps"] / b["eps"] for a, b in zip(runs[ours], runs[theirs], strict=True)]
        lines.append(
            f"| {ours} / {theirs} | **{statistics.median(ratios):.2f}×** | "
            f"{min(ratios):.2f}–{max(ratios):.2f}× |"
        )
    lines += [
        "",
        "Goal: async ≥ 1.5× the lockstep collector at equal concurrency. The lockstep "
        "collector's turn waits for its slowest reply (a long one holds up the batch's short "
        "ones) and, in rounds, a batch waits for its longest episode; the async collector "
        "starts each episode's next request as soon as its own step is done, so the "
        "server's continuous batch stays full.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    prog = "agent-envs bench async-rollout"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
