"""Tetris throughput: our full turn side by side with tetris-gymnasium's ``env.step``.

``agent-envs bench tetris-throughput`` measures, on the 10x20 board of
``grl/Tetris-v0``:

* one full turn of ours (parse the reply + step + gravity + render the text board + info,
  i.e. ``TextEnv.step``) with one random move per reply, against one ``Tetris.step`` of
  tetris-gymnasium 0.3.1 (run in its own venv, ``benchmarks/peers``) on the same kind of
  random move stream (left, right, down, rotate cw/ccw, hard drop; both with gravity);
* our turn with a ``<think>`` and 5 moves, a GRL 4x4 turn with 5 moves, reset, and one oracle
  call (placement search) on the full game.

:func:`tetris_timings` returns every figure as a dict (``benchmarks/throughput.py`` calls
it); :func:`report` formats one as Markdown. Run as a script, it prints the table and writes
``benchmarks/results/tetris_throughput.md``. Resets after a game over are never timed.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / "benchmarks/.peers/tetris-gymnasium/bin/python"
PEER_SCRIPT = ROOT / "benchmarks/peers/tetris_gymnasium_steps.py"
MOVES = ("Left", "Right", "Down", "RotateCW", "RotateCCW", "Drop")  # the peer's actions 0-5
TARGET_SPEEDUP = 2.0


def timed(function: Callable[[], object], repeat: int) -> list[float]:
    """Wall seconds of each of ``repeat`` calls of ``function``."""
    samples = []
    clock = time.perf_counter
    for _ in range(repeat):
        start = clock()
        function()
        samples.append(clock() - start)
    return samples


def _summary(samples: Sequence[float], prefix: str) -> dict[str, float]:
    values = np.asarray(samples) * 1e6
    return {
        f"{prefix}_p50_us": float(np.percentile(values, 50)),
        f"{prefix}_mean_us": float(values.mean()),
        f"{prefix}_p90_us": float(np.percentile(values, 90)),
    }


def _time_turns(env, replies: Sequence[str], turns: int) -> list[float]:
    env.reset(seed=0)
    samples = []
    clock = time.perf_counter
    for index in range(turns):
        reply = replies[index % len(replies)]
        start = clock()
        _, _, terminated, truncated, _ = env.step(reply)
        samples.append(clock() - start)
        if terminated or truncated:
            env.reset()
    return samples


def ours(turns: int = 20_000, seed: int = 0) -> dict[str, float]:
    """Our timings (µs): full turns, reset, and one oracle call."""
    from agent_envs.envs.tetris import TetrisEnv

    endless = dict(max_turns=10**9, goal_lines=10**9)
    rng = np.random.default_rng(seed)
    one = [f"<answer>{MOVES[i]}</answer>" for i in rng.integers(0, len(MOVES), 4096)]
    five = [
        "<think>Fill the gap on the left.</think><answer>"
        + " || ".join(MOVES[i] for i in row) + "</answer>"
        for row in rng.integers(0, len(MOVES), (4096, 5))
    ]  # fmt: skip
    grl_moves = ("Left", "Right", "Down")
    grl = [
        "<answer>" + " || ".join(grl_moves[i] for i in row) + "</answer>"
        for row in rng.integers(0, 3, (4096, 5))
    ]
    results: dict[str, float] = {}
    results.update(_summary(_time_turns(TetrisEnv(**endless), one, turns), "turn_1_action"))
    results.update(_summary(_time_turns(TetrisEnv(**endless), five, turns), "turn_5_actions"))
    grl_env = TetrisEnv(
        width=4, height=4, pieces="cell", rules="grl", max_actions_per_turn=5, **endless
    )
    results.update(_summary(_time_turns(grl_env, grl, turns), "grl_4x4_turn_5_actions"))
    env = TetrisEnv()
    seeds = iter(range(10**9))
    results.update(_summary(timed(lambda: env.reset(seed=next(seeds)), 5000), "reset"))
    oracle_samples = []
    for episode in range(5):
        env.reset(seed=episode)
        for _ in range(8):
            start = time.perf_counter()
            actions = env.oracle_actions()
            oracle_samples.append(time.perf_counter() - start)
            if env.step("<answer>" + " || ".join(actions) + "</answer>")[2]:
                break
    results.update(_summary(oracle_samples, "oracle_call"))
    return results


def peer(steps: int = 20_000, seed: int = 0) -> tuple[dict | None, str]:
    """tetris-gymnasium's ``step`` timings from its venv; ``(None, reason)`` if it cannot run."""
    if not PEER_PYTHON.exists():
        return None, "venv missing: run `bash benchmarks/peers/setup_tetris_gymnasium.sh`"
    command = [
        str(PEER_PYTHON), str(PEER_SCRIPT), "--width", "10", "--height", "20",
        "--steps", str(steps), "--seed", str(seed),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"peer script failed: {done.stderr.strip().splitlines()[-1:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def tetris_timings(turns: int = 20_000, seed: int = 0) -> dict:
    """Every figure of this benchmark: ``ours`` (µs), ``peer`` (µs, or ``None`` with
    ``peer_note`` saying why), ``speedup_p50``/``speedup_mean`` (peer step / our turn; the
    target is ``TARGET_SPEEDUP``), and the machine."""
    mine = ours(turns, seed)
    theirs, note = peer(turns, seed)
    timings = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "board": "10x20",
        "ours": mine,
        "peer": theirs,
        "peer_note": note,
        "speedup_p50": None,
        "speedup_mean": None,
        "target_speedup": TARGET_SPEEDUP,
    }
    if theirs is not None:
        timings["speedup_p50"] = theirs["step_p50_us"] / mine["turn_1_action_p50_us"]
        timings["speedup_mean"] = theirs["step_mean_us"] / mine["turn_1_action_mean_us"]
    return timings


