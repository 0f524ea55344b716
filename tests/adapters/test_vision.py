"""Image observations through the collector with a tiny Qwen2-VL built here (nothing
downloaded): the records' image placeholder tokens are env tokens, the engine sees the
pictures, and a GRPO step trains on them."""

from __future__ import annotations

import base64
import io

import gymnasium
import numpy as np
import pytest
from agent_envs.adapters.loop import ChatDelta, RolloutCollector
from agent_envs.adapters.loop.engine import GenerationRequest, SamplingConfig

import agent_envs  # noqa: F401
from tests.adapters.conftest import build_tokenizer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

#: ChatML whose user content may be typed parts, images as Qwen2-VL writes them.
VL_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] in ('image', 'image_url') %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
VISION_TOKENS = ["<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"]
#: Frames are scaled to at most this many pixels (28 x 28 per image token after merging).
MAX_PIXELS = 56 * 112


def build_processor():
    from transformers import Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )
    from transformers.processing_utils import ProcessorMixin

    class ImageOnlyProcessor(Qwen2VLProcessor):
        """Qwen2-VL's processor without its video processor (which needs torchvision)."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            self.image_token, self.video_token = "<|image_pad|>", "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = None
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    tokenizer = build_tokenizer(VL_TEMPLATE)
    tokenizer.add_special_tokens({"additional_special_tokens": VISION_TOKENS})
    images = Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=MAX_PIXELS)
    return ImageOnlyProcessor(images, tokenizer, chat_template=VL_TEMPLATE)


def build_vlm(processor, seed: int = 0):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tokenizer = processor.tokenizer
    torch.manual_seed(seed)
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=8192, tie_word_embeddings=True,
            rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
            bos_token_id=None,
        ),
        vision_config=dict(
            depth=1, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14,
            spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
        ),
        image_token_id=processor.image_token_id,
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"),
    )  # fmt: skip
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


@pytest.fixture(scope="module")
def processor():
    return build_processor()


@pytest.fixture(scope="module")
def vlm(processor):
    return build_vlm(processor)


def _engine(vlm, processor, **kwargs):
    from agent_envs.adapters.engines.transformers_vlm import VisionLanguageEngine

    return VisionLanguageEngine(vlm, processor, sampling=SamplingConfig(temperature=0), **kwargs)


def _collect(engine, env_id="grl/Sokoban-vision-v0", seeds=(3, 4), **kwargs):
    vec = gymnasium.make_vec(env_id, num_envs=len(seeds), autoreset_mode="disabled")
    try:
        return RolloutCollector(vec, engine, max_new_tokens=6, **kwargs).collect(list(seeds))
    finally:
        vec.close()


def _decode(url: str) -> np.ndarray:
    from PIL import Image

    data = base64.b64decode(url.split(";base64,", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


# ----------------------------------------------------------------------------- records
def test_vision__multi_turn_records_count_image_tokens_as_env_tokens(vlm, processor):
    trajectories = _collect(_engine(vlm, processor), max_turns=3)
    image_token = processor.image_token_id
    per_image = 4  # a 484 x 448 frame scales to 56 x 56 pixels: 2 x 2 tokens of 28 x 28
    for trajectory in trajectories:
        assert trajectory.num_turns == 3 and trajectory.has_tokens
        assert trajectory.prompt_ids.count(image_token) == per_image
        ids, mask = trajectory.completion_ids, trajectory.env_mask
        placeholders = [m for token, m in zip(ids, mask, strict=True) if token == image_token]
        assert placeholders == [0] * (per_image * 2)  # turns 1 and 2 end with a new frame
        assert trajectory.turn_env_ids[-1] == []
        for model_ids in trajectory.turn_completion_ids:
            assert image_token not in model_ids
        users = [m for m in trajectory.messages if m["role"] == "user"]
        assert len(users) == 4
        for message, step in zip(users, trajectory.steps, strict=False):
            text, picture = message["content"]
            assert text == {"type": "text", "text": step.observation}
            assert _decode(picture["image_url"]["url"]).shape == (484, 448, 3)


def test_vision__token_records_equal_the_processor_on_the_whole_conversation(vlm, processor):
    (trajectory,) = _collect(_engine(vlm, processor), seeds=(5,), max_turns=2)
    text = processor.apply_chat_template(trajectory.messages[:-1], tokenize=False)
    pictures = [_decode(m["content"][1]["image_url"]["url"]) for m in trajectory.messages[1:-1:2]]
    whole = processor(text=[text], images=pictures, add_special_tokens=False)["input_ids"][0]
    built = trajectory.prompt_ids + trajectory.completion_ids
    # the last reply is closed by the template, which the collector leaves to the trainer
    assert list(whole)[: len(built)] == built


def test_vision__frames_in_the_records_are_the_env_frames(vlm, processor):
    (trajectory,) = _collect(_engine(vlm, processor), seeds=(7,), max_turns=2)
    env = gymnasium.make("grl/Sokoban-vision-v0")
    observation, _ = env.reset(seed=7)
    first = trajectory.messages[1]["content"][1]["image_url"]["url"]
    assert np.array_equal(_decode(first), observation["image"])
    observation, *_ = env.step(trajectory.steps[0].reply)
    second = trajectory.messages[3]["content"][1]["image_url"]["url"]
    assert np.array_equal(_decode(second), observation["image"])


def test_vision__the_engine_reads_the_pictures(vlm, processor):
    """Same ids, different pixels: the logprobs move (the images reach the model)."""
    engine = _engine(vlm, processor)
    (trajectory,) = _collect(engine, seeds=(3,), max_turns=1)
    messages = trajectory.messages[:2]
    black = [
        {
            **messages[1],
            "content": [messages[1]["content"][0], _data_part(np.zeros((484, 448, 3), np.uint8))],
        }
    ]
    white = [
        {
            **messages[1],
            "content": [
                messages[1]["content"][0],
                _data_part(np.full((484, 448, 3), 255, np.uint8)),
            ],
        }
    ]
    ids = trajectory.prompt_ids
    answers = engine.generate(
        [
            GenerationRequest(max_new_tokens=4, prompt_ids=ids, messages=[messages[0], *m])
            for m in (black, white)
        ]
    )
    assert answers[0].error is None and answers[1].error is None
    assert not np.allclose(answers[0].logprobs, answers[1].logprobs)


def _data_part(image: np.ndarray) -> dict:
    from agent_envs.renderers.image_obs import image_message

    return image_message("", image)["content"][1]


def test_vision__a_request_whose_images_do_not_match_its_placeholders_ends_alone(vlm, processor):
    engine = _engine(vlm, processor)
    (trajectory,) = _collect(engine, seeds=(3,), max_turns=1)
    good = GenerationRequest(
        max_new_tokens=3, prompt_ids=trajectory.prompt_ids, messages=trajectory.messages[:2]
    )
    no_image = GenerationRequest(
        max_new_tokens=3, prompt_ids=trajectory.prompt_ids,
        messages=[trajectory.messages[0], {"role": "user", "content": "text only"}],
    )  # fmt: skip
    bad_url = GenerationRequest(
        max_new_tokens=3, prompt_ids=trajectory.prompt_ids,
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}],
    )  # fmt: skip
    answers = engine.generate([no_image, good, bad_url])
    assert answers[0].finish_reason == "error" and "image tokens" in answers[0].error
    assert answers[1].error is None and answers[1].token_ids
    assert answers[2].finish_reason == "error" and "data URL" in answers[2].error


def test_vision__text_engines_see_the_text_of_a_vision_env():
    """A plain tokenizer's ChatDelta renders typed content as its text parts."""
    tokenizer = build_tokenizer()
    delta = ChatDelta(tokenizer)
    parts = [{"type": "text", "text": "board"}, {"type": "image_url", "image_url": {"url": "x"}}]
    assert delta.user_delta(parts) == delta.user_delta("board")
    assert delta.prompt_ids([{"role": "user", "content": parts}]) == delta.prompt_ids(
        [{"role": "user", "content": "board"}]
    )


