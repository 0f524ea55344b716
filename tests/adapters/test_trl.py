"""TRL glue: the episode dataset, the rollout_func contract, and two real GRPO steps on CPU."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("trl")
pytest.importorskip("torch")

from agent_envs.adapters.engines.scripted import oracle_engine
from agent_envs.adapters.trl import (
    episode_key,
    episode_return_reward,
    make_environment_factory,
    make_episode_dataset,
    make_rollout_func,
    make_tool_dataset,
    success_reward,
)


def test_trl__episode_dataset_keys_one_episode_per_row():
    dataset = make_episode_dataset("grl/Sokoban-v0", seeds=[5, 6, 7])
    assert dataset.column_names == ["prompt", "env_id", "seed", "instructions"]
    assert dataset["prompt"] == [episode_key("grl/Sokoban-v0", seed) for seed in (5, 6, 7)]
    assert json.loads(dataset["prompt"][1]) == {"env_id": "grl/Sokoban-v0", "seed": 6}
    assert dataset["instructions"][0].startswith("You are playing Sokoban.")


def test_trl__episode_dataset_rejects_bad_env_kwargs():
    with pytest.raises(ValueError, match="width"):
        make_episode_dataset("grl/Sokoban-v0", seeds=[1], width=-3)


def test_trl__rollout_func_returns_one_row_per_prompt_and_groups_share_a_start(tokenizer):
    seen = []
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=32,
        max_total_tokens=2048,
        engine=oracle_engine(tokenizer=tokenizer),
        on_trajectories=seen.extend,
    )
    prompts = [episode_key("grl/Sokoban-v0", seed) for seed in (1, 1, 2, 2)]
    output = rollout(prompts, trainer=None)
    assert set(output) == {
        "prompt_ids", "completion_ids", "logprobs", "env_mask", "episode_return", "success",
        "num_turns", "engine_error", "env_id", "rollout_seconds",
    }  # fmt: skip
    assert all(len(values) == 4 for values in output.values())
    assert output["prompt_ids"][0] == output["prompt_ids"][1] != output["prompt_ids"][2]
    assert [trajectory.group_id for trajectory in seen] == [0, 0, 1, 1]
    assert output["success"] == [True] * 4
    for ids, mask, logprobs in zip(
        output["completion_ids"], output["env_mask"], output["logprobs"], strict=True
    ):
        assert len(ids) == len(mask) == len(logprobs)
        assert mask[0] == 1 and mask[-1] == 1
        assert ids[-1] == tokenizer.eos_token_id
    assert output["num_turns"] == [2, 2, 1, 1]  # seed 1 needs 7 moves: two turns of <= 5
    assert 0 in output["env_mask"][0] and 0 not in output["env_mask"][2]
    assert output["episode_return"] == [trajectory.episode_return for trajectory in seen]
    assert output["engine_error"] == [False] * 4


def test_trl__rollout_func_rejects_a_prompt_that_is_not_an_episode_key(tokenizer):
    rollout = make_rollout_func("grl/Sokoban-v0", engine=oracle_engine(tokenizer=tokenizer))
    with pytest.raises(ValueError, match="not an episode key"):
        rollout(["Solve this Sokoban level"], trainer=None)


def test_trl__reward_functions_read_the_extra_fields():
    assert episode_return_reward(["a", "b"], episode_return=[1.5, -0.2]) == [1.5, -0.2]
    assert success_reward(["a", "b"], success=[True, False]) == [1.0, 0.0]


def test_trl__route_by_env_keeps_the_prompt_order_and_rewards_log_each_env(tokenizer):
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.trl import route_by_env

    envs = ("grl/Sokoban-v0", "grl/Blocksworld-v0")
    random, oracle = random_engine(0, tokenizer=tokenizer), oracle_engine(tokenizer=tokenizer)
    rollout = route_by_env({
        envs[0]: make_rollout_func(envs[0], max_turns=2, engine=random),
        envs[1]: make_rollout_func(envs[1], engine=oracle),
    })  # fmt: skip
    prompts = [episode_key(envs[index % 2], seed) for index, seed in enumerate((5, 7, 6, 8))]
    output = rollout(prompts, trainer=None)
    assert output["env_id"] == [envs[0], envs[1], envs[0], envs[1]]
    assert output["success"][1::2] == [True, True]  # the oracle's rows, where they were asked
    logged = {}
    errors = [False, False, True, False]  # the third row (Sokoban) left out
    success_reward([""] * 4, output["success"], errors, output["env_id"], logged.__setitem__)
    episode_return_reward(
        [""] * 4,
        output["episode_return"],
        engine_error=errors,
        env_id=output["env_id"],
        rollout_seconds=output["rollout_seconds"],
        log_metric=logged.__setitem__,
    )
    seconds = output["rollout_seconds"]
    assert seconds[0] == seconds[2] > 0 and seconds[1] == seconds[3] > 0  # each env's batch
    assert logged == {
        "episodes/engine_errors": 1.0,
        f"episodes/success/{envs[0]}": float(output["success"][0]),
        f"episodes/success/{envs[1]}": 1.0,
        f"episodes/return/{envs[0]}": pytest.approx(output["episode_return"][0]),
        f"episodes/return/{envs[1]}": pytest.approx(sum(output["episode_return"][1::2]) / 2),
        f"episodes/seconds/{envs[0]}": pytest.approx(seconds[0]),
        f"episodes/seconds/{envs[1]}": pytest.approx(seconds[1]),
    }


def test_trl__environment_factory_plays_the_env_as_a_tool():
    factory = make_environment_factory("grl/Sokoban-v0")
    assert factory.__name__ == "SokobanTool"
    assert make_environment_factory("grl/Sokoban-8x8-v0").__name__ == "Sokoban8x8Tool"
    assert "Push every box onto a target." in factory.play.__doc__
    environment = factory()
    observation = environment.reset(seed=1, prompt="ignored")
    assert "P" in observation
    actions = environment.env.unwrapped.oracle_actions()
    environment.play("<answer>" + " || ".join(actions[:5]) + "</answer>")
    environment.play("<answer>" + " || ".join(actions[5:]) + "</answer>")
    assert environment.done and environment.info["success"]
    assert environment.get_reward() == pytest.approx(10.3)


def test_trl__tool_dataset_has_chat_prompts_and_seeds():
    dataset = make_tool_dataset("grl/Sokoban-v0", seeds=[4, 5])
    assert dataset["seed"] == [4, 5]
    (message,) = dataset["prompt"][0]
    assert message["role"] == "user" and "play tool" in message["content"]


def test_trl__two_grpo_steps_on_sokoban_with_the_env_mask_in_the_loss(
    tmp_path, tokenizer, tiny_model
):
    import copy

    import torch
    from trl import GRPOConfig, GRPOTrainer

    captured = []
    trajectories = []

    class RecordingTrainer(GRPOTrainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            captured.append(
                {
                    "tool_mask": inputs["tool_mask"].clone(),
                    "completion_mask": inputs["completion_mask"].clone(),
                }
            )
            loss = super().compute_loss(model, inputs, *args, **kwargs)
            captured[-1]["loss"] = float(loss.detach())
            return loss

    def length_bonus(completions, **_):
        """Varies within a group (a random model's episodes all earn the same env return),
        so advantages are non-zero and the step really updates the weights."""
        return [len(str(completion)) / 1000 for completion in completions]

    model = copy.deepcopy(tiny_model)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        max_completion_length=96,
        temperature=1.0,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = RecordingTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[episode_return_reward, length_bonus],
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(8)),
        rollout_func=make_rollout_func(
            "grl/Sokoban-v0",
            max_new_tokens=12,
            max_total_tokens=400,
            max_turns=3,
            on_trajectories=trajectories.extend,
        ),
        args=args,
    )
    trainer.train()
    assert len(captured) == 2
    for record in captured:
        assert math.isfinite(record["loss"])
        tool_mask, completion_mask = record["tool_mask"], record["completion_mask"]
        # env tokens reached the loss as zeros of the mask inside real (unpadded) tokens
        assert ((tool_mask == 0) & (completion_mask == 1)).any()
        assert ((tool_mask == 1) & (completion_mask == 1)).any()
    # each batch's env mask is exactly the one the rollouts produced
    batch = trajectories[:4]
    model_tokens = sorted(sum(trajectory.env_mask) for trajectory in batch)
    first = captured[0]
    assert (
        sorted((first["tool_mask"] * first["completion_mask"]).sum(dim=1).tolist()) == model_tokens
    )
    # rewards are the env's episode returns
    key = "rewards/episode_return_reward/mean"
    logged = [entry for entry in trainer.state.log_history if key in entry]
    assert len(logged) == 2
    for step, entry in enumerate(logged):
        returns = [t.episode_return for t in trajectories[4 * step : 4 * step + 4]]
        assert entry[key] == pytest.approx(np.mean(returns), abs=1e-5)
    assert all(trajectory.num_turns >= 1 for trajectory in trajectories)
    assert any(
        not torch.equal(old, new.detach())
        for old, new in zip(before, model.parameters(), strict=True)
    )


def _model_token_values(output, row):
    pairs = zip(output["token_advantages"][row], output["env_mask"][row], strict=True)
    return [value for value, mask in pairs if mask]


class _FailingEngine:
    """Wraps an engine; its ``fail_call``-th generate call (from 1) fails the first request."""

    def __init__(self, engine, fail_call):
        self.engine, self.fail_call, self.calls = engine, fail_call, 0
        self.tokenizer, self.name, self.needs_env = engine.tokenizer, "failing", True

    def generate(self, requests):
        from agent_envs.adapters.loop.engine import Generation

        self.calls += 1
        generations = self.engine.generate(requests)
        if self.calls == self.fail_call:
            generations[0] = Generation("", finish_reason="error", error="server went away")
        return generations


def test_trl__engine_errors_reach_no_loss_no_reward_and_no_group_statistics(tokenizer, caplog):
    from agent_envs.adapters import advantages as estimators
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.trl import AdvantageConfig

    seen = []
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=32,
        max_turns=3,
        engine=_FailingEngine(random_engine(3, tokenizer=tokenizer), fail_call=2),
        advantages=AdvantageConfig(estimator="drgrpo"),
        on_trajectories=seen.extend,
    )
    with caplog.at_level("WARNING", logger="agent_envs.adapters.trl"):
        output = rollout([episode_key("grl/Sokoban-v0", 4)] * 3, trainer=None)
    assert "1 of 3 episodes ended with an engine error" in caplog.text
    assert [t.truncation_reason == "error" for t in seen] == [True, False, False]
    assert output["engine_error"] == [True, False, False]
    assert seen[0].num_turns == 1 and len(output["completion_ids"][0]) > 1  # turn 1's tokens
    assert set(output["env_mask"][0]) == {0} and set(output["token_advantages"][0]) == {0.0}
    # the group statistics are those of the two episodes that ran to the end
    returns = [t.episode_return for t in seen[1:]]
    assert returns[0] != returns[1]
    expected = estimators.episode_advantages(seen[1:], estimator="drgrpo")
    for row, value in zip((1, 2), expected, strict=True):
        model = _model_token_values(output, row)
        assert model == pytest.approx([value] * len(model))
    logged = []
    rewards = episode_return_reward(
        [""] * 3,
        output["episode_return"],
        engine_error=output["engine_error"],
        log_metric=lambda name, value: logged.append((name, value)),
    )
    assert rewards == [None, *returns] and logged == [("episodes/engine_errors", 1.0)]
    assert (
        success_reward([""] * 3, output["success"], engine_error=output["engine_error"])[0] is None
    )


def test_trl__off_policy_rows_are_the_oracle_episode_of_the_group_seed(tokenizer):
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.trl import AdvantageConfig

    seen = []
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=32,
        max_turns=3,
        engine=random_engine(0, tokenizer=tokenizer),
        advantages=AdvantageConfig(estimator="grpo", off_policy=1),
        on_trajectories=seen.extend,
    )
    prompts = [episode_key("grl/Sokoban-v0", seed) for seed in (1, 1, 1, 2, 2, 2)]
    output = rollout(prompts, trainer=None)
    assert output["off_policy"] == [False, False, True] * 2
    assert [t.group_id for t in seen] == [0, 0, 0, 1, 1, 1]
    assert [t.agent for t in seen] == ["random", "random", "oracle"] * 2
    assert [t.seed for t in seen] == [1, 1, 1, 2, 2, 2] and seen[2].success
    assert output["prompt_ids"][2] == output["prompt_ids"][0]
    assert min(_model_token_values(output, 2)) > 0  # the solved episode leads its group


def test_trl__oracle_rationale_makes_off_policy_rows_write_the_worked_steps(tokenizer):
    """LUFFY's oracle rows on GSM8K: with ``oracle_rationale`` the reply is the solution's steps,
    then the answer (as the SFT rows made with the rationale), without it the answer alone."""
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.trl import AdvantageConfig

    replies = {}
    for rationale in (False, True):
        seen = []
        rollout = make_rollout_func(
            "grl/GSM8K-v0",
            max_new_tokens=160,
            engine=random_engine(0, tokenizer=tokenizer),
            advantages=AdvantageConfig(off_policy=1, oracle_rationale=rationale),
            on_trajectories=seen.extend,
        )
        output = rollout([episode_key("grl/GSM8K-v0", 3)] * 3, trainer=None)
        assert output["off_policy"] == [False, False, True]
        assert seen[2].agent == "oracle" and seen[2].success
        replies[rationale] = seen[2].steps[0].reply
    answer = replies[False]
    assert answer.startswith("<answer>") and replies[True].endswith(answer)
    assert "=" in replies[True][: -len(answer)]  # the worked steps come first


def test_trl__recovery_rows_replay_a_failed_first_turn_then_follow_the_oracle(tokenizer):
    from agent_envs.adapters.engines.scripted import random_engine
    from agent_envs.adapters.trl import AdvantageConfig

    seen = []

    def rollout(max_turns):
        return make_rollout_func(
            "grl/Blocksworld-v0",
            max_new_tokens=48,
            max_turns=max_turns,
            engine=random_engine(0, tokenizer=tokenizer),
            advantages=AdvantageConfig(estimator="gigpo", off_policy=1, oracle_start="recovery"),
            on_trajectories=seen.extend,
        )

    prompts = [episode_key("grl/Blocksworld-v0", seed) for seed in (5, 5, 5, 9, 9, 9)]
    output = rollout(max_turns=3)(prompts, trainer=None)
    assert output["off_policy"] == [False, False, True] * 2
    for row in (2, 5):
        recovery, failed = seen[row], seen[row - 2]  # the group's first sampled episode
        assert not failed.success and failed.num_turns >= 2
        assert recovery.metadata["replayed_turns"] == 1 and recovery.success
        assert recovery.seed == failed.seed and recovery.group_id == failed.group_id
        assert recovery.turn_completion_ids[0] == failed.turn_completion_ids[0]
        assert recovery.steps[1].observation == failed.steps[1].observation
        assert recovery.steps[1].reply != failed.steps[1].reply
        # the replayed turn trains nothing; the oracle's recovery leads its anchor group
        first = len(recovery.turn_completion_ids[0]) + len(recovery.turn_env_ids[0])
        assert set(output["env_mask"][row][:first]) == {0}
        assert set(output["token_advantages"][row][:first]) == {0.0}
        assert output["env_mask"][row][first] == 1
        assert output["token_advantages"][row][first] > 0

    # no sampled episode went past its first turn: the oracle plays from the start
    seen.clear()
    output = rollout(max_turns=1)(prompts[:3], trainer=None)
    assert "replayed_turns" not in seen[2].metadata and seen[2].agent == "oracle"
    assert set(output["env_mask"][2]) == {1}  # trained whole
    with pytest.raises(ValueError, match="oracle_start"):
        AdvantageConfig(off_policy=1, oracle_start="midway")


def test_trl__recovery_replay_on_an_env_it_was_not_given_is_an_engine_error(tokenizer):
    """An env the replay does not know (e.g. a copy from a worker process) ends that episode
    as an engine error, which reaches no loss and no reward, instead of letting the oracle play
    the turn meant to be replayed."""
    import gymnasium
    from agent_envs.adapters.loop.engine import GenerationRequest
    from agent_envs.adapters.trl.rollout import _ReplayEngine

    env = gymnasium.make("grl/Blocksworld-v0").unwrapped
    env.reset(seed=5)
    replay = _ReplayEngine(oracle_engine(tokenizer=tokenizer), [], [])
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "o"}]
    (reply,) = replay.generate([GenerationRequest(32, messages=messages, env=env)])
    assert reply.finish_reason == "error" and "in-process" in reply.error
    later = [*messages, {"role": "assistant", "content": "a"}, {"role": "user", "content": "o"}]
    (reply,) = replay.generate([GenerationRequest(32, messages=later, env=env)])
    assert reply.finish_reason == "stop" and reply.text.startswith("<answer>")


def test_trl__advantage_settings_are_checked(tokenizer):
    from agent_envs.adapters.trl import AdvantageConfig

    for bad, match in (
        ({"estimator": "ppo"}, "estimator"),
        ({"normalize": "z"}, "normalize"),
        ({"stats": "turn"}, "stats"),
        ({"gamma": 1.5}, "gamma"),
        ({"off_policy": -1}, "off_policy"),
        ({"off_policy": True}, "off_policy"),
    ):
        with pytest.raises(ValueError, match=match):
            AdvantageConfig(**bad)
    with pytest.raises(ValueError, match="advantages"):
        make_rollout_func("grl/Sokoban-v0", advantages=3)
    engine = oracle_engine(tokenizer=tokenizer)
    key = episode_key("grl/Sokoban-v0", 1)
    luffy = make_rollout_func(
        "grl/Sokoban-v0", engine=engine, advantages=AdvantageConfig(off_policy=2)
    )
    with pytest.raises(ValueError, match="leave no sampled row"):
        luffy([key, key], trainer=None)
    gigpo = make_rollout_func("grl/Sokoban-v0", engine=engine, advantages="gigpo")

    class PlainTrainer:  # what GRPOTrainer looks like to the rollout_func
        num_generations = 2

    with pytest.raises(ValueError, match="TokenAdvantageGRPOTrainer"):
        gigpo([key, key], trainer=PlainTrainer())

    class SplitGroups(PlainTrainer):
        uses_token_advantages = True
        num_generations = 4

    with pytest.raises(ValueError, match="whole groups"):
        gigpo([key, key], trainer=SplitGroups())


def test_trl__environment_factory_pickles_for_a_spawned_rollout_process():
    """TRL's AsyncGRPOTrainer pickles environment_factory into a spawned process: the class
    and a mid-episode instance survive a round trip through plain pickle."""
    import pickle

    factory = make_environment_factory("grl/Sokoban-v0", max_turns=3)
    again = pickle.loads(pickle.dumps(factory))
    assert again.__name__ == "SokobanTool" and again.play.__doc__ == factory.play.__doc__
    tool = factory()
    first = tool.reset(seed=5)
    tool.play("<answer>Up</answer>")
    copy = pickle.loads(pickle.dumps(tool))
    assert copy.play("<answer>Left</answer>") == tool.play("<answer>Left</answer>")
    assert again().reset(seed=5) == first
    assert again().env.unwrapped.max_turns == 3


def test_trl__episodes_of_a_dead_env_worker_train_like_engine_errors():
    """A worker death is no behaviour of the policy: its episodes get no loss and no reward."""
    from agent_envs.adapters.trl.rollout import _rows

    from agent_envs.core.records import Trajectory

    def record(reason):
        return Trajectory(
            env_id="grl/Sokoban-v0",
            seed=1,
            truncated=reason is not None,
            truncation_reason=reason,
            prompt_ids=[1, 2],
            turn_completion_ids=[[3, 4]],
            turn_logprobs=[[-0.1, -0.2]],
            turn_env_ids=[[]],
        )

    rows = _rows([record("worker_died"), record("error"), record(None)], pad_token_id=0)
    assert rows["engine_error"] == [True, True, False]
    assert rows["env_mask"] == [[0, 0], [0, 0], [1, 1]]


def test_trl__generation_copy_is_the_merged_model_in_bfloat16_and_follows_each_step(tokenizer):
    """The copy that generates episodes: LoRA merged, bfloat16, without accelerate's
    mixed-precision wrapper, the same next-token logits as the trained model (to bfloat16's
    precision), reused while the weights stand still and made again after an optimizer step
    (a fused one included); the trainer's rollout engine runs on it."""
    import types

    import torch
    from accelerate.utils import convert_outputs_to_fp32
    from agent_envs.adapters.trl.rollout import GenerationCopy, _trainer_engine
    from peft import LoraConfig, get_peft_model

    from .conftest import build_model

    model = get_peft_model(
        build_model(tokenizer),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    for name, param in model.named_parameters():  # B starts at 0: make the adapters count
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.5, generator=torch.Generator().manual_seed(1))
    # what accelerate's bf16 mixed precision does to a prepared model's forward
    inner = model.get_base_model()
    inner._original_forward = inner.forward
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    inner.forward = types.MethodType(
        convert_outputs_to_fp32(autocast(inner.forward.__func__)), inner
    )
    ids = torch.tensor([tokenizer.encode("Up || Left")])
    copy = GenerationCopy("bfloat16")
    first = copy(model)
    assert first is not model and not hasattr(first, "peft_config")  # merged, plain
    assert {param.dtype for param in first.parameters()} == {torch.bfloat16}
    assert not any(param.requires_grad for param in first.parameters())
    assert not any("forward" in vars(module) for module in first.modules())  # wrapper gone
    with torch.no_grad():
        expected = model(ids).logits[0, -1].float()
        got = first(ids).logits[0, -1]
        assert got.dtype == torch.bfloat16  # not under the wrapper's cast to float32
        got = got.float()
        base = model.get_base_model()
        with model.disable_adapter():
            without_adapters = base(ids).logits[0, -1]
    assert torch.allclose(got, expected, atol=0.05, rtol=0.05)
    assert not torch.allclose(without_adapters, expected, atol=0.05, rtol=0.05)
    assert copy(model) is first  # no step since: the same copy
    adapter = next(param for name, param in model.named_parameters() if "lora_B" in name)
    adapter.grad = torch.ones_like(adapter)
    torch.optim.AdamW([adapter], lr=0.5, fused=True).step()  # bumps no version counter
    with torch.no_grad():
        expected = model(ids).logits[0, -1].float()
    second = copy(model)
    assert second is not first
    with torch.no_grad():
        assert torch.allclose(second(ids).logits[0, -1].float(), expected, atol=0.05, rtol=0.05)

    class Trainer:  # what the rollout engine reads of a GRPOTrainer
        processing_class = tokenizer
        use_vllm = False

        class args:
            temperature, top_p, top_k = 1.0, 1.0, 0

        class accelerator:
            @staticmethod
            def unwrap_model(wrapped):
                return wrapped

    Trainer.model = model
    assert _trainer_engine(Trainer(), copy).model is second
    assert _trainer_engine(Trainer()).model is model
    for bad in ("int8", "bogus", 16):
        with pytest.raises(ValueError, match="generation dtype"):
            GenerationCopy(bad)
