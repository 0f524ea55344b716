"""agent_envs.benchmarks.train: seeds, flags, and the whole pipeline on a tiny model (slow)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from agent_envs.adapters.trl.allocator import loaded_allocator
from agent_envs.benchmarks import train
from agent_envs.benchmarks.leaderboard import eval_seeds


def test_train__seeds_are_disjoint_from_the_published_eval_seeds():
    for env_id in ("grl/Sokoban-v0", "grl/Blocksworld-v0"):
        seeds = train.train_seeds(env_id, 2_000)
        assert len(set(seeds)) == 2_000
        assert not set(seeds) & set(eval_seeds(env_id, 10_000))
        assert not set(seeds) & set(train.train_seeds(env_id, 2_000, stream=1))
        assert seeds == train.train_seeds(env_id, 2_000)  # the same in every process


def test_train__flags_fill_the_args_dataclass():
    args = train.parse_args(
        ["--envs", "grl/Sokoban-v0", "--rl-steps", "3", "--no-lora", "--out", "x", "--threads", "2"]
    )
    assert args.envs == ["grl/Sokoban-v0"] and args.rl_steps == 3 and args.lora is False
    assert args.out == Path("x") and args.threads == 2
    assert args.stages == list(train.STAGES)


def test_train__device_flag_resolves_or_names_itself():
    import torch
    from agent_envs.adapters.engines.device import resolve_device

    assert train.parse_args(["--device", "cuda"]).device == "cuda"
    assert train.Args().device == "auto"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(SystemExit, match="--device: unknown 'tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--device cuda: torch sees no GPU"):
            resolve_device("cuda")


def test_train__time_limit_ends_the_stage_after_the_step_that_reaches_it():
    from transformers import TrainerControl, TrainerState

    state, control = TrainerState(global_step=3, max_steps=10), TrainerControl()
    unlimited = train.StageClock(None)
    unlimited.callback(0.0).on_step_end(None, state, control)
    assert not control.should_training_stop and not unlimited.stopped
    clock = train.StageClock(None)
    callback = clock.callback(60.0)
    callback.on_step_end(None, state, control)
    assert not control.should_training_stop  # a minute has not passed
    clock.before = (60.0, 0.0)  # as if resumed from a checkpoint a minute into the stage
    callback.on_step_end(None, state, control)
    assert control.should_training_stop and clock.stopped
    last, control = train.StageClock(None), TrainerControl()
    last.before = (60.0, 0.0)
    control.should_training_stop = True  # the trainer's own stop at max_steps
    last.callback(60.0).on_step_end(None, TrainerState(global_step=10, max_steps=10), control)
    assert not last.stopped  # it reached its last step: not cut short


def test_train__generation_dtype_resolves_or_names_itself():
    from agent_envs.adapters.engines.device import resolve_device

    on_cpu = resolve_device("auto") == "cpu"
    assert train.generation_dtype(train.Args()) == ("bfloat16" if on_cpu else None)
    assert train.generation_dtype(train.Args(device="cpu")) == "bfloat16"
    assert train.generation_dtype(train.Args(generation_dtype="model")) is None
    assert train.generation_dtype(train.Args(generation_dtype="float16")) == "float16"
    with pytest.raises(SystemExit, match="--generation-dtype: generation dtype must name"):
        train.generation_dtype(train.Args(generation_dtype="int8"))


def test_train__rl_micro_batch_must_divide_the_step():
    assert train.rl_batch(train.Args(rl_prompts=4, num_generations=4)) == (16, 16)
    assert train.rl_batch(train.Args(rl_prompts=4, num_generations=4, rl_micro_batch=4)) == (
        16,
        4,
    )
    for bad in (3, -2, 32):
        with pytest.raises(SystemExit, match=f"--rl-micro-batch: {bad} does not divide the 16"):
            train.rl_batch(train.Args(rl_prompts=4, num_generations=4, rl_micro_batch=bad))
    with pytest.raises(SystemExit, match="--rl-micro-batch"):  # refused before any stage runs
        train.main(train.Args(out=Path("unused"), stages=["gigpo"], rl_micro_batch=3))


def _luffy_on_a_tiny_model(out: Path, **settings: Any) -> tuple[Any, Any, list[dict]]:
    """A LUFFY stage of 2 groups x 2 Sokoban episodes from a tiny random Qwen2 standing in
    for the SFT model: (SFT stage, LUFFY stage, its logged training steps). The oracle episode
    in each group gives the random model's episodes non-zero advantages."""
    from tests.adapters.conftest import build_model, build_tokenizer

    args = train.Args(
        out=out,
        envs=["grl/Sokoban-v0"],
        bf16=False,
        rl_prompts=2,
        num_generations=2,
        max_new_tokens=8,
        max_total_tokens=600,
        generation_dtype="model",
        progress=False,
        **settings,
    )
    tokenizer = build_tokenizer()
    sft = train.Stage(args.out, "sft")
    build_model(tokenizer).save_pretrained(sft.model_dir)
    tokenizer.save_pretrained(sft.model_dir)
    stage = train.Stage(args.out, "luffy")
    stage.dir.mkdir(parents=True)
    train.run_rl(args, stage, sft)
    rows = [json.loads(line) for line in (stage.dir / "log.jsonl").open()]
    return sft, stage, [row for row in rows if "loss" in row]


