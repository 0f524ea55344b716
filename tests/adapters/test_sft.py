"""SFT export: oracle trajectories as chat rows, and one real SFTTrainer step on CPU."""

from __future__ import annotations

import math

import pytest

from adapters.engines.scripted import oracle_engine
from adapters.rollout import collect_episodes
from adapters.sft import collect_oracle_trajectories, make_sft_dataset, sft_rows


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

    from trl import SFTConfig, SFTTrainer

    dataset = make_sft_dataset("grl/Sokoban-v0", range(4))
    trainer = SFTTrainer(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        train_dataset=dataset.remove_columns(["env_id", "seed", "episode_return"]),
        args=SFTConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=2,
            assistant_only_loss=True,
            report_to="none",
            use_cpu=True,
            save_strategy="no",
            logging_steps=1,
            max_length=1024,
        ),
    )
    sample = trainer.train_dataset[0]
    trained = [token for token in sample["labels"] if token != -100]
    assert 0 < len(trained) < len(sample["input_ids"])
    text = tokenizer.decode(trained)
    assert text.startswith("<answer>") and "Sokoban" not in text
    result = trainer.train()
    assert math.isfinite(result.training_loss)
