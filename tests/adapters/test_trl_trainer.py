"""TokenAdvantageGRPOTrainer: per-token advantages (GRPO, GiGPO) and LUFFY's off-policy loss,
real steps on CPU with the tiny Qwen2, the loss recomputed by hand."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from agent_envs.adapters import advantages as estimators  # noqa: E402
from agent_envs.adapters.engines.scripted import random_engine  # noqa: E402
from agent_envs.adapters.trl import (  # noqa: E402
    AdvantageConfig,
    episode_return_reward,
    make_episode_dataset,
    make_rollout_func,
)
from agent_envs.adapters.trl.grpo_trainer import TokenAdvantageGRPOTrainer, policy_shaping  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from .conftest import cpu_run_settings  # noqa: E402


def _config(tmp_path, **overrides):
    settings = cpu_run_settings(
        tmp_path,
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=2,
        learning_rate=1e-3,
        max_completion_length=96,
        temperature=1.0,
        dataloader_num_workers=0,
    )
    settings.update(overrides)
    return GRPOConfig(**settings)


class RecordingTrainer(TokenAdvantageGRPOTrainer):
    """Keeps what each loss call saw: the batch, the current model's log-probabilities of its
    completion tokens (same weights, computed before the loss), and the loss."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        with torch.no_grad():
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, ids, attention, inputs["completion_ids"].size(1)
            )
        record = {key: value for key, value in inputs.items() if torch.is_tensor(value)}
        record["logps"] = logps
        loss = super().compute_loss(model, inputs, *args, **kwargs)
        record["loss"] = float(loss.detach())
        self.records.append(record)
        return loss


def _trainer(tmp_path, model, tokenizer, rollout_func, env_id="grl/Sokoban-v0", **config):
    trainer = RecordingTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset(env_id, seeds=range(8)),
        rollout_func=rollout_func,
        args=_config(tmp_path, **config),
    )
    trainer.records = []
    return trainer


def _expected_by_completion(trajectories, config, group_size):
    """completion ids -> the per-token advantages agent_envs.adapters.advantages gives, batch by
    batch."""
    expected = {}
    for start in range(0, len(trajectories), group_size * 2):
        batch = copy.deepcopy(trajectories[start : start + group_size * 2])
        for index, trajectory in enumerate(batch):
            trajectory.group_id = index // group_size
        for trajectory, turns in zip(batch, config.turn_advantages(batch), strict=True):
            values = estimators.token_advantages(trajectory, turns)
            expected[tuple(trajectory.completion_ids)] = (values, trajectory.env_mask)
    return expected


def _changed(before, model):
    return any(
        not torch.equal(old, new.detach())
        for old, new in zip(before, model.parameters(), strict=True)
    )


def test_trl_trainer__gigpo_steps_train_on_the_estimators_token_advantages(
    tmp_path, tokenizer, tiny_model
):
    trajectories = []
    config = AdvantageConfig(estimator="gigpo", gamma=0.9, omega=1.0)
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=32,
        max_total_tokens=600,
        max_turns=3,
        engine=random_engine(0, tokenizer=tokenizer),  # varied returns: non-zero advantages
        advantages=config,
        on_trajectories=trajectories.extend,
    )
    model = copy.deepcopy(tiny_model)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    trainer = _trainer(tmp_path, model, tokenizer, rollout)
    trainer.train()

    assert len(trainer.records) == 2 and len(trajectories) == 8
    expected = _expected_by_completion(trajectories, config, group_size=2)
    nonzero = 0
    for record in trainer.records:
        assert math.isfinite(record["loss"])
        advantages, mask = record["advantages"], record["completion_mask"]
        assert advantages.shape == record["completion_ids"].shape  # (B, T): one per token
        for row in range(advantages.size(0)):
            length = int(mask[row].sum())
            values, env_mask = expected[tuple(record["completion_ids"][row, :length].tolist())]
            np.testing.assert_allclose(advantages[row, :length].numpy(), values, atol=1e-6)
            assert (advantages[row, length:] == 0).all()
            assert all(v == 0 for v, m in zip(values, env_mask, strict=True) if m == 0)
            assert record["tool_mask"][row, :length].tolist() == env_mask
            nonzero += int(np.count_nonzero(values))
        # TRL's dapo loss with one iteration (ratio 1): -sum(A * mask) / tokens in the batch
        loss_mask = record["completion_mask"] * record["tool_mask"]
        manual = -(advantages * loss_mask).sum() / record["num_items_in_batch"]
        assert record["loss"] == pytest.approx(float(manual), abs=1e-6)
        assert not record["off_policy"].any()
    assert nonzero > 0
    assert _changed(before, model)
    logged = [entry for entry in trainer.state.log_history if "advantages/token_mean" in entry]
    assert len(logged) == 2 and all(entry["off_policy/fraction"] == 0 for entry in logged)
    assert all(entry["episodes/engine_errors"] == 0 for entry in logged)


