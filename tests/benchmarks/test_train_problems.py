"""Problems, not seeds, in agent_envs.benchmarks.train and train_report: the problem split, the
held-out report, intervals counted over problems, kept models in the eval, the summary page, and
the committed Blocksworld result recomputed over problems."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from agent_envs.benchmarks import train, train_report
from agent_envs.benchmarks.leaderboard import eval_seeds, problems

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "benchmarks" / "results" / "training"
BLOCKSWORLD = "grl/Blocksworld-v0"


def test_paired_by_problem__one_seed_a_problem_is_the_seed_bootstrap():
    a = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1]
    b = [1, 1, 1, 1, 0, 1, 0, 1, 1, 1]
    result = problems.paired_by_problem(a, b, [f"p{i}" for i in range(10)], reps=2_000, seed=3)
    differences = np.array(b) - np.array(a)
    draws = np.random.RandomState(3).randint(0, 10, size=(2_000, 10))
    low, high = np.percentile(differences[draws].mean(axis=1), [2.5, 97.5])
    assert result["problems"] == 10 and result["mean"] == pytest.approx(0.2)
    assert (result["low"], result["high"]) == pytest.approx((low, high))


def test_paired_by_problem__repeating_seeds_of_a_problem_adds_no_evidence():
    """Every problem dealt 5 times: the seed-level interval narrows about sqrt(5)x, the
    interval over problems stays where one seed a problem puts it."""
    from agent_envs.benchmarks.leaderboard.stats import paired_success

    a = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0]
    b = [1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 0]
    keys = [f"p{i}" for i in range(12)]
    once = problems.paired_by_problem(a, b, keys)
    five = problems.paired_by_problem(a * 5, b * 5, keys * 5)
    assert five["problems"] == 12 and five["n"] == 60
    assert (five["low"], five["high"]) == pytest.approx((once["low"], once["high"]))
    seeds = paired_success(a * 5, b * 5)
    assert seeds["high"] - seeds["low"] < 0.6 * (five["high"] - five["low"])


def test_in_train_part__is_a_seeded_fraction_of_the_problems():
    keys = [f"{i:016x}" for i in range(2_000)]
    part = [key for key in keys if problems.in_train_part(key, 0.3, 0)]
    assert 0.27 < len(part) / len(keys) < 0.33
    assert part == [key for key in keys if problems.in_train_part(key, 0.3, 0)]
    assert part != [key for key in keys if problems.in_train_part(key, 0.3, 1)]
    assert set(part) <= {key for key in keys if problems.in_train_part(key, 0.6, 0)}


@pytest.mark.parametrize("bad", [1.0, -0.2, 1.5])
def test_problem_split__a_fraction_outside_0_1_names_the_flag(bad):
    assert train.problem_split(train.Args()) is None
    assert train.problem_split(train.Args(problem_split=0.5, problem_split_seed=4)) == (0.5, 4)
    with pytest.raises(SystemExit, match="--problem-split: the fraction"):
        train.problem_split(train.Args(problem_split=bad))
    with pytest.raises(SystemExit, match="--problem-split"):  # refused before any stage runs
        train.main(train.Args(out=Path("unused"), stages=["sft"], problem_split=bad))


def test_problem_split__blocksworld_trains_only_on_its_train_part():
    """With ``--problem-split 0.5``, the SFT and RL seeds deal only train-part problems, so
    the eval seeds whose problem is outside it are held out of training."""
    split = (0.5, 0)
    sft = train.train_seeds(BLOCKSWORLD, 200, split=split)
    rl = [seed for _, seed in train.rl_seeds(
        train.Args(envs=[BLOCKSWORLD], rl_steps=25, rl_prompts=4, problem_split=0.5))]  # fmt: skip
    assert len(sft) == 200 and len(rl) == 100
    trained = set(problems.problem_keys(BLOCKSWORLD, sft + rl).values())
    assert all(problems.in_train_part(key, *split) for key in trained)
    evaluated = problems.problem_keys(BLOCKSWORLD, eval_seeds(BLOCKSWORLD, 100))
    held = {key for key in evaluated.values() if not problems.in_train_part(key, *split)}
    assert held and not held & trained
    unsplit = set(problems.problem_keys(BLOCKSWORLD, train.train_seeds(BLOCKSWORLD, 200)).values())
    assert unsplit - trained  # without the split the same count reaches other problems


def test_problem_split__a_train_part_with_no_problem_names_the_flag():
    with pytest.raises(SystemExit, match=r"--problem-split 1e-12: 2\d{3} seeds of grl/Blocks"):
        train.train_seeds(BLOCKSWORLD, 2, split=(1e-12, 0))


def _fake_stages(out: Path, steps: dict[str, list[int]]) -> None:
    for name, kept in steps.items():
        for folder in ["model"] + [f"model-step{step}" for step in kept]:
            (out / name / folder).mkdir(parents=True)
            (out / name / folder / "config.json").write_text("{}")


@pytest.mark.filterwarnings("ignore:BIRD. skipped")  # 8 of the Mini-Dev's 11 databases
def test_env_kwargs__seeds_rows_problems_and_eval_use_the_envs_built_with_them(
    tmp_path, monkeypatch, mini_dev
):
    from agent_envs.benchmarks import leaderboard
    from agent_envs.benchmarks.leaderboard.run import registered_env

    bird, data = "grl/BIRD-v0", {"data_path": str(mini_dev)}
    flags = ["--envs", bird, "--env-kwargs", f"{bird}={json.dumps(data)}", "--sft-episodes", "6"]
    args = train.parse_args([*flags, "--problem-split", "0.5", "--out", str(tmp_path)])
    seeds = train.sft_seeds(args)[bird]
    keys = problems.problem_keys(bird, seeds, registered_env(bird, data))
    assert len(seeds) == 6 and all(problems.in_train_part(key, 0.5, 0) for key in keys.values())
    questions = {item["question"] for item in json.loads(mini_dev.read_text())}
    rows, oracle = train.oracle_sft_rows(bird, seeds, env_kwargs=data)
    assert oracle == 1.0 and len(rows) == 6
    assert all(any(q in row["prompt"][-1]["content"] for q in questions) for row in rows)
    record = {"stage": "sft", "train_seeds": {bird: seeds}, "settings": train._settings(args)}
    assert train.problems_of([record]) == {bird: set(keys.values())}
    builtin = {**record, "settings": train._settings(train.Args(envs=[bird]))}
    assert train.problems_of([builtin])[bird].isdisjoint(keys.values())
    played: list = []
    monkeypatch.setattr(leaderboard, "main", lambda run: played.append(run) or {})
    train.run_eval(args)
    assert played[0].env_kwargs == [f"{bird}={json.dumps(data)}"]
    with pytest.raises(SystemExit, match=r"--env-kwargs: grl/BIRD-v0: .*max_executions"):
        train.main(
            train.parse_args(["--envs", bird, "--env-kwargs", f'{bird}={{"max_executions": -1}}'])
        )


def test_eval__plays_every_kept_model_as_its_own_agent(tmp_path, monkeypatch):
    from agent_envs.benchmarks import leaderboard

    _fake_stages(tmp_path, {"sft": [], "gigpo": [40, 80]})
    played = []
    monkeypatch.setattr(leaderboard, "main", lambda run: played.append(run) or {})
    train.run_eval(train.Args(out=tmp_path, envs=[BLOCKSWORLD], eval_zero_shot=False))
    agents = played[0].agents
    assert agents == [
        "random",
        "oracle",
        f"smollm2-sft=hf:{tmp_path / 'sft' / 'model'}",
        f"smollm2-sft-gigpo=hf:{tmp_path / 'gigpo' / 'model'}",
        f"smollm2-sft-gigpo-step40=hf:{tmp_path / 'gigpo' / 'model-step40'}",
        f"smollm2-sft-gigpo-step80=hf:{tmp_path / 'gigpo' / 'model-step80'}",
    ]


def _row(successes: int, n: int) -> dict:
    rate = successes / n
    return {"n": n, "success": {"mean": rate, "successes": successes, "low": rate - 0.1,
                                "high": rate + 0.1}}  # fmt: skip


def test_curves__eval_success_against_the_step_of_each_kept_model(tmp_path):
    _fake_stages(tmp_path / "run", {"gigpo": [40]})
    (tmp_path / "run" / "gigpo" / "stage.json").write_text(json.dumps({"steps": 112}))
    args = train.Args(out=tmp_path / "run", envs=[BLOCKSWORLD], eval_out=tmp_path / "eval",
                      curves_out=tmp_path / "curves")  # fmt: skip
    rows = {"smollm2-sft": _row(60, 100), "smollm2-sft-gigpo-step40": _row(70, 100),
            "smollm2-sft-gigpo": _row(80, 100)}  # fmt: skip
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text(json.dumps({"per_env": {BLOCKSWORLD: rows}}))
    points = train_report.eval_curve_points(args)
    assert points == {
        (BLOCKSWORLD, "gigpo"): [
            (0, 0.6, pytest.approx(0.5), pytest.approx(0.7)),
            (40, 0.7, pytest.approx(0.6), pytest.approx(0.8)),
            (112, 0.8, pytest.approx(0.7), pytest.approx(0.9)),
        ]
    }
    assert tmp_path / "curves" / "curve_eval.png" in train_report.run_curves(args)


def test_curves__a_run_over_several_envs_has_a_line_per_env(tmp_path):
    sokoban = "grl/Sokoban-v0"
    rows = [
        {"step": 1, "rewards/success_reward/mean": 0.5, f"episodes/success/{sokoban}": 0.25,
         f"episodes/success/{BLOCKSWORLD}": 0.75},
        {"step": 2, "rewards/success_reward/mean": 0.75, f"episodes/success/{BLOCKSWORLD}": 0.75},
        {"step": 2, "train_runtime": 10.0},  # TRL's closing record
    ]  # fmt: skip
    (tmp_path / "run" / "gigpo").mkdir(parents=True)
    log = "\n".join(json.dumps(row) for row in rows)
    (tmp_path / "run" / "gigpo" / "log.jsonl").write_text(log, encoding="utf-8")
    args = train.Args(out=tmp_path / "run", envs=[sokoban, BLOCKSWORLD])
    assert train_report.training_series(args, "success") == {
        "gigpo": ([1, 2], [0.5, 0.75]),
        f"gigpo, {sokoban}": ([1], [0.25]),  # step 2 dealt no Sokoban episode
        f"gigpo, {BLOCKSWORLD}": ([1, 2], [0.75, 0.75]),
    }
    assert train_report.training_series(args, "return") == {}
    args.envs = [BLOCKSWORLD]  # the curves stage given fewer envs: still each env trained
    assert len(train_report.training_series(args, "success")) == 3
    one_env = "\n".join(
        json.dumps({k: v for k, v in row.items() if sokoban not in k}) for row in rows
    )
    (tmp_path / "run" / "gigpo" / "log.jsonl").write_text(one_env, encoding="utf-8")
    # one env trained: its mean is the step's mean, one line
    assert list(train_report.training_series(args, "success")) == ["gigpo"]


def _problem_report(tmp_path, monkeypatch, trained_keys, split=0.0):
    """The report's problem section over 8 eval seeds dealing problems p0..p3 twice each."""
    keys = {seed: f"p{seed % 4}" for seed in range(8)}
    sft = {seed: float(seed % 2) for seed in keys}
    rl = {seed: 1.0 for seed in keys}
    monkeypatch.setattr(problems, "run_problem_keys", lambda folder, env_id: keys)
    monkeypatch.setattr(problems, "run_successes", lambda folder: {
        ("smollm2-sft", BLOCKSWORLD): sft, ("smollm2-sft-gigpo", BLOCKSWORLD): rl})  # fmt: skip
    monkeypatch.setattr(train_report, "trained_problems", lambda args: {BLOCKSWORLD: trained_keys})
    (tmp_path / "manifest.json").write_text("{}")
    args = train.Args(envs=[BLOCKSWORLD], eval_out=tmp_path, problem_split=split)
    return "\n".join(train_report.problem_lines(args))


