"""CPU training under glibc's allocator and under tcmalloc, side by side in one run.

``agent-envs bench cpu-allocator`` runs the same small pipeline of
``agent_envs.benchmarks.train`` (SFT on oracle episodes, then GRPO, then the leaderboard eval of
both models) once per allocator in each round, the order alternating round by round, each in a fresh
process (``--allocator system`` / ``--allocator tcmalloc``), and reports per round: the SFT and RL
step times, the eval's wall time, and the share of the processes' CPU time spent in the
kernel (page faults: see ``agent_envs.adapters.trl.allocator``). Seeds are fixed, so both sides play
the same episodes (checked: the RL steps' rewards and completion lengths must match; a mismatch
is reported). Results go to ``benchmarks/results/cpu_allocator.md``.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_envs.adapters.trl.allocator import find_tcmalloc
from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / "cpu_allocator.md"
SIDES = ("system", "tcmalloc")


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env: str = "grl/Sokoban-v0"
    """the env trained and evaluated"""
    rounds: int = 3
    """rounds; each runs the pipeline once per allocator"""
    sft_episodes: int = 40
    """oracle episodes of the SFT stage"""
    rl_steps: int = 2
    """GRPO steps (each: 2 groups x 4 episodes)"""
    eval_seeds: int = 8
    """published eval seeds of the eval stage"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def _child_cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def _run(command: list[str]) -> dict[str, float]:
    """Run ``command``; its wall, user and system seconds."""
    user, system = _child_cpu()
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    user_after, system_after = _child_cpu()
    return {"wall": wall, "user": user_after - user, "sys": system_after - system}


def one_pipeline(
    args: Args, side: str, folder: Path, flags: tuple[str, ...] = (), *, evaluate: bool = True
) -> dict[str, Any]:
    """The pipeline under allocator ``side`` in ``folder`` (``flags``: more of
    ``agent_envs.benchmarks.train``'s; ``evaluate``: run the eval stage too): its measures."""
    train = [sys.executable, "-m", "agent_envs.benchmarks.train", "--allocator", side, *flags]
    common = ["--out", str(folder), "--envs", args.env, "--no-progress", "--seed", "0"]
    training = _run(
        [
            *train,
            *common,
            "--stages", "sft", "grpo",
            "--sft-episodes", str(args.sft_episodes),
            "--sft-epochs", "1",
            "--rl-steps", str(args.rl_steps),
            "--rl-prompts", "2",
            "--num-generations", "4",
        ]
    )  # fmt: skip
    evaluation = {"wall": 0.0, "user": 0.0, "sys": 0.0}
    if evaluate:
        evaluation = _run(
            [
                *train,
                *common,
                "--stages", "eval",
                "--eval-seeds", str(args.eval_seeds),
                "--no-eval-zero-shot",
                "--eval-out", str(folder / "leaderboard"),
            ]
        )  # fmt: skip
    sft_log = read_log(folder / "sft" / "log.jsonl")
    rl_log = [row for row in read_log(folder / "grpo" / "log.jsonl") if "step_time" in row]
    sft_steps = json.loads((folder / "sft" / "stage.json").read_text())["steps"]
    allocator = json.loads((folder / "grpo" / "stage.json").read_text())["allocator"]
    if allocator != side:
        raise SystemExit(f"the {side} side ran under {allocator}")
    return {
        "sft_step": sft_log[-1]["train_runtime"] / sft_steps,
        "rl_step": statistics.mean(row["step_time"] for row in rl_log),
        "rl_work": [(row["reward"], row["completions/mean_length"]) for row in rl_log],
        "rl_tokens": statistics.mean(row["completions/mean_length"] for row in rl_log),
        "eval_wall": evaluation["wall"],
        "sys_share": (training["sys"] + evaluation["sys"])
        / (training["sys"] + evaluation["sys"] + training["user"] + evaluation["user"]),
    }


