"""Hugging Face ``transformers`` engine for vision-language models (a model and its processor).

:class:`VisionLanguageEngine` continues each request's ``prompt_ids`` as
`agent_envs.adapters.engines.transformers.TransformersEngine` does, and adds the pictures: the
images of the request's messages (the user turns' image parts, in order) go through the processor's
image processor and into ``model.generate`` with the ids. Its ``chat_delta``
(:class:`VisionChatDelta`) is what the rollout collector uses to build an episode's ids, so
each observation's image placeholder tokens, expanded by the processor to the image's number
of tokens, are environment tokens (env mask 0) in the records.

Tested with a Qwen2-VL-style model (``pixel_values`` + ``image_grid_thw``, M-RoPE positions
from ``mm_token_type_ids``); the image processor's outputs are passed to ``generate`` as they
come, so other processors whose placeholders the processor expands in the text work the same.
Every call prefills each prompt whole (no KV-cache reuse between turns: M-RoPE positions
depend on the whole sequence's images).
"""

from __future__ import annotations

import base64
import inspect
import io
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from agent_envs.adapters.engines.transformers import generate_padded, left_padded
from agent_envs.adapters.loop.chat import ChatDelta
from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig

from agent_envs.optional import require

__all__ = ["VisionChatDelta", "VisionLanguageEngine", "message_images"]

_DATA_URL = "data:image/"


def _part_image(part: dict[str, Any]) -> Any:
    """The picture of one content part (a data URL string, an array or a PIL image), or
    ``None`` for a text part."""
    kind = part.get("type")
    if kind == "image_url":
        url = part.get("image_url")
        return url.get("url") if isinstance(url, dict) else url
    if kind == "image":
        for key in ("image", "url", "path"):
            if part.get(key) is not None:
                return part[key]
    return None


def message_images(messages: Iterable[dict[str, Any]]) -> list[Any]:
    """Every picture in ``messages``, in order (data URLs, arrays or PIL images)."""
    images = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            images += [image for part in content if (image := _part_image(part)) is not None]
    return images


