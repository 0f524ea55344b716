"""The TRL internals that agent_envs.adapters.trl, TokenAdvantageGRPOTrainer and
SharedPrefixSFTTrainer rely on.

When TRL moves one of them, a test here fails with a message naming it: update the subclass
(adapters/trl_trainer.py) and the pin of the ``train`` extra together."""

from __future__ import annotations

import copy
import inspect
import re
from pathlib import Path

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

import trl  # noqa: E402
from agent_envs.adapters.trl import episode_return_reward, make_episode_dataset  # noqa: E402
from agent_envs.adapters.trl.grpo_trainer import (  # noqa: E402
    LUFFY_LOSS_TYPES,
    SUPPORTED_TRL,
    TokenAdvantageGRPOTrainer,
    _trl_supported,
)
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MOVED = "TRL internals moved (adapters/trl_trainer.py relies on them): "


def _source(name: str) -> str:
    return inspect.getsource(getattr(GRPOTrainer, name))


def test_trl_internals__installed_trl_is_in_the_pinned_range():
    assert _trl_supported(trl.__version__), (
        f"TRL {trl.__version__} is outside the range TokenAdvantageGRPOTrainer supports "
        f"(>={SUPPORTED_TRL[0]},<{SUPPORTED_TRL[1]})"
    )
    pins = re.findall(r'"(trl[<>=!~][^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert pins == [f"trl>={SUPPORTED_TRL[0]},<{SUPPORTED_TRL[1]}"], (
        f"pyproject.toml pins {pins}; "
        f"agent_envs.adapters.trl.grpo_trainer.SUPPORTED_TRL is {SUPPORTED_TRL}"
    )


def test_trl_internals__overridden_methods_keep_their_signatures():
    expected = {
        "_generate_and_score_completions": ["self", "inputs"],
        "_compute_loss": ["self", "model", "inputs"],
        "_get_per_token_logps_and_entropies": [  # the trimmed pass names the first eight
            "self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
            "compute_entropy", "compute_aux_loss",
        ],
    }  # fmt: skip
    for name, parameters in expected.items():
        found = list(inspect.signature(getattr(GRPOTrainer, name)).parameters)
        assert found[: len(parameters)] == parameters, f"{MOVED}{name}{tuple(found)}"


def test_trl_internals__rollout_fields_reach_the_input_rows_and_env_mask_the_loss_mask():
    score = _source("_generate_and_score_completions")
    # extra rollout_func fields are merged into each input row (token_advantages, off_policy)
    assert re.search(r"inp\[key\] = values\[i\]", score), (
        f"{MOVED}_generate_and_score_completions no longer merges the rollout_func's extra "
        "fields into the input rows"
    )
    for key in ("advantages", "completion_ids", "completion_mask", "tool_mask"):
        assert f'"{key}"' in score, f"{MOVED}the scored batch has no {key!r} key"
    generate = _source("_generate")
    assert 'extra_fields.pop("env_mask"' in generate, (
        f"{MOVED}_generate no longer turns the rollout_func's env_mask into the tool mask"
    )
    assert "log_metric" in _source("_calculate_rewards"), (
        f"{MOVED}reward functions no longer receive log_metric"
    )


