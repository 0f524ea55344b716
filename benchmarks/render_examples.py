"""Regenerate the example pictures in ``benchmarks/results/renderers/``.

``agent-envs bench render-examples`` (``--out DIR`` writes them elsewhere) plays
oracle episodes (a few turns scripted for the dataset envs), recorded with frames, and exports
them as GIFs (one picture per turn, the reply under it), a PNG of a mid-episode frame per env
and one HTML replay. Needs the ``[render]`` extra; runs headless (no window).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
from agent_envs.benchmarks.cli import parse
from agent_envs.renderers.episodes import record_episode
from agent_envs.renderers.frames import frame_from_dict
from agent_envs.renderers.gif import write_gif
from agent_envs.renderers.raster import draw
from agent_envs.renderers.replay import write_replay
from PIL import Image

import agent_envs  # noqa: F401
from agent_envs.core.policies import format_answer

OUT = Path(__file__).resolve().parent / "results" / "renderers"


def oracle_episode(env_id, seed, *, per_turn=None, scripted=(), think=False, turns=40):
    """Record the oracle's episode; ``per_turn`` caps its actions per reply, ``scripted``
    replies come first, ``think`` adds a short reasoning block to each reply."""
    env = gym.make(env_id)
    env.reset(seed=seed)
    clone = copy.deepcopy(env.unwrapped)
    replies = []
    for turn in range(turns):
        if turn < len(scripted):
            reply = scripted[turn]
        else:
            actions = clone.oracle_actions()[:per_turn]
            reply = format_answer(actions, clone.answer_format)
        if think:
            reply = f"<think>Turn {turn + 1}: following the shortest plan.</think>\n{reply}"
        replies.append(reply)
        _, _, terminated, truncated, _ = clone.step(reply)
        if terminated or truncated:
            break
    return record_episode(env, replies, seed=seed)


@dataclass
class Args:
    """Settings (every field is a command-line flag)."""

    out: Path = OUT
    """folder of the GIFs, PNGs and replay.html"""


def main(args: Args) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    examples = {
        "sokoban": oracle_episode("grl/Sokoban-8x8-2box-v0", 1, per_turn=2, think=True),
        "tetris": oracle_episode("grl/Tetris-v0", 2, turns=24),
        "tetris_4x4_domino": oracle_episode("grl/Tetris-4x4-domino-v0", 0),
        "blocksworld": oracle_episode("grl/Blocksworld-4-v0", 3, per_turn=1),
        "gsm8k": oracle_episode(
            "grl/GSM8K-5turn-v0", 5, scripted=["He needs $285 more, so <answer>19</answer>."]
        ),
        "bird": oracle_episode(
            "grl/BIRD-Agentic-v0",
            1,
            scripted=["<answer>EXECUTE SELECT name, floor FROM departments</answer>"],
        ),
    }
    for name, episode in examples.items():
        write_gif(episode, args.out / f"{name}.gif", fps=1.5)
        steps = episode["steps"]
        if name != "tetris_4x4_domino":
            frame = frame_from_dict(steps[len(steps) // 2]["frame"])
            Image.fromarray(draw(frame)).save(args.out / f"{name}.png", optimize=True)
        print(f"{name}: {len(steps)} turns, return {episode['episode_return']}")
    write_replay(
        [examples["sokoban"], examples["blocksworld"]],
        args.out / "replay.html",
        title="Oracle replays: Sokoban 8x8 with 2 boxes, Blocksworld with 4 blocks",
    )


if __name__ == "__main__":
    prog = "agent-envs bench render-examples"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
