"""Forged leaderboard runs, and whether ``--validate`` catches each.

Each forgery edits a real run's records and manifest the way someone inflating a result
would, then rebuilds every aggregate with the project's own report code
(`agent_envs.benchmarks.leaderboard.build_reports`: ``summary.json``, ``leaderboard.md``,
``report.html``, replays), so the run is consistent with itself. Games the forger plays are
played by the project's own engines (``make_engine``: random, oracle, the run's models).
Each forgery is then validated twice: with the provenance checks
(`agent_envs.benchmarks.leaderboard.provenance`) and without them (``provenance=False``:
the replay on the env, the record fields, the episode set and the recomputed numbers, what
``--validate`` checked before runs were pinned), and the problems found are sorted by the
check that found them.

The run: ``random``, ``oracle`` and two model agents (``a`` and ``b``, two checkpoints of one
architecture, greedy) on ``envs`` x ``seeds``. The script builds two small randomly
initialised Qwen2 checkpoints with a byte-level tokenizer trained here (``--model tiny``,
seconds), or uses the embedded SmolLM2-135M-Instruct and a copy of it with perturbed weights
(``--model smollm2``, minutes). Every model episode is re-scored (``rescore_limit`` above the
episode count). Results go to ``benchmarks/results/forgeries.md``; ``tests/benchmarks/
test_forgeries.py`` runs the same forgeries on a smaller run.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse
from agent_envs.benchmarks.leaderboard import run as lb

from agent_envs.core.records import Trajectory

RESULTS = RESULTS_DIR / "forgeries.md"

#: (check, words of its problems): how a problem is attributed to the check that found it
CHECKS = (
    ("scripted re-play", "re-played from the seed"),
    ("published seeds", "not its published list"),
    ("commit pin", "not a commit of this repository"),
    ("weights pin", "the pin says"),
    ("token record", "has no token ids"),
    ("re-score", "pinned checkpoint gives"),
    ("re-score", "not the greedy choice"),
    ("re-score", "the tokens decode to"),
    ("env replay", "do not replay on their env"),
    ("episode set", "episodes of the manifest are missing"),
    ("episode set", "episodes are not in the manifest"),
    ("episode set", "an (agent, env, seed) twice"),
    ("episode set", "two trajectories of agent"),
    ("env replay", ", replayed "),
    ("record fields", "but its step rewards sum"),
    ("record fields", "but the last step's info says"),
)


@dataclass
class Args:
    """Forgery sweep settings (every field is a command-line flag)."""

    model: str = "tiny"
    """model agents: tiny (two random 2-layer checkpoints, seconds) or smollm2 (minutes)"""
    envs: list[str] = field(default_factory=lambda: ["grl/Sokoban-v0", "grl/GSM8K-v0"])
    """ids of the forged run"""
    seeds: int = 12
    """published seeds per env"""
    drop: int = 10
    """failed seeds the cherry-picking forgery drops per env"""
    max_new_tokens: int = 24
    """model agents' tokens per turn"""
    workdir: str = ""
    """where the runs are written (default: a temporary folder, removed)"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


# --------------------------------------------------------------------------- a run to forge
class Forger:
    """A run folder's manifest and records in memory, edited, then written back with every
    aggregate rebuilt by the project's report code."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        self.trajectories = lb.read_episodes(run / "episodes.jsonl")
        self._engines: dict[str, Any] = {}

    def agent(self, name: str) -> dict[str, Any]:
        return next(a for a in self.manifest["settings"]["agents"] if a["name"] == name)

    def models(self) -> list[str]:
        return [a["name"] for a in self.manifest["settings"]["agents"] if a["kind"] != "scripted"]

    def play(self, name: str, env_id: str, seed: int) -> Trajectory:
        """A fresh game of agent ``name`` (its own engine) on ``env_id`` from ``seed``."""
        import gymnasium as gym
        from agent_envs.adapters.loop.collector import RolloutCollector

        spec = lb.AgentSpec(**self.agent(name))
        if spec.kind == "scripted":
            engine = lb.make_engine(spec, seed)
        else:
            if name not in self._engines:
                self._engines[name] = lb.make_engine(spec)
            engine = self._engines[name]
        vec = gym.make_vec(env_id, num_envs=1, autoreset_mode="disabled")
        try:
            collector = RolloutCollector(vec, engine, env_id=env_id, max_turns=spec.max_turns,
                                         max_new_tokens=spec.max_new_tokens or 256)  # fmt: skip
            (trajectory,) = collector.collect([seed])
        finally:
            vec.close()
        trajectory.agent = name
        return trajectory

    def of(self, name: str, env_id: str | None = None) -> list[Trajectory]:
        return [t for t in self.trajectories
                if t.agent == name and (env_id is None or t.env_id == env_id)]  # fmt: skip

    def save(self) -> bool:
        """Write the records and manifest, and rebuild every aggregate from them; ``False``
        when the report code refuses to (the old aggregates are left)."""
        (self.run / "episodes.jsonl.gz").unlink(missing_ok=True)
        with open(self.run / "episodes.jsonl", "w", encoding="utf-8") as handle:
            for trajectory in self.trajectories:
                handle.write(json.dumps(trajectory.to_dict(), ensure_ascii=True) + "\n")
        text = json.dumps(self.manifest, indent=1) + "\n"
        (self.run / "manifest.json").write_text(text, encoding="utf-8")
        try:
            lb.build_reports(self.run, self.manifest, self.trajectories, frames=False)
        except ValueError:  # e.g. an (agent, env, seed) twice: the summary refuses it
            return False
        return True