def test_report__held_out_problems_get_their_own_column(tmp_path, monkeypatch):
    report = _problem_report(tmp_path, monkeypatch, {"p0", "p1"})
    assert "8 eval seeds deal 4 distinct problems; 2 of them were trained on, 2 are held out" in (
        report
    )
    row = next(line for line in report.splitlines() if line.startswith("| `smollm2-sft-gigpo`"))
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[2] == "1.000 (n=8)" and cells[3] == "1.000 (n=4, 2 problems)"
    assert cells[4].startswith("+0.500 [") and cells[5].startswith("+0.500 [")
    # held out: p2 (seeds 2, 6: SFT lost both, RL won) and p3 (seeds 3, 7: both won); a
    # bootstrap over those 2 problems draws {p2, p2}, {p2, p3} or {p3, p3}
    assert cells[6] == "+0.500 [+0.000, +1.000]"
    assert cells[7] == "`smollm2-sft`"


def test_report__no_held_out_problem_points_to_the_flag(tmp_path, monkeypatch):
    report = _problem_report(tmp_path, monkeypatch, {"p0", "p1", "p2", "p3"})
    assert "4 of them were trained on, 0 are held out (0 seeds)" in report
    assert "Rerun with `--problem-split FRACTION`" in report


def test_summary__every_family_has_a_row_and_missing_runs_say_so(tmp_path, monkeypatch):
    runs = dict(train_report.SUMMARY_RUNS)
    runs["Sokoban"] = {**runs["Sokoban"], "folder": "no-such-run"}
    # Blocksworld without its split run: the headline alone holds no problem out
    runs["Blocksworld"] = {k: v for k, v in runs["Blocksworld"].items() if k != "split"}
    # WebShop with its random and oracle rows alone (no stage record)
    runs["WebShop"] = {**runs["WebShop"], "stages": [], "SFT": None}
    monkeypatch.setattr(train_report, "SUMMARY_RUNS", runs)
    monkeypatch.setattr(train_report, "MULTI_ENV_RUN", None)  # its section says so
    page, figure = train_report.write_summary(TRAINING, tmp_path)
    text = page.read_text()
    for family, env_id in train_report.FAMILIES.items():
        assert text.count(f"| {family} | `{env_id}` |") == 1
    assert "| Sokoban | `grl/Sokoban-v0` | | | not run yet |" in text
    # a run with no stage record (random and oracle only) counts its problems, none trained
    assert "| WebShop | `grl/WebShop-v0` | 300 | 295 (no training) |" in text
    summary = json.loads((TRAINING / runs["Blocksworld"]["folder"] / "summary.json").read_text())
    rl = summary["per_env"][BLOCKSWORLD]["smollm2-sft-gigpo-kl1-112"]["success"]
    assert f"{rl['mean']:.2f} [{rl['low']:.2f}, {rl['high']:.2f}]" in text
    assert "| 300 | 132 (132) |" in text  # every eval problem was trained on
    assert "+0.103 [+0.023, +0.185] (132 problems; over seeds +0.103 [+0.052, +0.154])" in text
    # every problem of Blocksworld-v0 was trained on: its fresh seeds hold none out, and
    # neither target can be judged on it
    assert (
        "none held out (`blocksworld/fresh600/leaderboard`) | no held-out problems | no "
        "held-out problems |" in text
    )
    # the Sokoban run is gone: its gains row is empty and no target counts it
    gains = text.split("## Gains")[1].split("## One model")[0]
    assert "| Sokoban |" + " |" * 8 in gains
    verdicts = [line.split(" | ")[-2:] for line in gains.splitlines() if "| yes" in line]
    assert verdicts and all(pair[0] in ("yes", "no") for pair in verdicts)
    sft_met = sum(pair[0] == "yes" for pair in verdicts)
    assert f"SFT beats random on {sft_met} of 6 families" in gains
    assert "## One model for every family\n\nNot run yet" in text
    assert figure.stat().st_size > 1_000


