"""Time tetris-gymnasium's ``Tetris.step`` on a seeded random action stream (peer benchmark).

Run with the peer venv's interpreter, never ours (this file must not import ``agent_envs``)::

    benchmarks/.peers/tetris-gymnasium/bin/python benchmarks/peers/tetris_gymnasium_steps.py \
        --width 10 --height 20 --steps 20000 --seed 0

Prints one JSON line: the package version, the board, the steps timed, and the p50 / mean /
p90 of one ``env.step`` in microseconds. Facts about tetris-gymnasium 0.3.1 that shape it:

* ``tetris_gymnasium.envs.tetris.Tetris(width=10, height=20, gravity=True)``: gravity moves
  the piece down one row after every action except a hard drop (our full game moves it once
  per turn; with one action per turn the two match).
* Its actions (``ActionsMapping``): 0 left, 1 right, 2 down, 3 rotate clockwise, 4 rotate
  counterclockwise, 5 hard drop, 6 swap (hold), 7 no-op. We draw uniformly from 0-5, the
  moves our env has too.
* ``step`` returns a dict of numpy arrays (board, active-piece mask, holder, queue): that is
  its observation, as the text board is ours. A game over is answered by ``reset()``, which
  is not timed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
from tetris_gymnasium.envs.tetris import Tetris

MOVES = (0, 1, 2, 3, 4, 5)  # left, right, down, rotate cw, rotate ccw, hard drop


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def time_steps(width: int, height: int, steps: int, seed: int) -> dict:
    """Time `steps` calls of ``env.step``; resets (on game over) are not timed."""
    env = Tetris(width=width, height=height)
    env.reset(seed=seed + 1)  # tetris-gymnasium ignores seed 0 ("if seed and seed > 0")
    actions = np.random.default_rng(seed).choice(MOVES, steps).tolist()
    samples = []
    clock = time.perf_counter
    games = 1
    for action in actions:
        start = clock()
        _, _, terminated, truncated, _ = env.step(action)
        samples.append(clock() - start)
        if terminated or truncated:
            env.reset()
            games += 1
    return {
        "package": "tetris-gymnasium",
        "version": importlib.metadata.version("tetris-gymnasium"),
        "width": width,
        "height": height,
        "steps": steps,
        "games": games,
        "step_p50_us": 1e6 * percentile(samples, 50),
        "step_mean_us": 1e6 * statistics.fmean(samples),
        "step_p90_us": 1e6 * percentile(samples, 90),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=10)
    parser.add_argument("--height", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(time_steps(args.width, args.height, args.steps, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
