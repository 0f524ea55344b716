"""Throughput of agent-envs, side by side with gym-sokoban where it runs.

``agent-envs bench throughput`` (``make bench``) measures, in one run:

* Sokoban room generation for 6x6/1, 8x8/2 and 10x10/3 at gym-sokoban's search depth (300),
  ours in process and gym-sokoban's through its own venv (``benchmarks/peers``), with the
  mean *optimal* solution length of both sets of levels from our solver;
* reset of ``grl/Sokoban-v0``; one full turn (parse reply + step + render text + info) of a
  single env; a 1024-env sync vector's env-turns per second (autoresets included);
* the import time ``import agent_envs`` adds to ``import gymnasium``;
* Tetris (10x20) turns against ``tetris-gymnasium``'s ``env.step``
  (``agent_envs.benchmarks.tetris_throughput``).

Results print as Markdown and go to ``benchmarks/results/throughput.md`` (and ``.json``).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report
from agent_envs.benchmarks.tetris_throughput import timed

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / "benchmarks/.peers/gym-sokoban/bin/python"
PEER_SCRIPT = ROOT / "benchmarks/peers/gym_sokoban_rooms.py"
PRESETS = ((6, 1), (8, 2), (10, 3))
SEARCH_DEPTH = 300
ROUNDS = 3  # timed rounds per env measure; the best round's median is reported


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    generation_seeds: int = 200
    """levels generated per preset by agent-envs"""
    peer_seeds: int = 30
    """levels generated per preset by gym-sokoban (10x10/3 takes ~1 s each)"""
    solve_seeds: int = 100
    """levels per preset whose optimal solution length is computed"""
    peer_timeout: float = 30.0
    """seconds before one gym-sokoban room is given up"""
    turns: int = 20_000
    """single-env turns timed"""
    vector_envs: int = 1024
    """sub-envs of the timed vector env"""
    vector_steps: int = 30
    """steps per timed round of the vector env"""
    vector_rounds: int = 5
    """timed rounds; the best one is reported"""
    out: Path = RESULTS_DIR
    """folder of throughput.md and throughput.json"""


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def optimal_lengths(states: Sequence) -> list[int]:
    from agent_envs.envs.sokoban.solver import SolverLimitExceeded, optimal_solution_length

    lengths = []
    for state in states:
        try:
            length = optimal_solution_length(state)
        except SolverLimitExceeded:
            continue
        if length is not None:
            lengths.append(length)
    return lengths


def ours_generation(args: Args) -> list[dict]:
    from agent_envs.envs.sokoban.generator import generate

    rows = []
    for width, boxes in PRESETS:
        times, states = [], []
        for seed in range(args.generation_seeds):
            rng = np.random.default_rng(seed)
            start = time.perf_counter()
            state = generate(
                rng, width=width, height=width, num_boxes=boxes, search_depth=SEARCH_DEPTH
            )
            times.append(time.perf_counter() - start)
            states.append(state)
        lengths = optimal_lengths(states[: args.solve_seeds])
        rows.append(dict(
            generator="agent-envs", preset=f"{width}x{width}/{boxes}", levels=len(times),
            p50_ms=1e3 * percentile(times, 50), p90_ms=1e3 * percentile(times, 90),
            solved=len(lengths), mean_optimal_length=statistics.fmean(lengths),
        ))  # fmt: skip
    return rows


def peer_generation(args: Args) -> tuple[list[dict], str]:
    """gym-sokoban's rooms, generated in its own venv; ``([], reason)`` if it cannot run."""
    from agent_envs.envs.sokoban.levels import parse_xsb

    if not PEER_PYTHON.exists():
        return [], "gym-sokoban venv missing: run `bash benchmarks/peers/setup_gym_sokoban.sh`"
    rows = []
    for width, boxes in PRESETS:
        command = [
            str(PEER_PYTHON), str(PEER_SCRIPT), "--dim", str(width), "--boxes", str(boxes),
            "--seeds", f"0:{args.peer_seeds}", "--search-depth", str(SEARCH_DEPTH),
            "--timeout-per-room", str(args.peer_timeout),
        ]  # fmt: skip
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        records = [json.loads(line) for line in output.splitlines() if line.strip()]
        times = [r["seconds"] if r["seconds"] is not None else float("inf") for r in records]
        states = [parse_xsb(r["xsb"]) for r in records if r.get("xsb")]
        lengths = optimal_lengths(states[: args.solve_seeds])
        rows.append(dict(
            generator="gym-sokoban 0.0.6", preset=f"{width}x{width}/{boxes}", levels=len(times),
            p50_ms=1e3 * percentile(times, 50), p90_ms=1e3 * percentile(times, 90),
            solved=len(lengths), mean_optimal_length=statistics.fmean(lengths),
        ))  # fmt: skip
    return rows, ""