def test_summary__the_multi_env_model_is_paired_with_each_specialist(tmp_path, monkeypatch):
    """A multi-env run is paired with each family's specialist on the eval seeds both played:
    standing in for it, the Sokoban run's GiGPO model as "multi-env SFT" gives Δ SFT =
    the specialist's RL − SFT over every eval seed; families the run lacks show dashes."""
    runs = train_report.SUMMARY_RUNS
    multi = {**runs["Sokoban"], "SFT": runs["Sokoban"]["RL"], "RL": "no-such-agent"}
    monkeypatch.setattr(train_report, "MULTI_ENV_RUN", multi)
    rows = train_report.multi_env_rows(TRAINING)
    expected = train_report.summary_rows(TRAINING)["Sokoban"]["rl"]["problems"]
    assert rows["Sokoban"]["SFT"]["delta"] == expected and rows["Sokoban"]["SFT"]["seeds"] == 300
    assert not rows["Sokoban"]["RL"] and not rows["Tetris"]["SFT"]
    page, _ = train_report.write_summary(TRAINING, tmp_path)
    section = page.read_text().split("## One model for every family")[1]
    sft = rows["Sokoban"]["SFT"]
    assert (
        f"| Sokoban | {sft['specialist']:.3f} | {sft['multi']:.3f} (n=300) | "
        f"{expected['mean']:+.3f} [{expected['low']:+.3f}, {expected['high']:+.3f}] | — | — | — |"
    ) in section
    assert "| Tetris | — | — | — | — | — | — |" in section