def test_trl_trainer__episode_estimators_switch_by_flag(tmp_path, tokenizer, tiny_model):
    """rloo through the same path: every model token of an episode carries its episode
    advantage (TRL's own normalisation is not used)."""
    trajectories = []
    config = AdvantageConfig(estimator="rloo")
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=32,
        max_total_tokens=600,
        max_turns=3,
        engine=random_engine(1, tokenizer=tokenizer),
        advantages=config,
        on_trajectories=trajectories.extend,
    )
    trainer = _trainer(tmp_path, copy.deepcopy(tiny_model), tokenizer, rollout, max_steps=1)
    trainer.train()
    (record,) = trainer.records
    returns = [t.episode_return for t in trajectories]
    expected = {
        tuple(t.completion_ids): returns[i] - returns[i ^ 1]  # RLOO of a pair: R_i - R_other
        for i, t in enumerate(trajectories)
    }
    for row in range(4):
        length = int(record["completion_mask"][row].sum())
        ids = tuple(record["completion_ids"][row, :length].tolist())
        model_tokens = record["tool_mask"][row, :length].bool()
        values = record["advantages"][row, :length]
        assert torch.allclose(values[model_tokens], torch.tensor(expected[ids]), atol=1e-6)
        assert (values[~model_tokens] == 0).all()


@pytest.mark.parametrize(
    ("env_id", "oracle_start"), [("grl/Sokoban-v0", "reset"), ("grl/Blocksworld-v0", "recovery")]
)
def test_trl_trainer__luffy_rows_use_the_policy_shaping_loss(
    tmp_path, tokenizer, tiny_model, env_id, oracle_start
):
    trajectories = []
    rollout = make_rollout_func(
        env_id,
        max_new_tokens=16,
        max_total_tokens=600,
        max_turns=2,
        advantages=AdvantageConfig(estimator="grpo", off_policy=1, oracle_start=oracle_start),
        on_trajectories=trajectories.extend,
    )  # the trainer's own model samples one row of each pair, the oracle fills the other
    model = copy.deepcopy(tiny_model)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    trainer = _trainer(tmp_path, model, tokenizer, rollout, env_id)
    trainer.train()

    assert [estimators.is_off_policy(t) for t in trajectories] == [False, True] * 4
    oracle = {tuple(t.completion_ids) for t in trajectories if estimators.is_off_policy(t)}
    for record in trainer.records:
        off = record["off_policy"]
        assert int(off.sum()) == 2
        mask = (record["completion_mask"] * record["tool_mask"]).float()
        for row in range(4):
            length = int(record["completion_mask"][row].sum())
            ids = tuple(record["completion_ids"][row, :length].tolist())
            assert (ids in oracle) == bool(off[row])
        advantages = record["advantages"]
        assert (advantages[off] * mask[off]).gt(0).any()  # the oracle beats a random model
        # on-policy tokens: TRL's term (ratio 1); off-policy tokens: -f(pi) * A, no ratio
        probs = torch.exp(record["logps"])
        on = (~off).unsqueeze(1).float()
        per_token = -advantages * on - policy_shaping(probs, 0.1) * advantages * (1 - on)
        manual = (per_token * mask).sum() / record["num_items_in_batch"]
        assert record["loss"] == pytest.approx(float(manual), rel=1e-5, abs=1e-6)
        assert math.isfinite(record["loss"])
    assert _changed(before, model)
    logged = [entry for entry in trainer.state.log_history if "off_policy/fraction" in entry]
    assert [entry["off_policy/fraction"] for entry in logged] == [0.5, 0.5]
    assert all(0 < entry["off_policy/shaping_mean"] < 1 for entry in logged)
    # recovery: every oracle row replays its sampled partner's first turn, which trains nothing
    recovering = [t for t in trajectories if t.metadata.get("replayed_turns")]
    assert len(recovering) == (4 if oracle_start == "recovery" else 0)
    expected = 0.5 if oracle_start == "recovery" else 0.0
    assert [entry["off_policy/recovery_fraction"] for entry in logged] == [expected] * 2
    first_turn = {tuple(t.completion_ids): len(t.turn_completion_ids[0]) for t in recovering}
    for record in trainer.records:
        mask = record["completion_mask"] * record["tool_mask"]
        for row in record["off_policy"].nonzero().flatten().tolist():
            length = int(record["completion_mask"][row].sum())
            first = first_turn.get(tuple(record["completion_ids"][row, :length].tolist()), 0)
            assert bool(first) == (oracle_start == "recovery")
            assert mask[row, :first].sum() == 0 and mask[row, first:].sum() > 0


