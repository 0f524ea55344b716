"""What ``agent-envs train`` writes about its runs: learning curves, the run report, and the
summary page of every family.

- :func:`run_curves`: success and return of the training episodes against the RL step (one line
  per estimator) and the eval's greedy success of each kept model against its step, as PNGs.
- :func:`write_report`: ``training.md``, each stage's cost, the eval with paired intervals, and
  the held-out problems (:func:`problem_lines`).
- :func:`write_summary`: ``benchmarks/results/training/summary.md`` and ``summary.png`` (family x
  random / zero-shot / SFT / RL) from the committed run folders named in :data:`SUMMARY_RUNS`.

The pipeline itself (seeds, stages, eval) is :mod:`agent_envs.benchmarks.train`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_envs.adapters.trl.stages import Stage
from agent_envs.benchmarks.train import (
    RL_STAGES,
    Args,
    agent_names,
    problem_split,
    problems_of,
    trained_problems,
)

__all__ = [
    "FAMILIES",
    "MULTI_ENV_RUN",
    "SUMMARY_COLUMNS",
    "SUMMARY_RUNS",
    "eval_curve_points",
    "multi_env_lines",
    "multi_env_rows",
    "problem_lines",
    "run_curves",
    "summary_rows",
    "write_report",
    "write_summary",
]

#: the issue's six families and the id each is trained on
FAMILIES = {
    "Sokoban": "grl/Sokoban-v0",
    "Tetris": "grl/Tetris-4x4-cell-v0",
    "Blocksworld": "grl/Blocksworld-v0",
    "GSM8K": "grl/GSM8K-v0",
    "BIRD": "grl/BIRD-v0",
    "WebShop": "grl/WebShop-v0",
}
#: the committed run behind each family's summary row, paths relative to
#: ``benchmarks/results/training``: its leaderboard ``folder``, the ``stages`` records of the
#: models in the row (their training problems), the agent of each column (``None``: not in that
#: run), a ``note`` and, where played, ``fresh``: the folder of the run on fresh seeds (chosen
#: on nothing) of the SFT and RL models; ``split``: an entry laid out the same of a run with
#: ``--problem-split`` (for presets whose eval problems all are training problems otherwise),
#: which the gains on problems never trained on come from; a family missing here has no run yet
SUMMARY_RUNS: dict[str, dict[str, Any]] = {
    "Sokoban": {
        "folder": "sokoban/leaderboard",
        "stages": ["sokoban/logs/sft/stage.json", "sokoban/logs/gigpo/stage.json"],
        "zero-shot": "smollm2",
        "SFT": "smollm2-sft",
        "RL": "smollm2-sft-gigpo",
        "fresh": "sokoban/fresh300",
        "note": "2-epoch SFT on 1,000 oracle episodes, GiGPO 112 steps of 4 groups of 4 with a "
        "KL penalty (the Blocksworld recipe); kept steps 40 and 80 in the same run folder; the "
        "first runs (1-epoch SFT, 20 RL steps, 100 seeds) are in `leaderboard/` "
        '(`README.md`, "Summary and Sokoban")',
    },
    "Tetris": {
        "folder": "tetris/leaderboard",
        "stages": ["tetris/logs/sft/stage.json", "tetris/logs/gigpo/stage.json"],
        "zero-shot": "smollm2",
        "SFT": "smollm2-sft",
        "RL": "smollm2-sft-gigpo",
        "fresh": "tetris/fresh300",
        "note": "2-epoch SFT on 500 oracle episodes, GiGPO 80 steps of 4 groups of 4 with a KL "
        "penalty (the Blocksworld recipe); kept step 40 in the same run folder "
        "(`tetris/README.md`)",
    },
    "Blocksworld": {
        "folder": "blocksworld/rerun300/leaderboard",
        "stages": [
            "blocksworld/rerun300/logs/sft/stage.json",
            "blocksworld/rerun300/logs/gigpo-kl1-112/stage.json",
        ],
        "zero-shot": None,
        "SFT": "smollm2-sft",
        "RL": "smollm2-sft-gigpo-kl1-112",
        "fresh": "blocksworld/fresh600/leaderboard",
        "note": "zero-shot stopped at 0/25 (`blocksworld/training.md`); every eval problem of "
        "the headline run is a training problem, so the held-out gains come from a second run "
        "on half of the problems (`--problem-split 0.5`, `blocksworld/split/`: the same SFT "
        "recipe, then GiGPO 80 steps, which gains on the trained problems and not on the "
        'held-out ones; `blocksworld/training.md`, "Held-out problems")',
        "split": {
            "folder": "blocksworld/split/leaderboard",
            "stages": [
                "blocksworld/split/logs/sft/stage.json",
                "blocksworld/split/logs/gigpo/stage.json",
            ],
            "zero-shot": None,
            "SFT": "smollm2-sft",
            "RL": "smollm2-sft-gigpo",
            "fresh": "blocksworld/split/fresh300",
        },
    },
    "GSM8K": {
        "folder": "gsm8k/leaderboard",
        "stages": ["gsm8k/logs/sft/stage.json", "gsm8k/logs/grpo/stage.json"],
        "zero-shot": "smollm2",
        "SFT": "smollm2-sft",
        "RL": "smollm2-sft-grpo",
        "fresh": "gsm8k/fresh300",
        "note": "SFT on 1,000 generated problems whose demonstrations write the solution's "
        "steps before the answer (`--sft-rationale`); GRPO, 100 steps of 4 groups of 4 "
        "(lr 1e-4, T 0.7, KL 0.1), lowered greedy success, kept steps 40 and 80 too; a "
        "second try from a retrained SFT model (32 steps of 4 groups of 8, T 1.0, lr 5e-5, "
        "KL 0.5) lowered it too, -0.063 [-0.097, -0.033] on fresh seeds (`gsm8k/README.md`, "
        '"A second GRPO try"); a third, LUFFY from that SFT model with one oracle episode '
        "and its worked steps in each group of 8, -0.033 [-0.060, -0.007] "
        '("A third try: LUFFY"); and a fourth, GRPO in groups of 16, -0.097 [-0.137, -0.057] '
        '("A fourth try")',
    },
    "BIRD": {
        "folder": "bird/split/leaderboard",
        "stages": ["bird/split/logs/sft/stage.json"],
        "zero-shot": None,
        "SFT": "smollm2-sft",
        "RL": None,
        "note": "the built-in databases pose 36 questions: SFT on 19 of them "
        "(`--problem-split 0.5`, 150 oracle episodes, 2 epochs) solves 0.648 of the eval seeds "
        "of those and none of the 17 held out; zero-shot stopped at 0/80 (`bird/README.md`); "
        "no RL stage; a second try on BIRD's Mini-Dev questions of 3 databases (SFT on 64 of "
        "their 140, 1 epoch) solves none of the 300 eval seeds, trained or held out "
        '(`bird/README.md`, "A fair try on BIRD\'s own questions")',
    },
    "WebShop": {
        "folder": "webshop/leaderboard",
        "stages": ["webshop/logs/sft/stage.json"],
        "zero-shot": None,
        "SFT": "smollm2-sft",
        "RL": None,
        "note": "SFT on 300 oracle episodes as episode rows (one per episode, up to ~4,500 "
        "tokens), 2 epochs; zero-shot stopped at 0/32 (`webshop/README.md`); no RL stage",
    },
}


def run_curves(args: Args) -> list[Path]:
    """Success and return of the training episodes against the step, one line per estimator
    (and, on a run over several envs, one per estimator and env)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    args.curves_out.mkdir(parents=True, exist_ok=True)
    for metric, label in (
        ("success", "success rate of training episodes"),
        ("return", "mean return of training episodes"),
    ):
        figure, axis = plt.subplots(figsize=(6, 3.6), dpi=120)
        series = training_series(args, metric)
        for line, (steps, values) in series.items():
            axis.plot(steps, _smooth(values), label=line)
        axis.set_xlabel("RL step")
        axis.set_ylabel(label)
        trained = args.envs[0] if len(args.envs) == 1 else "each env trained"
        axis.set_title(f"{trained}: {metric} (moving average of 5 steps)")
        if series:
            axis.legend(fontsize="small")
        axis.grid(alpha=0.3)
        figure.tight_layout()
        path = args.curves_out / f"curve_{metric}.png"
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    eval_curve = eval_curve_points(args)
    if eval_curve:
        figure, axis = plt.subplots(figsize=(6, 3.6), dpi=120)
        for (env_id, name), points in eval_curve.items():
            steps = [point[0] for point in points]
            axis.plot(steps, [point[1] for point in points], marker="o", label=f"{name} ({env_id})")
            axis.fill_between(steps, [p[2] for p in points], [p[3] for p in points], alpha=0.15)
        axis.set_xlabel("RL step (0: the SFT model)")
        axis.set_ylabel("greedy eval success (Wilson 95%)")
        axis.set_title(f"eval of the kept models, {args.eval_seeds} eval seeds per env")
        axis.legend(fontsize="small")
        axis.grid(alpha=0.3)
        figure.tight_layout()
        path = args.curves_out / "curve_eval.png"
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    return written