def test_summary__a_split_run_gives_the_held_out_gains(tmp_path, monkeypatch):
    """A family's ``split`` run (trained on part of the problems) is where its gains on
    problems never trained on come from, while its success columns and RL − SFT on every eval
    seed stay the in-distribution run's. Standing in for a split run: Blocksworld's headline
    folder with no stage record, so each of its eval seeds counts as held out."""
    runs = dict(train_report.SUMMARY_RUNS)
    headline = runs["Blocksworld"]
    split = {**headline, "stages": [], "fresh": None}
    runs["Blocksworld"] = {**headline, "split": split}
    monkeypatch.setattr(train_report, "SUMMARY_RUNS", runs)
    row = train_report.summary_rows(TRAINING)["Blocksworld"]
    folder = TRAINING / headline["folder"]
    keys, successes = problems.run_problem_keys(folder, BLOCKSWORLD), problems.run_successes(folder)
    expected = problems.compare(
        successes["random", BLOCKSWORLD], successes[headline["SFT"], BLOCKSWORLD], keys, list(keys)
    )["problems"]
    assert row["held_seeds"] == 300 and row["held"]["SFT", "random"] == expected
    assert row["fresh"] is None and row["trained_on"] == 132  # the headline's own figures
    page, _ = train_report.write_summary(TRAINING, tmp_path)
    gains = page.read_text().split("## Gains")[1]
    line = next(line for line in gains.splitlines() if line.startswith("| Blocksworld"))
    assert line.startswith(f"| Blocksworld (held out: `{headline['folder']}`) | 300 | ")
    assert line.endswith("| yes | not run |")


def test_summary__the_committed_page_is_what_its_runs_say(tmp_path):
    page, _ = train_report.write_summary(TRAINING, tmp_path)
    assert (TRAINING / "summary.md").read_text() == page.read_text()


def _records(run: dict) -> list[dict]:
    """The stage records a :data:`train_report.SUMMARY_RUNS` entry names."""
    return [json.loads((TRAINING / path).read_text()) for path in run["stages"]]


def _rate(won: dict[int, float], seeds: list[int]) -> float:
    """Success rate of an agent (its successes by seed) over ``seeds``."""
    return sum(won[seed] for seed in seeds) / len(seeds)


def _held_out_eval(run: dict, env_id: str, records: list[dict]) -> tuple[dict, list[int], dict]:
    """The eval folder of a :data:`train_report.SUMMARY_RUNS` entry whose stage records are
    ``records``: the problem key of each of its 300 published eval seeds, the eval seeds whose
    problem no stage trained on, and every agent's successes."""
    trained = train.problems_of(records)[env_id]
    folder = TRAINING / run["folder"]
    keys = problems.run_problem_keys(folder, env_id)
    assert list(keys) == eval_seeds(env_id, 300)
    held = [seed for seed, key in keys.items() if key not in trained]
    return keys, held, problems.run_successes(folder)


def _split_sft_run(run: dict, env_id: str) -> tuple[dict, list[int], dict]:
    """A committed SFT run on half of the problems (``--problem-split 0.5``):
    :func:`_held_out_eval` of it."""
    records = _records(run)
    assert records[0]["stage"] == "sft"
    assert {r["settings"]["problem_split"] for r in records} == {"0.5"}
    return _held_out_eval(run, env_id, records)


def _rl_minus_sft(run: dict, env_id: str, where: str) -> tuple[dict, dict]:
    """A committed run folder of a :data:`train_report.SUMMARY_RUNS` entry (its eval or its
    fresh one): the problem key of each seed, and the entry's RL model against its SFT model
    on every seed, counted over problems."""
    folder = TRAINING / where
    keys = problems.run_problem_keys(folder, env_id)
    successes = problems.run_successes(folder)
    sft, rl = successes[run["SFT"], env_id], successes[run["RL"], env_id]
    return keys, problems.compare(sft, rl, keys, list(keys))["problems"]


def test_committed_blocksworld__the_headline_counted_over_problems():
    """Issue 33: the 112-step GiGPO model against its SFT model on the 300 eval seeds and the
    300 fresh ones, recomputed from the committed episodes over seeds and over problems; every
    eval problem is a training problem of that run (600 SFT seeds, 112 x 4 RL prompts, from
    its committed stage records); the figures are the ones the Blocksworld notes print."""
    records = _records(train_report.SUMMARY_RUNS["Blocksworld"])
    assert [(r["stage"], r["steps"], r["settings"]["sft_episodes"]) for r in records] == [
        ("sft", 76, "600"),
        ("gigpo", 112, "600"),
    ]
    trained = train.problems_of(records)[BLOCKSWORLD]
    assert len(trained) == 156
    notes = (TRAINING / "blocksworld" / "training.md").read_text()
    for folder, first, last, count in (("rerun300", 0, 300, 132), ("fresh600", 300, 600, 128)):
        run = TRAINING / "blocksworld" / folder / "leaderboard"
        successes, keys = problems.run_successes(run), problems.run_problem_keys(run, BLOCKSWORLD)
        seeds = eval_seeds(BLOCKSWORLD, last)[first:]
        assert not {keys[seed] for seed in seeds} - trained  # no held-out problem
        result = problems.compare(
            successes["smollm2-sft", BLOCKSWORLD],
            successes["smollm2-sft-gigpo-kl1-112", BLOCKSWORLD],
            keys,
            seeds,
        )
        over_seeds, over_problems = result["seeds"], result["problems"]
        assert over_problems["problems"] == count and over_seeds["n"] == 300
        assert over_problems["low"] > 0
        widening = (over_problems["high"] - over_problems["low"]) / (
            over_seeds["high"] - over_seeds["low"]
        )
        assert 1.4 < widening < 2.0
        shown = f"{train_report._delta(over_problems)} over {count} problems"
        assert shown in notes, shown


