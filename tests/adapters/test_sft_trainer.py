"""SharedPrefixSFTTrainer: SFTTrainer's loss and gradients, with each shared prefix run once."""

from __future__ import annotations

import copy

import pytest
from agent_envs.adapters.sft import make_sft_dataset

from tests.adapters.conftest import cpu_run_settings

pytest.importorskip("trl")
torch = pytest.importorskip("torch")


def _trainer(cls, tmp_path, tokenizer, model, dataset, **kwargs):
    from trl import SFTConfig

    args = SFTConfig(
        **cpu_run_settings(
            tmp_path, per_device_train_batch_size=6, assistant_only_loss=True, max_length=1024
        ),
        gradient_checkpointing=False,
        max_steps=1,
    )
    return cls(model=model, processing_class=tokenizer, train_dataset=dataset, args=args, **kwargs)


def _batch(trainer):
    return trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))


def _loss_and_grads(trainer, batch):
    model = trainer.model
    model.train()
    model.zero_grad()
    loss = trainer.compute_loss(model, {key: value.clone() for key, value in batch.items()})
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.fixture(scope="module")
def two_env_dataset():
    import datasets

    rows = []
    for env_id in ("grl/Sokoban-v0", "grl/Blocksworld-v0"):
        dataset = make_sft_dataset(env_id, range(4))
        rows += dataset.remove_columns(["env_id", "seed", "episode_return"]).to_list()
    return datasets.Dataset.from_list(rows)


def test_shared_prefix__loss_and_gradients_equal_sft_trainers(
    tmp_path, tokenizer, tiny_model, two_env_dataset
):
    from agent_envs.adapters.trl.sft_trainer import SharedPrefixSFTTrainer, shared_prefix_groups
    from trl import SFTTrainer

    torch.manual_seed(0)
    # two copies made before either trainer patches its model's forward (TRL's fused LM head
    # wraps the bound forward of the model it is given; a copy made after would share it)
    model_a, model_b = copy.deepcopy(tiny_model).float(), copy.deepcopy(tiny_model).float()
    plain = _trainer(SFTTrainer, tmp_path / "a", tokenizer, model_a, two_env_dataset)
    shared = _trainer(SharedPrefixSFTTrainer, tmp_path / "b", tokenizer, model_b, two_env_dataset)
    batch = _batch(plain)
    groups = shared_prefix_groups(batch["input_ids"], batch["labels"])
    # both envs' system prompts are shared by several rows of the 6-row batch
    assert groups and sum(len(rows) for rows, _ in groups) >= 4
    assert all(length >= 32 for _, length in groups)

    loss_a, grads_a = _loss_and_grads(plain, batch)
    loss_b, grads_b = _loss_and_grads(shared, batch)
    assert torch.allclose(loss_a, loss_b, atol=1e-5), (loss_a, loss_b)
    assert grads_a.keys() == grads_b.keys() and grads_a
    for name, grad in grads_a.items():
        bad = (grad - grads_b[name]).abs() > 1e-5 + 1e-4 * grad.abs()
        assert not bad.any(), (name, bad.nonzero()[:10].tolist())
    for key in ("mean_token_accuracy", "entropy", "num_tokens"):  # the same logged metrics
        ours, theirs = shared._metrics["train"][key][-1], plain._metrics["train"][key][-1]
        assert ours == pytest.approx(theirs, rel=1e-4), key


def test_shared_prefix__groups_end_before_the_first_scored_token():
    from agent_envs.adapters.trl.sft_trainer import shared_prefix_groups

    ids = torch.tensor([[1] * 40 + [5, 6, 7], [1] * 40 + [8, 9, 0], [2] * 43])
    labels = torch.full_like(ids, -100)
    labels[0, 41:] = ids[0, 41:]
    labels[1, 42:] = ids[1, 42:]
    labels[2, 42:] = ids[2, 42:]
    groups = shared_prefix_groups(ids, labels, min_prefix=32)
    assert groups == [([0, 1], 40)]  # row 2 shares nothing; row 0's first label at 41 → ≤ 40
    labels[0, 35] = 7  # a label inside the shared part cuts the prefix before it
    assert shared_prefix_groups(ids, labels, min_prefix=32) == [([0, 1], 34)]
    assert shared_prefix_groups(ids, labels, min_prefix=36) == []


def test_shared_prefix__a_training_run_lowers_the_loss(tmp_path, tokenizer, tiny_model):
    from agent_envs.adapters.trl.sft_trainer import SharedPrefixSFTTrainer
    from trl import SFTConfig

    dataset = make_sft_dataset("grl/Sokoban-v0", range(4)).remove_columns(
        ["env_id", "seed", "episode_return"]
    )
    args = SFTConfig(
        **cpu_run_settings(
            tmp_path, per_device_train_batch_size=4, assistant_only_loss=True, max_length=1024
        ),
        max_steps=8,
        learning_rate=1e-2,
        gradient_checkpointing=False,
    )
    trainer = SharedPrefixSFTTrainer(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        train_dataset=dataset,
        args=args,
    )
    trainer.train()
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert len(losses) == 8 and losses[-1] < 0.75 * losses[0]
    saved = [row["shared_prefix/tokens_saved"] for row in trainer.state.log_history[:8]]
    assert min(saved) > 0.5  # the system prompt is most of a Sokoban row