@pytest.fixture
def bare_trainer(tmp_path, tokenizer, tiny_model):
    """A trainer on the tiny model to call _compute_loss on a hand-made batch."""

    def rollout(prompts, trainer):  # never called
        raise AssertionError

    class KeepLogps(TokenAdvantageGRPOTrainer):
        def _get_per_token_logps_and_entropies(self, *args, **kwargs):
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(*args, **kwargs)
            if logps.requires_grad:
                logps.retain_grad()
                self.kept = logps
            return logps, entropies, aux

    trainer = KeepLogps(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(2)),
        rollout_func=rollout,
        args=_config(tmp_path, per_device_train_batch_size=2, temperature=0.7),
    )
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, outside it here
    return trainer


def _batch(tokenizer, advantage, off_policy):
    prompt = tokenizer.encode("<|im_start|>user\nPush the box<|im_end|>\n<|im_start|>assistant\n")
    completion = tokenizer.encode("<answer>Left || Down</answer><|im_end|>")
    rows = len(advantage)
    completion_mask = torch.ones(rows, len(completion), dtype=torch.long)
    return {
        "prompt_ids": torch.tensor([prompt] * rows),
        "prompt_mask": torch.ones(rows, len(prompt), dtype=torch.long),
        "completion_ids": torch.tensor([completion] * rows),
        "completion_mask": completion_mask,
        "tool_mask": completion_mask.clone(),
        "advantages": torch.tensor(advantage).unsqueeze(1).expand(rows, len(completion)).clone(),
        "off_policy": torch.tensor(off_policy),
        "num_items_in_batch": completion_mask.sum(),
    }