def test_committed_blocksworld__sft_beats_random_on_held_out_problems():
    """Issue 33, Blocksworld with a problem split: the SFT model of the run trained on half
    of the problems against random on the eval seeds whose problem it never trained on (from
    its committed stage record), recomputed from the committed episodes; the figure is the one
    the notes print, and its lower bound is above 0."""
    run = train_report.SUMMARY_RUNS["Blocksworld"]["split"]
    keys, held, successes = _split_sft_run(run, BLOCKSWORLD)
    assert len(held) == 135 and len({keys[seed] for seed in held}) == 61
    over = problems.compare(
        successes["random", BLOCKSWORLD], successes[run["SFT"], BLOCKSWORLD], keys, held
    )["problems"]
    assert over["low"] > 0
    shown = train_report._delta(over)
    assert f"**{shown}** (135 seeds, 61" in (TRAINING / "blocksworld" / "training.md").read_text()


def test_committed_blocksworld__gigpo_gains_on_trained_problems_only():
    """Issue 33, Blocksworld with a problem split: GiGPO from the split SFT model, its RL
    prompts from the same train part, against that SFT model on the eval seeds and the fresh
    ones, split by whether the run trained on the seed's problem; recomputed from the committed
    episodes and stage records, every row the one the notes print. It gains on trained
    problems (above 0 on the fresh seeds) and not on held-out ones."""
    run = train_report.SUMMARY_RUNS["Blocksworld"]["split"]
    records = _records(run)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 150), ("gigpo", 80)]
    sft_problems, trained = (train.problems_of(records[:n])[BLOCKSWORLD] for n in (1, 2))
    assert trained == sft_problems and len(trained) == 85  # RL prompts: SFT problems only
    notes = (TRAINING / "blocksworld" / "training.md").read_text()
    played = {  # each folder's problem keys and successes, read once
        where: (problems.run_problem_keys(TRAINING / where, BLOCKSWORLD),
                problems.run_successes(TRAINING / where))
        for where in (run["folder"], run["fresh"])
    }  # fmt: skip
    keys, fresh_keys = played[run["folder"]][0], played[run["fresh"]][0]
    assert list(fresh_keys) == eval_seeds(BLOCKSWORLD, 600)[300:]
    dealt = set(keys.values())
    found = {}
    for where, name, agent, keep in (
        (run["folder"], "eval, trained problems", run["RL"], trained.__contains__),
        (run["folder"], "eval, held-out problems", run["RL"], lambda k: k not in trained),
        (run["folder"], "eval, held-out problems, step 40", "smollm2-sft-gigpo-step40",
         lambda k: k not in trained),
        (run["fresh"], "fresh, trained problems", run["RL"], trained.__contains__),
        (run["fresh"], "fresh, problems never trained on", run["RL"], lambda k: k not in trained),
        (run["fresh"], "fresh, problems neither trained on nor dealt by an eval seed", run["RL"],
         lambda k: k not in trained and k not in dealt),
    ):  # fmt: skip
        dealt_by, successes = played[where]
        sft, rl = successes[run["SFT"], BLOCKSWORLD], successes[agent, BLOCKSWORLD]
        seeds = [seed for seed, key in dealt_by.items() if keep(key)]
        over = problems.compare(sft, rl, dealt_by, seeds)["problems"]
        found[name] = over
        sft_rate, rl_rate = _rate(sft, seeds), _rate(rl, seeds)
        shown = train_report._delta(over)
        if name.endswith("held-out problems"):
            shown = f"**{shown}**"
        row = (f"| {name} | {sft_rate:.3f} | {rl_rate:.3f} | {shown} "
               f"({len(seeds)} seeds, {over['problems']} problems) |")  # fmt: skip
        assert row in notes, row
    assert found["fresh, trained problems"]["low"] > 0
    for name in ("eval, held-out problems", "fresh, problems never trained on"):
        assert found[name]["low"] < 0 < found[name]["high"]


def test_committed_bird__sft_solves_no_held_out_question():
    """Issue 33, BIRD with a problem split: the SFT model trained on 19 of the 36 questions
    solves about two thirds of the eval seeds of those and none of the 17 held out, so it
    does not beat random there; recomputed from the committed episodes and stage record, with
    the figures the notes print."""
    env_id = train_report.FAMILIES["BIRD"]
    run = train_report.SUMMARY_RUNS["BIRD"]
    keys, held, successes = _split_sft_run(run, env_id)
    assert len(train.problems_of(_records(run))[env_id]) == 19
    assert len(held) == 135 and len({keys[seed] for seed in held}) == 17
    sft = successes[run["SFT"], env_id]
    seen = [seed for seed in keys if seed not in held]
    assert f"{_rate(sft, seen):.3f}" == "0.648"
    over = problems.compare(successes["random", env_id], sft, keys, held)["problems"]
    assert over["mean"] == over["low"] == over["high"] == 0.0
    assert (
        "| `smollm2-sft` | 0.357 | 0.648 | **0.000** |"
        in (TRAINING / "bird" / "README.md").read_text()
    )


BIRD_MINI_DEV = {
    "folder": "bird/minidev/leaderboard",
    "stages": ["bird/minidev/logs/sft/stage.json"],
    "SFT": "smollm2-sft",
}


