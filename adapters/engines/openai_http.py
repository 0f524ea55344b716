"""Any OpenAI-compatible HTTP server as an engine, through the official ``openai`` SDK: vLLM's
server, ``transformers serve``, hosted APIs.

- ``endpoint="chat"`` sends the episode's ``messages`` to ``chat.completions`` (the server
  applies its chat template); ``endpoint="completions"`` sends the collector's token context
  to ``completions``, as token ids (``prompt_format="ids"``, vLLM) or decoded text
  (``"text"``: servers that only take strings, such as ``transformers serve``).
- The SDK settings: one ``openai.OpenAI(base_url, api_key, timeout, max_retries)`` client
  (an ``openai.AsyncOpenAI`` per event loop for :meth:`OpenAIEngine.agenerate`); each request
  is ``<endpoint>.with_raw_response.create(...)``, with vLLM's fields that the SDK does not
  type (``return_token_ids``, ``stop_token_ids``) in ``extra_body``, so the server receives
  the same JSON body a hand-written client would post. Without ``api_key`` the placeholder key
  ``"EMPTY"`` is sent (never ``OPENAI_API_KEY`` from the environment).
- Timeouts, retries and backoff are the SDK's: ``timeout`` seconds per attempt; timeouts,
  connection errors, 408, 409, 429 and 5xx are retried up to ``max_retries`` times after the
  SDK's exponential backoff (0.5 s doubling to 8 s, minus up to 25% jitter, or the server's
  ``Retry-After``); other 4xx answers are not retried. A request that still fails, or whose
  answer is not a completion, becomes a `Generation` with ``error`` set ("HTTP 500: ...
  (after 4 attempts)"): the collector ends that episode and the rest of the batch goes on.
- Requests of one batch run concurrently in threads, at most ``max_concurrency`` at a time;
  :meth:`OpenAIEngine.agenerate` answers one request from a running event loop (for
  `agent_envs.adapters.loop.async_collector`), at most ``max_concurrency`` in flight at once.
- The engine asks for sampled-token logprobs and token ids (``logprobs`` and vLLM's
  ``return_token_ids``) and reads the ids from the extra field ``token_ids`` of the first
  choice. A server that rejects these fields with a 400/422 (``transformers serve`` does) is
  asked again without them, once, and never again. Without token ids, a chat episode is
  recorded as text only (all evaluation needs) and a completions episode continues on the
  re-tokenized reply text (ids that may differ from the sampled ones, no logprobs: fine for
  evaluation, not for training).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig

from agent_envs.optional import require

__all__ = ["OpenAIEngine"]

_ENDPOINTS = ("chat", "completions")
_PROMPT_FORMATS = ("ids", "text")
_TOKEN_FIELDS = ("logprobs", "top_logprobs", "return_token_ids")
#: vLLM's request fields, which the SDK's ``create`` signatures lack: sent in ``extra_body``
_EXTRA_BODY_FIELDS = ("return_token_ids", "stop_token_ids")
#: the SDK header that numbers an attempt's retries (0 on the first attempt)
_RETRY_COUNT_HEADER = "x-stainless-retry-count"


class OpenAIEngine:
    """Generate through an OpenAI-compatible server at ``base_url`` (e.g.
    ``"http://127.0.0.1:8000/v1"``).

    Args:
        base_url: the API root, ending in ``/v1``.
        model: the model name the server expects.
        endpoint: ``"chat"`` or ``"completions"`` (see the module docstring).
        tokenizer: the model's tokenizer; required by ``"completions"`` (the collector builds
            token contexts with it), optional for ``"chat"``.
        sampling: temperature, top-p; with a ``seed``, the k-th request of the engine's life
            is sent with seed ``seed + k`` (reproducible, and the G copies of a group differ).
        max_concurrency: requests in flight at once.
        timeout: seconds per request attempt (the SDK's ``timeout``).
        max_retries: retries after the first attempt (the SDK's ``max_retries``).
        api_key: the bearer token (``"EMPTY"`` when not given).
        prompt_format: ``"ids"`` or ``"text"`` for ``"completions"``.
        name: the agent name written into records (default ``"http:<model>"``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        endpoint: str = "chat",
        tokenizer: Any = None,
        sampling: SamplingConfig | None = None,
        max_concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 3,
        api_key: str | None = None,
        prompt_format: str = "ids",
        name: str | None = None,
    ) -> None:
        if endpoint not in _ENDPOINTS:
            raise ValueError(f"endpoint must be one of {_ENDPOINTS}, got {endpoint!r}")
        if prompt_format not in _PROMPT_FORMATS:
            raise ValueError(
                f"prompt_format must be one of {_PROMPT_FORMATS}, got {prompt_format!r}"
            )
        if endpoint == "completions" and tokenizer is None:
            raise ValueError("tokenizer is required with endpoint='completions'")
        if (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ValueError(f"max_concurrency must be a positive int, got {max_concurrency!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number, got {timeout!r}")
        self._openai = require("openai", extra="openai")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.endpoint = endpoint
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.prompt_format = prompt_format
        self.name = name or f"http:{model}"
        self.ask_token_data = True
        self._request_count = itertools.count()
        self._api_key = api_key or "EMPTY"
        self._client = self._openai.OpenAI(**self._client_settings())
        # the async client and its concurrency bound belong to one event loop (made on first use)
        self._async: tuple[Any, Any, asyncio.Semaphore] | None = None

    # ----------------------------------------------------------------- public
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        jobs = []
        for request in requests:  # payloads in request order: per-request seeds are stable
            try:
                jobs.append((request, self._payload(request)))
            except ValueError as error:
                jobs.append((request, str(error)))
        workers = min(self.max_concurrency, len(jobs))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._generate_one, *zip(*jobs, strict=True)))

    async def agenerate(self, request: GenerationRequest) -> Generation:
        """One request, awaited (the async twin of :meth:`generate`)."""
        try:
            payload = self._payload(request)
        except ValueError as error:
            return Generation("", finish_reason="error", error=str(error))
        client, slots = self._async_client()
        async with slots:
            while True:
                try:
                    response = await self._create(client)(**self._arguments(payload))
                    return self._parse(response, request)
                except self._openai.APIError as error:
                    payload = self._after_failure(error, payload)
                if isinstance(payload, Generation):
                    return payload

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """Close the async client (from the loop that used it) and the sync one."""
        if self._async is not None and self._async[0] is asyncio.get_running_loop():
            await self._async[1].close()
        self._async = None
        self.close()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- one request
    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
        """The JSON body the server receives."""
        sampling = self.sampling
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if self.endpoint == "chat":
            if request.messages is None:
                raise ValueError("the chat endpoint needs messages in every request")
            payload["messages"] = list(request.messages)
        else:
            if request.prompt_ids is None:
                raise ValueError("the completions endpoint needs prompt_ids in every request")
            if self.prompt_format == "ids":  # vLLM: token prompt and stop tokens as ids
                payload["prompt"] = list(request.prompt_ids)
                if request.stop_token_ids:
                    payload["stop_token_ids"] = list(request.stop_token_ids)
            else:
                payload["prompt"] = self.tokenizer.decode(request.prompt_ids)
                if request.stop_token_ids:
                    stops = [self.tokenizer.decode([token]) for token in request.stop_token_ids]
                    payload["stop"] = [stop for stop in stops if stop]
        if sampling.seed is not None:  # distinct per request, so a group's replies differ
            payload["seed"] = sampling.seed + next(self._request_count)
        if self.ask_token_data:
            payload["return_token_ids"] = True
            if self.endpoint == "chat":
                payload.update(logprobs=True, top_logprobs=0)
            else:
                payload["logprobs"] = 0
        return payload

    def _generate_one(
        self, request: GenerationRequest, payload: dict[str, Any] | str
    ) -> Generation:
        if isinstance(payload, str):  # the request could not be built
            return Generation("", finish_reason="error", error=payload)
        while True:
            try:
                return self._parse(self._send(payload), request)
            except self._openai.APIError as error:
                payload = self._after_failure(error, payload)
            if isinstance(payload, Generation):
                return payload

    def _send(self, payload: dict[str, Any]) -> Any:
        """One request through the sync client, the SDK's retries included: its raw response
        (``.parse()``, ``.retries_taken``)."""
        return self._create(self._client)(**self._arguments(payload))

    def _client_settings(self) -> dict[str, Any]:
        return dict(
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def _async_client(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            client = self._openai.AsyncOpenAI(**self._client_settings())
            self._async = (loop, client, asyncio.Semaphore(self.max_concurrency))
        return self._async[1], self._async[2]

    def _create(self, client: Any) -> Any:
        resource = client.chat.completions if self.endpoint == "chat" else client.completions
        return resource.with_raw_response.create

    @staticmethod
    def _arguments(payload: dict[str, Any]) -> dict[str, Any]:
        """``create``'s keyword arguments for ``payload``: vLLM's fields go in ``extra_body``."""
        arguments = {key: value for key, value in payload.items() if key not in _EXTRA_BODY_FIELDS}
        extra = {key: payload[key] for key in _EXTRA_BODY_FIELDS if key in payload}
        return {**arguments, "extra_body": extra or None}

    def _after_failure(self, error: Any, payload: dict[str, Any]) -> Generation | dict[str, Any]:
        """What follows a request the SDK gave up on: the payload to send again when the server
        refused the token-data fields (sent without them from now on), else the error
        `Generation`."""
        openai = self._openai
        if isinstance(error, openai.APIStatusError):
            if (
                error.status_code in (400, 422)
                and any(field in payload for field in _TOKEN_FIELDS)
                and any(field in error.response.text for field in _TOKEN_FIELDS)
            ):
                self.ask_token_data = False
                return {k: v for k, v in payload.items() if k not in _TOKEN_FIELDS}
            message = f"HTTP {error.status_code}: {error.response.text[:300]}"
        elif isinstance(error, openai.APITimeoutError):
            message = f"timeout after {self.timeout}s: {error.__cause__!r}"
        elif isinstance(error, openai.APIConnectionError):
            message = f"connection error: {error.__cause__!r}"
        else:
            message = f"{type(error).__name__}: {error}"
        retries = error.request.headers.get(_RETRY_COUNT_HEADER, "0")
        return _error(message, attempts=int(retries) + 1 if retries.isdigit() else 1)

    def _parse(self, response: Any, request: GenerationRequest) -> Generation:
        body = self._body(response)
        try:
            text, token_ids, logprobs, finish = self._read_choice(body["choices"][0], request)
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            excerpt = response.http_response.text[:300]
            return _error(f"malformed response: {excerpt}", attempts=response.retries_taken + 1)
        return Generation(
            text=text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=finish,
            usage=dict(body.get("usage") or {}),
        )

    def _body(self, response: Any) -> dict[str, Any] | None:
        """The SDK's parsed response as a dict, extra fields included (``None`` if not JSON)."""
        try:
            parsed = response.parse()
        except ValueError:
            return None
        return (
            parsed.to_dict(warnings=False) if isinstance(parsed, self._openai.BaseModel) else None
        )

    def _read_choice(
        self, choice: dict[str, Any], request: GenerationRequest
    ) -> tuple[str, list[int] | None, list[float] | None, str]:
        """Text, token ids, logprobs and finish reason of the first choice."""
        if self.endpoint == "chat":
            text = (choice.get("message") or {}).get("content") or ""
            content = (choice.get("logprobs") or {}).get("content")
            logprobs = [float(item["logprob"]) for item in content] if content else None
        else:
            text = choice.get("text") or ""
            token_logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
            logprobs = [float(value) for value in token_logprobs] if token_logprobs else None
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        token_ids = choice.get("token_ids")  # vLLM's extra field
        if token_ids is not None:
            token_ids = [int(token) for token in token_ids]
            if logprobs is not None and len(logprobs) != len(token_ids):
                logprobs = None
        else:
            logprobs = None
            if self.endpoint == "completions":
                # the collector continues this context: re-tokenize the text (no logprobs)
                token_ids = self.tokenizer.encode(text, add_special_tokens=False)
                if finish != "length" and request.stop_token_ids:
                    token_ids.append(request.stop_token_ids[0])
        return text, token_ids, logprobs, finish


def _error(message: str, *, attempts: int) -> Generation:
    plural = "s" * (attempts > 1)
    return Generation(
        "", finish_reason="error", error=f"{message} (after {attempts} attempt{plural})"
    )