def test_trl_trainer__each_pass_runs_its_own_rows_span_and_scores_as_trl(bare_trainer, tokenizer):
    """A step padded to its longest prompt and completion: each chunk of rows runs only the
    columns one of its rows uses, and its log-probabilities and entropies are TRL's own pass
    over the padded batch on every real completion token (0 on the cut padding)."""
    from trl import GRPOTrainer

    trainer, model = bare_trainer, bare_trainer.model
    long_prompt = tokenizer.encode("<|im_start|>user\nPush the box to the goal<|im_end|>\n")
    short_prompt = tokenizer.encode("<|im_start|>user\nGo<|im_end|>\n")
    long_reply = tokenizer.encode("<answer>Left || Down || Right || Up</answer><|im_end|>")
    short_reply = tokenizer.encode("<answer>Up</answer><|im_end|>")
    rows = [(long_prompt, short_reply), (short_prompt, long_reply), (short_prompt, short_reply)]
    width_p, width_c = len(long_prompt), len(long_reply)
    ids = torch.zeros(len(rows), width_p + width_c, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, (prompt, reply) in enumerate(rows):  # prompts left-padded, replies right-padded
        span = slice(width_p - len(prompt), width_p + len(reply))
        ids[row, span] = torch.tensor(prompt + reply)
        mask[row, span] = 1
    model.eval()
    (logps, entropies, _), widths = _pass_widths(trainer, ids, mask, width_c, compute_entropy=True)
    with torch.no_grad():
        reference, reference_entropies, _ = GRPOTrainer._get_per_token_logps_and_entropies(
            trainer, model, ids, mask, width_c, batch_size=1, compute_entropy=True
        )
        alone = [  # each row by itself, no padding at all
            GRPOTrainer._get_per_token_logps_and_entropies(
                trainer,
                model,
                torch.tensor([prompt + reply]),
                torch.ones(1, len(prompt + reply), dtype=torch.long),
                len(reply),
                compute_entropy=True,
            )
            for prompt, reply in rows
        ]
    assert widths == [len(prompt) + len(reply) for prompt, reply in rows]
    for row, (_, reply) in enumerate(rows):
        torch.testing.assert_close(logps[row, : len(reply)], alone[row][0][0])
        torch.testing.assert_close(entropies[row, : len(reply)], alone[row][1][0])
        assert (logps[row, len(reply) :] == 0).all()
    # TRL's pass over the padded rows: the same values but for float32 rounding, which the
    # padding changes (attention over masked columns; positions shifted by the left padding)
    scored = mask[:, width_p:].bool()
    torch.testing.assert_close(logps[scored], reference[scored], rtol=1e-3, atol=5e-3)
    torch.testing.assert_close(entropies[scored], reference_entropies[scored], rtol=1e-3, atol=5e-3)
    assert logps.shape == reference.shape
    trainer.trim_padding = False  # TRL's pass as it is: every chunk at the step's width
    (untrimmed, _, _), widths = _pass_widths(trainer, ids, mask, width_c)
    assert widths == [width_p + width_c] * len(rows)
    torch.testing.assert_close(untrimmed, reference)


def _pass_widths(trainer, ids, mask, logits_to_keep, **kwargs):
    """The trainer's log-probability pass over ``ids``, one row a chunk, without gradients;
    and the input width of each forward call it made."""
    widths = []
    hook = trainer.model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].size(1)), with_kwargs=True
    )
    try:
        with torch.no_grad():
            result = trainer._get_per_token_logps_and_entropies(
                trainer.model, ids, mask, logits_to_keep, batch_size=1, **kwargs
            )
    finally:
        hook.remove()
    return result, widths


def test_trl_trainer__off_policy_gradient_is_the_shaped_policy_gradient(bare_trainer, tokenizer):
    """d loss / d log pi = -A * gamma * pi / (pi + gamma)^2 / N on off-policy tokens (no ratio,
    no clipping: even a large advantage moves every token), -A / N on on-policy ones."""
    trainer = bare_trainer
    inputs = _batch(tokenizer, advantage=[2.0, -1.5], off_policy=[True, False])
    trainer.model.train()
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    logps, grad = trainer.kept.detach(), trainer.kept.grad
    tokens = inputs["num_items_in_batch"].float()
    pi = torch.exp(logps[0])
    expected_off = -2.0 * 0.1 * pi / (pi + 0.1) ** 2 / tokens
    torch.testing.assert_close(grad[0], expected_off, rtol=1e-5, atol=1e-9)
    torch.testing.assert_close(grad[1], torch.full_like(grad[1], 1.5 / tokens), rtol=1e-5, atol=0)
    assert (grad[0] < 0).all()  # descent raises the probability of the oracle's tokens
    # the value: on-policy -A (ratio 1) and off-policy -f(pi) * A, over the batch's tokens
    expected = (1.5 * len(pi) - 2.0 * policy_shaping(pi).sum()) / tokens
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)


