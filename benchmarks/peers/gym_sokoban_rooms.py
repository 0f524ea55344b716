"""Time gym-sokoban's random room generator, one JSON line per seed (peer benchmark).

Run with the peer venv's interpreter, never ours (this file must not import
``agent_envs``)::

    benchmarks/.peers/gym-sokoban/bin/python benchmarks/peers/gym_sokoban_rooms.py \
        --dim 8 --boxes 2 --seeds 0:20 --search-depth 300 --timeout-per-room 20

Facts about gym-sokoban 0.0.6 (the only PyPI release) that shape this script:

* ``room_utils.generate_room(dim, p_change_directions=0.35, num_steps=25,
  num_boxes=3, tries=4, second_player=False)`` has no ``search_depth``
  parameter: the reverse-play DFS always starts with ``ttl=300``. So
  ``--search-depth`` only accepts 300 unless a future release adds the parameter.
* ``SokobanEnv`` calls it with ``num_steps=int(1.7 * (W + H))`` (20, 27, 34 for
  6x6, 8x8, 10x10); that is our ``--num-steps`` default.
* Randomness comes from the *global* RNGs: python's ``random`` (room topology)
  and ``np.random`` (player/box placement). ``SokobanEnv.seed`` only sets an
  unused ``self.np_random``, so we seed both globals once per seed.
* ``generate_room`` already retries the whole room ``tries=4`` times when the
  reverse play scores 0, then raises ``RuntimeWarning('Generated Model with
  score == 0')``; too few floor cells raise ``RuntimeError``. ``SokobanEnv.reset``
  catches both and calls ``generate_room`` again, without bound. We do the same
  (bounded by ``--max-retries`` and the timeout) and time all of it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gym_sokoban.envs import room_utils

GYM_SOKOBAN_TTL = 300  # hard-coded ttl of the reverse-play DFS in gym-sokoban 0.0.6


class RoomTimeout(BaseException):
    """Raised from SIGALRM when one room takes longer than ``--timeout-per-room``.

    A ``BaseException`` so no ``except Exception`` on the way can swallow it.
    """


class AttemptCounter:
    """Wraps ``room_utils.reverse_playing`` to count generate_room's internal tries."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def default_num_steps(dim: int) -> int:
    """The ``num_gen_steps`` SokobanEnv uses for a ``dim x dim`` room."""
    return int(1.7 * (dim + dim))


def to_xsb(structure: np.ndarray, state: np.ndarray) -> str:
    """Convert gym-sokoban's (room_structure, room_state) pair to XSB text.

    structure: 0 wall, 1 floor, 2 goal. state: 0 wall, 1 floor, 2 empty goal,
    3/4 box (gym-sokoban relabels every box 4 after generation, so whether a
    box is on a goal is read from ``structure``), 5 player.
    """
    rows = []
    for srow, row in zip(structure.astype(int), state.astype(int), strict=True):
        chars = []
        for goal_code, code in zip(srow, row, strict=True):
            goal = goal_code == 2
            if code == 0:
                chars.append("#")
            elif code in (3, 4):
                chars.append("*" if goal else "$")
            elif code == 5:
                chars.append("+" if goal else "@")
            else:
                chars.append("." if goal else " ")
        rows.append("".join(chars))
    return "\n".join(rows)


def parse_seeds(text: str) -> range:
    """Parse ``S0:S1`` into ``range(S0, S1)`` (S1 exclusive)."""
    start, sep, stop = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected S0:S1, got {text!r}")
    return range(int(start), int(stop))


def _on_alarm(signum: int, frame: Any) -> None:
    raise RoomTimeout()


def generate_one(
    seed: int, args: argparse.Namespace, counter: AttemptCounter, gen_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Seed the global RNGs, generate one room like SokobanEnv.reset, return its record."""
    random.seed(seed)
    np.random.seed(seed)
    counter.calls = 0
    retries = 0
    record: dict[str, Any] = {
        "seed": seed,
        "dim": args.dim,
        "boxes": args.boxes,
        "num_steps": args.num_steps,
        "search_depth": args.search_depth,
    }
    result = None
    if args.timeout_per_room:
        signal.setitimer(signal.ITIMER_REAL, args.timeout_per_room)
    start = time.perf_counter()
    try:
        while True:
            try:
                result = room_utils.generate_room(**gen_kwargs)
                break
            except (RuntimeError, RuntimeWarning):
                if retries == args.max_retries:
                    break
                retries += 1
        elapsed = time.perf_counter() - start
    except RoomTimeout:
        elapsed = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    record.update(retries=retries, attempts=counter.calls)
    if elapsed is None:
        record.update(seconds=None, timed_out=True, xsb=None)
    elif result is None:
        record.update(
            seconds=elapsed,
            timed_out=False,
            xsb=None,
            error=f"no room after {args.max_retries} retries",
        )
    else:
        structure, state, _ = result
        record.update(
            seconds=elapsed,
            timed_out=False,
            explored_states=len(room_utils.explored_states),
            xsb=to_xsb(structure, state),
        )
    return record


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile; ``inf`` entries stand for timed-out rooms."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def build_parser() -> argparse.ArgumentParser:
    """CLI definition."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, required=True, help="room is dim x dim, walls included")
    p.add_argument("--boxes", type=int, required=True)
    p.add_argument("--seeds", type=parse_seeds, required=True, help="S0:S1, S1 exclusive")
    p.add_argument(
        "--search-depth",
        type=int,
        default=GYM_SOKOBAN_TTL,
        help="reverse-play DFS ttl (gym-sokoban 0.0.6 hard-codes 300)",
    )
    p.add_argument(
        "--num-steps",
        type=int,
        default=None,
        help="random-walk steps (default: SokobanEnv's int(1.7*(W+H)))",
    )
    p.add_argument(
        "--timeout-per-room",
        type=float,
        default=None,
        help="seconds; a slower room is recorded as timed_out (SIGALRM)",
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=1000,
        help="outer retries on RuntimeError/RuntimeWarning, like SokobanEnv.reset",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Print one JSON line per seed on stdout and a summary line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.num_steps is None:
        args.num_steps = default_num_steps(args.dim)
    gen_kwargs: dict[str, Any] = dict(
        dim=(args.dim, args.dim),
        num_steps=args.num_steps,
        num_boxes=args.boxes,
        second_player=False,
    )
    if "search_depth" in inspect.signature(room_utils.generate_room).parameters:
        gen_kwargs["search_depth"] = args.search_depth
    elif args.search_depth != GYM_SOKOBAN_TTL:
        parser.error(f"this gym-sokoban hard-codes search depth {GYM_SOKOBAN_TTL}")

    counter = AttemptCounter(room_utils.reverse_playing)
    room_utils.reverse_playing = counter  # generate_room looks it up per call
    signal.signal(signal.SIGALRM, _on_alarm)

    records = []
    for seed in args.seeds:
        records.append(generate_one(seed, args, counter, gen_kwargs))
        print(json.dumps(records[-1]), flush=True)

    if records:
        # A timed-out or failed room counts as infinitely slow in the percentiles.
        times = [math.inf if r["xsb"] is None else r["seconds"] for r in records]

        def fmt(x: float) -> str:
            return "n/a" if math.isinf(x) else f"{x:.4f}s"

        print(
            f"dim={args.dim} boxes={args.boxes} n={len(times)} "
            f"timed_out={sum(r['timed_out'] for r in records)} "
            f"failed={sum('error' in r for r in records)} "
            f"median={fmt(statistics.median(times))} p90={fmt(percentile(times, 90))}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
