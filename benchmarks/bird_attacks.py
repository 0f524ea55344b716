"""Hostile SQL and hostile replies against the BIRD env: wall time and memory growth per attack.

``agent-envs bench bird-attacks`` plays each attack as one turn of a fresh BIRD env
(the built-in databases) in a fresh process and records:

* the wall time of ``env.step(reply)``, against the limit that applies to that turn (the
  EXECUTE time limit, the graded SUBMIT time limit, or 50 ms for reply parsing);
* how much the env's process grew during the step (peak RSS, ``VmHWM`` after resetting it
  through ``/proc/self/clear_refs``, minus the RSS before the step);
* how much the SQL worker processes grew (their summed RSS, sampled every 2 ms, peak minus
  the value before the step; 0 when the env has no worker);
* the turn's ``query_error`` (or reward), to show that the env answered with a clear error.

``--before DIR`` runs every attack a second time on another copy of the code (a folder holding
``agent_envs/`` and ``renderers/``, e.g. ``git archive <commit> agent_envs renderers | tar -x
-C DIR``) and puts both side by side. A run longer than ``--cap`` seconds is killed and shown
as ``> cap``. Results print as Markdown and go to ``benchmarks/results/bird_attacks.md``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report

ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20
PARSE_LIMIT = 0.05

# 2,000 columns of 1 MB each in one row; 64 rows of 50 such columns.
_WIDE = "SELECT " + ", ".join(["hex(zeroblob(499999))"] * 2_000)
_WIDE_900 = "SELECT " + ", ".join(["hex(zeroblob(499999))"] * 900)  # under the column limit
_TALL = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 64) SELECT "
    + ", ".join(["hex(zeroblob(499999))"] * 50)
    + " FROM r"
)
_PRINTF = "SELECT printf('%.*c', 2000000000, 'x')"
_LIKE = "SELECT printf('%.*c', 999999, 'a') LIKE '%' || printf('%.*c', 40000, 'a') || 'b'"
_LIKE_4 = (  # four LIKEs under the pattern-length limit, in one expression
    "WITH s(a, p) AS (SELECT printf('%.*c', 999999, 'a'), '%' || printf('%.*c', 990, 'a') || 'b')"
    " SELECT a LIKE p OR a LIKE p OR a LIKE p OR a LIKE p FROM s"
)
_INSTR = (  # three calls in one expression: no instruction boundary between them
    "WITH s(a, b) AS (SELECT printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'a') || 'b') "
    "SELECT instr(a, b) + instr(a, b) + instr(a, b) FROM s"
)

_SORT = (  # ~1 KB rows of a 56.6-million-row cross join, sorted: temporary data without bound
    "SELECT printf('%.*c', 1000, 'x') || a.name || b.name || c.name AS x"
    " FROM players AS a, players AS b, players AS c ORDER BY x"
)


@dataclass(frozen=True)
class Attack:
    name: str
    kind: str  # "execute", "submit" or "parse"
    reply: str


ATTACKS = (
    Attack("printf width 2e9", "execute", f"<answer>EXECUTE: {_PRINTF}</answer>"),
    Attack("LIKE 1M chars vs 40k pattern", "execute", f"<answer>EXECUTE: {_LIKE}</answer>"),
    Attack("4 x LIKE 1M chars vs 990", "execute", f"<answer>EXECUTE: {_LIKE_4}</answer>"),
    Attack("3 x instr 1M x 500k chars", "execute", f"<answer>EXECUTE: {_INSTR}</answer>"),
    Attack("1 row x 2000 cols x 1 MB", "execute", f"<answer>EXECUTE: {_WIDE}</answer>"),
    Attack("1 row x 900 cols x 1 MB", "execute", f"<answer>EXECUTE: {_WIDE_900}</answer>"),
    Attack("64 rows x 50 cols x 1 MB", "execute", f"<answer>EXECUTE: {_TALL}</answer>"),
    Attack("printf width 2e9 (graded)", "submit", f"<answer>SUBMIT: {_PRINTF}</answer>"),
    Attack("1 row x 2000 cols x 1 MB (graded)", "submit", f"<answer>SUBMIT: {_WIDE}</answer>"),
    Attack("1 row x 900 cols x 1 MB (graded)", "submit", f"<answer>SUBMIT: {_WIDE_900}</answer>"),
    Attack("64 rows x 50 cols x 1 MB (graded)", "submit", f"<answer>SUBMIT: {_TALL}</answer>"),
    Attack("sorted cross join, 1 KB rows", "execute", f"<answer>EXECUTE: {_SORT}</answer>"),
    Attack("sorted cross join (graded)", "submit", f"<answer>SUBMIT: {_SORT}</answer>"),
    Attack("fence + 100k spaces", "parse", "<answer>```" + " " * 100_000 + "x</answer>"),
    Attack("fence + 1M spaces", "parse", "<answer>```" + " " * 1_000_000 + "x</answer>"),
    Attack("fence + 1M tabs and letters", "parse", "<answer>```" + " a\t" * 333_333 + "</answer>"),
    Attack("333k fences", "parse", "<answer>" + "```" * 333_333 + "</answer>"),
    Attack("125k <answer> openers", "parse", "<answer>" * 125_000 + "SELECT 1</answer>"),
    Attack("110k EXECUTE: prefixes", "parse", "<answer>" + "EXECUTE: " * 110_000 + "</answer>"),
    Attack("1 MB of separators, tags", "parse", "<answer>" + "||</think>;" * 90_000 + "</answer>"),
)  # fmt: skip


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    before: str = ""
    """folder with an older agent_envs/ and renderers/ to compare with (empty: none)"""
    before_json: str = ""
    """read the "before" results from this file (written by an earlier --json run)"""
    code: str = str(ROOT)
    """folder whose agent_envs/ is measured ("after")"""
    json: str = ""
    """also write the raw results of the measured code to this file"""
    cap: float = 60.0
    """seconds before one attack's process is killed"""
    only: str = ""
    """run only the attacks whose name contains this text"""
    child: str = ""
    """(internal) run one attack in this process and print its measures as JSON"""
    out: Path = RESULTS_DIR
    """folder of bird_attacks.md (written by full runs: no --only, no --json)"""


