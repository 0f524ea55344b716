"""vLLM offline engine: ``LLM.generate`` on token ids, sampled-token logprobs.

A thin layer over vLLM's public API: each request becomes a ``TokensPrompt`` with its own
``SamplingParams(max_tokens=..., stop_token_ids=..., logprobs=0)`` (``logprobs=0`` returns the
log-probability of the sampled token only), and all requests of a turn go to one
``LLM.generate`` call. With a sampling ``seed``, the k-th request of the engine's life is
sampled with seed ``seed + k``, as :class:`~agent_envs.adapters.engines.openai_http.OpenAIEngine`
does: a run is reproducible, and the G members of a group (identical prompts) sample different
episodes instead of G copies of one. After new weights are loaded into the engine (a training step),
call :meth:`VLLMEngine.weights_updated`, which resets vLLM's prefix cache so no cached block
computed with the old weights is reused. vLLM is imported when the engine is built, never before.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig

from agent_envs.optional import require

__all__ = ["VLLMEngine", "sampling_params"]


def sampling_params(
    factory: Any, request: GenerationRequest, sampling: SamplingConfig, number: int, **extra: Any
) -> Any:
    """vLLM ``SamplingParams`` (built by ``factory``) for request ``number`` of an engine's life:
    one sample, the sampled token's logprob, the request's budget and stop tokens, and seed
    ``sampling.seed + number`` when seeded (so members of a group sample differently)."""
    return factory(
        n=1,
        max_tokens=request.max_new_tokens,
        stop_token_ids=list(request.stop_token_ids),
        logprobs=0,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        top_k=sampling.top_k if sampling.top_k > 0 else -1,
        seed=None if sampling.seed is None else sampling.seed + number,
        skip_special_tokens=True,
        **extra,
    )


class VLLMEngine:
    """Generate with a ``vllm.LLM`` (pass one, e.g. TRL's colocated engine, or a model name
    and ``llm_kwargs`` to build one).

    Args:
        llm: a ``vllm.LLM`` or a model name/path.
        tokenizer: the Hugging Face tokenizer the collector builds prompts with (default: the
            LLM's own).
        sampling: temperature, top-p, top-k; with a ``seed``, request k of the engine's life
            (counted in request order across calls) gets seed ``seed + k``.
        llm_kwargs: passed to ``vllm.LLM`` when ``llm`` is a name.
    """

    def __init__(
        self,
        llm: Any,
        *,
        tokenizer: Any = None,
        sampling: SamplingConfig | None = None,
        name: str | None = None,
        **llm_kwargs: Any,
    ) -> None:
        vllm = require("vllm", "vllm", needed_by="VLLMEngine (a CUDA machine)")
        if isinstance(llm, str):
            llm = vllm.LLM(model=llm, **llm_kwargs)
        self.llm = llm
        self.tokenizer = tokenizer if tokenizer is not None else llm.get_tokenizer()
        self.sampling = sampling or SamplingConfig()
        self.name = name or "vllm"
        self._SamplingParams = vllm.SamplingParams
        self._TokensPrompt = vllm.inputs.TokensPrompt
        self._request_count = itertools.count()

    def _params(self, request: GenerationRequest) -> Any:
        return sampling_params(
            self._SamplingParams, request, self.sampling, next(self._request_count)
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        prompts = []
        for request in requests:
            if request.prompt_ids is None:
                raise ValueError("VLLMEngine needs prompt_ids in every request")
            prompts.append(self._TokensPrompt(prompt_token_ids=list(request.prompt_ids)))
        params = [self._params(request) for request in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        generations = []
        for output in outputs:
            completion = output.outputs[0]
            token_ids = list(completion.token_ids)
            logprobs = None
            if completion.logprobs is not None:
                logprobs = [
                    float(step[token].logprob)
                    for token, step in zip(token_ids, completion.logprobs, strict=True)
                ]
            generations.append(
                Generation(
                    text=completion.text,
                    token_ids=token_ids,
                    logprobs=logprobs,
                    finish_reason="length" if completion.finish_reason == "length" else "stop",
                )
            )
        return generations

    def weights_updated(self) -> None:
        """Call after loading new weights: drops prefix-cache blocks of the old weights."""
        self.llm.reset_prefix_cache()