@pytest.mark.filterwarnings("ignore:BIRD. skipped")  # 8 of the Mini-Dev's 11 databases
def test_committed_bird__the_mini_dev_try_solves_no_held_out_question(monkeypatch, mini_dev):
    """Issue 33, BIRD's fair try on its own questions: SFT on the Mini-Dev questions (3 of its
    databases, in ``../shared/data``) of a seeded half, eval on 300 seeds; recomputed from the
    committed episodes and stage record (the env built from the sample, as the run recorded
    it: relative to the repository root), with the figures the notes print."""
    monkeypatch.chdir(ROOT)  # the run recorded the sample's path relative to the root
    env_id, run = "grl/BIRD-v0", BIRD_MINI_DEV
    settings = json.loads((TRAINING / run["folder"] / "manifest.json").read_text())["settings"]
    overrides = {"data_path": "../shared/data/bird/mini_dev_sqlite.json"}
    assert settings["env_kwargs"][env_id]["overrides"] == overrides
    keys, held, successes = _split_sft_run(run, env_id)
    assert len(train.problems_of(_records(run))[env_id]) == 64
    assert len(held) == 159 and len({keys[seed] for seed in held}) == 69
    sft, seen = successes[run["SFT"], env_id], [seed for seed in keys if seed not in held]
    over = problems.compare(successes["random", env_id], sft, keys, held)["problems"]
    assert over["low"] <= 0  # SFT does not beat random on held-out questions
    readme = (TRAINING / "bird" / "README.md").read_text()
    rates = [_rate(sft, seeds) for seeds in (list(keys), seen, held)]
    assert "| `smollm2-sft` | {:.3f} | {:.3f} | **{:.3f}** |".format(*rates) in readme
    assert f"{over['mean']:+.3f} [{over['low']:+.3f}, {over['high']:+.3f}] (69 questions" in readme


def test_committed_webshop__sft_beats_random_on_goals_never_trained_on():
    """Issue 33, WebShop: the SFT model (300 oracle episodes as episode rows) against random
    on the eval seeds whose shopping goal no SFT episode dealt, recomputed from the committed
    episodes and stage record; the lower bound is above 0 and the figures are the notes'."""
    env_id = train_report.FAMILIES["WebShop"]
    run = train_report.SUMMARY_RUNS["WebShop"]
    records = _records(run)
    assert [(r["stage"], r["rows"], r["settings"]["sft_rows"]) for r in records] == [
        ("sft", 300, "episode")
    ]
    keys, held, successes = _held_out_eval(run, env_id, records)
    sft = successes[run["SFT"], env_id]
    over = problems.compare(successes["random", env_id], sft, keys, held)["problems"]
    assert over["low"] > 0
    notes = (TRAINING / "webshop" / "README.md").read_text()
    shown = f"**{train_report._delta(over)}** ({len(held)} seeds, {over['problems']} goals;"
    assert shown in notes, shown
    rates = [_rate(sft, seeds) for seeds in (list(keys), held)]
    assert f"| `smollm2-sft` | {rates[0]:.3f} | {rates[1]:.3f} |" in notes


def test_committed_tetris__gigpo_beats_sft_on_fresh_held_out_boards():
    """Issue 33, Tetris: the 80-step GiGPO model against its SFT model on the 300 eval seeds
    and on 300 fresh ones, none of whose problems (boards and pieces) any stage trained on or
    an eval seed dealt; recomputed from the committed episodes and stage records, both lower
    bounds above 0, the figures the notes print."""
    env_id = train_report.FAMILIES["Tetris"]
    run = train_report.SUMMARY_RUNS["Tetris"]
    records = _records(run)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 398), ("gigpo", 80)]
    trained = train.problems_of(records)[env_id]
    notes = (TRAINING / "tetris" / "README.md").read_text()
    keys, eval_over = _rl_minus_sft(run, env_id, run["folder"])
    fresh_keys, fresh_over = _rl_minus_sft(run, env_id, run["fresh"])
    assert list(fresh_keys) == eval_seeds(env_id, 600)[300:]
    assert not (set(keys.values()) | set(fresh_keys.values())) & trained
    assert not set(keys.values()) & set(fresh_keys.values())
    for over in (eval_over, fresh_over):
        assert over["low"] > 0
        shown = f"**{train_report._delta(over)}** (300 seeds"
        assert shown in notes, shown


def test_committed_sokoban__the_headline_from_its_episodes():
    """Issue 33, Sokoban: the 112-step GiGPO model against its SFT model on the 300 eval seeds
    (all and held-out problems) and on 300 fresh seeds (those whose level was neither trained
    on nor dealt by an eval seed), recomputed from the committed episodes and stage records;
    the figures are the ones the Sokoban notes print."""
    sokoban = "grl/Sokoban-v0"
    run = train_report.SUMMARY_RUNS["Sokoban"]
    records = _records(run)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 334), ("gigpo", 112)]
    trained = train.problems_of(records)[sokoban]
    notes = (TRAINING / "sokoban" / "README.md").read_text()
    folder, fresh = TRAINING / run["folder"], TRAINING / run["fresh"]
    keys, fresh_keys = (problems.run_problem_keys(f, sokoban) for f in (folder, fresh))
    assert list(keys) == eval_seeds(sokoban, 300)
    assert list(fresh_keys) == eval_seeds(sokoban, 600)[300:]
    seen = trained | set(keys.values())
    for name, where, dealt, seeds in (
        ("all", folder, keys, list(keys)),
        ("held out", folder, keys, [s for s, key in keys.items() if key not in trained]),
        ("fresh", fresh, fresh_keys, [s for s, key in fresh_keys.items() if key not in seen]),
    ):
        successes = problems.run_successes(where)
        sft, rl = successes["smollm2-sft", sokoban], successes["smollm2-sft-gigpo", sokoban]
        over = problems.compare(sft, rl, dealt, seeds)["problems"]
        shown = f"{train_report._delta(over)} ({len(seeds)} seeds, {over['problems']} problems)"
        assert shown in notes, (name, shown)
        if name == "fresh":
            # random on the same fresh seeds: SFT beats it, and RL beats SFT, both above 0
            floor = problems.compare(successes["random", sokoban], sft, dealt, seeds)["problems"]
            assert floor["low"] > 0 and over["low"] > 0