def training_series(args: Args, metric: str) -> dict[str, tuple[list[int], list[float]]]:
    """``line label -> (steps, values)`` of a training metric (``"success"`` or ``"return"``)
    from each RL stage's TRL log: the mean over the step's episodes and, where the stage trained
    several envs, each env's mean (``episodes/<metric>/<env_id>``, logged by the reward
    functions; every env the log has, whichever ``--envs`` the curves stage was given; a step
    that dealt no episode of an env has no point for it)."""
    mean_key = {"success": "rewards/success_reward/mean",
                "return": "rewards/episode_return_reward/mean"}[metric]  # fmt: skip
    series = {}
    for name in RL_STAGES:
        log = args.out / name / "log.jsonl"
        if not log.exists():
            continue
        rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        line = name
        if name == "luffy":  # its groups hold oracle episodes, counted in these means
            line += f" ({args.luffy_k} of {args.num_generations} per group: oracle)"
        keys = {line: mean_key}
        prefix = f"episodes/{metric}/"
        envs = dict.fromkeys(
            key[len(prefix) :] for row in rows for key in row if key.startswith(prefix)
        )
        if len(envs) > 1:
            keys |= {f"{line}, {env_id}": prefix + env_id for env_id in envs}
        for label, key in keys.items():
            points = [(row["step"], row[key]) for row in rows if key in row]
            if points:
                series[label] = ([step for step, _ in points], [value for _, value in points])
    return series