def peak_run(command: list[str]) -> dict[str, Any]:
    """Run ``command`` in a child process: its wall seconds, peak resident GiB, and the
    signal that killed it (``None`` if it exited)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    killed = signal.Signals(-child.returncode).name if child.returncode < 0 else None
    if child.returncode > 0:
        raise subprocess.CalledProcessError(child.returncode, command)
    wall = time.perf_counter() - start
    return {"wall": wall, "peak_gib": usage.ru_maxrss / 2**20, "killed": killed}


def gigpo_from(
    sft_run: Path, folder: Path, train: list[str], flags: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The GiGPO stage of the ``agent_envs.benchmarks.train`` command ``train`` in a fresh run
    ``folder`` that starts from the ``base/`` and ``sft/`` stages of ``sft_run`` (linked, not
    copied), with ``flags``: :func:`peak_run`'s measures and the stage log's step rows (none
    when a signal killed it)."""
    folder.mkdir(parents=True)
    for stage in ("base", "sft"):
        (folder / stage).symlink_to(sft_run / stage)
    measured = peak_run([*train, "--out", str(folder), "--stages", "gigpo", *flags])
    if measured["killed"]:
        return measured, []
    rows = read_log(folder / "gigpo" / "log.jsonl")
    return measured, [row for row in rows if "step_time" in row]


def read_log(path: Path) -> list[dict[str, Any]]:
    """The rows of a stage's ``log.jsonl`` (one JSON object a line)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def median_range(values: list[float], digits: int = 2) -> str:
    """``values`` as "median (min to max)" with ``digits`` decimals."""
    return (
        f"{statistics.median(values):.{digits}f} "
        f"({min(values):.{digits}f} to {max(values):.{digits}f})"
    )


def alternate(
    rounds: int, sides: Sequence[str], run: Callable[[str, Path], dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """``run(side, folder)`` for every side in each round, the order rotating by one side
    round by round (two sides: alternating), each in a fresh scratch folder (``run`` makes
    it; it is removed after); each side's measures, round by round."""
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    scratch = Path(tempfile.mkdtemp(prefix="cpu_training_"))
    try:
        for round_index in range(rounds):
            shift = round_index % len(sides)
            for side in [*sides[shift:], *sides[:shift]]:
                folder = scratch / f"r{round_index}-{side}"
                results[side].append(run(side, folder))
                shutil.rmtree(folder, ignore_errors=True)
                print(f"round {round_index + 1} {side}: {results[side][-1]}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def table_rows(
    results: dict[str, list[dict[str, Any]]],
    sides: tuple[str, str],
    rows: list[tuple[str, str, int]],
) -> list[str]:
    """One Markdown row per ``(label, key, digits)``: each side's median (min to max) over
    rounds and the first side's value over the second's, round by round."""
    lines = []
    for label, key, digits in rows:
        first, second = ([run[key] for run in results[side]] for side in sides)
        ratios = [a / b for a, b in zip(first, second, strict=True)]
        lines.append(
            f"| {label} | {median_range(first, digits)} | {median_range(second, digits)} "
            f"| {median_range(ratios)} |"
        )
    return lines


def main(args: Args) -> str:
    library = find_tcmalloc()
    if library is None:
        raise SystemExit("no tcmalloc library found: install it (`make tcmalloc`) first")
    results = alternate(args.rounds, SIDES, lambda side, folder: one_pipeline(args, side, folder))
    same = all(
        a["rl_work"] == b["rl_work"]
        for a, b in zip(results["system"], results["tcmalloc"], strict=True)
    )
    rows = [
        ("SFT step, s", "sft_step", 2),
        ("GRPO step (8 episodes), s", "rl_step", 1),
        (f"eval ({args.eval_seeds} seeds x 4 agents), wall s", "eval_wall", 1),
        ("kernel share of CPU time", "sys_share", 2),
    ]
    lines = [
        "# CPU training: glibc's allocator against tcmalloc",
        "",
        "`agent-envs bench cpu-allocator` "
        f"(`--env {args.env} --rounds {args.rounds} --sft-episodes {args.sft_episodes} "
        f"--rl-steps {args.rl_steps} --eval-seeds {args.eval_seeds}`) on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; tcmalloc: `{library}`. Each round runs "
        "`agent_envs.benchmarks.train` "
        "(SFT, GRPO, then the eval of both models) once per allocator in fresh processes, "
        "order alternating; median (min to max) over rounds. Both sides played the same "
        f"RL episodes: {'yes' if same else 'NO (the comparison is not of equal work)'}.",
        "",
        "| measure | system (glibc) | tcmalloc | system ÷ tcmalloc |",
        "|---|---:|---:|---:|",
    ]
    lines += table_rows(results, SIDES, rows)
    return finish_report(lines, args.output)


if __name__ == "__main__":
    prog = "agent-envs bench cpu-allocator"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