@pytest.mark.parametrize("family", ["Tetris", "GSM8K"])
def test_committed_sft__beats_random_and_zero_shot_on_unseen_problems(family):
    """Issue 33: the SFT model against random and the zero-shot model on the eval problems its
    run never trained on, recomputed from the committed episodes and stage records; the
    figures are the ones the family's notes print. GSM8K's demonstrations carry the solution's
    steps (``--sft-rationale``)."""
    env_id = train_report.FAMILIES[family]
    run = train_report.SUMMARY_RUNS[family]
    records = _records(run)
    assert records[0]["stage"] == "sft"
    if family == "GSM8K":
        assert records[0]["settings"]["sft_rationale"] == "True"
    trained = train.problems_of(records)[env_id]
    folder = TRAINING / run["folder"]
    keys = problems.run_problem_keys(folder, env_id)
    assert list(keys) == eval_seeds(env_id, 300)
    held = [seed for seed, key in keys.items() if key not in trained]
    successes = problems.run_successes(folder)
    notes = (TRAINING / family.lower() / "README.md").read_text()
    sft = successes[run["SFT"], env_id]
    for against in ("random", run["zero-shot"]):
        over = problems.compare(successes[against, env_id], sft, keys, held)["problems"]
        assert over["low"] > 0
        shown = f"{train_report._delta(over)} ({len(held)} seeds, {over['problems']} problems)"
        assert shown in notes, (against, shown)


def _gsm8k_rl_minus_sft_as_printed(run: dict, records: list[dict]) -> list[dict]:
    """A GSM8K run laid out as a :data:`train_report.SUMMARY_RUNS` entry whose stage records
    are ``records``: its RL model against its SFT model over problems, in its eval folder and
    in its fresh one (300 seeds each, none of whose problems a stage trained on), each
    difference as the GSM8K notes print it."""
    env_id = train_report.FAMILIES["GSM8K"]
    trained = train.problems_of(records)[env_id]
    notes = (TRAINING / "gsm8k" / "README.md").read_text()
    found = []
    for where in (run["folder"], run["fresh"]):
        keys, over = _rl_minus_sft(run, env_id, where)
        assert not set(keys.values()) & trained and len(keys) == 300
        shown = train_report._delta(over)
        assert shown.replace("-", "\u2212") in notes, shown
        found.append(over)
    return found


def test_committed_gsm8k__grpo_lowered_greedy_success():
    """Issue 33, GSM8K: the GRPO model against its SFT model on the 300 eval seeds and on 300
    fresh seeds, every problem held out (recomputed from the committed episodes and stage
    records); both differences are below 0 with their upper bounds, as the notes print."""
    run = train_report.SUMMARY_RUNS["GSM8K"]
    records = _records(run)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 250), ("grpo", 100)]
    eval_delta, fresh_delta = _gsm8k_rl_minus_sft_as_printed(run, records)
    assert eval_delta["high"] < 0 and fresh_delta["high"] < 0


#: the second GSM8K GRPO try (`gsm8k/README.md`, "A second GRPO try"), laid out as a
#: :data:`train_report.SUMMARY_RUNS` entry: its own SFT model, retrained by the same command
GSM8K_RETRY = {
    "folder": "gsm8k/retry/leaderboard",
    "stages": ["gsm8k/retry/logs/sft/stage.json", "gsm8k/retry/logs/grpo/stage.json"],
    "SFT": "smollm2-sft",
    "RL": "smollm2-sft-grpo",
    "fresh": "gsm8k/retry/fresh300",
}


def test_committed_gsm8k__a_second_grpo_try_lowered_it_too():
    """Issue 33, GSM8K: GRPO again, from an SFT model retrained by the same command, with
    groups of 8 at temperature 1.0, lr 5e-5 and KL 0.5, stopped by its time limit at step 32;
    against that SFT model on the 300 eval seeds and 300 fresh ones, every problem held out,
    recomputed from the committed episodes and stage records as the notes print them."""
    records = _records(GSM8K_RETRY)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 250), ("grpo", 32)]
    grpo = records[1]["settings"]
    assert (grpo["num_generations"], grpo["temperature"], grpo["rl_lr"]) == ("8", "1.0", "5e-05")
    assert records[1]["stopped_at_time_limit"]
    eval_delta, fresh_delta = _gsm8k_rl_minus_sft_as_printed(GSM8K_RETRY, records)
    assert eval_delta["mean"] < 0 and fresh_delta["high"] < 0


#: the third GSM8K try (`gsm8k/README.md`, "A third try: LUFFY"): LUFFY from the second try's
#: SFT model, laid out as a :data:`train_report.SUMMARY_RUNS` entry
GSM8K_LUFFY = {
    "folder": "gsm8k/luffy/leaderboard",
    "stages": ["gsm8k/retry/logs/sft/stage.json", "gsm8k/luffy/logs/luffy/stage.json"],
    "SFT": "smollm2-sft",
    "RL": "smollm2-sft-luffy",
    "fresh": "gsm8k/luffy/fresh300",
}


def _sft_weights(*runs: dict) -> set[str]:
    """The weights hashes the eval and fresh folders of ``runs`` pin for ``smollm2-sft``."""
    return {
        json.loads((TRAINING / where / "manifest.json").read_text())["pins"]["agents"][
            "smollm2-sft"
        ]["weights_sha256"]
        for run in runs
        for where in (run["folder"], run["fresh"])
    }


def test_committed_gsm8k__luffy_with_gold_solutions_did_not_beat_sft():
    """Issue 33, GSM8K: LUFFY (one oracle episode with its worked steps in each group of 8) from
    the second try's SFT model, the same SFT checkpoint in both folders; against it on the 300
    eval seeds (level) and 300 fresh ones (below), every problem held out, recomputed from the
    committed episodes and stage records as the notes print them."""
    records = _records(GSM8K_LUFFY)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 250), ("luffy", 36)]
    luffy = records[1]["settings"]
    settings = (luffy["luffy_k"], luffy["num_generations"], luffy["sft_rationale"])
    assert settings == ("1", "8", "True")
    # the second try's SFT model, not a retrained one
    assert len(_sft_weights(GSM8K_RETRY, GSM8K_LUFFY)) == 1
    eval_delta, fresh_delta = _gsm8k_rl_minus_sft_as_printed(GSM8K_LUFFY, records)
    assert eval_delta["low"] < 0 < eval_delta["high"] and fresh_delta["high"] < 0