# --------------------------------------------------------------------------- the forgeries
def swap_scripted(f: Forger) -> None:
    """random's and oracle's episodes swapped (every env)."""
    for t in f.trajectories:
        if t.agent in ("random", "oracle"):
            t.agent = "oracle" if t.agent == "random" else "random"


def swap_models(f: Forger) -> None:
    """Two model agents' episodes swapped (every env)."""
    a, b = f.models()[:2]
    for t in f.trajectories:
        if t.agent in (a, b):
            t.agent = b if t.agent == a else a


def _replace_failure(f: Forger, victim: str) -> None:
    failed = next(t for t in f.of(victim) if not t.success)
    index = f.trajectories.index(failed)
    fresh = f.play("oracle", failed.env_id, int(failed.seed))
    fresh.agent = victim
    f.trajectories[index] = fresh


def oracle_for_model(f: Forger) -> None:
    """A failed episode of a model replaced by a freshly played oracle game under its name."""
    _replace_failure(f, f.models()[0])


def oracle_for_random(f: Forger) -> None:
    """A failed episode of random replaced by a freshly played oracle game under its name."""
    _replace_failure(f, "random")


def _replace_seeds(f: Forger, env_id: str, old: list[int], new: list[int]) -> None:
    """Every agent's episodes of ``old`` seeds dropped, fresh games on ``new`` seeds added."""
    settings = f.manifest["settings"]
    kept = [seed for seed in settings["seeds"][env_id] if seed not in old]
    settings["seeds"][env_id] = kept + new
    f.trajectories = [t for t in f.trajectories
                      if not (t.env_id == env_id and int(t.seed) in old)]  # fmt: skip
    for agent in settings["agents"]:
        f.trajectories += [f.play(agent["name"], env_id, seed) for seed in new]


def seed_changed(f: Forger) -> None:
    """A seed replaced by another (a new level) for every agent, games played on it."""
    env_id = f.manifest["settings"]["envs"][0]
    first = f.manifest["settings"]["seeds"][env_id][0]
    _replace_seeds(f, env_id, [first], [first + 1])


def extra_seed(f: Forger) -> None:
    """A fabricated seed added to every env, every agent playing it."""
    settings = f.manifest["settings"]
    settings["num_seeds"] += 1
    for env_id in settings["envs"]:
        _replace_seeds(f, env_id, [], [12345])


def drop_failures(f: Forger, count: int) -> None:
    """Up to ``count`` seeds per env that the first model failed, dropped for every agent."""
    settings = f.manifest["settings"]
    victim = f.models()[0]
    for env_id in settings["envs"]:
        failed = [int(t.seed) for t in f.of(victim, env_id) if not t.success][:count]
        _replace_seeds(f, env_id, failed, [])
    settings["num_seeds"] = min(len(seeds) for seeds in settings["seeds"].values())


def relabel_checkpoint(f: Forger) -> None:
    """A model's checkpoint path relabelled to another checkpoint (pins left as they were)."""
    a, b = f.models()[:2]
    f.agent(a)["target"] = f.agent(b)["target"]


def relabel_checkpoint_and_pin(f: Forger) -> None:
    """A model's checkpoint path and its weights pin both relabelled to another's."""
    a, b = f.models()[:2]
    f.agent(a)["target"] = f.agent(b)["target"]
    pins = f.manifest["pins"]["agents"]
    pins[a] = copy.deepcopy(pins[b])


def reward_edited(f: Forger) -> None:
    """A failed episode's last reward raised by 10, its return and success edited to match."""
    t = next(t for t in f.of(f.models()[0]) if not t.success)
    t.steps[-1].reward += 10.0
    t.steps[-1].info["success"] = True
    t.success = True  # the return is the sum of the step rewards