@pytest.mark.slow
def test_train__rl_micro_batches_train_as_one_pass(tmp_path, monkeypatch):
    """One LUFFY step over 4 episodes in one pass and in 4 passes of 1 (gradient
    accumulation): the same episodes, and the same update up to float rounding. Plain SGD,
    so the update is the gradient itself (Adam's first step is ~lr * sign(grad), blind to a
    wrongly scaled loss)."""
    import torch
    from safetensors.torch import load_file

    common = train._common_config
    monkeypatch.setattr(train, "_common_config", lambda *a: {**common(*a), "optim": "sgd"})
    updates = {}
    for micro in (0, 1):
        sft, stage, logged = _luffy_on_a_tiny_model(
            tmp_path / f"micro{micro}",
            lora=False,
            rl_steps=1,
            rl_micro_batch=micro,
            rl_lr=1.0,  # SGD: the update is minus the gradient
        )
        before = load_file(sft.model_dir / "model.safetensors")
        after = load_file(stage.model_dir / "model.safetensors")
        updates[micro] = {name: after[name] - before[name] for name in before}
        updates[micro]["rewards"] = [row["reward"] for row in logged]
    one, many = updates[0], updates[1]
    assert one.pop("rewards") == many.pop("rewards")  # the same episodes
    moved = max(float(delta.abs().max()) for delta in one.values())
    assert moved > 1e-2  # the step trained
    for name, delta in one.items():
        assert torch.allclose(delta, many[name], rtol=1e-4, atol=moved * 1e-5), name


@pytest.mark.slow
def test_train__sft_micro_batches_train_as_one_pass(tmp_path, monkeypatch):
    """SFT steps over 4 rows of different lengths in one pass and in 2 passes of 2 (gradient
    accumulation): the same update up to float rounding. Plain SGD, as for RL; two steps, as
    the schedule's warm-up gives the first a learning rate of 0."""
    import torch
    from safetensors.torch import load_file

    from tests.adapters.conftest import build_model, build_tokenizer

    common = train._common_config
    monkeypatch.setattr(train, "_common_config", lambda *a: {**common(*a), "optim": "sgd"})
    tokenizer = build_tokenizer()
    base = tmp_path / "base"
    build_model(tokenizer).save_pretrained(base)
    tokenizer.save_pretrained(base)
    before = load_file(base / "model.safetensors")
    updates = {}
    for micro in (0, 2):
        args = train.Args(
            out=tmp_path / f"micro{micro}", stages=["sft"], envs=["grl/GSM8K-v0"],
            model=str(base), bf16=False, lora=False, sft_episodes=8, sft_epochs=1.0,
            sft_batch_size=4, sft_micro_batch=micro, sft_lr=1.0, max_total_tokens=1024,
            progress=False,
        )  # fmt: skip
        train.main(args)
        assert json.loads((args.out / "sft" / "stage.json").read_text())["steps"] == 2
        after = load_file(args.out / "sft" / "model" / "model.safetensors")
        updates[micro] = {name: after[name] - before[name] for name in before}
    one, many = updates[0], updates[2]
    moved = max(float(delta.abs().max()) for delta in one.values())
    assert moved > 1e-2  # the step trained
    for name, delta in one.items():
        assert torch.allclose(delta, many[name], rtol=1e-4, atol=moved * 1e-5), name


