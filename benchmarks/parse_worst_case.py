"""The worst turn a hostile reply can cost: every registered id against 1 MB replies.

``agent-envs bench parse-worst-case`` steps every ``grl/*`` id once per adversarial
family of :data:`FAMILIES` (repeated openers, fences, tags, separators, unicode look-alikes,
NUL bytes, SQL and WebShop verbs, number runs; each about ``size`` characters, 1,000,000 by
default) on a freshly reset env, takes the best of ``repeats`` steps per (id, family), and
reports every id's worst family and every family's worst id. The target is a worst step
under 50 ms: reading a reply must be linear in its length (a quadratic regex takes seconds
to hours on these). Each (id, family) first steps once at ``guard_size`` characters; one
that would take over ``guard_s`` at full size, scaled linearly, is listed as too slow
instead of being run. The worst family of each id is also timed at 1/4, 1/2, 1 and 2 times
``size``, side by side, so the growth can be read off the ratios (``--no-scale`` skips it).

Results print as Markdown and go to ``benchmarks/results/parse_worst_case.md``.
``tests/test_adversarial_replies.py`` runs ``python -m
agent_envs.benchmarks.parse_worst_case --probe ID`` (one step per family, one JSON line each)
in a child process per id, with a generous bound: no timing claims in unit tests; this script
is where the figures come from.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

from agent_envs.core.spaces import MAX_REPLY_LENGTH

SIZE = 1_000_000
TARGET_S = 0.050


def _fill(unit: str, size: int) -> str:
    """``unit`` repeated to about ``size`` characters (at least once)."""
    return unit * max(1, size // len(unit))


def _answer(inner: str) -> str:
    return f"<answer>{inner}</answer>"


def _mixed(size: int) -> str:
    """Seeded random pieces of every other family's material."""
    pieces = ("<answer>", "</answer>", "<think>", "</think>", "```", "```sql\n", "||", " ",
              "\n", "Up", "move 1 to 2", "search[", "click[", "[", "]", "EXECUTE:", "<",
              "</", "answer", "\x00", "＜", "／", "＞", "1,", "####", "\\boxed{", "}")  # fmt: skip
    rng = np.random.default_rng(20261124)
    chosen = rng.integers(0, len(pieces), size // 4)
    text = "".join(pieces[i] for i in chosen)
    return text[:size]


#: name → reply of about ``size`` characters. Replies are adversarial for at least one
#: parser each: tags (core), fences and ``EXECUTE:`` (BIRD), brackets (WebShop), numbers
#: (GSM8K), separators and action names (games).
FAMILIES: dict[str, Callable[[int], str]] = {
    "openers": lambda n: _fill("<answer>", n),
    "openers_then_close": lambda n: _fill("<answer>", n) + "</answer>",
    "pairs": lambda n: _fill("<answer></answer>", n),
    "closes": lambda n: _fill("</answer>", n),
    "think_unclosed": lambda n: "<think>" + _fill("<answer>Up</answer> ", n),
    "think_opens": lambda n: _fill("<think>", n) + "<answer>Up</answer>",
    "think_closes": lambda n: _fill("</think>", n),
    "fences": lambda n: _fill("```", n),
    "fences_in_answer": lambda n: _answer(_fill("```sql\n", n)),
    "fence_spaces": lambda n: "<answer>```" + " " * n + "x</answer>",
    "fence_tabs_unclosed": lambda n: "<answer>```sql" + _fill(" \t", n) + "</answer>",
    "separators": lambda n: _answer(_fill("||", n)),
    "whitespace": lambda n: _fill(" \t\n", n),
    "whitespace_answer": lambda n: _answer(" " * n),
    "many_actions": lambda n: _answer(_fill("Up || ", n)),
    "many_moves": lambda n: _answer(_fill("move 1 to 2 || ", n)),
    "long_action": lambda n: _answer("move" + " " * n + "1 to 2"),
    "half_tags": lambda n: _fill("<<<<answer", n),
    "spaced_openers": lambda n: _fill("<" + " " * 999 + "answer", n),
    "spaced_closes": lambda n: _answer("Up") + _fill("</" + " " * 998 + "answer", n),
    "close_variants": lambda n: _fill("</ answer</answer </ answer >", n),
    "fullwidth": lambda n: _fill("＜answer＞", n),
    "fullwidth_pairs": lambda n: _fill("＜answer＞Up｜｜＜／answer＞", n),
    "nfkc_expanding": lambda n: _answer("\ufdfa" * n),  # NFKC: 18 characters each
    "nfkc_at_cap": lambda n: _answer("\ufdfa" * (min(n, MAX_REPLY_LENGTH) - 17)),
    "nul": lambda n: "\x00" * n,
    "nul_answer": lambda n: _answer("\x00" * n),
    "mixed": _mixed,
    "execute": lambda n: _answer(_fill("EXECUTE: ", n)),
    "execute_spaces": lambda n: _answer("EXECUTE" + " " * n + ":"),
    "search_verbs": lambda n: _answer(_fill("search[", n)),
    "click_verbs": lambda n: _answer(_fill("click[", n)),
    "open_brackets": lambda n: _answer("click[" + "[" * n),
    "nested_brackets": lambda n: _answer("search[" + "[" * (n // 2) + "]" * (n // 2)),
    "unbalanced_brackets": lambda n: _answer("click[" + _fill("]x[ ", n)),
    "bracket_spaces": lambda n: _answer("search[x]" + _fill("] ", n) + "y"),
    "digits": lambda n: "1" * n,
    "number_groups": lambda n: _answer(_fill("1,", n)),
    "hashes": lambda n: _fill("#### ", n),
    "boxed": lambda n: _fill("\\boxed{", n),
    "decimals": lambda n: _fill("1.", n) + "x",
    "signs": lambda n: _fill("-", n) + "1",
}


def replies(size: int = SIZE) -> dict[str, str]:
    """Every family's reply at ``size`` characters."""
    return {name: make(size) for name, make in FAMILIES.items()}


def grl_ids() -> list[str]:
    import gymnasium as gym

    import agent_envs  # noqa: F401  (registers the ids)

    return sorted(env_id for env_id in gym.registry if env_id.startswith("grl/"))


def step_seconds(env, reply: str, repeats: int) -> float:
    """The best of ``repeats`` steps of ``reply``, each on a freshly reset env."""
    best = float("inf")
    clock = time.perf_counter
    for _ in range(repeats):
        env.reset(seed=0)
        start = clock()
        env.step(reply)
        best = min(best, clock() - start)
    return best


#: The last step of :func:`probe`: the ``mixed`` reply, then the oracle's first action in
#: an answer tag (an answer at the end of 1 MB of hostile text must still be read).
ORACLE_AT_END = "oracle_after_mixed"


def probe(env_id: str, size: int = SIZE) -> Iterator[dict[str, Any]]:
    """One step of every family's reply (then :data:`ORACLE_AT_END`) on a freshly reset
    ``env_id``: per family, the step's seconds, ``format_ok``, ``action_valid``, ``success``,
    whether the observation is in the observation space, and the exception if the step
    raised (it must not)."""
    import gymnasium as gym

    grl_ids()
    env = gym.make(env_id).unwrapped
    names = [*FAMILIES, ORACLE_AT_END]
    for family in names:
        env.reset(seed=0)
        if family == ORACLE_AT_END:
            reply = f"{_mixed(size)}\n{_answer(env.oracle_actions()[0])}"
        else:
            reply = FAMILIES[family](size)
        start = time.perf_counter()
        try:
            observation, _, _, _, info = env.step(reply)
        except Exception as error:  # reported, and the test fails on it
            yield {"family": family, "error": f"{type(error).__name__}: {error}"[:500]}
            continue
        yield {
            "family": family,
            "seconds": time.perf_counter() - start,
            "format_ok": info["format_ok"],
            "action_valid": info["action_valid"],
            "success": info["success"],
            "observation_ok": env.observation_space.contains(observation),
        }
    env.close()


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    size: int = SIZE
    """characters per adversarial reply"""
    repeats: int = 5
    """steps per (id, family); the best one counts"""
    ids: list[str] = field(default_factory=list)
    """ids measured (none: every grl/* id, and the report is written)"""
    scale: bool = True
    """also time each id's worst family at 1/4, 1/2, 1 and 2 times size"""
    guard_size: int = 20_000
    """each (id, family) first steps once at this size; if that time, scaled linearly to
    the full reply, exceeds guard_s, the full size is skipped (a quadratic parser would take
    hours there)"""
    guard_s: float = 2.0
    """seconds the guard step, scaled to the full size, may take (see guard_size)"""
    out: Path = RESULTS_DIR
    """folder of parse_worst_case.md (written when every id is measured)"""
    probe: str = ""
    """(for tests/test_adversarial_replies.py) step this id once per family and print one JSON
    line each, instead of the benchmark"""


@dataclass
class Table:
    """Best step seconds per id and family, and the (id, family) pairs skipped by the guard
    with their step seconds at ``guard_size``."""

    seconds: dict[str, dict[str, float]]
    skipped: dict[tuple[str, str], float]


def measure(args: Args) -> Table:
    import gymnasium as gym

    texts = replies(args.size)
    ids = args.ids or grl_ids()
    table = Table({}, {})
    for env_id in ids:
        env = gym.make(env_id).unwrapped
        env.reset(seed=0)
        env.step("<answer>warm up</answer>")
        row = table.seconds[env_id] = {}
        for name, text in texts.items():
            small_text = FAMILIES[name](args.guard_size)
            small = step_seconds(env, small_text, 1)
            if small * len(text) / len(small_text) > args.guard_s:
                table.skipped[(env_id, name)] = small
                print(f"{env_id}: {name} skipped ({small * 1e3:.0f} ms at {args.guard_size:,})")
                continue
            row[name] = step_seconds(env, text, args.repeats)
        worst = max(row, key=row.get)
        print(f"{env_id}: worst {worst} {row[worst] * 1e3:.1f} ms", flush=True)
        env.close()
    return table


def scale_sizes(args: Args) -> tuple[int, ...]:
    return (args.size // 4, args.size // 2, args.size, 2 * args.size)


def scale_rows(args: Args, table: Table) -> list[tuple[str, str, list[float]]]:
    """(id, family, seconds at each of :func:`scale_sizes`) for each id's worst family."""
    import gymnasium as gym

    rows = []
    for env_id, row in table.seconds.items():
        family = max(row, key=row.get)
        env = gym.make(env_id).unwrapped
        texts = [FAMILIES[family](size) for size in scale_sizes(args)]
        seconds = [float("inf")] * len(texts)
        for _ in range(args.repeats):  # the sizes interleaved, so drift hits them alike
            for index, text in enumerate(texts):
                seconds[index] = min(seconds[index], step_seconds(env, text, 1))
        rows.append((env_id, family, seconds))
        env.close()
    return rows


def report(args: Args, table: Table, scaled: Sequence) -> str:
    seconds = table.seconds
    worst_id = {
        env_id: max(row.items(), key=lambda item: item[1]) for env_id, row in seconds.items()
    }
    overall = max(value for _, value in worst_id.values())
    met = overall < TARGET_S and not table.skipped
    lines = [
        "## Worst-case reply parsing (every registered id)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end (a "
        "shared host: compare figures within one run). Reproduce: "
        "`agent-envs bench parse-worst-case`.",
        f"One `env.step(reply)` per (id, family) on a freshly reset env, best of "
        f"{args.repeats}; each reply is about {args.size:,} characters "
        f"({len(FAMILIES)} families, defined in `benchmarks/parse_worst_case.py`; "
        f"`nfkc_at_cap` is the longest reply still NFKC-normalised, {MAX_REPLY_LENGTH:,} "
        "characters that normalise to about 295,000).",
        "",
        f"Worst step over every id and family: **{overall * 1e3:.1f} ms**"
        + (
            f", and {len(table.skipped)} (id, family) pairs too slow to time"
            if table.skipped
            else ""
        )
        + f"; target < {TARGET_S * 1e3:.0f} ms: {'met' if met else 'NOT met'}.",
        "",
        "| id | worst family | worst step ms | median family ms |",
        "|---|---|---:|---:|",
    ]
    for env_id, (family, value) in worst_id.items():
        median = float(np.median(list(seconds[env_id].values())))
        lines.append(f"| `{env_id}` | {family} | {value * 1e3:.1f} | {median * 1e3:.2f} |")
    if table.skipped:
        lines += [
            "",
            f"Skipped at {args.size:,} characters (one step at {args.guard_size:,} characters, "
            f"scaled linearly to {args.size:,}, is over {args.guard_s} s):",
            "",
            f"| id | family | ms at {args.guard_size:,} |",
            "|---|---|---:|",
        ]
        for (env_id, family), value in table.skipped.items():
            lines.append(f"| `{env_id}` | {family} | {value * 1e3:.0f} |")
    lines += ["", "Worst id per family:", "", "| family | worst id | ms |", "|---|---|---:|"]
    for family in FAMILIES:
        timed = [name for name in seconds if family in seconds[name]]
        if timed:
            env_id = max(timed, key=lambda name: seconds[name][family])
            lines.append(f"| {family} | `{env_id}` | {seconds[env_id][family] * 1e3:.1f} |")
    if scaled:
        sizes = scale_sizes(args)
        lines += [
            "",
            "Growth of each id's worst family, sizes interleaved, best of "
            f"{args.repeats} (doubling the reply: linear about 2x the time, quadratic 4x; "
            "the step from cache-sized to memory-sized replies adds some on the way):",
            "",
            "| id | family | "
            + " | ".join(f"{size:,} ms" for size in sizes)
            + f" | x {sizes[1]:,} → {sizes[2]:,} | x {sizes[2]:,} → {sizes[3]:,} |",
            "|---|---|" + "---:|" * (len(sizes) + 2),
        ]
        for env_id, family, values in scaled:
            cells = " | ".join(f"{value * 1e3:.1f}" for value in values)
            ratios = f"{values[2] / values[1]:.2f} | {values[3] / values[2]:.2f}"
            lines.append(f"| `{env_id}` | {family} | {cells} | {ratios} |")
    return "\n".join(lines) + "\n"


def main(args: Args) -> str:
    if args.probe:
        for record in probe(args.probe):
            print(json.dumps(record), flush=True)
        return ""
    table = measure(args)
    scaled = scale_rows(args, table) if args.scale else []
    text = report(args, table, scaled)
    print(text)
    if not args.ids:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "parse_worst_case.md").write_text(text)
    return text


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs bench parse-worst-case",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    main(parse_args())