def eval_curve_points(args: Args) -> dict[tuple[str, str], list[tuple[int, float, float, float]]]:
    """``(env_id, stage) -> [(step, success, Wilson low, high)]`` from the eval's summary: the
    SFT model at step 0, each model the stage kept, and its final model at its last step; only
    for stages with kept models."""
    summary_path = args.eval_out / "summary.json"
    if not summary_path.exists():
        return {}
    per_env = json.loads(summary_path.read_text(encoding="utf-8"))["per_env"]
    names = agent_names(args)
    curves = {}
    for name in RL_STAGES:
        stage = Stage(args.out, name)
        kept = stage.kept_models()
        if not kept:
            continue
        agents = {0: names["sft"], **{step: f"{names[name]}-step{step}" for step in kept}}
        if stage.done:
            agents[stage.record()["steps"]] = names[name]
        for env_id, rows in per_env.items():
            points = [
                (step, rows[agent]["success"]["mean"], rows[agent]["success"]["low"],
                 rows[agent]["success"]["high"])
                for step, agent in sorted(agents.items()) if agent in rows
            ]  # fmt: skip
            if points:
                curves[env_id, name] = points
    return curves


def write_report(args: Args) -> Path:
    """``<curves_out>/training.md``: what each stage cost and what the eval measured (success
    with paired 95% intervals: SFT against zero-shot, each RL stage against SFT)."""
    names = agent_names(args)
    lines = [
        "# Training run",
        "",
        f"Written by `agent-envs train` (run folder `{args.out}`); eval: the "
        f"leaderboard run in `{args.eval_out}` ({args.eval_seeds} published eval seeds per env, "
        "greedy). Wall and CPU minutes are those of the device each stage names (CPU minutes "
        "count every thread of the training process).",
        "",
        "## Stages",
        "",
        "| stage | agent | device | wall min | CPU min | steps | notes |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for stage_name in ("sft", *RL_STAGES):
        stage = Stage(args.out, stage_name)
        if not stage.done:
            continue
        record = stage.record()
        notes = []
        if stage_name == "sft":
            loss = f"{record['first_loss']:.3f} → {record['last_loss']:.3f}"
            notes.append(f"{record['rows']} rows; loss {loss}")
        if record.get("stopped_at_time_limit"):
            notes.append(f"stopped at the {record['settings']['stage_time_limit']} s time limit")
        device = record.get("device", "cpu")  # records from before the flag: CPU runs
        if record.get("allocator", "system") != "system":
            device += f", {record['allocator']}"
        lines.append(
            f"| {stage_name} | `{names[stage_name]}` | {device} | {record['wall_s'] / 60:.1f} | "
            f"{record['cpu_s'] / 60:.1f} | {record.get('steps', '')} | {'; '.join(notes)} |"
        )
    summary_path = args.eval_out / "summary.json"
    if summary_path.exists():
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        pairs = {(pair["a"], pair["b"]): pair for pair in summary["paired"]}
        lines += ["", "## Eval", ""]
        for env_id in args.envs:
            rows = summary["per_env"].get(env_id, {})
            lines += [
                f"### {env_id}",
                "",
                "| agent | success | return | turns | Δ success (paired 95% CI) | against |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for agent, result in rows.items():
                against = names["sft"] if agent in [names[n] for n in RL_STAGES] else None
                against = names["base"] if agent == names["sft"] else against
                delta = ""
                pair = pairs.get((against, agent))
                if pair and env_id in pair["per_env"]:
                    d = pair["per_env"][env_id]["success"]
                    delta = f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"
                success = result["success"]
                lines.append(
                    f"| `{agent}` | {success['mean']:.2f} ± {success['se']:.2f} | "
                    f"{result['return']['mean']:.2f} | {result['turns']['mean']:.2f} | {delta} | "
                    f"{f'`{against}`' if delta else ''} |"
                )
            lines.append("")
        lines += problem_lines(args)
    path = args.curves_out / "training.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def _against(agent: str, names: dict[str, str]) -> str | None:
    """The row a trained agent is paired with: SFT against zero-shot, RL (and its kept
    models) against SFT."""
    if agent == names["sft"]:
        return names["base"]
    if any(agent == names[n] or agent.startswith(f"{names[n]}-step") for n in RL_STAGES):
        return names["sft"]
    return None


def _delta(d: dict[str, Any] | None) -> str:
    return "" if d is None else f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


def problem_lines(args: Args) -> list[str]:
    """The report's "Problems" section: each trained row on all eval seeds and on the eval
    problems no stage trained on (outside the ``--problem-split`` train part, with one), paired
    with the row it is measured against, intervals over seeds and over problems."""
    from agent_envs.benchmarks.leaderboard.problems import (
        compare,
        in_train_part,
        run_problem_keys,
        run_successes,
    )

    if not (args.eval_out / "manifest.json").exists():
        return []
    names, split = agent_names(args), problem_split(args)
    successes, trained = run_successes(args.eval_out), trained_problems(args)
    lines = [
        "## Problems",
        "",
        "Each eval episode's problem (`TextEnv.problem_key()`: start state and goal) against "
        "the problems the stages trained on (SFT episodes' and RL prompts' seeds). Δ over "
        "seeds: Newcombe's paired interval, each seed counted once; over problems: a cluster "
        "bootstrap that resamples distinct problems (5,000 replicates, seeded; "
        "`agent_envs.benchmarks.leaderboard.problems`), since seeds that repeat a problem "
        "repeat a greedy outcome.",
        "",
    ]
    for env_id in args.envs:
        keys = run_problem_keys(args.eval_out, env_id)
        held = [
            seed
            for seed, key in keys.items()
            if key not in trained[env_id] and not (split and in_train_part(key, *split))
        ]
        problems = set(keys.values())
        held_problems = {keys[seed] for seed in held}
        how = (
            f", outside the train part of `--problem-split {split[0]}` (seed {split[1]})"
            if split
            else ""
        )
        lines += [
            f"### {env_id}: held-out problems",
            "",
            f"{len(keys)} eval seeds deal {len(problems)} distinct problems; "
            f"{len(problems & trained[env_id])} of them were trained on, "
            f"{len(held_problems)} are held out ({len(held)} seeds{how}).",
            "",
        ]
        if not held:
            lines += [
                "No eval problem is held out: every result below is on trained problems. "
                "Rerun with `--problem-split FRACTION` to hold problems out.",
                "",
            ]
        lines += [
            "| agent | success, all seeds | success, held out | Δ all, over seeds "
            "| Δ all, over problems | Δ held out, over problems | against |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for (agent, env), played in successes.items():
            against = _against(agent, names)
            if env != env_id or against is None:
                continue
            rate = sum(played.values()) / len(played)
            mine = [seed for seed in held if seed in played]
            held_rate = (
                f"{sum(played[s] for s in mine) / len(mine):.3f} "
                f"(n={len(mine)}, {len({keys[s] for s in mine})} problems)"
                if mine
                else ""
            )
            other = successes.get((against, env_id))
            both = [seed for seed in keys if other and seed in played and seed in other]
            every = compare(other, played, keys, both) if both else None
            held_both = [seed for seed in both if seed in set(held)]
            held_pair = compare(other, played, keys, held_both) if held_both else None
            lines.append(
                f"| `{agent}` | {rate:.3f} (n={len(played)}) | {held_rate} | "
                f"{_delta(every and every['seeds'])} | {_delta(every and every['problems'])} | "
                f"{_delta(held_pair and held_pair['problems'])} | "
                f"{f'`{against}`' if every else ''} |"
            )
        lines.append("")
    return lines


SUMMARY_COLUMNS = ("random", "zero-shot", "SFT", "RL")

#: the run of the one model trained on every family (a mixture of the six ids in one SFT and
#: one RL stage), laid out as a :data:`SUMMARY_RUNS` entry; the summary pairs it with each
#: family's specialist on the eval seeds both played (``None``: not run yet)
MULTI_ENV_RUN: dict[str, Any] | None = {
    "folder": "multi/leaderboard",
    "stages": ["multi/logs/sft/stage.json", "multi/logs/gigpo/stage.json"],
    "SFT": "smollm2-sft",
    "RL": "smollm2-sft-gigpo",
    "note": "SFT on 48 oracle episodes of each family (288 episode rows, 2 epochs, 107 CPU min, "
    "a quarter of the six specialists' SFT CPU time together), then GiGPO from it: 18 steps of "
    "a group of 4 episodes per family (432 episodes, 72 per family, against 1,280-1,792 for the "
    "specialists' RL), stopped at its 70-minute limit, 123 CPU min, each step's passes trimmed "
    "to their own span (about 240 s a step, against 1,245 s untrimmed); eval on the first 64 "
    "eval seeds of five families (WebShop's was stopped for time). RL changed greedy success "
    "on Blocksworld only, +0.094 [-0.102, +0.284] over its SFT model (`multi/README.md`)",
}


def summary_rows(root: Path) -> dict[str, dict[str, Any] | None]:
    """``family -> row`` of the summary page from the committed runs under ``root``
    (:data:`SUMMARY_RUNS`; ``None``: no run yet): per column the agent, its success with the
    Wilson interval and its random-normalized score, from the run's ``summary.json``;
    ``"held"``: the gains on the eval seeds whose problem no stage of the run trained on, over
    problems (a cluster bootstrap, from the run's episodes), SFT against random and zero-shot
    and RL against SFT; ``"rl"``: RL − SFT on every eval seed, over seeds (Newcombe) and over
    problems; ``"fresh"``: RL − SFT in the run's ``fresh`` folder on the seeds that are not
    eval seeds and whose problem is neither trained on nor dealt by an eval seed (over
    problems), with how many such seeds and problems there are. Where the entry names a
    ``split`` run (trained on part of the problems), ``"held"`` and ``"fresh"`` come from it:
    the success columns and ``"rl"`` stay those of the in-distribution run."""
    rows: dict[str, dict[str, Any] | None] = {}
    for family, env_id in FAMILIES.items():
        run = SUMMARY_RUNS.get(family)
        if run is None or not (root / run["folder"] / "summary.json").exists():
            rows[family] = None
            continue
        summary = json.loads((root / run["folder"] / "summary.json").read_text(encoding="utf-8"))
        per_env = summary["per_env"][env_id]
        agents = {column: run.get(column, column) for column in SUMMARY_COLUMNS}
        cells = {
            column: {"agent": agent, "n": per_env[agent]["n"], **per_env[agent]["success"],
                     "normalized": per_env[agent].get("normalized")}
            for column, agent in agents.items() if agent in per_env
        }  # fmt: skip
        loaded = _load(root, run, env_id)
        keys, played, trained = loaded
        rl = _paired(played["SFT"], played["RL"], keys, list(keys))
        dealt = set(keys.values())
        split = run.get("split")
        rows[family] = {"env_id": env_id, "folder": run["folder"], "note": run.get("note", ""),
                        "cells": cells, "rl": rl, "problems": len(dealt) if keys else None,
                        "trained_on": len(dealt & trained) if keys and run["stages"] else None,
                        "split": split and split["folder"],
                        **_held_out_gains(root, split or run, env_id,
                                          _load(root, split, env_id) if split else loaded),
                        }  # fmt: skip
    return rows


def _load(
    root: Path, run: dict[str, Any], env_id: str
) -> tuple[dict[int, str], dict[str, dict[int, float]], set[str]]:
    """What the summary reads of ``run`` (a :data:`SUMMARY_RUNS` entry) on ``env_id``: the
    problem key of each eval seed, each column's successes by seed, and the problems its
    stages trained on."""
    from agent_envs.benchmarks.leaderboard.problems import run_problem_keys, run_successes
    from agent_envs.benchmarks.leaderboard.run import episodes_file

    folder = root / run["folder"]
    keys = run_problem_keys(folder, env_id) if episodes_file(folder).exists() else {}
    successes = run_successes(folder) if keys else {}
    played = {
        column: successes.get((run.get(column, column), env_id), {}) for column in SUMMARY_COLUMNS
    }
    records = [json.loads((root / path).read_text(encoding="utf-8")) for path in run["stages"]]
    return keys, played, problems_of(records).get(env_id, set())


def _held_out_gains(
    root: Path,
    run: dict[str, Any],
    env_id: str,
    loaded: tuple[dict[int, str], dict[str, dict[int, float]], set[str]],
) -> dict[str, Any]:
    """The gains of :func:`summary_rows` on problems ``run`` (:func:`_load` read it) never
    trained on: ``"held"`` (SFT against random and zero-shot, RL against SFT, over problems,
    on its eval seeds whose problem no stage trained on), ``"held_seeds"`` (how many) and
    ``"fresh"``."""
    from agent_envs.benchmarks.leaderboard.problems import run_problem_keys, run_successes

    keys, played, trained = loaded
    held = [seed for seed, key in keys.items() if key not in trained]
    gains = {
        (column, against): (result := _paired(played[against], played[column], keys, held))
        and result["problems"]
        for column, against in (("SFT", "random"), ("SFT", "zero-shot"), ("RL", "SFT"))
    }
    fresh = None
    if run.get("fresh") and keys:
        fresh_folder = root / run["fresh"]
        fresh_keys = run_problem_keys(fresh_folder, env_id)
        seen = set(keys.values()) | trained
        fresh_held = [seed for seed, key in fresh_keys.items()
                      if seed not in keys and key not in seen]  # fmt: skip
        fresh_played = run_successes(fresh_folder)
        result = _paired(
            fresh_played.get((run.get("SFT"), env_id), {}),
            fresh_played.get((run.get("RL"), env_id), {}),
            fresh_keys,
            fresh_held,
        )
        fresh = {
            "folder": run["fresh"],
            "seeds": result["seeds"]["n"] if result else 0,
            "problems": result["problems"]["problems"] if result else 0,
            "delta": result and result["problems"],
        }
    return {"held": gains, "held_seeds": len(held), "fresh": fresh}


def _paired(
    a: dict[int, float], b: dict[int, float], keys: dict[int, str], seeds: Sequence[int]
) -> dict[str, Any] | None:
    """``compare`` of ``b - a`` on those of ``seeds`` both played; ``None`` where none."""
    from agent_envs.benchmarks.leaderboard.problems import compare

    both = [seed for seed in seeds if seed in a and seed in b]
    return compare(a, b, keys, both) if both else None


def multi_env_rows(root: Path) -> dict[str, dict[str, Any]] | None:
    """``family -> {"SFT": ..., "RL": ...}`` of the multi-env model (:data:`MULTI_ENV_RUN`)
    against each family's specialist (:data:`SUMMARY_RUNS`): both successes on the eval seeds
    both runs played and the paired Δ multi-env − specialist over problems (``None`` where one
    of them has no such row); ``None`` when the multi-env model has no run yet."""
    from agent_envs.benchmarks.leaderboard.problems import (
        compare,
        run_problem_keys,
        run_successes,
    )

    multi = MULTI_ENV_RUN
    if multi is None or not (root / multi["folder"] / "summary.json").exists():
        return None
    mixed = run_successes(root / multi["folder"])
    mixed_envs = {env_id for _, env_id in mixed}
    rows: dict[str, dict[str, Any]] = {}
    for family, env_id in FAMILIES.items():
        run, row = SUMMARY_RUNS.get(family), {}
        alone = run_successes(root / run["folder"]) if run else {}
        played = env_id in mixed_envs and alone
        keys = run_problem_keys(root / multi["folder"], env_id) if played else {}
        for column in ("SFT", "RL"):
            a = alone.get((run and run.get(column), env_id), {})
            b = mixed.get((multi.get(column), env_id), {})
            both = [seed for seed in keys if seed in a and seed in b]
            row[column] = both and {
                "specialist": sum(a[seed] for seed in both) / len(both),
                "multi": sum(b[seed] for seed in both) / len(both),
                "seeds": len(both),
                "delta": compare(a, b, keys, both)["problems"],
            }
        rows[family] = row
    return rows


def write_summary(
    root: Path = Path("benchmarks/results/training"), out: Path | None = None
) -> list[Path]:
    """``<out>/summary.md`` and ``<out>/summary.png`` (``out`` defaults to ``root``) from the
    committed runs under ``root`` (:func:`summary_rows`, :func:`multi_env_rows`): success per
    family x random / zero-shot / SFT / RL with Wilson 95% intervals; the gains on problems
    never trained on, with issue 33's targets met or not; the multi-env model against the
    specialists; a figure of random-normalized scores. Families without a run say so."""
    out = root if out is None else out
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_rows(root)
    lines = [
        "# Training results: every family",
        "",
        "Written by `agent-envs train --summary` from the committed leaderboard run folders "
        "named in each row (each `--validate`s by replay). Success: greedy, the full turn "
        "budget, on that run's eval seeds (published, chosen before training), with its Wilson "
        '95% interval. "Eval problems": the distinct problems the eval seeds deal '
        "(`TextEnv.problem_key()`: start state and goal), and how many of them the run's SFT "
        "and RL stages (the `stage.json` records each row names in `SUMMARY_RUNS`) trained on.",
        "",
        "## Success",
        "",
        "| family | id | eval seeds | eval problems (trained on) | random | zero-shot | SFT "
        "| RL | run |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for family, row in rows.items():
        if row is None:
            lines.append(f"| {family} | `{FAMILIES[family]}` | | | not run yet |{' |' * 4}")
            continue
        cells = row["cells"]
        shown = [
            f"{cell['mean']:.2f} [{cell['low']:.2f}, {cell['high']:.2f}] (`{cell['agent']}`)"
            if (cell := cells.get(column))
            else "not run"
            for column in SUMMARY_COLUMNS
        ]
        seeds = "/".join(str(n) for n in sorted({cell["n"] for cell in cells.values()}))
        problems = ""
        if row["trained_on"] is not None:
            problems = f"{row['problems']} ({row['trained_on']})"
        elif row["problems"] is not None:  # no stage record: nothing trained yet
            problems = f"{row['problems']} (no training)"
        lines.append(
            f"| {family} | `{row['env_id']}` | {seeds} | {problems} | {' | '.join(shown)} | "
            f"`{row['folder']}` |"
        )
    lines += [
        "",
        "## Gains on problems never trained on",
        "",
        "Paired differences, each with its 95% interval counted over distinct problems (a "
        "cluster bootstrap, `agent_envs.benchmarks.leaderboard.problems`: seeds that repeat a "
        "problem repeat a greedy outcome). The first three columns are on the eval seeds whose "
        'problem the run never trained on; "RL − SFT, all eval seeds" counts every eval seed '
        '(with Newcombe\'s interval over seeds beside it); "RL − SFT, fresh" is a second run '
        "on fresh seeds (chosen on nothing) on those whose problem was neither trained on nor "
        "dealt by an eval seed. Issue 33's targets: SFT beats random (lower bound > 0) on "
        "every family, RL beats its SFT model on fresh held-out problems on at least four. "
        "A family whose preset deals too few problems to hold any out otherwise names the run "
        "with `--problem-split` (trained on part of the problems) its held-out and fresh "
        'gains come from ("held out: ..."; its other columns are the run above).',
        "",
        "| family | held-out eval seeds | SFT − random | SFT − zero-shot | RL − SFT "
        "| RL − SFT, all eval seeds | RL − SFT, fresh | SFT beats random | RL beats SFT |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    met = {"SFT": 0, "RL": 0}
    for family, row in rows.items():
        if row is None:
            lines.append(f"| {family} |{' |' * 8}")
            continue
        held = row["held"]
        shown = [
            f"{_delta(d)} ({d['problems']} problems)" if (d := held[pair]) else "—"
            for pair in (("SFT", "random"), ("SFT", "zero-shot"), ("RL", "SFT"))
        ]
        rl = row["rl"]
        shown.append(
            f"{_delta(rl['problems'])} ({rl['problems']['problems']} problems; over seeds "
            f"{_delta(rl['seeds'])})" if rl else "—"
        )  # fmt: skip
        fresh = row["fresh"]
        if fresh is None:
            shown.append("not run")
        elif fresh["delta"] is None:
            shown.append(f"none held out (`{fresh['folder']}`)")
        else:
            shown.append(
                f"{_delta(fresh['delta'])} ({fresh['seeds']} seeds, {fresh['problems']} "
                f"problems, `{fresh['folder']}`)"
            )
        verdicts = []
        for column, gain in (("SFT", held["SFT", "random"]), ("RL", fresh and fresh["delta"])):
            if gain is not None:
                verdicts.append("yes" if gain["low"] > 0 else "no")
                met[column] += gain["low"] > 0
            elif column in row["cells"] and not row["held_seeds"]:
                verdicts.append("no held-out problems")
            else:
                verdicts.append("not run")
        name = f"{family} (held out: `{row['split']}`)" if row["split"] else family
        lines.append(
            f"| {name} | {row['held_seeds']} | {' | '.join(shown)} | {' | '.join(verdicts)} |"
        )
    lines += [
        "",
        f"SFT beats random on {met['SFT']} of {len(rows)} families (target: all); RL beats "
        f"its SFT model on fresh held-out problems on {met['RL']} of {len(rows)} (target: 4).",
        "",
        *multi_env_lines(root),
    ]
    notes = [f"- {family}: {row['note']}" for family, row in rows.items() if row and row["note"]]
    lines += ["Notes:", "", *notes, "", "![random-normalized scores](summary.png)", ""]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "summary.md"
    path.write_text("\n".join(lines), encoding="utf-8")

    figure, axis = plt.subplots(figsize=(7, 3.6), dpi=120)
    families = list(rows)
    width = 0.8 / len(SUMMARY_COLUMNS)
    for index, column in enumerate(SUMMARY_COLUMNS):
        xs, ys, errors = [], [], [[], []]
        for position, family in enumerate(families):
            cell = (rows[family] or {}).get("cells", {}).get(column)
            if cell and cell["normalized"]:
                score = cell["normalized"]
                xs.append(position + (index - 1.5) * width)
                ys.append(score["mean"])
                errors[0].append(score["mean"] - score["low"])
                errors[1].append(score["high"] - score["mean"])
        axis.bar(xs, ys, width, yerr=errors, capsize=2, label=column)
    axis.set_xticks(range(len(families)), [
        family if rows[family] else f"{family}\n(not run yet)" for family in families
    ])  # fmt: skip
    axis.axhline(0, color="black", linewidth=0.8)
    axis.axhline(1, color="gray", linewidth=0.8, linestyle="--")
    axis.set_ylabel("random-normalized success\n(0 random, 1 oracle)")
    axis.set_title("Greedy success per family, Wilson 95% intervals")
    axis.set_ylim(top=1.2)
    axis.legend(fontsize="small", ncols=4, loc="upper left")
    figure.tight_layout()
    figure_path = out / "summary.png"
    figure.savefig(figure_path)
    plt.close(figure)
    return [path, figure_path]


def multi_env_lines(root: Path) -> list[str]:
    """The summary's section on the multi-env model (:func:`multi_env_rows`)."""
    lines = ["## One model for every family", ""]
    rows = multi_env_rows(root)
    if rows is None:
        return [
            *lines,
            "Not run yet: no run of one SFT + RL model over the mixture of the six families "
            "(`MULTI_ENV_RUN` in `agent_envs.benchmarks.train_report`).",
            "",
        ]
    multi = MULTI_ENV_RUN or {}
    stages = (
        f"SFT (`{multi['SFT']}`) then RL (`{multi['RL']}`)"
        if multi.get("RL")
        else f"SFT only (`{multi['SFT']}`; no RL stage, so the RL columns are empty)"
    )
    lines += [
        f"`{multi['folder']}`: one model trained on the mixture of the six families, {stages}, "
        "against each family's specialist above, on the eval seeds both played; Δ multi-env − "
        "specialist, paired, its 95% interval over problems.",
        "",
        "| family | specialist SFT | multi-env SFT | Δ SFT | specialist RL | multi-env RL | Δ RL |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for family, row in rows.items():
        shown = []
        for column in ("SFT", "RL"):
            cell = row[column]
            shown += (
                [f"{cell['specialist']:.3f}", f"{cell['multi']:.3f} (n={cell['seeds']})",
                 _delta(cell["delta"])]
                if cell else ["—", "—", "—"]
            )  # fmt: skip
        lines.append(f"| {family} | {' | '.join(shown)} |")
    note = multi.get("note")
    return lines + (["", note] if note else []) + [""]


def _smooth(values: Sequence[float], width: int = 5) -> list[float]:
    out = []
    for index in range(len(values)):
        window = values[max(0, index - width + 1) : index + 1]
        out.append(sum(window) / len(window))
    return out
