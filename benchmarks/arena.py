"""The two-player leaderboard: TextArena games played through `agent_envs.adapters.textarena`.

``agent-envs arena`` (offline, CPU, about a minute) writes
``benchmarks/results/arena/``:

* **Against fixed opponents**: every agent plays ``--episodes`` games of every game against
  each fixed opponent (``random``, and the scripted ``lookahead``) as the env's agent, half
  of them as player 0 and half as player 1; reported as wins/draws/losses, the win rate
  with its 95% Wilson interval, and the score (win 1, draw 1/2, loss 0) with a 95% normal
  interval (``mean +- 1.96 * s / sqrt(n)``, clipped to [0, 1]).
* **Head to head**: every ordered pair of agents, ``--episodes`` games per game (seats
  alternating), as a table of the row agent's score against the column agent, and a rating
  per agent from `openskill` (Weng-Lin Plackett-Luce, a maintained Bayesian rating library;
  defaults ``mu=25, sigma=25/3``): every head-to-head game is rated in the order played (a
  draw is a tie), and the table lists ``mu``, ``sigma`` and the conservative ordinal
  ``mu - 3 sigma``.
* **Replays**: ``replays/<game>.html`` (`agent_envs.renderers.replay`) shows head-to-head
  games move by move, both players: each move is a turn labelled with its player and agent,
  with the board that player saw.

Agents are policies on the live env (`agent_envs.adapters.textarena.TextArenaEnv`): ``random`` (a
uniform legal move), ``first`` (the first legal move the game lists) and ``lookahead`` (wins
at once when it can, otherwise avoids moves after which the other player wins at once,
otherwise random; moves tried with ``TextArenaEnv.simulate``). Any ``policy(env,
observation, rng) -> move`` can join ``AGENTS``.

**Seeds**: game ``G``'s episode ``i`` uses seed ``sha256(f"{G}#{i}")``'s first four bytes
(big-endian, top bit cleared), as the main leaderboard's published seed lists; agents'
own randomness comes from ``numpy.random.default_rng([seed, seat])``. The run is
deterministic: the same flags give the same files.

**Files**: ``arena.md`` (the tables), ``summary.json`` (every number), ``episodes.jsonl.gz``
(one JSON line per game: kind, game, seed, players by seat, the agent's seat in fixed-opponent
games, every move with its player and whether the game accepted it, TextArena's rewards and
end reason) and ``replays/``.

**Validation**: ``agent-envs arena --validate DIR`` recomputes ``summary.json``
from ``episodes.jsonl.gz`` (every count, interval and rating) and exits 1 on any difference.

The two-player rows live in their own run folder (not the main leaderboard's, whose
episodes are single-agent trajectories validated by replay).
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

RESULTS = RESULTS_DIR / "arena"
EPISODES = "episodes.jsonl.gz"
Z95 = 1.96

Policy = Callable[[Any, str, np.random.Generator], str]


# ----------------------------------------------------------------------------- agents
def random_policy(env: Any, observation: str, rng: np.random.Generator) -> str:
    """A uniform choice among the legal moves of the player to move."""
    moves = env.legal_moves(observation)
    return moves[int(rng.integers(len(moves)))] if moves else "[]"


def first_policy(env: Any, observation: str, rng: np.random.Generator) -> str:
    """The first legal move the game lists."""
    moves = env.legal_moves(observation)
    return moves[0] if moves else "[]"


def lookahead_policy(env: Any, observation: str, rng: np.random.Generator) -> str:
    """Win now if a move wins; else a random move after which the other player cannot win
    at once (any random move if none is safe)."""
    moves = env.legal_moves(observation)
    if not moves:
        return "[]"
    safe = []
    for move in moves:
        result = env.simulate([move])
        if result["done"] and (result["rewards"] or {}).get(result["mover"], 0) > 0:
            return move
        if not result["done"] and not _opponent_can_win(env, move, moves):
            safe.append(move)
    pool = safe or moves
    return pool[int(rng.integers(len(pool)))]


def _opponent_can_win(env: Any, move: str, replies: list[str]) -> bool:
    for reply in replies:
        result = env.simulate([move, reply])
        replied = len(result["accepted"]) == 2 and result["accepted"][1]
        if replied and result["done"] and (result["rewards"] or {}).get(1 - result["mover"], 0) > 0:
            return True
    return False


AGENTS: dict[str, Policy] = {
    "random": random_policy,
    "first": first_policy,
    "lookahead": lookahead_policy,
}
#: the fixed opponents of the first table
OPPONENTS: tuple[str, ...] = ("random", "lookahead")


@dataclass
class Args:
    """Arena settings (every field is a command-line flag)."""

    games: list[str] = field(default_factory=lambda: ["TicTacToe-v0", "ConnectFour-v0", "Nim-v0"])
    """TextArena two-player ids"""
    agents: list[str] = field(default_factory=lambda: ["random", "first", "lookahead"])
    """agents (names in AGENTS)"""
    episodes: int = 20
    """games per (agent, opponent, game), seats alternating; even"""
    replays: int = 4
    """head-to-head games per game shown in its replay page"""
    out: Path = RESULTS
    """run folder"""
    validate: Annotated[Path | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """recompute RUN_DIR's summary.json from its episodes instead of running (exit 1 on any
    difference)"""


def episode_seed(game: str, index: int) -> int:
    """Seed ``index`` of ``game``: sha256(f"{game}#{index}")[:4] big-endian, top bit clear."""
    digest = hashlib.sha256(f"{game}#{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFF_FFFF


# ----------------------------------------------------------------------------- playing
def play(game: str, seed: int, players: Sequence[str]) -> dict[str, Any]:
    """One game: ``players[0]`` as player 0 (our env's agent), ``players[1]`` as player 1
    (its opponent). Returns the episode record: every move with its player, the view it was
    played from, whether the game accepted it, and TextArena's rewards."""
    from agent_envs.adapters.textarena import make

    rngs = [np.random.default_rng([seed, seat]) for seat in (0, 1)]
    moves: list[dict[str, Any]] = []
    env: Any = None

    def opponent(observation: str) -> str:
        move = AGENTS[players[1]](env, observation, rngs[1])
        moves.append({"player": 1, "view": observation, "move": move})
        return move

    env = make(game, opponent=opponent, agent_player=0, max_turns=200)
    observation, info = env.reset(seed=seed)
    terminated = truncated = False
    while not (terminated or truncated):
        move = AGENTS[players[0]](env, observation, rngs[0])
        moves.append({"player": 0, "view": observation, "move": move})
        count = len(moves)
        observation, _, terminated, truncated, info = env.step(f"<answer>{move}</answer>")
        moves[count - 1]["accepted"] = bool(info["action_valid"])
        for later in moves[count:]:
            later.setdefault("accepted", True)
    rewards = info["game_rewards"] or {0: 0.0, 1: 0.0}
    return {
        "game": game,
        "seed": seed,
        "players": list(players),
        "rewards": [float(rewards.get(0, 0.0)), float(rewards.get(1, 0.0))],
        "end_reason": info["end_reason"],
        "truncated": bool(truncated),
        "final_view": observation,
        "moves": moves,
    }


def schedule(args: Args) -> list[tuple[str, str, str, str, int, int | None]]:
    """(kind, game, player 0, player 1, seed, the agent's seat in "fixed" games) for every
    game of the run, in order."""
    games, agents = args.games, args.agents
    if args.episodes < 2 or args.episodes % 2:
        raise ValueError(f"episodes must be an even number >= 2, got {args.episodes}")
    unknown = [name for name in agents if name not in AGENTS]
    if unknown:
        raise ValueError(f"agents: unknown {unknown}; known: {sorted(AGENTS)}")
    plan = []
    for game in games:
        for agent, opponent in itertools.product(agents, OPPONENTS):
            for index in range(args.episodes):
                seats = (agent, opponent) if index % 2 == 0 else (opponent, agent)
                plan.append(("fixed", game, *seats, episode_seed(game, index), index % 2))
        for first, second in itertools.combinations(agents, 2):
            for index in range(args.episodes):
                seats = (first, second) if index % 2 == 0 else (second, first)
                plan.append(("h2h", game, *seats, episode_seed(game, index), None))
    return plan


# ----------------------------------------------------------------------------- statistics
def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def score_interval(scores: Sequence[float]) -> tuple[float, float, float]:
    """Mean score and its 95% normal interval (``s``: sample standard deviation), clipped to
    the possible scores [0, 1]."""
    n = len(scores)
    mean = math.fsum(scores) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def _outcome(episode: dict[str, Any], seat: int) -> float:
    """The score of the player in ``seat``: 1 win, 0.5 draw, 0 loss."""
    mine, theirs = episode["rewards"][seat], episode["rewards"][1 - seat]
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def _record(scores: list[float]) -> dict[str, Any]:
    wins, draws = scores.count(1.0), scores.count(0.5)
    low, high = wilson(wins, len(scores))
    mean, score_low, score_high = score_interval(scores)
    return {
        "n": len(scores),
        "wins": wins,
        "draws": draws,
        "losses": len(scores) - wins - draws,
        "win_rate": wins / len(scores),
        "win_rate_ci": [low, high],
        "score": mean,
        "score_ci": [score_low, score_high],
    }


def summarize(episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every number of the report, from the episode records alone."""
    from openskill.models import PlackettLuce

    fixed: dict[str, dict[str, dict[str, list[float]]]] = {}
    head: dict[str, dict[str, list[float]]] = {}
    model = PlackettLuce()
    ratings: dict[str, Any] = {}
    for episode in episodes:
        game, (zero, one) = episode["game"], episode["players"]
        if episode["kind"] == "fixed":
            seat = episode["agent_seat"]
            agent, opponent = episode["players"][seat], episode["players"][1 - seat]
            table = fixed.setdefault(game, {}).setdefault(agent, {})
            table.setdefault(opponent, []).append(_outcome(episode, seat))
            continue
        for seat, (name, other) in enumerate(((zero, one), (one, zero))):
            head.setdefault(name, {}).setdefault(other, []).append(_outcome(episode, seat))
        teams = [
            [ratings.get(zero) or model.rating(name=zero)],
            [ratings.get(one) or model.rating(name=one)],
        ]
        score = _outcome(episode, 0)
        ranks = [1, 1] if score == 0.5 else ([1, 2] if score == 1.0 else [2, 1])
        [[ratings[zero]], [ratings[one]]] = model.rate(teams, ranks=ranks)
    return {
        "fixed": {
            game: {
                agent: {opponent: _record(scores) for opponent, scores in row.items()}
                for agent, row in table.items()
            }
            for game, table in fixed.items()
        },
        "head_to_head": {
            name: {other: _record(scores) for other, scores in row.items()}
            for name, row in head.items()
        },
        "ratings": {
            name: {"mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()}
            for name, r in sorted(ratings.items(), key=lambda item: -item[1].ordinal())
        },
    }


# ----------------------------------------------------------------------------- reports
def _ci(values: Sequence[float]) -> str:
    return f"[{values[0]:.2f}, {values[1]:.2f}]"


def report(summary: dict[str, Any], args: Args) -> str:
    lines = [
        "# Two-player arena (TextArena games)",
        "",
        f"`agent-envs arena --games {' '.join(args.games)} "
        f"--agents {' '.join(args.agents)} --episodes {args.episodes}`; seats alternate; "
        "agents and seeds in the module "
        "docstring. Score: win 1, draw 1/2, loss 0. Intervals are 95%: Wilson for the win "
        "rate, normal (mean +- 1.96 SE, clipped to [0, 1]) for the score.",
        "",
        "## Against fixed opponents",
        "",
        "| game | agent | opponent | W / D / L | win rate [95% CI] | score [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for game, table in summary["fixed"].items():
        for agent, row in table.items():
            for opponent, rec in row.items():
                lines.append(
                    f"| {game} | {agent} | {opponent} | {rec['wins']} / {rec['draws']} / "
                    f"{rec['losses']} | {rec['win_rate']:.2f} {_ci(rec['win_rate_ci'])} | "
                    f"{rec['score']:.2f} {_ci(rec['score_ci'])} |"
                )
    names = list(summary["head_to_head"])
    lines += [
        "",
        "## Head to head (all games; row agent's score against the column agent)",
        "",
        "| | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for name in names:
        cells = []
        for other in names:
            rec = summary["head_to_head"][name].get(other)
            cells.append(
                "-" if rec is None else f"{rec['score']:.2f} {_ci(rec['score_ci'])} (n={rec['n']})"
            )
        lines.append(f"| **{name}** | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Ratings (openskill Plackett-Luce over the head-to-head games, in order played)",
        "",
        "| agent | mu | sigma | ordinal (mu - 3 sigma) |",
        "|---|---|---|---|",
    ]
    for name, rating in summary["ratings"].items():
        lines.append(
            f"| {name} | {rating['mu']:.2f} | {rating['sigma']:.2f} | {rating['ordinal']:.2f} |"
        )
    lines += ["", "Replays: `replays/<game>.html` (head-to-head games, both players).", ""]
    return "\n".join(lines)


def replay_episode(episode: dict[str, Any]) -> dict[str, Any]:
    """An episode for `agent_envs.renderers.replay`: one turn per move of either player."""
    players = episode["players"]
    steps = [
        {
            "observation": move["view"],
            "reply": f"Player {move['player']} ({players[move['player']]}): {move['move']}"
            + ("" if move.get("accepted", True) else "  [rejected by the game]"),
            "parsed_actions": [move["move"]],
        }
        for move in episode["moves"]
    ]
    return {
        "env_id": episode["game"],
        "seed": episode["seed"],
        "agent": f"{players[0]} (Player 0) vs {players[1]} (Player 1)",
        "steps": steps,
        "final_observation": episode["final_view"],
        "episode_return": episode["rewards"][0],
        "success": episode["rewards"][0] > episode["rewards"][1],
    }


def main(args: Args) -> dict[str, Any]:
    from agent_envs.renderers.replay import write_replay

    out = Path(args.out)
    episodes = []
    for kind, game, zero, one, seed, agent_seat in schedule(args):
        episode = play(game, seed, (zero, one))
        episode["kind"] = kind
        episode["agent_seat"] = agent_seat
        episodes.append(episode)
    summary = summarize(episodes)
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(_stored(e), sort_keys=True) + "\n" for e in episodes)
    with gzip.GzipFile(out / EPISODES, "wb", mtime=0) as file:  # mtime 0: same bytes per run
        file.write(lines.encode("utf-8"))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    (out / "arena.md").write_text(report(summary, args), encoding="utf-8")
    for game in args.games:
        shown = [e for e in episodes if e["kind"] == "h2h" and e["game"] == game]
        write_replay(
            [replay_episode(e) for e in shown[: args.replays]],
            out / "replays" / f"{game}.html",
            title=f"Arena replays: {game}",
        )
    print(report(summary, args))
    return summary


def _stored(episode: dict[str, Any]) -> dict[str, Any]:
    """The episode as stored: the views each move was played from (whole histories) are
    left to the replay pages."""
    kept = {key: value for key, value in episode.items() if key != "final_view"}
    kept["moves"] = [
        {key: value for key, value in move.items() if key != "view"} for move in episode["moves"]
    ]
    return kept


def read_episodes(folder: str | Path) -> list[dict[str, Any]]:
    with gzip.open(Path(folder) / EPISODES, "rt", encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def validate(folder: str | Path) -> list[str]:
    """Differences between ``summary.json`` and the summary recomputed from the episodes."""
    folder = Path(folder)
    episodes = read_episodes(folder)
    stored = json.loads((folder / "summary.json").read_text())
    recomputed = json.loads(json.dumps(summarize(episodes)))
    problems = []
    for path, a, b in _walk(stored, recomputed, "summary"):
        problems.append(f"{path}: stored {a!r}, recomputed {b!r}")
    return problems


def _walk(a: Any, b: Any, path: str) -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            found += _walk(a.get(key), b.get(key), f"{path}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [item for i, (x, y) in pairs for item in _walk(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [(path, a, b)]
    return [] if a == b else [(path, a, b)]


if __name__ == "__main__":
    prog = "agent-envs arena"
    arguments = parse(Args, prog=prog, description=__doc__.split("\n\n")[0])
    if arguments.validate:
        issues = validate(arguments.validate)
        for issue in issues:
            print(issue)
        print(f"{len(issues)} differences")
        sys.exit(1 if issues else 0)
    main(arguments)
