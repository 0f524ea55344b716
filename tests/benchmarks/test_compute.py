"""agent_envs.benchmarks.compute on a tiny random checkpoint: the raw replay is the collector's
work, the loss batch and FLOP counts are sane, and the report has every side (not timings)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from agent_envs.benchmarks import compute


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tests.adapters.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny")
    tokenizer = build_tokenizer()
    build_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def args(tiny_folder):
    return compute.Args(
        model=tiny_folder,
        num_envs=2,
        turns=2,
        max_new_tokens=4,
        repeats=2,
        threads=1,
        micro_batch=3,
        matmul_size=64,
        peak_seconds=0.05,
        output="",
    )


@pytest.fixture(scope="module")
def generation(args):
    model, tokenizer = compute.load(args.model)
    return model, tokenizer, compute.measure_generation(args, model, tokenizer)


def test_compute__raw_generate_replays_the_collectors_calls(args, generation):
    model, tokenizer, result = generation
    assert result["mismatched"] == 0
    assert len(result["calls"]) == 2  # one generate call per turn, both episodes in it
    assert [len(call["prompts"]) for call in result["calls"]] == [2, 2]
    for call in result["calls"]:
        assert compute.raw_generate(model, tokenizer, call) == call["replies"]
    tokens = {run["tokens"] for side in compute.GENERATION_SIDES for run in result["runs"][side]}
    assert len(tokens) == 1 and 0 < tokens.pop() <= 2 * 2 * args.max_new_tokens
    assert all(len(result["runs"][side]) == args.repeats for side in compute.GENERATION_SIDES)


def test_compute__loss_batch_pads_prompts_left_and_completions_right(generation):
    _, tokenizer, result = generation
    trajectories = result["trajectories"]
    batch = compute.loss_batch(trajectories, 3, tokenizer.pad_token_id)
    rows = [trajectories[index % len(trajectories)] for index in range(3)]
    assert batch["input_ids"].shape[0] == 3
    assert batch["real_tokens"] == sum(len(r.prompt_ids) + len(r.completion_ids) for r in rows)
    first = rows[0]
    width = max(len(r.prompt_ids) for r in rows)
    start = width - len(first.prompt_ids)
    end = width + len(first.completion_ids)
    assert batch["input_ids"][0, start:end].tolist() == first.prompt_ids + first.completion_ids
    assert batch["attention_mask"][0].tolist() == [0] * start + [1] * (end - start) + [0] * (
        batch["input_ids"].shape[1] - end
    )
    assert batch["loss_mask"][0, : len(first.completion_ids)].tolist() == first.env_mask


def test_compute__flops_cover_the_linear_layers_and_attention(args, generation):
    model, tokenizer, result = generation
    update = compute.measure_update(args, model, tokenizer, result["trajectories"])
    assert 0 < update["linear_flops"] < update["flops"]  # eager attention adds its matmuls
    for side in (*compute.PEAKS, *compute.UPDATE_SIDES):
        assert len(update["runs"][side]) == args.repeats
        assert all(value > 0 for value in update["runs"][side])
    assert 0 < update["profile"]["matmul_s"] < update["profile"]["total_s"]


@pytest.mark.slow
def test_compute__compile_adds_the_compiled_float32_pass(args, generation):
    model, tokenizer, result = generation
    update = compute.measure_update(
        replace(args, compile=True, repeats=1, profile=False),
        model,
        tokenizer,
        result["trajectories"],
    )
    assert update["compile_s"] > 0 and len(update["runs"][compute.COMPILED_SIDE]) == 1
    assert compute.COMPILED_SIDE in compute.update_table(update)[1]


def test_compute__report_names_every_side_and_target(args):
    text = compute.main(args)
    for side in (*compute.GENERATION_SIDES, *compute.UPDATE_SIDES):
        assert f"| {side} |" in text
    assert "Target ≥ 0.90× raw generate" in text and "Target ≥ 40% of peak" in text
    assert "Replies differing from the reference run: 0 of 6 side runs." in text
    # the profile's bound on the bfloat16 pass, and the float32 pass it is weighed against
    assert "the most a pass made of nothing but these matmuls could reach" in text
    assert "x faster than the float32 pass." in text


def test_compute__the_bfloat16_reason_follows_the_measured_ratio():
    """The AMX machine's bfloat16 peak stood ~6x its float32 one and the pass reached 10% of it;
    an AVX-512 BF16 CPU's stands ~2x and the pass reached 45%: each report says which."""
    amx = compute._bfloat16_reason(0.10, {"float32": [353.0], "bfloat16": [2050.0]}, ["amx_bf16"])
    avx = compute._bfloat16_reason(0.45, {"float32": [188.0], "bfloat16": [417.0]}, [])
    assert amx.startswith("Why the bfloat16 pass stays far") and "5.8x the float32" in amx
    assert avx.startswith("Why the bfloat16 pass comes this close") and "only 2.2x" in avx
    assert "no bfloat16 flags" in avx