class _ImageDecoder:
    """Data URLs → RGB arrays, the last ``size`` decoded kept (an episode's earlier pictures
    come back every turn)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def __call__(self, image: Any) -> Any:
        if not isinstance(image, str):
            return image
        cached = self._cache.get(image)
        if cached is not None:
            self._cache.move_to_end(image)
            return cached
        if not image.startswith(_DATA_URL) or ";base64," not in image:
            raise ValueError(f"only base64 image data URLs are read, got {image[:40]!r}")
        from PIL import Image

        data = base64.b64decode(image.split(";base64,", 1)[1])
        array = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        self._cache[image] = array
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return array


class VisionChatDelta(ChatDelta):
    """`agent_envs.adapters.loop.collector.ChatDelta` for a processor: messages keep their image
    parts, the processor's chat template renders them (one placeholder per image) and the processor
    encodes text and images together, expanding each placeholder to its image's tokens."""

    def __init__(self, processor: Any, *, decode: _ImageDecoder | None = None) -> None:
        self.processor = processor
        self.decode = decode or _ImageDecoder(256)
        super().__init__(processor.tokenizer)

    def _render(self, messages: list[dict[str, Any]], *, generation_prompt: bool) -> str:
        return self.processor.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt
        )

    def _content(self, content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        return content

    def _encode(self, text: str, images: Sequence[Any] = ()) -> list[int]:
        if not images:
            return self.tokenizer.encode(text, add_special_tokens=False)
        encoded = self.processor(
            text=[text], images=[self.decode(image) for image in images], add_special_tokens=False
        )
        return [int(token) for token in encoded["input_ids"][0]]

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        text = self._render(messages, generation_prompt=True)
        return self._encode(text, message_images(messages))

    def turn_ids(
        self, completion_ids: Sequence[int], observation: str | list[dict[str, Any]]
    ) -> list[int]:
        text = self.closing_text(completion_ids) + self.user_delta(observation)
        return self._encode(text, message_images([{"content": observation}]))


class VisionLanguageEngine:
    """Generate with a vision-language ``model`` and its ``processor``.

    Args:
        model: a ``transformers`` image-text-to-text model (e.g. Qwen2-VL); switched to eval
            mode while generating and restored afterwards.
        processor: its processor (a tokenizer, an image processor and a chat template).
        sampling: temperature, top-p, top-k; ``temperature=0`` is greedy; a ``seed``
            reseeds torch before each ``generate`` call.
        batch_size: most requests per ``generate`` call (``None``: all at once).
        name: the agent name written into records.
        image_cache_size: pictures kept between calls (decoded, and as the image processor's
            outputs), so an episode's earlier pictures are not processed again each turn.

    A request's images are those of its ``messages`` (the collector's, which hold every
    observation's picture as a PNG data URL); its ``prompt_ids`` must hold their placeholder
    tokens (the collector's do, through :attr:`chat_delta`). A request whose images cannot be
    read, or whose placeholder count does not match them, gets a `Generation` with ``error``
    set (the collector ends that episode); the rest of the batch goes on. ``logprobs`` are as
    in `TransformersEngine`: the sampled tokens' log-probabilities at the sampling
    temperature, before top-k and top-p.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        sampling: SamplingConfig | None = None,
        batch_size: int | None = None,
        name: str | None = None,
        image_cache_size: int = 256,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        if (
            isinstance(image_cache_size, bool)
            or not isinstance(image_cache_size, int)
            or image_cache_size < 0
        ):
            raise ValueError(f"image_cache_size must be an int >= 0, got {image_cache_size!r}")
        image_token = getattr(processor, "image_token_id", None)
        if getattr(processor, "image_processor", None) is None or image_token is None:
            raise ValueError(
                "processor must have an image_processor and an image_token_id, got "
                f"{type(processor).__name__}"
            )
        self.model = model
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.image_token_id = int(image_token)
        self.sampling = sampling or SamplingConfig()
        self.batch_size = batch_size
        self.name = name or getattr(getattr(model, "config", None), "_name_or_path", "") or "hf-vlm"
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else self.tokenizer.eos_token_id
        self._decode = _ImageDecoder(image_cache_size)
        self._processed: OrderedDict[str, dict[str, Any]] = OrderedDict()
        #: the collector's token pieces for this processor (images expanded, env mask 0)
        self.chat_delta = VisionChatDelta(processor, decode=self._decode)
        forward = inspect.signature(model.forward).parameters
        self._token_types = "mm_token_type_ids" in forward

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        generations: list[Generation | None] = [None] * len(requests)
        ready: list[tuple[int, list[Any]]] = []
        for index, request in enumerate(requests):
            if request.prompt_ids is None:
                raise ValueError("VisionLanguageEngine needs prompt_ids in every request")
            try:
                images = message_images(request.messages or [])
                inputs = self._image_inputs(images)
                self._check_placeholders(request.prompt_ids, inputs)
            except Exception as error:  # one bad request ends its own episode only
                generations[index] = Generation(text="", finish_reason="error", error=str(error))
                continue
            ready.append((index, images))
        size = self.batch_size or max(len(ready), 1)
        for start in range(0, len(ready), size):
            chunk = ready[start : start + size]
            batch = self._generate_batch(
                [requests[index] for index, _ in chunk], [images for _, images in chunk]
            )
            for (index, _), generation in zip(chunk, batch, strict=True):
                generations[index] = generation
        return generations  # type: ignore[return-value]

    # ------------------------------------------------------------ images
    def _image_inputs(self, images: list[Any]) -> dict[str, Any]:
        """The image processor's outputs for ``images``, one image at a time, joined along the
        first dimension; each data URL's outputs are kept (an episode's earlier pictures come
        back every turn)."""
        torch = require("torch", "train", needed_by="VisionLanguageEngine")
        parts = []
        for image in images:
            outputs = self._processed.get(image) if isinstance(image, str) else None
            if outputs is None:
                outputs = dict(
                    self.processor.image_processor(
                        images=[self._decode(image)], return_tensors="pt"
                    )
                )
                if isinstance(image, str) and self._decode.size:
                    self._processed[image] = outputs
                    while len(self._processed) > self._decode.size:
                        self._processed.popitem(last=False)
            elif isinstance(image, str):
                self._processed.move_to_end(image)
            parts.append(outputs)
        if not parts:
            return {}
        return {key: torch.cat([part[key] for part in parts]) for key in parts[0]}

    def _check_placeholders(self, prompt_ids: Sequence[int], inputs: dict[str, Any]) -> None:
        """The prompt's placeholder tokens must be the images' token count (grid-based
        processors: ``prod(grid) // merge_size**2`` per image)."""
        found = sum(1 for token in prompt_ids if token == self.image_token_id)
        grid = inputs.get("image_grid_thw")
        if grid is None:
            if found and not inputs:
                raise ValueError(f"prompt has {found} image tokens and the request no images")
            return
        merge = getattr(self.processor.image_processor, "merge_size", 1) ** 2
        expected = int(grid.prod(dim=-1).sum()) // merge
        if found != expected:
            raise ValueError(f"prompt has {found} image tokens, its images need {expected}")

    # ------------------------------------------------------------ one batch
    def _generate_batch(
        self, requests: Sequence[GenerationRequest], images: Sequence[list[Any]]
    ) -> list[Generation]:
        device = next(self.model.parameters()).device
        prompts = [request.prompt_ids for request in requests]
        width = max(len(prompt) for prompt in prompts)  # type: ignore[arg-type]
        input_ids, attention = left_padded(prompts, width, self.pad_token_id)  # type: ignore[arg-type]
        extra = {
            key: value.to(device) if hasattr(value, "to") else value
            for key, value in self._image_inputs([i for row in images for i in row]).items()
        }
        if self._token_types and extra:
            extra["mm_token_type_ids"] = (input_ids == self.image_token_id).long().to(device)
        _, generations = generate_padded(self, requests, input_ids, attention, **extra)
        return generations
