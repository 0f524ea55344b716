"""The leaderboard: agents x envs x fixed seeds → per-episode JSONL and a summary table.

``python -m benchmarks.leaderboard`` (what ``make run`` does) plays the scripted agents on
every Sokoban preset with built-in defaults, prints the table with standard errors and the
boards of one episode per agent, and writes ``episodes.jsonl`` and ``leaderboard.md`` under
``--out``. No network, no GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import gymnasium as gym

import agent_envs
from agent_envs.core.policies import OraclePolicy, RandomPolicy

POLICIES: dict[str, Callable[[int], Callable]] = {
    "random": lambda seed: RandomPolicy(seed),
    "oracle": lambda seed: OraclePolicy(),
}


@dataclass
class Args:
    """Settings of one leaderboard run (every field is a command-line flag)."""

    envs: list[str] = field(default_factory=lambda: sorted(agent_envs.PRESETS))
    """registered ids to evaluate"""
    agents: list[str] = field(default_factory=lambda: list(POLICIES))
    """scripted agents to evaluate"""
    seeds: int = 20
    """episodes per (agent, env): seeds 0..seeds-1"""
    out: Path = Path("runs/leaderboard")
    """where episodes.jsonl and leaderboard.md are written"""
    show_boards: bool = True
    """print the first and last board of one episode per agent and env"""


@dataclass
class Episode:
    env_id: str
    agent: str
    seed: int
    episode_return: float
    success: bool
    turns: int
    actions: int
    truncation_reason: str | None
    first_observation: str
    last_observation: str
    replies: list[str]


def play(env_id: str, agent: str, seed: int) -> Episode:
    """One episode of ``agent`` on ``env_id`` from ``seed``."""
    env = gym.make(env_id)
    policy = POLICIES[agent](seed)
    observation, info = env.reset(seed=seed)
    first = observation
    total, actions, replies = 0.0, 0, []
    terminated = truncated = False
    while not (terminated or truncated):
        reply = policy(env.unwrapped, observation)
        replies.append(reply)
        observation, reward, terminated, truncated, info = env.step(reply)
        total += float(reward)
        actions += info["num_actions"]
    env.close()
    return Episode(
        env_id, agent, seed, round(total, 6), bool(info["success"]), info["turn"], actions,
        info["truncation_reason"], first, observation, replies,
    )  # fmt: skip


def mean_and_stderr(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def summary_table(episodes: Sequence[Episode]) -> str:
    """A Markdown table: one row per (env, agent), mean ± standard error."""
    rows = [
        "| env | agent | episodes | success | return | turns | actions |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    keys = sorted({(episode.env_id, episode.agent) for episode in episodes})
    for env_id, agent in keys:
        group = [e for e in episodes if (e.env_id, e.agent) == (env_id, agent)]
        cells = []
        for values in (
            [float(e.success) for e in group],
            [e.episode_return for e in group],
            [float(e.turns) for e in group],
            [float(e.actions) for e in group],
        ):
            mean, stderr = mean_and_stderr(values)
            cells.append(f"{mean:.2f} ± {stderr:.2f}")
        rows.append(f"| {env_id} | {agent} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def side_by_side(left: str, right: str, gap: int = 6) -> str:
    left_rows, right_rows = left.splitlines(), right.splitlines()
    width = max(map(len, left_rows), default=0)
    height = max(len(left_rows), len(right_rows))
    left_rows += [""] * (height - len(left_rows))
    right_rows += [""] * (height - len(right_rows))
    rows = zip(left_rows, right_rows, strict=True)
    return "\n".join(f"{a:<{width}}{' ' * gap}{b}" for a, b in rows)


def main(args: Args) -> list[Episode]:
    unknown = sorted(set(args.agents) - set(POLICIES))
    if unknown:
        raise SystemExit(f"--agents: unknown agents {unknown}; known: {sorted(POLICIES)}")
    started = time.perf_counter()
    episodes = [
        play(env_id, agent, seed)
        for env_id in args.envs
        for agent in args.agents
        for seed in range(args.seeds)
    ]
    elapsed = time.perf_counter() - started
    table = summary_table(episodes)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "episodes.jsonl", "w") as handle:
        for episode in episodes:
            handle.write(json.dumps(asdict(episode)) + "\n")
    (args.out / "leaderboard.md").write_text(
        f"# Leaderboard\n\n{args.seeds} seeds per row (seeds 0..{args.seeds - 1}); "
        f"mean ± standard error.\n\n{table}\n"
    )
    print(table)
    if args.show_boards:
        for env_id in args.envs:
            for agent in args.agents:
                episode = next(e for e in episodes if (e.env_id, e.agent) == (env_id, agent))
                outcome = "solved" if episode.success else "not solved"
                print(
                    f"\n{env_id} · {agent} · seed {episode.seed} · "
                    f"return {episode.episode_return:+.1f} · {outcome}"
                )
                print(side_by_side(episode.first_observation, episode.last_observation))
    print(f"\n{len(episodes)} episodes in {elapsed:.1f} s; written to {args.out}/")
    return episodes


def parse_args(argv: Sequence[str] | None = None) -> Args:
    defaults = Args()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=defaults.envs)
    parser.add_argument("--agents", nargs="+", default=defaults.agents)
    parser.add_argument("--seeds", type=int, default=defaults.seeds)
    parser.add_argument("--out", type=Path, default=defaults.out)
    parser.add_argument("--no-boards", dest="show_boards", action="store_false")
    return Args(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    main(parse_args())