def test_train__sft_micro_batch_must_divide_the_batch(tmp_path):
    with pytest.raises(SystemExit, match="--sft-micro-batch: 3 does not divide --sft-batch-size 8"):
        train.main(train.Args(out=tmp_path, stages=["sft"], sft_micro_batch=3))


def test_train__rl_beta_must_be_a_finite_non_negative_weight():
    assert train.kl_beta(train.Args(rl_beta=0.5)) == 0.5
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(SystemExit, match="--rl-beta: the KL weight"):
            train.kl_beta(train.Args(rl_beta=bad))
    with pytest.raises(SystemExit, match="--rl-beta"):  # refused before any stage runs
        train.main(train.Args(out=Path("unused"), stages=["gigpo"], rl_beta=-1.0))


def test_train__luffy_flags_reach_the_advantage_config_and_are_checked():
    config = train.advantage_config(
        train.Args(luffy_estimator="gigpo", luffy_start="recovery", luffy_k=2), "luffy"
    )
    assert (config.estimator, config.oracle_start, config.off_policy) == ("gigpo", "recovery", 2)
    assert train.advantage_config(train.Args(luffy_estimator="gigpo"), "grpo").off_policy == 0
    assert train.advantage_config(train.Args(), "luffy").oracle_rationale  # as the SFT rows
    assert not train.advantage_config(train.Args(sft_rationale=False), "luffy").oracle_rationale
    with pytest.raises(SystemExit, match="--luffy-start"):
        train.advantage_config(train.Args(luffy_start="midway"), "luffy")
    with pytest.raises(SystemExit, match="--luffy-estimator"):  # refused before any stage runs
        train.main(train.Args(out=Path("unused"), stages=["luffy"], luffy_estimator="rloo"))


@pytest.mark.slow
def test_train__rl_beta_penalises_the_kl_to_the_sft_model(tmp_path):
    """Two LUFFY steps with LoRA and ``--rl-beta``: the reference is the SFT model (the adapter
    switched off), so the KL is 0 at the first step (a fresh LoRA adapter changes nothing) and
    positive once the adapter has trained; without the flag TRL logs no KL."""
    logged = {}
    for beta in (0.0, 0.5):
        _, _, logged[beta] = _luffy_on_a_tiny_model(
            tmp_path / f"beta{beta}", rl_steps=2, rl_lr=0.05, rl_beta=beta
        )
    assert all("kl" not in row for row in logged[0.0])
    first, second = (row["kl"] for row in logged[0.5])
    assert first == pytest.approx(0.0, abs=1e-7)
    assert second > 1e-6


def test_train__unknown_stage_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown stage 'ppo'"):
        train.main(train.Args(out=tmp_path, stages=["ppo"]))


def test_train__agent_names_are_the_issue_names():
    names = train.agent_names(train.Args())
    assert names == {
        "base": "smollm2",
        "sft": "smollm2-sft",
        "grpo": "smollm2-sft-grpo",
        "gigpo": "smollm2-sft-gigpo",
        "luffy": "smollm2-sft-luffy",
    }
    assert train.agent_names(train.Args(model="/ckpt"))["sft"] == "base-sft"


