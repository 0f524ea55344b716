"""What `agent_envs.adapters.textarena` costs per turn over raw TextArena, side by side in one run.

``agent-envs bench textarena-overhead`` plays the same games, move for move, three
ways:

* **raw**: ``textarena.make(id)``, ``reset(num_players, seed)``, then for every move of every
  player ``get_observation()`` and ``step(move)``, and ``close()`` at the end: what a
  TextArena user's own loop does;
* **ours**: ``agent_envs.adapters.textarena.make(id)``, ``reset(seed=...)`` and one
  ``step("<answer>move</answer>")`` per move of our player; in two-player games the opponent
  is a callable that plays the same recorded moves, so both sides make the same TextArena
  calls, plus ours: the answer parser, the info dict and state hash, the ASCII pass over the
  observation and binding the ``random`` module's functions to the env's own generator
  and back;
* **ours, own_random=False**: the same without the ``random`` binding (the global generator
  shared, as raw TextArena does);
* **contract floor**: raw, plus inline the least DESIGN.md's env contract asks of each turn
  (:func:`play_contract`): what any wrapper keeping that contract would add at least.

The move lists are fixed (played once by seeded random players and recorded), so every side
replays identical games. Each repeat plays every episode on all four sides in rotating order
so machine noise hits them alike. Times are CPU seconds of this process
(``time.process_time``: on a shared machine, waiting for a core is not the wrapper's cost).
Reported: per-turn times (steps only; resets are timed apart), the ratios ours/raw and
floor/raw as the median over repeats with its min-max range. Target: ours/raw <= 1.10.
Results go to ``benchmarks/results/textarena_overhead.md``.
"""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report

RESULTS = RESULTS_DIR / "textarena_overhead.md"
GAMES = (
    "TicTacToe-v0",
    "ConnectFour-v0",
    "Othello-v0",
    "TowerOfHanoi-v0",
    "Sokoban-v0",
    "Minesweeper-v0",
)
#: the timer: CPU time of this process (the machine is shared; waiting for a core is not
#: the wrapper's cost)
clock = time.process_time


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    games: list[str] = field(default_factory=lambda: list(GAMES))
    """TextArena ids played"""
    episodes: int = 20
    """episodes per game and side in each repeat"""
    repeats: int = 7
    """alternating raw/ours rounds; medians and ranges over them are reported"""
    seed: int = 0
    """first episode seed (episode i uses seed + i)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def record_moves(textarena_id: str, seed: int) -> tuple[int, list[tuple[int, str]]]:
    """One game played by seeded random players through our env: (number of players, the
    moves in order as (player, move)). Every move is one the game accepted."""
    from agent_envs.adapters.textarena import make

    rng = np.random.default_rng(seed)
    moves: list[tuple[int, str]] = []
    env = make(textarena_id, max_turns=500)

    def opponent(observation: str) -> str:
        listed = env._legal_moves(observation)
        move = listed[int(rng.integers(len(listed)))] if listed else "[]"
        moves.append((1, move))
        return move

    env.opponent = opponent
    env.reset(seed=seed)
    for _ in range(500):
        choices = env.random_actions(rng)
        if not choices:
            break
        moves.append((0, choices[0]))
        _, _, terminated, truncated, _ = env.step(f"<answer>{choices[0]}</answer>")
        if terminated or truncated:
            break
    return env.num_players, moves


def play_raw(textarena_id: str, players: int, seed: int, moves: list[tuple[int, str]]) -> tuple:
    """(reset seconds, step seconds, turns of player 0) for one raw TextArena episode."""
    import textarena as ta

    start = clock()
    game = ta.make(textarena_id)
    game.reset(num_players=players, seed=seed)
    reset_done = clock()
    turns = 0
    for player, move in moves:
        game.get_observation()
        done, _ = game.step(move)
        turns += player == 0
        if done:
            break
    game.close()
    return reset_done - start, clock() - reset_done, turns


def play_contract(
    textarena_id: str, players: int, seed: int, moves: list[tuple[int, str]], answer_format: Any
) -> tuple:
    """:func:`play_raw` plus the least that DESIGN.md's env contract asks of every turn of our
    player, inline and in locals: read the move out of the reply with the shared answer
    parser, hash the state (the observation's new part into a running ``blake2b``, as ours
    does), build the ten common info keys and keep the reply and the observation for
    ``messages()``. No random binding, charset pass, env-specific info keys, turn budgets or
    method calls: a lower bound for any wrapper that keeps the contract."""
    import textarena as ta

    from agent_envs.core.parsing import parse_reply

    replies = _our_replies(moves)
    start = clock()
    game = ta.make(textarena_id)
    game.reset(num_players=players, seed=seed)
    reset_done = clock()
    hasher = hashlib.blake2b(digest_size=8)
    kept: list[str] = []
    infos: list[dict[str, Any]] = []
    seen = ""
    actions: tuple[str, ...] = ()
    turns = 0
    for player, move in moves:
        observation = game.get_observation()[1]
        if player == 0:
            if turns:  # the contract's side of the turn just ended, on its new observation
                hasher.update(observation[len(seen) :].encode())
                seen = observation
                kept.append(observation)
                infos.append(
                    {
                        "action_valid": True,
                        "format_ok": True,
                        "parsed_actions": list(actions),
                        "num_actions": len(actions),
                        "action_effective": True,
                        "success": False,
                        "turn": turns,
                        "truncation_reason": None,
                        "episode_seed": seed,
                        "state_hash": hasher.copy().hexdigest(),
                    }
                )
            reply = replies[turns]
            actions = parse_reply(reply, answer_format).actions
            kept.append(reply)
            move = actions[0]
            turns += 1
        done, _ = game.step(move)
        if done:
            break
    game.close()  # the last turn's bookkeeping is left out: a lower bound stays one
    return reset_done - start, clock() - reset_done, turns


def _our_replies(moves: list[tuple[int, str]]) -> list[str]:
    """Our player's moves as the replies a model would send."""
    return [f"<answer>{move}</answer>" for player, move in moves if player == 0]