def test_trl_trainer__a_negative_off_policy_advantage_lowers_those_tokens(bare_trainer, tokenizer):
    trainer = bare_trainer
    trainer.model.train()
    for advantage, direction in ((3.0, 1), (-3.0, -1)):
        model = copy.deepcopy(trainer.model)
        inputs = _batch(tokenizer, advantage=[advantage, 0.0], off_policy=[True, False])
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        width = inputs["completion_ids"].size(1)

        def total_logp(net, ids=ids, attention=attention, width=width):
            with torch.no_grad():
                logps, _, _ = trainer._get_per_token_logps_and_entropies(net, ids, attention, width)
            return float(logps[0].sum())

        start = total_logp(model)
        loss = trainer._compute_loss(model, inputs)
        loss.backward()
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.grad is not None:
                    parameter -= 0.05 * parameter.grad
        assert (total_logp(model) - start) * direction > 0


def test_trl_trainer__rejects_rows_without_token_advantages_and_bad_gamma(
    tmp_path, tokenizer, tiny_model
):
    with pytest.raises(ValueError, match="shaping_gamma"):
        RecordingTrainer(
            model=copy.deepcopy(tiny_model),
            processing_class=tokenizer,
            reward_funcs=episode_return_reward,
            train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(2)),
            rollout_func=make_rollout_func("grl/Sokoban-v0"),
            args=_config(tmp_path),
            shaping_gamma=0,
        )
    rollout = make_rollout_func(
        "grl/Sokoban-v0",
        max_new_tokens=8,
        max_turns=1,
        engine=random_engine(0, tokenizer=tokenizer),
    )  # no advantages=: the rows have no token_advantages
    trainer = _trainer(tmp_path, copy.deepcopy(tiny_model), tokenizer, rollout, max_steps=1)
    with pytest.raises(ValueError, match="no token_advantages"):
        trainer.train()


def test_trl_trainer__dropping_zero_advantage_rows_equals_training_without_them(
    bare_trainer, tokenizer
):
    """drop_zero_advantage: a row whose advantages are all 0 leaves the loss mask and the dapo
    token count, so the loss and its gradient are those of the batch without that row."""
    trainer = bare_trainer
    trainer.model.train()
    trainer.drop_zero_advantage = True
    kept = _batch(tokenizer, advantage=[1.5], off_policy=[False])
    mixed = _batch(tokenizer, advantage=[1.5, 0.0], off_policy=[False, False])
    trainer._drop_zero_advantage_rows(mixed)
    assert mixed["tool_mask"][1].sum() == 0 and mixed["tool_mask"][0].all()
    assert int(mixed["num_items_in_batch"]) == int(kept["num_items_in_batch"])
    logged = trainer._metrics["train"]["episodes/zero_advantage_fraction"]
    assert logged == [0.5]

    def loss_and_grads(inputs):
        trainer.model.zero_grad()
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
        params = [p for p in trainer.model.parameters() if p.requires_grad]
        return loss.detach(), [p.grad.clone() for p in params]

    loss, grads = loss_and_grads(kept)
    mixed_loss, mixed_grads = loss_and_grads(mixed)
    torch.testing.assert_close(mixed_loss, loss, rtol=1e-5, atol=1e-7)
    for grad, mixed_grad in zip(grads, mixed_grads, strict=True):
        torch.testing.assert_close(mixed_grad, grad, rtol=1e-4, atol=1e-7)
    # without the drop, the zero row still counts in the normaliser: half the loss
    diluted = _batch(tokenizer, advantage=[1.5, 0.0], off_policy=[False, False])
    diluted_loss, _ = loss_and_grads(diluted)
    torch.testing.assert_close(diluted_loss, loss / 2, rtol=1e-5, atol=1e-7)