@pytest.mark.slow
def test_train__pipeline_on_a_tiny_model_resumes_and_validates(tmp_path):
    """SFT, one GRPO and one LUFFY step, the leaderboard eval and the curves, on a tiny random
    Qwen2; a second run finds every stage done and plays nothing again. The step-1 models each
    RL stage keeps play in the eval as their own agents, and the report checks every eval
    problem against the recorded training seeds."""
    from agent_envs.benchmarks import leaderboard

    from tests.adapters.conftest import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    base = tmp_path / "base"
    build_model(tokenizer).save_pretrained(base)
    tokenizer.save_pretrained(base)
    args = train.Args(
        out=tmp_path / "run",
        stages=["sft", "grpo", "luffy", "eval", "curves"],
        envs=["grl/Sokoban-v0"],
        model=str(base),
        bf16=False,
        sft_episodes=4,
        sft_epochs=1.0,
        sft_batch_size=4,
        rl_steps=1,
        rl_prompts=1,
        num_generations=2,
        keep_steps=[1],
        max_new_tokens=8,
        max_total_tokens=600,
        eval_seeds=2,
        eval_batch_size=4,
        eval_out=tmp_path / "eval",
        curves_out=tmp_path / "curves",
        progress=False,
    )
    train.main(args)
    for stage in ("sft", "grpo", "luffy"):
        record = json.loads((args.out / stage / "stage.json").read_text())
        assert record["wall_s"] > 0 and record["cpu_s"] > 0
        assert record["stopped_at_time_limit"] is False
        assert record["allocator"] == loaded_allocator()
        assert (args.out / stage / "model" / "config.json").exists()
    assert json.loads((args.out / "sft" / "stage.json").read_text())["rows"] >= 4
    luffy_log = (args.out / "luffy" / "log.jsonl").read_text()
    assert '"off_policy/fraction": 0.5' in luffy_log  # one oracle row in each group of 2
    summary = json.loads((args.eval_out / "summary.json").read_text())
    agents = set(summary["per_env"]["grl/Sokoban-v0"])
    assert agents == {"random", "oracle", "base", "base-sft", "base-sft-grpo", "base-sft-luffy",
                      "base-sft-grpo-step1", "base-sft-luffy-step1"}  # fmt: skip
    sft_record = json.loads((args.out / "sft" / "stage.json").read_text())
    assert sft_record["train_seeds"] == {"grl/Sokoban-v0": train.train_seeds("grl/Sokoban-v0", 4)}
    grpo_record = json.loads((args.out / "grpo" / "stage.json").read_text())
    assert grpo_record["train_seeds"] == {"grl/Sokoban-v0": train.train_seeds(
        "grl/Sokoban-v0", 1, stream=1)}  # fmt: skip
    assert leaderboard.validate(args.eval_out) == []
    assert (args.curves_out / "curve_success.png").stat().st_size > 1_000
    assert (args.curves_out / "curve_eval.png").stat().st_size > 1_000
    report = (args.curves_out / "training.md").read_text()
    assert "### grl/Sokoban-v0: held-out problems" in report
    assert "2 eval seeds deal 2 distinct problems; 0 of them were trained on, 2 are held out" in (
        report
    )
    assert "| `base-sft-grpo-step1` |" in report.split("held-out problems")[1]
    allocator = "" if loaded_allocator() == "system" else f", {loaded_allocator()}"
    assert (
        f"| grpo | `base-sft-grpo` | {train.device_name(args.device)}{allocator} |" in report
        and "| `base-sft-luffy` |" in report
    )
    mtime = (args.out / "grpo" / "stage.json").stat().st_mtime
    train.main(dataclasses.replace(args, stages=["sft", "grpo", "luffy"]))
    assert (args.out / "grpo" / "stage.json").stat().st_mtime == mtime  # not trained again

    # more RL steps later: the stage continues from its checkpoint, and its clock with it
    shutil.rmtree(args.out / "grpo" / "model")
    (args.out / "grpo" / "stage.json").unlink()
    saved = args.out / "grpo" / "checkpoints" / "checkpoint-1" / train.StageClock.FILE
    assert json.loads(saved.read_text())["cpu_s"] > 0
    began = time.process_time()
    train.main(dataclasses.replace(args, stages=["grpo"], rl_steps=2))
    continuation_cpu = time.process_time() - began
    record = json.loads((args.out / "grpo" / "stage.json").read_text())
    assert record["steps"] == 2
    assert record["cpu_s"] > continuation_cpu  # the first step's time is counted too
    logged = [json.loads(line) for line in (args.out / "grpo" / "log.jsonl").open()]
    assert [row["step"] for row in logged if "loss" in row] == [1, 2]
    # TRL forwards the rollout's env ids to the reward functions, which log each env's mean
    assert all(
        row["episodes/success/grl/Sokoban-v0"] == row["rewards/success_reward/mean"]
        and row["episodes/seconds/grl/Sokoban-v0"] > 0
        for row in logged if "loss" in row
    )  # fmt: skip