def report(timings: dict) -> str:
    """The figures of :func:`tetris_timings` as a Markdown section."""
    mine, theirs = timings["ours"], timings["peer"]

    def row(label: str, prefix: str, source: dict | None = mine) -> str:
        if source is None:
            return f"| {label} | n/a | n/a | n/a |"
        return (
            f"| {label} | {source[prefix + '_p50_us']:.1f} | {source[prefix + '_mean_us']:.1f}"
            f" | {source[prefix + '_p90_us']:.1f} |"
        )

    peer_label = (
        f"tetris-gymnasium {theirs['version']}: `env.step` (numpy observation)"
        if theirs
        else "tetris-gymnasium: `env.step`"
    )
    lines = [
        "## Tetris (10x20) vs tetris-gymnasium",
        "",
        f"Machine: {timings['machine']}. Reproduce: "
        "`agent-envs bench tetris-throughput`"
        " (peer venv: `bash benchmarks/peers/setup_tetris_gymnasium.sh`).",
        "",
        "| measure | p50 µs | mean µs | p90 µs |",
        "|---|---:|---:|---:|",
        row("agent-envs: full turn, 1 random move (parse + step + gravity + render + info)",
            "turn_1_action"),
        row(peer_label + ", 1 random move", "step", theirs),
        row("agent-envs: full turn, think + 5 random moves", "turn_5_actions"),
        row("agent-envs: GRL 4x4 cells, full turn of 5 moves", "grl_4x4_turn_5_actions"),
        row("agent-envs: reset (grl/Tetris-v0)", "reset"),
        row("agent-envs: one oracle call (placement search, full game)", "oracle_call"),
        "",
    ]  # fmt: skip
    if theirs is None:
        lines.append(f"tetris-gymnasium not measured: {timings['peer_note']}.")
    else:
        verdict = "met" if timings["speedup_p50"] >= timings["target_speedup"] else "NOT met"
        lines.append(
            f"Speed-up per step (their `env.step` / our full turn): {timings['speedup_p50']:.1f}x"
            f" at the median, {timings['speedup_mean']:.1f}x on the mean; target"
            f" ≥ {timings['target_speedup']:.0f}x: {verdict}."
        )
    return "\n".join(lines) + "\n"


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    turns: int = 20_000
    """turns of ours (and steps of tetris-gymnasium) timed"""
    seed: int = 0
    """seed of the random move streams (ours and the peer's)"""
    out: Path = RESULTS_DIR
    """folder of tetris_throughput.md"""


def main(args: Args) -> str:
    text = report(tetris_timings(args.turns, args.seed))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tetris_throughput.md").write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    prog = "agent-envs bench tetris-throughput"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