def env_timings(args: Args) -> dict:
    import gymnasium as gym

    import agent_envs  # noqa: F401
    from agent_envs.envs.sokoban.env import SokobanEnv

    env = SokobanEnv()
    seeds = iter(range(10**9))
    # Medians per round, the best round reported: this host is shared, and load only slows.
    reset_p50 = min(
        percentile(timed(lambda: env.reset(seed=next(seeds)), 2000), 50) for _ in range(ROUNDS)
    )

    rng = np.random.default_rng(0)
    names = ("Up", "Down", "Left", "Right")
    one_action = [f"<answer>{names[i]}</answer>" for i in rng.integers(0, 4, 4096)]
    five_actions = [
        "<think>Push the box toward the target.</think><answer>"
        + " || ".join(names[i] for i in row) + "</answer>"
        for row in rng.integers(0, 4, (4096, 5))
    ]  # fmt: skip
    results = {"reset_p50_us": 1e6 * reset_p50}
    for label, replies in (("turn_1_action", one_action), ("turn_5_actions", five_actions)):
        env = SokobanEnv(max_turns=10**9, max_actions_per_episode=None)
        env.reset(seed=0)
        clock = time.perf_counter
        medians = []
        for _ in range(ROUNDS):
            samples = []
            for index in range(args.turns // ROUNDS):
                reply = replies[index % len(replies)]
                start = clock()
                _, _, terminated, truncated, _ = env.step(reply)
                samples.append(clock() - start)
                if terminated or truncated:
                    env.reset()
            medians.append(percentile(samples, 50))
        results[f"{label}_p50_us"] = 1e6 * min(medians)

    batch = [one_action[i % len(one_action)] for i in range(args.vector_envs)]
    endless = dict(max_turns=10**9, max_episode_steps=10**9, max_actions_per_episode=None)
    for key, kwargs in (
        ("vector_env_turns_per_s", endless),
        ("vector_env_turns_per_s_autoreset", {}),
    ):
        envs = gym.make_vec("grl/Sokoban-v0", num_envs=args.vector_envs, **kwargs)
        envs.reset(seed=0)
        envs.step(batch)  # warm up
        rates = []
        for _ in range(args.vector_rounds):  # the best round: other load only slows a round
            start = time.perf_counter()
            for _ in range(args.vector_steps):
                envs.step(batch)
            rates.append(args.vector_envs * args.vector_steps / (time.perf_counter() - start))
        results[key] = max(rates)
        envs.close()
    return results


def env_timings_in_processes(args: Args, processes: int = 3) -> dict:
    """:func:`env_timings` in fresh interpreters; per measure the best process, with the range
    over processes (``<key>_range``). Timings on this shared host differ up to 2x from one
    process to the next (which core, what else runs), while staying steady within one."""
    code = (
        "import json, sys; from agent_envs.benchmarks.throughput import Args, env_timings; "
        "print(json.dumps(env_timings(Args(**json.loads(sys.argv[1])))))"
    )
    settings = json.dumps({
        "turns": args.turns, "vector_envs": args.vector_envs,
        "vector_steps": args.vector_steps, "vector_rounds": args.vector_rounds,
    })  # fmt: skip
    command = [sys.executable, "-c", code, settings]
    runs = []
    for _ in range(processes):
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        runs.append(json.loads(done.stdout))
    best: dict = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        best[key] = max(values) if key.endswith("_per_s") else min(values)
        best[key + "_range"] = [min(values), max(values)]
    return best


def import_overhead_ms(repeat: int = 15) -> dict:
    """Cumulative import time of ``gymnasium`` and of ``agent_envs`` imported after it, from
    ``python -X importtime`` (medians over fresh interpreters)."""
    gymnasium_us, agent_envs_us = [], []
    for _ in range(repeat):
        lines = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import gymnasium, agent_envs"],
            capture_output=True, text=True, check=True,
        ).stderr.splitlines()  # fmt: skip
        cumulative = {
            line.split("|")[2].strip(): int(line.split("|")[1])
            for line in lines
            if line.startswith("import time:") and line.count("|") == 2
            and line.split("|")[1].strip().isdigit()
        }  # fmt: skip
        gymnasium_us.append(cumulative["gymnasium"])
        agent_envs_us.append(cumulative["agent_envs"])
    return {
        "import_gymnasium_ms": statistics.median(gymnasium_us) / 1e3,
        "import_agent_envs_extra_ms": statistics.median(agent_envs_us) / 1e3,
    }


