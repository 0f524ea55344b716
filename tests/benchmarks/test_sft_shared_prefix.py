"""agent_envs.benchmarks.sft_shared_prefix on a tiny checkpoint folder: the report, and too few
batches."""

from __future__ import annotations

import pytest
from agent_envs.benchmarks import sft_shared_prefix


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tests.adapters.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny")
    tokenizer = build_tokenizer()
    build_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_sft_shared_prefix__reports_both_trainers_on_a_checkpoint_folder(tiny_folder):
    args = sft_shared_prefix.Args(
        model=tiny_folder, episodes=6, batch_size=2, repeats=2, bf16=False, output=""
    )
    text = sft_shared_prefix.main(args)
    assert f"shapes (`{tiny_folder}`)" in text and "| `SharedPrefixSFTTrainer` |" in text
    gap = float(text.split("Largest loss difference on the same batch: ")[1].split(" ")[0])
    assert gap < 1e-4  # fp32: the same loss


def test_sft_shared_prefix__too_few_batches_name_the_flags(tiny_folder):
    args = sft_shared_prefix.Args(model=tiny_folder, episodes=1, batch_size=16, output="")
    with pytest.raises(SystemExit, match=r"--episodes 1: .* needs 5"):
        sft_shared_prefix.main(args)