def reply_edited(f: Forger) -> None:
    """A failed episode's replies replaced by the oracle's, nothing played again."""
    victim = next(t for t in f.of(f.models()[0]) if not t.success)
    oracle = next(t for t in f.of("oracle", victim.env_id) if t.seed == victim.seed)
    for step, better in zip(victim.steps, oracle.steps, strict=False):
        step.reply = better.reply
    victim.success = oracle.success


def episode_dropped(f: Forger) -> None:
    """One failed model episode deleted (the manifest still lists its seed)."""
    f.trajectories.remove(next(t for t in f.of(f.models()[0]) if not t.success))


def duplicated(f: Forger) -> None:
    """One successful oracle episode filed twice."""
    f.trajectories.append(copy.deepcopy(next(t for t in f.of("oracle") if t.success)))


def tokens_edited(f: Forger) -> None:
    """A model episode's first sampled token changed (its reply and logprobs kept)."""
    t = next(t for t in f.of(f.models()[0]) if t.turn_completion_ids)
    ids = t.turn_completion_ids[0]
    ids[0] = ids[0] + 1


def commit_changed(f: Forger) -> None:
    """The manifest's commit replaced (as if another version of the code had played)."""
    fake = "0123456789abcdef" * 2 + "01234567"
    f.manifest["pins"]["code"]["git_commit"] = fake
    f.manifest["environment"]["git_commit"] = fake


def decoding_relabelled(f: Forger) -> None:
    """A greedy model's decoding relabelled as sampled at temperature 0.7."""
    f.agent(f.models()[0])["sampling"]["temperature"] = 0.7


@dataclass(frozen=True)
class Forgery:
    name: str
    edit: Callable[[Forger], None]
    issue: bool  # one of the audit's forgeries (issue 31)

    @property
    def attack(self) -> str:
        return (self.edit.__doc__ or self.name).strip().replace("``count``", "N")


def forgeries(drop: int) -> list[Forgery]:
    """Every forgery of the sweep (``drop``: seeds the cherry-picking one drops per env)."""

    def drop_n(f: Forger) -> None:
        drop_failures(f, drop)

    drop_n.__doc__ = f"Up to {drop} seeds per env that a model failed, dropped for every agent."
    return [
        Forgery("swap_scripted", swap_scripted, True),
        Forgery("swap_models", swap_models, True),
        Forgery("oracle_for_model", oracle_for_model, True),
        Forgery("oracle_for_random", oracle_for_random, True),
        Forgery("seed_changed", seed_changed, True),
        Forgery("extra_seed", extra_seed, True),
        Forgery("drop_failures", drop_n, True),
        Forgery("relabel_checkpoint", relabel_checkpoint, True),
        Forgery("reward_edited", reward_edited, True),
        Forgery("reply_edited", reply_edited, True),
        Forgery("episode_dropped", episode_dropped, True),
        Forgery("relabel_checkpoint_and_pin", relabel_checkpoint_and_pin, False),
        Forgery("duplicated", duplicated, False),
        Forgery("tokens_edited", tokens_edited, False),
        Forgery("commit_changed", commit_changed, False),
        Forgery("decoding_relabelled", decoding_relabelled, False),
    ]


def checks_of(problems: list[str]) -> list[str]:
    """The checks (:data:`CHECKS`) that ``problems`` came from, in order, once each."""
    found = []
    for problem in problems:
        check = next((name for name, words in CHECKS if words in problem), "other")
        if check not in found:
            found.append(check)
    return found


def forge_and_validate(
    base: Path, forgery: Forgery, work: Path, *, before: bool = True
) -> dict[str, Any]:
    """Copy ``base``, apply ``forgery``, rebuild; validate with provenance and, when
    ``before``, without."""
    run = work / forgery.name
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run)
    forger = Forger(run)
    forgery.edit(forger)
    rebuilt = forger.save()
    unpinned = lb.validate(run, provenance=False) if before else []
    after = lb.validate(run, rescore_limit=10**6)
    return {"forgery": forgery, "before": checks_of(unpinned), "after": checks_of(after),
            "problems": after, "rebuilt": rebuilt}  # fmt: skip