#: the fourth GSM8K try (`gsm8k/README.md`, "A fourth try"): GRPO in 2 groups of 16 a step
#: from the second try's SFT model
GSM8K_GROUPS16 = {
    "folder": "gsm8k/groups16/leaderboard",
    "stages": ["gsm8k/retry/logs/sft/stage.json", "gsm8k/groups16/logs/grpo/stage.json"],
    "SFT": "smollm2-sft",
    "RL": "smollm2-sft-grpo",
    "fresh": "gsm8k/groups16/fresh300",
}


def test_committed_gsm8k__groups_of_16_lowered_greedy_success():
    """Issue 33, GSM8K: GRPO with 2 groups of 16 a step (the second try's 32 episodes, as
    larger groups) from the second try's SFT model, the same SFT checkpoint in both folders;
    below it on the 300 eval seeds and on 300 fresh ones, every problem held out, recomputed
    from the committed episodes and stage records as the notes print them."""
    records = _records(GSM8K_GROUPS16)
    assert [(r["stage"], r["steps"]) for r in records] == [("sft", 250), ("grpo", 30)]
    grpo = records[1]["settings"]
    assert (grpo["rl_prompts"], grpo["num_generations"]) == ("2", "16")
    # the second try's SFT model, not a retrained one
    assert len(_sft_weights(GSM8K_RETRY, GSM8K_GROUPS16)) == 1
    eval_delta, fresh_delta = _gsm8k_rl_minus_sft_as_printed(GSM8K_GROUPS16, records)
    assert eval_delta["high"] < 0 and fresh_delta["high"] < 0


def test_committed_multi_env__sft_against_each_specialist():
    """Issue 33, the multi-env model: one SFT model over the six families (48 oracle episodes
    of each) against each family's specialist SFT model on the 64 eval seeds both played,
    recomputed from the committed episodes and stage record; the figures are the notes' and
    the summary pairs the same seeds."""
    multi = train_report.MULTI_ENV_RUN
    record, _ = _records(multi)  # the SFT stage; the RL stage has its own test below
    assert (record["stage"], record["rows"], record["steps"]) == ("sft", 288, 72)
    assert sorted(record["train_seeds"]) == sorted(train_report.FAMILIES.values())
    trained = train.problems_of([record])
    folder = TRAINING / multi["folder"]
    mixed = problems.run_successes(folder)
    notes = (TRAINING / "multi" / "README.md").read_text()
    rows = train_report.multi_env_rows(TRAINING)
    evaluated = {env_id for _, env_id in mixed}
    for family, env_id in train_report.FAMILIES.items():
        if env_id not in evaluated:
            assert not rows[family]["SFT"] and f"| {family} | not evaluated" in notes
            continue
        run = train_report.SUMMARY_RUNS[family]
        keys = problems.run_problem_keys(folder, env_id)
        assert list(keys) == eval_seeds(env_id, 64)
        seeds = list(keys)
        alone = problems.run_successes(TRAINING / run["folder"])[run["SFT"], env_id]
        played = {agent: mixed[agent, env_id] for agent in ("random", multi["SFT"])}
        over = problems.compare(alone, played[multi["SFT"]], keys, seeds)["problems"]
        assert rows[family]["SFT"]["delta"] == over and rows[family]["SFT"]["seeds"] == 64
        rates = [_rate(won, seeds) for won in (played["random"], alone, played[multi["SFT"]])]
        held = sum(key not in trained[env_id] for key in keys.values())
        shown = (
            f"| {family} | {' | '.join(f'{rate:.3f}' for rate in rates)} | "
            f"{train_report._delta(over)} ({over['problems']} problems) | {held} |"
        )
        assert shown in notes, shown


def test_committed_multi_env__rl_against_its_sft_model():
    """Issue 33, the multi-env model's RL row: its GiGPO model against its own SFT model on the
    64 eval seeds per family both played, over every seed and over the seeds whose problem
    neither stage trained on, recomputed from the committed episodes and stage records; the
    figures are the notes' and the summary's RL column is that model."""
    multi = train_report.MULTI_ENV_RUN
    sft, rl = _records(multi)
    assert (rl["stage"], rl["steps"], rl["stopped_at_time_limit"]) == ("gigpo", 18, True)
    assert rl["settings"]["rl_trim_padding"] == "True"  # the record keeps settings as text
    trained = train.problems_of([sft, rl])
    folder = TRAINING / multi["folder"]
    won = problems.run_successes(folder)
    notes = (TRAINING / "multi" / "README.md").read_text()
    rows = train_report.multi_env_rows(TRAINING)
    for family, env_id in train_report.FAMILIES.items():
        if (multi["RL"], env_id) not in won:
            assert not rows[family]["RL"] and f"| {family} | not evaluated" in notes
            continue
        keys = problems.run_problem_keys(folder, env_id)
        seeds = list(keys)
        before, after = won[multi["SFT"], env_id], won[multi["RL"], env_id]
        every = problems.compare(before, after, keys, seeds)["problems"]
        held = [seed for seed in seeds if keys[seed] not in trained[env_id]]
        unseen = problems.compare(before, after, keys, held)["problems"]
        shown = (
            f"| {family} | {_rate(before, seeds):.3f} | {_rate(after, seeds):.3f} | "
            f"{train_report._delta(every)} ({every['problems']} problems) | "
            f"{train_report._delta(unseen)} ({len(held)} seeds, {unseen['problems']} problems) |"
        )
        assert shown in notes, shown
        if train_report.SUMMARY_RUNS[family].get("RL"):  # the summary pairs it with the specialist
            assert rows[family]["RL"]["multi"] == _rate(after, seeds)