@pytest.mark.parametrize(
    ("argument", "value"), [("batch_size", 0), ("image_cache_size", -1), ("batch_size", True)]
)
def test_vision__bad_engine_arguments_are_named(vlm, processor, argument, value):
    with pytest.raises(ValueError, match=argument):
        _engine(vlm, processor, **{argument: value})


def test_vision__a_processor_without_images_is_refused(vlm):
    from agent_envs.adapters.engines.transformers_vlm import VisionLanguageEngine

    with pytest.raises(ValueError, match="processor"):
        VisionLanguageEngine(vlm, build_tokenizer())


# ----------------------------------------------------------------------------- TRL GRPO
def _first_prompt_dataset(env_id, seeds):
    """Rows whose ``prompt`` renders to exactly the collector's first prompt (system message,
    first observation text and an image placeholder) and whose ``image`` is the first frame:
    TRL 1.16 builds the loss's ``pixel_values`` and ``mm_token_type_ids`` from the dataset's
    prompt and images, not from the rollout (see the module docstring of this section)."""
    import datasets
    from PIL import Image

    env = gymnasium.make(env_id)
    rows, seed_of = [], {}
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        seed_of[observation["text"]] = seed
        rows.append(
            {
                "prompt": [
                    {
                        "role": "system",
                        "content": [{"type": "text", "text": env.unwrapped.instructions}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": observation["text"]},
                            {"type": "image"},
                        ],
                    },
                ],
                "image": Image.fromarray(observation["image"]),
            }
        )
    assert len(seed_of) == len(seeds), "first observations must tell the seeds apart"
    return datasets.Dataset.from_list(rows), seed_of