def test_train__every_env_generates_from_one_shared_model_copy(monkeypatch):
    """Two envs' rollout functions share one bfloat16 copy (one deep copy and merge per
    optimizer step, one copy in memory), and each hands it to the trainer's engine."""
    import agent_envs.adapters.trl
    import agent_envs.adapters.trl.rollout

    given, engines = [], []
    make_rollout_func = agent_envs.adapters.trl.make_rollout_func

    def recording(env_id, **kwargs):
        given.append(kwargs["generation_dtype"])
        return make_rollout_func(env_id, **kwargs)

    def engine_of(trainer, generation_copy=None):
        engines.append(generation_copy)
        raise RuntimeError("stop before playing")

    monkeypatch.setattr(agent_envs.adapters.trl, "make_rollout_func", recording)
    monkeypatch.setattr(agent_envs.adapters.trl.rollout, "_trainer_engine", engine_of)
    envs = ["grl/Sokoban-v0", "grl/Blocksworld-v0"]
    args = train.Args(envs=envs, device="cpu", generation_dtype="bfloat16")
    rollout = train.rollout_func_of(args, "grpo")
    assert len(given) == 2 and given[0] is given[1]
    assert isinstance(given[0], agent_envs.adapters.trl.GenerationCopy)
    for env_id in envs:
        with pytest.raises(RuntimeError, match="stop before playing"):
            rollout([agent_envs.adapters.trl.episode_key(env_id, 1)], None)
    assert engines == [given[0], given[0]]
    train.rollout_func_of(dataclasses.replace(args, generation_dtype="model"), "grpo")
    assert given[2:] == [None, None]


@pytest.mark.slow
def test_train__keep_steps_saves_the_intermediate_models_merged(tmp_path):
    """``--keep-steps 1`` keeps the step-1 model of a 2-step stage as a plain checkpoint
    folder, LoRA merged, with other weights than the final model's."""
    import torch
    from safetensors.torch import load_file

    _, stage, logged = _luffy_on_a_tiny_model(
        tmp_path, rl_steps=2, keep_steps=[1], rl_lr=1e-2, lora=True
    )
    assert [row["step"] for row in logged] == [1, 2]
    kept = stage.kept_models()
    assert list(kept) == [1] and kept[1] == stage.dir / "model-step1"
    step1 = load_file(kept[1] / "model.safetensors")
    final = load_file(stage.model_dir / "model.safetensors")
    assert step1.keys() == final.keys()
    assert not any("lora" in name for name in step1)  # merged: a plain checkpoint
    assert any(not torch.equal(step1[name], final[name]) for name in final)


def _prepared_sft_rows(tmp_path: Path, rows: str, env_id: str, seeds: list[int]) -> list[dict]:
    """TRL's prepared training rows (``input_ids``, ``labels``) of ``--sft-rows rows`` on a
    tiny tokenizer: what ``SFTTrainer`` would train on."""
    import datasets
    from agent_envs.adapters.sft import sft_chat_template
    from trl import SFTConfig, SFTTrainer

    from tests.adapters.conftest import build_model, build_tokenizer, cpu_run_settings

    tokenizer = build_tokenizer()
    if rows == "episode":
        tokenizer.chat_template = sft_chat_template(tokenizer)
    table, success = train.oracle_sft_rows(env_id, seeds, rows=rows)
    assert success == 1.0
    config = SFTConfig(
        **cpu_run_settings(tmp_path / rows, max_length=4096),
        completion_only_loss=rows == "turn",
        assistant_only_loss=rows == "episode",
    )
    trainer = SFTTrainer(
        model=build_model(tokenizer),
        processing_class=tokenizer,
        train_dataset=datasets.Dataset.from_list(table),
        args=config,
    )
    return [{"input_ids": r["input_ids"], "labels": r["labels"]} for r in trainer.train_dataset]


