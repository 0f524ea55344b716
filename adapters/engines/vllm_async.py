"""vLLM's asynchronous engine (``AsyncLLM``) as an `AsyncEngine` for the async collector.

A thin layer over vLLM's public async API: each request is one ``AsyncLLM.generate`` call on
a ``TokensPrompt`` of the episode's ids, with its own ``SamplingParams`` (``max_tokens``, stop
token ids, ``logprobs=0``: the sampled token's log-probability only, and
``output_kind=FINAL_ONLY``: one output when the request finishes), so vLLM's scheduler
batches whatever requests are in flight (continuous batching) and every episode gets its
reply as soon as its own request is done. With a sampling ``seed`` the k-th request of the
engine's life gets seed ``seed + k`` (as :class:`~agent_envs.adapters.engines.vllm.VLLMEngine`
does).
A request vLLM fails (a bad prompt, an engine error) becomes a `Generation` with ``error``
set: the collector ends that episode only. After new weights are loaded, await
:meth:`VLLMAsyncEngine.weights_updated` (it resets vLLM's prefix cache). vLLM is imported when
the engine is built, never before.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from agent_envs.adapters.engines.vllm import sampling_params
from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig

from agent_envs.optional import require

__all__ = ["VLLMAsyncEngine"]


class VLLMAsyncEngine:
    """Generate with a ``vllm.v1.engine.async_llm.AsyncLLM`` (pass one, or a model name and
    ``engine_kwargs`` for ``AsyncEngineArgs`` to build one).

    Args:
        engine: an ``AsyncLLM`` or a model name/path.
        tokenizer: the Hugging Face tokenizer the collector builds prompts with (default: the
            engine's ``tokenizer``).
        sampling: temperature, top-p, top-k; with a ``seed``, request k of the engine's life
            gets seed ``seed + k``.
        engine_kwargs: passed to ``vllm.AsyncEngineArgs`` when ``engine`` is a name.
    """

    def __init__(
        self,
        engine: Any,
        *,
        tokenizer: Any = None,
        sampling: SamplingConfig | None = None,
        name: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        vllm = require("vllm", "vllm", needed_by="VLLMAsyncEngine (a CUDA machine)")
        output_kind = require("vllm.sampling_params", "vllm").RequestOutputKind
        if isinstance(engine, str):
            from vllm.v1.engine.async_llm import AsyncLLM

            engine = AsyncLLM.from_engine_args(vllm.AsyncEngineArgs(model=engine, **engine_kwargs))
        self.engine = engine
        self.tokenizer = tokenizer if tokenizer is not None else getattr(engine, "tokenizer", None)
        if self.tokenizer is None:
            raise ValueError("tokenizer is required: the engine has none to lend")
        self.sampling = sampling or SamplingConfig()
        self.name = name or "vllm-async"
        self._SamplingParams = vllm.SamplingParams
        self._TokensPrompt = vllm.inputs.TokensPrompt
        self._final_only = output_kind.FINAL_ONLY
        self._request_count = itertools.count()
        self._id_prefix = f"agent-envs-{uuid.uuid4().hex[:12]}"  # unique per engine

    def _params(self, request: GenerationRequest, number: int) -> Any:
        return sampling_params(
            self._SamplingParams, request, self.sampling, number, output_kind=self._final_only
        )

    async def agenerate(self, request: GenerationRequest) -> Generation:
        if request.prompt_ids is None:
            return Generation(
                "", finish_reason="error", error="VLLMAsyncEngine needs prompt_ids in every request"
            )
        number = next(self._request_count)
        prompt = self._TokensPrompt(prompt_token_ids=list(request.prompt_ids))
        final = None
        try:
            stream = self.engine.generate(
                prompt, self._params(request, number), f"{self._id_prefix}-{number}"
            )
            async for output in stream:
                final = output
        except asyncio.CancelledError:
            raise
        except Exception as error:  # vLLM refused or failed this request
            return Generation("", finish_reason="error", error=f"vLLM: {error!r}")
        if final is None or not final.outputs:
            return Generation("", finish_reason="error", error="vLLM returned no output")
        completion = final.outputs[0]
        token_ids = list(completion.token_ids)
        logprobs = None
        if completion.logprobs is not None:
            logprobs = [
                float(step[token].logprob)
                for token, step in zip(token_ids, completion.logprobs, strict=True)
            ]
        return Generation(
            text=completion.text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason="length" if completion.finish_reason == "length" else "stop",
        )

    async def weights_updated(self) -> None:
        """Await after loading new weights: drops prefix-cache blocks of the old weights."""
        await self.engine.reset_prefix_cache()

    def close(self) -> None:
        """Shut the engine down (its background process)."""
        self.engine.shutdown()