def test_vision__grpo_steps_on_images_with_a_one_turn_rollout_func(tmp_path, processor):
    """TRL 1.16 with ``rollout_func``: the loss's forward pass gets ``pixel_values`` and
    ``mm_token_type_ids`` from the dataset's prompt and ``image`` column only (trl/trainer/
    grpo_trainer.py: ``_generate`` sets ``images = None`` for a rollout_func, line 2218;
    ``_generate_and_score_completions`` restores the dataset's images, line 2438, and runs
    the processor on the dataset prompts, lines 2529-2531). So one-turn episodes train on
    their picture when each row holds the episode's first prompt and frame (the image token
    types then line up with the rollout's ids, asserted below). Frames shown in later turns
    cannot reach the loss: with ``max_turns=2`` Qwen2-VL's forward raises "Image features and
    image tokens do not match, tokens: 32, features: 16" (modeling_qwen2_vl.py:1058)."""
    from agent_envs.adapters.engines.transformers_vlm import VisionLanguageEngine
    from agent_envs.adapters.trl import episode_key, episode_return_reward, make_rollout_func
    from trl import GRPOConfig, GRPOTrainer

    env_id = "grl/Sokoban-vision-v0"
    processor.tokenizer.padding_side = "left"
    model = build_vlm(processor, seed=1)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    dataset, seed_of = _first_prompt_dataset(env_id, range(8))
    trajectories, pixels = [], []
    inner = make_rollout_func(
        env_id,
        max_new_tokens=8,
        max_total_tokens=2048,
        max_turns=1,
        engine=VisionLanguageEngine(model, processor, sampling=SamplingConfig(temperature=1.0)),
        on_trajectories=trajectories.extend,
    )

    def rollout_func(prompts, trainer):
        # agent_envs.adapters.trl keys episodes by a JSON prompt; these prompts are the real
        # first turn
        texts = [
            next(p["text"] for p in prompt[-1]["content"] if p["type"] == "text")
            for prompt in prompts
        ]
        return inner([episode_key(env_id, seed_of[text]) for text in texts], trainer)

    class RecordingTrainer(GRPOTrainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            kinds = inputs["mm_token_type_ids"]  # from the dataset prompt: must match our ids
            assert torch.equal(kinds.bool(), ids == processor.image_token_id)
            pixels.append((inputs["pixel_values"].shape, inputs["prompt_ids"].clone()))
            return super().compute_loss(model, inputs, *args, **kwargs)

    def length_bonus(completions, **_):
        return [len(str(completion)) / 1000 for completion in completions]

    args = GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
        max_steps=2, learning_rate=1e-2, logging_steps=1, report_to="none", use_cpu=True,
        save_strategy="no", max_completion_length=16, temperature=1.0, seed=0,
        dataloader_num_workers=0,
    )  # fmt: skip
    trainer = RecordingTrainer(
        model=model,
        processing_class=processor,
        reward_funcs=[episode_return_reward, length_bonus],
        train_dataset=dataset,
        rollout_func=rollout_func,
        args=args,
    )
    trainer.train()
    assert len(pixels) == 2
    image_token = processor.image_token_id
    for shape, prompt_ids in pixels:
        # four prompts, one frame each: 4 x 16 patches of 14 x 14 (2 x 2 tokens after merging)
        assert tuple(shape) == (4 * 16, 3 * 2 * 14 * 14)
        assert ((prompt_ids == image_token).sum(dim=1) == 4).all()
    assert all(t.num_turns == 1 and t.prompt_ids.count(image_token) == 4 for t in trajectories)
    changed = [
        not torch.equal(old, new.detach())
        for old, new in zip(before, model.parameters(), strict=True)
    ]
    assert any(changed)
    vision = [
        c
        for (name, _), c in zip(model.named_parameters(), changed, strict=True)
        if "visual" in name
    ]
    assert any(vision), "the vision tower was trained"