def test_train__episode_rows_score_each_reply_after_the_same_history_as_turn_rows(tmp_path):
    """``--sft-rows episode``: one row per Tetris episode scores the tokens its turn rows score,
    each after the same history, except the newline the template writes after each
    end-of-turn token (the turn rows' completion runs to the end of the text); the history of
    every turn is in the row once, so the rows hold far fewer tokens."""
    from tests.adapters.conftest import build_tokenizer

    env_id = "grl/Tetris-4x4-cell-v0"
    seeds = train.train_seeds(env_id, 3)
    turns = _prepared_sft_rows(tmp_path, "turn", env_id, seeds)
    episodes = _prepared_sft_rows(tmp_path, "episode", env_id, seeds)
    assert len(episodes) == 3 and len(turns) > 3  # multi-turn episodes
    newline = build_tokenizer()("\n")["input_ids"]
    scored_by_turns = [set() for _ in episodes]
    owner, previous = 0, len(turns[0]["input_ids"])
    for row in turns:  # in episode order, each episode's turns in turn order
        ids, labels = row["input_ids"], row["labels"]
        scored = [i for i, label in enumerate(labels) if label != -100]
        if len(ids) < previous:  # a first turn: the history starts again
            owner += 1
        previous = len(ids)
        # the turn's history and reply are the start of its episode's row
        assert episodes[owner]["input_ids"][: len(ids)] == ids
        assert scored == list(range(scored[0], len(ids)))  # the completion: the row's tail
        assert ids[-len(newline) :] == newline
        scored_by_turns[owner].update(scored[: -len(newline)])
    assert owner == len(episodes) - 1
    for episode, expected in zip(episodes, scored_by_turns, strict=True):
        scored = {i for i, label in enumerate(episode["labels"]) if label != -100}
        assert scored == expected
        assert all(episode["labels"][i] == episode["input_ids"][i] for i in scored)
    tokens = {name: sum(len(r["input_ids"]) for r in rows)
              for name, rows in (("turn", turns), ("episode", episodes))}  # fmt: skip
    assert tokens["episode"] < 0.6 * tokens["turn"]


def test_train__sft_rows_flag_is_checked(tmp_path):
    with pytest.raises(SystemExit, match="--sft-rows: choose from"):
        train.main(train.Args(out=tmp_path, stages=["sft"], sft_rows="trajectory"))


@pytest.mark.slow
def test_train__episode_rows_train_and_the_model_keeps_its_own_chat_template(tmp_path):
    """An SFT stage on episode rows trains one row per oracle episode (its loss logged) and
    saves the model with the tokenizer's own chat template, not the marked training one."""
    from agent_envs.adapters.sft import SMOLLM2_CHAT_TEMPLATE
    from transformers import AutoTokenizer

    from tests.adapters.conftest import build_model, build_tokenizer

    tokenizer = build_tokenizer(SMOLLM2_CHAT_TEMPLATE)  # no {% generation %} markers of its own
    base = tmp_path / "base"
    build_model(tokenizer).save_pretrained(base)
    tokenizer.save_pretrained(base)
    args = train.Args(
        out=tmp_path / "run", stages=["sft"], envs=["grl/Tetris-4x4-cell-v0"], model=str(base),
        bf16=False, sft_rows="episode", sft_episodes=4, sft_epochs=1.0, sft_batch_size=2,
        max_total_tokens=2048, progress=False,
    )  # fmt: skip
    train.main(args)
    record = json.loads((args.out / "sft" / "stage.json").read_text())
    assert record["rows"] == 4 and record["steps"] == 2 and record["first_loss"] > 0
    assert record["settings"]["sft_rows"] == "episode"
    saved = AutoTokenizer.from_pretrained(args.out / "sft" / "model")
    assert saved.chat_template == SMOLLM2_CHAT_TEMPLATE
