"""Per-turn cost of producing and encoding the image observation of the ``grl/*-vision-v0`` ids.

``agent-envs bench vision-obs`` plays the random baseline on each vision id and
times, for every turn and side by side (the stages of one turn run back to back, so machine noise
hits them alike):

* **text step**: the text env's ``step`` (what a text id costs; the baseline),
* **draw**: the frame of the new state drawn to an ``(H, W, 3)`` array
  (`agent_envs.renderers.raster`),
* **PNG URL**: the array encoded as the PNG data URL the collector puts in the user message,
* **decode**: the data URL read back into an array (the engine's side, first sight),
* **image processor**: Qwen2-VL's image processor (PIL backend, its default pixel bounds)
  turning the array into ``pixel_values``; **image tokens** is the placeholder count it
  implies (``prod(grid) / merge_size**2``),
* **delta**: the collector's token delta for the new observation, text only
  (`agent_envs.adapters.loop.collector.ChatDelta`) and with the image expanded
  (`agent_envs.adapters.engines.transformers_vlm.VisionChatDelta`, which runs the processor), on the
  tests' tiny tokenizer with Qwen2-VL's vision tokens.

Medians over ``--turns`` turns per id, with the 10th-90th percentile range. Results go to
``benchmarks/results/vision_obs.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

RESULTS = RESULTS_DIR / "vision_obs.md"
STAGES = ("text step", "draw", "PNG URL", "decode", "image processor", "text delta", "image delta")


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env_ids: list[str] = field(
        default_factory=lambda: [
            "grl/Sokoban-vision-v0",
            "grl/Tetris-vision-v0",
            "grl/Blocksworld-vision-v0",
        ]
    )
    """vision ids measured"""
    turns: int = 60
    """turns timed per id (episodes restart as they end)"""
    seed: int = 0
    """first episode's seed"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def _processor(default_pixels: bool) -> Any:
    from tests.adapters.test_vision import build_processor

    processor = build_processor()
    if default_pixels:  # Qwen2-VL's own bounds: 56*56 to 28*28*1280 pixels
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
            Qwen2VLImageProcessorPil,
        )

        processor.image_processor = Qwen2VLImageProcessorPil()
    return processor


def _timed(samples: dict[str, list[float]], name: str, call: Any, *args: Any, **kw: Any) -> Any:
    start = time.perf_counter()
    value = call(*args, **kw)
    samples[name].append(time.perf_counter() - start)
    return value


def measure_id(env_id: str, args: Args, processor: Any) -> dict[str, Any]:
    import gymnasium
    from agent_envs.adapters.engines.transformers_vlm import VisionChatDelta
    from agent_envs.adapters.loop.chat import ChatDelta
    from agent_envs.renderers.raster import draw
    from agent_envs.renderers.replay import png_data_url

    import agent_envs  # noqa: F401
    from agent_envs.core.policies import format_answer
    from agent_envs.core.vision import VisionEnv

    env = VisionEnv(**gymnasium.spec(env_id).kwargs)
    text_env = env.unwrapped
    text_delta, image_delta = ChatDelta(processor.tokenizer), VisionChatDelta(processor)
    rng = np.random.default_rng(args.seed)
    samples: dict[str, list[float]] = {stage: [] for stage in STAGES}
    tokens, url_bytes = [], []
    seed = args.seed
    text_env.reset(seed=seed)
    for _ in range(args.turns):
        reply = format_answer(text_env.random_actions(rng), text_env.answer_format)
        text, _, terminated, truncated, _ = _timed(samples, "text step", text_env.step, reply)
        image = _timed(samples, "draw", lambda: draw(text_env.frame()))
        url = _timed(samples, "PNG URL", png_data_url, image)
        url_bytes.append(len(url))
        image_delta.decode = type(image_delta.decode)(0)  # no cache: first sight
        _timed(samples, "decode", image_delta.decode, url)
        pixels = _timed(
            samples,
            "image processor",
            processor.image_processor,
            images=[image],
            return_tensors="pt",
        )
        merge = processor.image_processor.merge_size**2
        tokens.append(int(pixels["image_grid_thw"].prod()) // merge)
        content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
        _timed(samples, "text delta", text_delta.turn_ids, [], text)
        _timed(samples, "image delta", image_delta.turn_ids, [], content)
        if terminated or truncated:
            seed += 1
            text_env.reset(seed=seed)
    return {
        "env_id": env_id,
        "shape": env.observation_space["image"].shape,
        "samples": samples,
        "tokens": statistics.median(tokens),
        "url_kib": statistics.median(url_bytes) / 1024,
    }


def _us(values: list[float]) -> str:
    low, high = np.percentile(values, [10, 90]) * 1e6
    return f"{statistics.median(values) * 1e6:,.0f} ({low:,.0f}-{high:,.0f})"


def report(rows: list[dict[str, Any]], args: Args) -> str:
    lines = [
        "# Vision observations: per-turn cost of producing and encoding the image",
        "",
        f"`agent-envs bench vision-obs` on {platform.machine()}, {os.cpu_count()} "
        f"CPUs, Python {platform.python_version()}: random baseline, {args.turns} turns per id; "
        "median µs per turn (10th-90th percentile). Image processor: Qwen2-VL's (PIL "
        "backend) with its default pixel bounds.",
        "",
        "| id | frame (H x W) | text step | draw | PNG URL | PNG KiB | decode | image "
        "processor | image tokens | text delta | image delta | added / text turn |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        median = {stage: statistics.median(row["samples"][stage]) for stage in STAGES}
        added = median["draw"] + median["PNG URL"] + median["image delta"]
        base = median["text step"] + median["text delta"]
        height, width, _ = row["shape"]
        cells = [_us(row["samples"][stage]) for stage in STAGES]
        lines.append(
            f"| `{row['env_id']}` | {height} x {width} | {cells[0]} | {cells[1]} | {cells[2]} | "
            f"{row['url_kib']:.1f} | {cells[3]} | {cells[4]} | {row['tokens']:.0f} | "
            f"{cells[5]} | {cells[6]} | {added / base:.0f}x |"
        )
    lines += [
        "",
        "A vision turn adds drawing the frame, encoding it as a PNG data URL (the collector) "
        "and the image delta (decoding the picture, running the image processor, tokenizing "
        "the expanded placeholders) to a text turn's step and text delta; the last column is "
        "that addition over the text turn's env step plus text delta. The engine decodes each "
        "picture once per episode and keeps its image-processor outputs, so a turn's model "
        "call adds one more image-processor run for the new picture (the model itself "
        "re-prefills the whole context, images included, each turn).",
        "",
    ]
    return "\n".join(lines)


def main(args: Args) -> str:
    processor = _processor(default_pixels=True)
    rows = [measure_id(env_id, args, processor) for env_id in args.env_ids]
    text = report(rows, args)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return text


if __name__ == "__main__":
    prog = "agent-envs bench vision-obs"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