# ----------------------------------------------------------------- inside one attack process
def _status_kib(pid: int | str, key: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _children() -> list[int]:
    pid = os.getpid()
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _workers_rss_kib() -> int:
    return sum(_status_kib(child, "VmRSS") for child in _children())


def run_child(name: str) -> dict[str, object]:
    import gc

    from agent_envs.envs.bird import BirdEnv

    attack = next(a for a in ATTACKS if a.name == name)
    cache = Path(tempfile.gettempdir()) / "bird-attacks-cache"
    env = BirdEnv(cache_dir=str(cache), max_executions=10, max_turns=20)
    env.reset(seed=0, options={"index": 30})  # reads the schema: starts any SQL worker
    limit = PARSE_LIMIT
    if attack.kind == "execute":
        limit = env.query_timeout
    elif attack.kind == "submit":
        limit = getattr(env, "submit_timeout", env.query_timeout)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    env_before = _status_kib("self", "VmRSS")
    workers_before = _workers_rss_kib()
    peak = [workers_before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _workers_rss_kib())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    _, reward, _, _, info = env.step(attack.reply)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    env_peak = _status_kib("self", "VmHWM")
    outcome = info["query_error"] or ("format error" if not info["format_ok"] else "")
    if not outcome:
        outcome = f"reward {float(reward):g}" + ("" if info["action_valid"] else ", invalid")
    return {
        "wall": wall,
        "limit": limit,
        "env_mib": (env_peak - env_before) / 1024,
        "worker_mib": (peak[0] - workers_before) / 1024,
        "outcome": outcome,
    }


# ----------------------------------------------------------------- the driver
def measure(attack: Attack, code: str, cap: float) -> dict[str, object]:
    """Run one attack in a fresh process on the code under ``code`` (its own cwd, so that
    ``code`` comes first on the path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([code, str(ROOT)]))
    command = [sys.executable, "-m", "agent_envs.benchmarks.bird_attacks", "--child", attack.name]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:
        try:
            done = subprocess.run(
                command, cwd=cwd, env=env, capture_output=True, text=True, timeout=cap
            )
        except subprocess.TimeoutExpired:
            return {"wall": None, "killed_after": time.perf_counter() - start}
    if done.returncode != 0:
        return {"wall": None, "crash": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(result: dict[str, object], cap: float) -> tuple[str, str, str]:
    if result.get("wall") is None:
        if "killed_after" in result:
            return f"> {cap:g} (killed)", "?", "?"
        return "crashed", "?", "?"
    wall = f"{result['wall']:.3f} ({result['wall'] / result['limit']:.2f}x)"
    return wall, f"{result['env_mib']:.0f}", f"{result['worker_mib']:.0f}"


def report(rows: list[tuple[Attack, dict, dict | None]], args: Args) -> str:
    lines = [
        "# BIRD env: attacks, wall time and memory growth",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}. Each attack is one `env.step(reply)` of a fresh "
        "`BirdEnv(max_executions=10, max_turns=20)` on the built-in databases, in a fresh "
        "process. Wall in seconds (and as a multiple of the turn's limit: the EXECUTE or "
        f"graded SUBMIT time limit, or {PARSE_LIMIT * 1e3:g} ms for reply parsing); memory "
        "growth in MiB of peak RSS over the RSS before the step, for the env's process and "
        "for its SQL worker (0 where there is none). Targets: wall <= 1.2x the limit, growth "
        "< 256 MiB per process.",
        "Reproduce: `agent-envs bench bird-attacks --before DIR` (DIR: the code "
        "before the fix, `git archive <commit> agent_envs renderers | tar -x -C DIR`).",
        "",
    ]  # fmt: skip
    if any(before is not None for _, _, before in rows):
        lines += [
            "| attack | turn | before: wall s | before: env MiB | after: limit s | after: wall s "
            "| after: env MiB | after: worker MiB | after: outcome |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
    else:
        lines += [
            "| attack | turn | limit s | wall s | env MiB | worker MiB | outcome |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
    for attack, after, before in rows:
        wall, env_mib, worker_mib = _cell(after, args.cap)
        limit = f"{after['limit']:g}" if after.get("limit") else "?"
        outcome = str(after.get("outcome", ""))[:70].replace("|", "\\|")
        if before is not None:
            b_wall, b_env, _ = _cell(before, args.cap)
            lines.append(
                f"| {attack.name} | {attack.kind} | {b_wall} | {b_env} | {limit} | {wall} | "
                f"{env_mib} | {worker_mib} | {outcome} |"
            )
        else:
            lines.append(
                f"| {attack.name} | {attack.kind} | {limit} | {wall} | {env_mib} | "
                f"{worker_mib} | {outcome} |"
            )
    return "\n".join(lines) + "\n"


def main(args: Args) -> str:
    if args.child:
        print(json.dumps(run_child(args.child)))
        return ""
    saved = json.loads(Path(args.before_json).read_text()) if args.before_json else {}
    rows = []
    for attack in ATTACKS:
        if args.only and args.only not in attack.name:
            continue
        before = saved.get(attack.name)
        if args.before:
            before = measure(attack, args.before, args.cap)
        after = measure(attack, args.code, args.cap)
        print(attack.name, "before:", before, "after:", after, flush=True)
        rows.append((attack, after, before))
    if args.json:  # merged into the file's earlier results, if any
        path = Path(args.json)
        results = json.loads(path.read_text()) if path.is_file() else {}
        results.update({attack.name: after for attack, after, _ in rows})
        path.write_text(json.dumps(results, indent=1))
    text = report(rows, args)
    if not args.only and not args.json:  # a --json run measures the code before a fix
        write_report(text, args.out / "bird_attacks.md")
    print(text)
    return text


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="agent-envs bench bird-attacks",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    main(parse_args())