def test_trl_internals__loss_takes_per_token_advantages_and_one_forward_pass():
    loss = _source("_compute_loss")
    assert re.search(
        r"if advantages\.dim\(\) == 1:\s*advantages = advantages\.unsqueeze\(1\)", loss
    ), f"{MOVED}_compute_loss no longer accepts (batch, tokens) advantages as they are"
    calls = re.findall(r"self\._get_per_token_logps_and_entropies\(", loss)
    assert len(calls) == 1, (
        f"{MOVED}_compute_loss calls _get_per_token_logps_and_entropies {len(calls)} times "
        "(the off-policy term takes the log-probabilities of its one forward pass)"
    )
    assert 'inputs["advantages"]' in loss and '"tool_mask"' in loss, (
        f"{MOVED}_compute_loss reads its advantages or tool mask differently"
    )


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, tokenizer, tiny_model):
    def rollout(prompts, trainer):  # never called
        raise AssertionError

    trainer = TokenAdvantageGRPOTrainer(
        model=copy.deepcopy(tiny_model),
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(2)),
        rollout_func=rollout,
        args=GRPOConfig(
            output_dir=str(tmp_path_factory.mktemp("internals")),
            per_device_train_batch_size=2,
            gradient_accumulation_steps=2,
            num_generations=2,
            max_completion_length=40,
            report_to="none",
            use_cpu=True,
        ),
    )
    trainer.current_gradient_accumulation_steps = 2  # set by Trainer's loop, outside it here
    return trainer


@pytest.mark.parametrize("loss_type", LUFFY_LOSS_TYPES)
def test_trl_internals__off_policy_term_is_normalised_as_trl_normalises(
    trainer, tokenizer, loss_type
):
    """With one iteration TRL's per-token loss is -A (ratio 1): its loss must equal the
    subclass's normalisation of -A, in every loss type the off-policy term supports."""
    prompt = tokenizer.encode("<|im_start|>user\nPush<|im_end|>\n<|im_start|>assistant\n")
    completion = tokenizer.encode("<answer>Left || Down || Up</answer><|im_end|>")
    completion_mask = torch.ones(2, len(completion), dtype=torch.long)
    completion_mask[1, 5:] = 0  # rows of different lengths
    tool_mask = torch.ones_like(completion_mask)
    tool_mask[0, 2:4] = 0  # env tokens
    advantages = torch.linspace(-1.0, 2.0, 2 * len(completion)).view(2, -1)
    mask = completion_mask * tool_mask
    inputs = {
        "prompt_ids": torch.tensor([prompt] * 2),
        "prompt_mask": torch.ones(2, len(prompt), dtype=torch.long),
        "completion_ids": torch.tensor([completion] * 2),
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": advantages,
        "num_items_in_batch": mask.sum() * 3,  # as if the generation batch had more rows
    }
    trainer.loss_type = loss_type
    for training in (True, False):
        trainer.model.train(training)
        with torch.no_grad():
            expected = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
            ours = trainer._normalise(-advantages, mask, inputs)
        assert float(ours) == pytest.approx(float(expected), rel=1e-6), (
            f"{MOVED}loss_type={loss_type!r} (training={training}) normalises its per-token "
            "loss differently from TokenAdvantageGRPOTrainer._normalise"
        )


def test_trl_internals__sft_trainer_pieces_shared_prefix_relies_on():
    """agent_envs.adapters.trl.sft_trainer.SharedPrefixSFTTrainer: compute_loss's signature, the
    fused LM head's keyword and outputs, and the trainer attributes its loss path reads and
    writes."""
    from trl import SFTTrainer
    from trl.trainer.utils import FusedCausalLMOutput

    found = list(inspect.signature(SFTTrainer.compute_loss).parameters)
    assert found == ["self", "model", "inputs", "return_outputs", "num_items_in_batch"], (
        f"{MOVED}SFTTrainer.compute_loss{tuple(found)}"
    )
    source = inspect.getsource(SFTTrainer)
    for piece in (
        "fused_lm_head=True",
        "self.aux_loss_enabled",
        "self.compute_loss_func",
        "self.label_smoother",
        "self._total_train_tokens",
        '["mean_token_accuracy"]',
        '["entropy"]',
    ):
        assert piece in source, f"{MOVED}SFTTrainer no longer has {piece!r}"
    fields = set(FusedCausalLMOutput.__dataclass_fields__)
    assert {"log_probs", "label_mask", "entropy", "is_top1"} <= fields, (
        f"{MOVED}FusedCausalLMOutput fields are {sorted(fields)}"
    )