def test_vision__each_picture_goes_through_the_image_processor_once(vlm, processor):
    engine = _engine(vlm, processor)
    pictures = [np.zeros((60, 80, 3), np.uint8), np.full((90, 40, 3), 200, np.uint8)]
    urls = [_data_part(picture)["image_url"]["url"] for picture in pictures]
    calls = []
    real = processor.image_processor

    class Counting:
        merge_size = real.merge_size

        def __call__(self, *args, **kwargs):
            calls.append(len(kwargs["images"]))
            return real(*args, **kwargs)

    engine.processor = type("P", (), {"image_processor": Counting()})()
    first = engine._image_inputs(urls)
    again = engine._image_inputs([urls[1], *urls])
    assert calls == [1, 1]  # one call per new picture, none for pictures seen before
    whole = real(images=pictures, return_tensors="pt")
    assert torch.equal(first["pixel_values"], whole["pixel_values"])
    assert torch.equal(first["image_grid_thw"], whole["image_grid_thw"])
    assert torch.equal(again["image_grid_thw"], whole["image_grid_thw"][[1, 0, 1]])


def test_vision__async_collector_records_equal_the_lockstep_ones():
    """The async collector's BatchingEngine passes the VLM engine's image-aware chat delta on
    (without it every vision episode ended with an engine error)."""
    import asyncio

    from agent_envs.adapters.engines.transformers_vlm import VisionLanguageEngine
    from agent_envs.adapters.loop.async_collector import AsyncRolloutCollector

    processor = build_processor()
    engine = VisionLanguageEngine(
        build_vlm(processor), processor, sampling=SamplingConfig(temperature=0)
    )
    vec = gymnasium.make_vec("grl/Sokoban-vision-v0", num_envs=2, autoreset_mode="disabled")
    lockstep = RolloutCollector(vec, engine, max_new_tokens=6, max_turns=2).collect([3, 4])
    collector = AsyncRolloutCollector(
        lambda: gymnasium.make("grl/Sokoban-vision-v0"),
        engine,
        env_id="grl/Sokoban-vision-v0",
        max_new_tokens=6,
        max_turns=2,
        max_concurrency=2,
    )
    records = asyncio.run(collector.collect([3, 4]))
    assert [t.error for t in records] == [None, None]
    for a, b in zip(lockstep, records, strict=True):
        assert a.prompt_ids + a.completion_ids == b.prompt_ids + b.completion_ids