def play_ours(env: Any, seed: int, moves: list[tuple[int, str]]) -> tuple:
    """(reset seconds, step seconds, turns) for one episode of our env on the same moves."""
    ours = _our_replies(moves)
    theirs = iter([move for player, move in moves if player == 1])
    env.opponent = lambda observation: next(theirs)
    start = clock()
    env.reset(seed=seed)
    reset_done = clock()
    turns = 0
    for reply in ours:
        _, _, terminated, truncated, _ = env.step(reply)
        turns += 1
        if terminated or truncated:
            break
    return reset_done - start, clock() - reset_done, turns


def _range(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(args: Args) -> str:
    from agent_envs.adapters.textarena import make

    rows = []
    for textarena_id in args.games:
        recorded = [record_moves(textarena_id, args.seed + i) for i in range(args.episodes)]
        players = recorded[0][0]
        envs = {
            "ours": make(textarena_id, max_turns=500),
            "shared": make(textarena_id, max_turns=500, own_random=False),
        }
        answer_format = envs["ours"].answer_format
        sides = ("raw", "contract", "ours", "shared")
        per_turn: dict[str, list[float]] = {side: [] for side in sides}
        ratios: dict[str, list[float]] = {"ours": [], "shared": [], "contract": [], "reset": []}
        for repeat in range(args.repeats):
            totals = {side: [0.0, 0.0, 0] for side in sides}
            for index, (_, moves) in enumerate(recorded):
                seed = args.seed + index
                shift = (repeat + index) % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    if side == "raw":
                        result = play_raw(textarena_id, players, seed, moves)
                    elif side == "contract":
                        result = play_contract(textarena_id, players, seed, moves, answer_format)
                    else:
                        result = play_ours(envs[side], seed, moves)
                    for slot in range(3):
                        totals[side][slot] += result[slot]
            turns = totals["raw"][2]
            for side in sides:
                assert totals[side][2] == turns, (textarena_id, side, totals)
                per_turn[side].append(totals[side][1] / turns * 1e6)
            for side in ("ours", "shared", "contract"):
                ratios[side].append(totals[side][1] / totals["raw"][1])
            ratios["reset"].append(totals["ours"][0] / totals["raw"][0])
        rows.append((textarena_id, players, turns / args.episodes, per_turn, ratios))
    lines = [
        "# TextArena wrapper overhead per turn",
        "",
        "`agent-envs bench textarena-overhead` "
        f"(`--episodes {args.episodes} --repeats {args.repeats} --seed {args.seed}`); "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, TextArena {_version('textarena')}. "
        "Raw TextArena, the contract floor (raw plus, inline, the least DESIGN.md's env "
        "contract asks of a turn: the answer parser, a running state hash, the ten common "
        "info keys and the kept reply and observation), `agent_envs.adapters.textarena` (defaults) "
        "and `agent_envs.adapters.textarena` with "
        "`own_random=False` replay the same recorded games move for move, in rotating order "
        "episode by episode; times are CPU time of the process (`time.process_time`). A turn "
        "is one move of our player (raw: the `get_observation()` + `step()` calls of that move "
        "and of the opponent's replies). Median over repeats (min-max). "
        "Target: ours/raw per turn <= 1.10.",
        "",
        "| game | players | our turns / episode | raw us / turn | ours us / turn "
        "| ours - raw us / turn | of which the random binding, us | ours / raw per turn "
        "| ours (own_random=False) / raw | contract floor / raw | ours / raw reset |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for textarena_id, players, turns, per_turn, ratios in rows:
        raw_us = statistics.median(per_turn["raw"])
        our_us = statistics.median(per_turn["ours"])
        swap_us = our_us - statistics.median(per_turn["shared"])
        lines.append(
            f"| {textarena_id} | {players} | {turns:.1f} | {raw_us:.1f} | {our_us:.1f} "
            f"| {our_us - raw_us:.1f} | {swap_us:.1f} | {_range(ratios['ours'])} "
            f"| {_range(ratios['shared'])} | {_range(ratios['contract'])} "
            f"| {_range(ratios['reset'])} |"
        )
    worst = max(statistics.median(row[4]["ours"]) for row in rows)
    met = "met" if worst <= 1.10 else "not met"
    over = [row[0] for row in rows if statistics.median(row[4]["contract"]) > 1.10]
    lines += [
        "",
        f"Worst median per-turn ratio: {worst:.3f}; target <= 1.10 {met}. The wrapper adds a "
        "roughly constant cost per turn (the column ours - raw): the answer parser, the info "
        "dict and state hash, and, by default, binding the `random` module's functions to the "
        "env's own generator and back (its own column). Where TextArena's own "
        "turn takes tens of microseconds (TicTacToe, "
        "ConnectFour, TowerOfHanoi) that constant is a multiple of it; where the game does "
        "real work per move (Othello) it is a fraction.",
        "",
        "The contract floor is what any wrapper keeping the env contract pays, without this "
        "adapter's own choices; where it alone is above 1.10 the target cannot be met by "
        "a wrapper that keeps the contract: "
        + (", ".join(over) if over else "none of these games")
        + ".",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_report(text, args.output)
    return text


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    prog = "agent-envs bench textarena-overhead"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
