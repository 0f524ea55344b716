"""Any OpenAI-compatible HTTP server as an engine: vLLM's server, ``transformers serve``,
hosted APIs.

- ``endpoint="chat"`` posts the episode's ``messages`` to ``/chat/completions`` (the server
  applies its chat template); ``endpoint="completions"`` posts the collector's token context
  to ``/completions``, as token ids (``prompt_format="ids"``, vLLM) or decoded text
  (``"text"``: servers that only take strings, such as ``transformers serve``).
- Requests of one batch run concurrently, at most ``max_concurrency`` at a time; each has a
  ``timeout``. 429, 5xx, timeouts and connection errors are retried up to ``max_retries``
  times after ``backoff * 2**attempt`` seconds (capped at ``max_backoff``, honouring a
  ``Retry-After`` header), scaled by a random jitter factor in [0.5, 1); other 4xx answers
  are not retried. A request that still fails becomes a `Generation` with ``error`` set: the
  collector ends that episode and the rest of the batch goes on.
- The engine asks for sampled-token logprobs and token ids (``logprobs`` and vLLM's
  ``return_token_ids``). A server that rejects these fields with a 400/422 (``transformers
  serve`` does) is asked again without them, once, and never again. Without token ids, a
  chat episode is recorded as text only (all evaluation needs) and a completions episode
  continues on the re-tokenized reply text (ids that may differ from the sampled ones, no
  logprobs: fine for evaluation, not for training).
- :meth:`OpenAIEngine.agenerate` answers one request from a running event loop (for
  `agent_envs.adapters.loop.async_collector`), through an ``httpx.AsyncClient`` with the same payloads, retries,
  fallbacks and errors; at most ``max_concurrency`` of its requests are in flight at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig
from gymnasium.error import DependencyNotInstalled

__all__ = ["OpenAIEngine"]

_ENDPOINTS = ("chat", "completions")
_PROMPT_FORMATS = ("ids", "text")
_TOKEN_FIELDS = ("logprobs", "top_logprobs", "return_token_ids")


class _Failure(Exception):
    """A request that failed for good (``retry=False``) or for now."""

    def __init__(self, message: str, *, retry: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retry = retry
        self.retry_after = retry_after


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
        timeout: seconds per request attempt.
        max_retries: retries after the first attempt (on 429/5xx/timeouts/connection errors).
        backoff, max_backoff: the retry delay schedule in seconds.
        api_key: sent as a bearer token when given.
        prompt_format: ``"ids"`` or ``"text"`` for ``"completions"``.
        seed: seeds the jitter of the retry delays.
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
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        api_key: str | None = None,
        prompt_format: str = "ids",
        seed: int | None = None,
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
        for label, value in (
            ("timeout", timeout),
            ("backoff", backoff),
            ("max_backoff", max_backoff),
        ):
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{label} must be a positive number, got {value!r}")
        try:
            import httpx
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise DependencyNotInstalled(
                "OpenAIEngine needs httpx: pip install 'agent-envs[train]'"
            ) from error
        self._httpx = httpx
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.endpoint = endpoint
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.prompt_format = prompt_format
        self.name = name or f"http:{model}"
        self.ask_token_data = True
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._request_count = itertools.count()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(max_connections=max_concurrency),
        )
        self._headers = headers
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
        attempt = 0
        async with slots:
            while True:
                try:
                    return self._parse(await self._apost(client, payload), request)
                except _Failure as failure:
                    outcome = self._after_failure(failure, payload, attempt)
                if isinstance(outcome, Generation):
                    return outcome
                payload, delay = outcome
                if delay is not None:
                    await asyncio.sleep(delay)
                    attempt += 1

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """Close the async client (from the loop that used it) and the sync one."""
        if self._async is not None and self._async[0] is asyncio.get_running_loop():
            await self._async[1].aclose()
        self._async = None
        self.close()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- one request
    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
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
            if request.stop_token_ids and self.prompt_format == "text":
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
        attempt = 0
        while True:
            try:
                return self._parse(self._post(self._url, payload), request)
            except _Failure as failure:
                outcome = self._after_failure(failure, payload, attempt)
            if isinstance(outcome, Generation):
                return outcome
            payload, delay = outcome
            if delay is not None:
                time.sleep(delay)
                attempt += 1

    @property
    def _url(self) -> str:
        return f"{self.base_url}/{'chat/completions' if self.endpoint == 'chat' else 'completions'}"

    def _after_failure(
        self, failure: _Failure, payload: dict[str, Any], attempt: int
    ) -> Generation | tuple[dict[str, Any], float | None]:
        """What follows a failed attempt: the final error `Generation`, or the payload to send
        next and the delay before it (``None``: at once, without counting an attempt: the
        server refused the token-data fields, asked again without them)."""
        rejected_extras = (
            not failure.retry
            and any(field in payload for field in _TOKEN_FIELDS)
            and any(field in str(failure) for field in _TOKEN_FIELDS)
        )
        if rejected_extras:
            self.ask_token_data = False
            return {k: v for k, v in payload.items() if k not in _TOKEN_FIELDS}, None
        if not failure.retry or attempt >= self.max_retries:
            attempts = attempt + 1
            return Generation(
                "",
                finish_reason="error",
                error=f"{failure} (after {attempts} attempt{'s' * (attempts > 1)})",
            )
        return payload, self._delay(attempt, failure.retry_after)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.max_backoff, self.backoff * 2**attempt)
        if retry_after is not None:
            delay = min(self.max_backoff, max(delay, retry_after))
        with self._lock:
            return delay * float(self._rng.uniform(0.5, 1.0))

    @contextlib.contextmanager
    def _transport_failures(self) -> Iterator[None]:
        httpx = self._httpx
        try:
            yield
        except httpx.TimeoutException as error:
            raise _Failure(f"timeout after {self.timeout}s: {error!r}", retry=True) from None
        except httpx.TransportError as error:
            raise _Failure(f"connection error: {error!r}", retry=True) from None

    def _post(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._transport_failures():
            response = self._client.post(url, json=payload)
        return self._read(response)

    def _async_client(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            httpx = self._httpx
            client = httpx.AsyncClient(
                headers=self._headers,
                timeout=httpx.Timeout(self.timeout),
                limits=httpx.Limits(max_connections=self.max_concurrency),
            )
            self._async = (loop, client, asyncio.Semaphore(self.max_concurrency))
        return self._async[1], self._async[2]

    async def _apost(self, client: Any, payload: dict[str, Any]) -> dict[str, Any]:
        with self._transport_failures():
            response = await client.post(self._url, json=payload)
        return self._read(response)

    def _read(self, response: Any) -> dict[str, Any]:
        status = response.status_code
        if status == 429 or status >= 500:
            retry_after = response.headers.get("retry-after")
            try:
                seconds = float(retry_after) if retry_after is not None else None
            except ValueError:
                seconds = None
            raise _Failure(f"HTTP {status}: {response.text[:300]}", retry=True, retry_after=seconds)
        if status >= 400:
            raise _Failure(f"HTTP {status}: {response.text[:300]}", retry=False)
        try:
            return response.json()
        except ValueError:
            raise _Failure(f"HTTP {status}: not JSON: {response.text[:200]}", retry=True) from None

    def _parse(self, body: dict[str, Any], request: GenerationRequest) -> Generation:
        try:
            choice = body["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise _Failure(f"malformed response: {str(body)[:300]}", retry=False) from None
        if self.endpoint == "chat":
            text = (choice.get("message") or {}).get("content") or ""
            content = (choice.get("logprobs") or {}).get("content")
            logprobs = [float(item["logprob"]) for item in content] if content else None
        else:
            text = choice.get("text") or ""
            token_logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
            logprobs = [float(value) for value in token_logprobs] if token_logprobs else None
        finish = choice.get("finish_reason") or "stop"
        token_ids = choice.get("token_ids")
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
        return Generation(
            text=text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason="length" if finish == "length" else "stop",
            usage=dict(body.get("usage") or {}),
        )