# --------------------------------------------------------------------------- the base run
def tiny_checkpoints(folder: Path) -> list[Path]:
    """Two randomly initialised 2-layer Qwen2 checkpoints (seeds 0 and 1) sharing a byte-level
    BPE tokenizer with a ChatML template, trained here on a few sentences."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    corpus = ["<answer>Up || Left</answer> The answer is 42. #### 18", "Sokoban board ### _ P X O"]
    bpe.train_from_iterator(corpus * 20, trainers.BpeTrainer(
        vocab_size=400, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))  # fmt: skip
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")  # fmt: skip
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    folders = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=8192, tie_word_embeddings=True,
                             eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id)  # fmt: skip
        model = Qwen2ForCausalLM(config)
        model.generation_config.eos_token_id = tokenizer.eos_token_id
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        target = folder / f"model-{seed}"
        model.save_pretrained(target)
        tokenizer.save_pretrained(target)
        folders.append(target)
    return folders


def smollm2_checkpoints(folder: Path) -> list[Path]:
    """The embedded SmolLM2 as a plain checkpoint, and a copy with its weights perturbed."""
    import torch
    from agent_envs.adapters.engines.transformers import save_smollm2_checkpoint
    from transformers import AutoModelForCausalLM

    first = Path(save_smollm2_checkpoint(str(folder / "smollm2")))
    model = AutoModelForCausalLM.from_pretrained(first)
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 1e-2)
    second = folder / "smollm2-perturbed"
    shutil.copytree(first, second)
    model.save_pretrained(second)
    return [first, second]


def base_run(args: Args, work: Path) -> Path:
    """The honest run every forgery starts from (validated before use)."""
    maker = smollm2_checkpoints if args.model == "smollm2" else tiny_checkpoints
    first, second = maker(work / "checkpoints")
    out = work / "base"
    flags = ["--preset", "smoke", "--envs", *args.envs, "--seeds", str(args.seeds),
             "--agents", "random", "oracle", f"a=hf:{first}", f"b=hf:{second}",
             "--max-new-tokens", str(args.max_new_tokens), "--batch-size", str(args.seeds),
             "--no-progress", "--no-replay-frames", "--device", "cpu",
             "--out", str(out)]  # fmt: skip
    lb.main(lb.parse_args(flags))
    problems = lb.validate(out, rescore_limit=10**6)
    if problems:
        raise SystemExit(f"the honest run does not validate: {problems[:5]}")
    return out


def main(args: Args) -> str:
    if args.model not in ("tiny", "smollm2"):
        raise SystemExit(f"--model must be tiny or smollm2, got {args.model!r}")
    if args.seeds < 2 or args.drop < 1:
        raise SystemExit(f"--seeds must be >= 2 and --drop >= 1, got {args.seeds}, {args.drop}")
    started = time.perf_counter()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="forgeries-"))
    try:
        base = base_run(args, work)
        results = [forge_and_validate(base, forgery, work) for forgery in forgeries(args.drop)]
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    caught = sum(bool(r["after"]) for r in results)
    before = sum(bool(r["before"]) for r in results)
    issue = [r for r in results if r["forgery"].issue]
    lines = [
        "# Forged leaderboard runs against `--validate`",
        "",
        f"A run of random, oracle and two {args.model} model agents (`a`, `b`, greedy, "
        f"{args.max_new_tokens} tokens a turn) on {', '.join(args.envs)} x {args.seeds} "
        "published seeds, each forgery applied to a copy and every aggregate rebuilt with the "
        "project's report code (`agent_envs.benchmarks.forgeries`). *Before*: the validator "
        "without the provenance checks (replay, record fields, episode set, recomputed "
        "numbers); *after*: with them (published seeds, commit, scripted re-play, token "
        "records, weights pins, every model episode re-scored).",
        "",
        f"Caught: **{caught} of {len(results)}** after, {before} of {len(results)} before; "
        f"of the audit's forgeries {sum(bool(r['after']) for r in issue)} of {len(issue)} "
        f"after, {sum(bool(r['before']) for r in issue)} before. "
        f"{time.perf_counter() - started:.0f} s in all.",
        "",
        "| forgery | attack | audit | before | after (caught by) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        forgery = r["forgery"]
        shown = lambda checks: ", ".join(checks) if checks else "**not caught**"  # noqa: E731
        attack = forgery.attack + (
            ""
            if r["rebuilt"]
            else " (the report code refuses to rebuild the aggregates; the old ones are left)"
        )
        lines.append(f"| `{forgery.name}` | {attack} | {'yes' if forgery.issue else '-'} "
                     f"| {shown(r['before'])} | {shown(r['after'])} |")  # fmt: skip
    lines += ["", "First problem reported for each forgery (after):", ""]
    for r in results:
        first = r["problems"][0] if r["problems"] else "(none)"
        lines.append(f"- `{r['forgery'].name}`: {first[:240]}")
    return finish_report(lines, args.output)


if __name__ == "__main__":
    main(parse(Args, prog="agent-envs bench forgeries",
               description=__doc__.split("\n\n")[0]))  # fmt: skip
