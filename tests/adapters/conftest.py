"""Session fixtures: a byte-level BPE tokenizer trained here with a ChatML chat template, and
a tiny randomly initialised Qwen2 (2 layers) on it. Nothing is downloaded."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

#: ChatML as Qwen2.5 renders it (no default system prompt): every message is
#: "<|im_start|>{role}\n{content}<|im_end|>\n", so a conversation is the concatenation of its
#: messages and incremental ids equal a full re-render. Assistant content and its <|im_end|>
#: sit inside {% generation %} so TRL's SFT can train on assistant tokens only.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{ '\\n' }}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

#: Qwen3-style: earlier assistant messages lose their <think> part when re-rendered.
THINK_STRIPPING_TEMPLATE = (
    "{% for message in messages %}"
    "{% set content = message['content'] %}"
    "{% if message['role'] == 'assistant' and not loop.last and '</think>' in content %}"
    "{% set content = content.split('</think>')[-1].lstrip() %}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _corpus() -> list[str]:
    import gymnasium

    import agent_envs  # noqa: F401

    texts = []
    for env_id in ("grl/Sokoban-v0", "grl/Blocksworld-v0", "grl/GSM8K-v0"):
        env = gymnasium.make(env_id)
        for seed in range(20):
            observation, _ = env.reset(seed=seed)
            texts += [env.unwrapped.instructions, observation]
        env.close()
    texts += [
        f"<think>I move {a}.</think><answer>{a} || {b}</answer>"
        for a in ("Up", "Down", "Left", "Right")
        for b in ("Up", "Down", "Left", "Right")
    ]
    return texts


def build_tokenizer(chat_template: str = CHATML_TEMPLATE):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def build_model(tokenizer, seed: int = 0):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def cpu_run_settings(output_dir, **overrides) -> dict:
    """Keywords of a TRL trainer config (``SFTConfig``, ``GRPOConfig``) for a short seeded CPU
    run writing to ``output_dir``: no reports, no checkpoints, a log line every step;
    ``overrides`` add keys or replace these."""
    settings = dict(
        output_dir=str(output_dir),
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    settings.update(overrides)
    return settings


@pytest.fixture(scope="session")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="session")
def think_tokenizer():
    return build_tokenizer(THINK_STRIPPING_TEMPLATE)


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    return build_model(tokenizer)


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory, tokenizer, tiny_model):
    """The tiny model and tokenizer saved as a local checkpoint folder."""
    folder = tmp_path_factory.mktemp("tiny-qwen2")
    tiny_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