def _with_range(env: dict, key: str, form: str) -> str:
    low, high = env[key + "_range"]
    return f"{form.format(env[key])} ({form.format(low)} to {form.format(high)})"


def report(generation: list[dict], peer_note: str, env: dict, imports: dict) -> str:
    lines = [
        "# Throughput",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}.",
        "Reproduce: `make bench` (or `agent-envs bench throughput`).",
        "",
        "## Sokoban room generation (search depth 300)",
        "",
        "| generator | preset | levels | p50 ms | p90 ms | levels solved | mean optimal length |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in sorted(generation, key=lambda r: (r["preset"], r["generator"])):
        lines.append(
            f"| {row['generator']} | {row['preset']} | {row['levels']} | {row['p50_ms']:.3f} | "
            f"{row['p90_ms']:.3f} | {row['solved']} | {row['mean_optimal_length']:.2f} |"
        )
    if peer_note:
        lines += ["", f"gym-sokoban not measured: {peer_note}."]
    lines += [
        "",
        "Optimal length: moves of an optimal solution, by `agent_envs.envs.sokoban.solver`.",
        "",
        "## Env and vector (grl/Sokoban-v0)",
        "",
        "Each measure: the best of 3 fresh processes (the range over them in brackets); within",
        "a process, medians are the best of 3 timed rounds and vector rates the best of 5.",
        "",
        "| measure | value | target |",
        "|---|---:|---:|",
    ]
    rows = [
        ("reset p50", _with_range(env, "reset_p50_us", "{:.1f} µs"), "≤ 100 µs"),
        ("full turn, 1 action (parse + step + render + info) p50",
         _with_range(env, "turn_1_action_p50_us", "{:.2f} µs"), "≤ 15 µs"),
        ("full turn, think + 5 actions p50",
         _with_range(env, "turn_5_actions_p50_us", "{:.2f} µs"), ""),
        ("1024-env sync vector, env-turns/s, episodes never end",
         _with_range(env, "vector_env_turns_per_s", "{:,.0f}"), "≥ 50,000"),
        ("1024-env sync vector, env-turns/s, GRL budgets with autoresets",
         _with_range(env, "vector_env_turns_per_s_autoreset", "{:,.0f}"), ""),
        ("`import agent_envs` on top of `import gymnasium`",
         f"{imports['import_agent_envs_extra_ms']:.1f} ms", "≤ 150 ms"),
        ("`import gymnasium` alone", f"{imports['import_gymnasium_ms']:.1f} ms", ""),
    ]  # fmt: skip
    lines += [f"| {name} | {value} | {target} |" for name, value, target in rows]
    return "\n".join(lines) + "\n"


def main(args: Args) -> str:
    from agent_envs.benchmarks import tetris_throughput

    env = env_timings_in_processes(args)
    generation = ours_generation(args)
    peer_rows, peer_note = peer_generation(args)
    imports = import_overhead_ms()
    tetris = tetris_throughput.tetris_timings(args.turns)
    text = report(generation + peer_rows, peer_note, env, imports)
    text += "\n" + tetris_throughput.report(tetris)
    write_report(text, args.out / "throughput.md")
    record = {"generation": generation + peer_rows, "env": env, "imports": imports}
    record["tetris"] = tetris
    (args.out / "throughput.json").write_text(json.dumps(record, indent=2))
    print(text)
    return text


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs bench throughput",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    main(parse_args())
