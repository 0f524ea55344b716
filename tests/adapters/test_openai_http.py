"""The OpenAI-compatible HTTP engine (the openai SDK) against a scripted loopback server: the
SDK's retries on 429/5xx/timeouts counted at the server, none on 4xx, per-request errors,
malformed answers, bounded concurrency, the exact request bodies of both endpoints, token-data
downgrade. (The real `transformers serve` runs are in test_transformers_serve.py.)"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from agent_envs.adapters.engines.openai_http import OpenAIEngine
from agent_envs.adapters.loop.engine import GenerationRequest


class ScriptedServer:
    """Answers POSTs from a per-prompt script of (status, body, delay, headers) entries; the
    last entry repeats; a ``bytes`` body is sent as it is. Records the request bodies and
    headers, counts attempts and the most requests in flight."""

    def __init__(self, script):
        self.script = script
        self.attempts: dict[str, int] = {}
        self.payloads = []
        self.headers = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
                with server.lock:
                    server.payloads.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    attempt = server.attempts.get(str(key), 0)
                    server.attempts[str(key)] = attempt + 1
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                entries = server.script(str(key), body)
                status, payload, delay, headers = entries[min(attempt, len(entries) - 1)]
                time.sleep(delay)
                with server.lock:
                    server.in_flight -= 1
                try:
                    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def ok(text, delay=0.0, **extra):
    choice = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": text},
    }
    choice.update(extra)
    return (200, {"choices": [choice], "usage": {"completion_tokens": 3}}, delay, {})


def fail(status, delay=0.0, headers=None):
    return (status, {"detail": f"status {status}"}, delay, headers or {})


@pytest.fixture
def serve():
    servers = []

    def start(script):
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _engine(server, **kwargs):
    options = dict(timeout=2.0, max_retries=3)
    options.update(kwargs)
    return OpenAIEngine(server.url, "tiny", **options)


def _chat(text):
    return GenerationRequest(max_new_tokens=8, messages=[{"role": "user", "content": text}])


def test_http__retries_429_and_5xx_then_succeeds(serve):
    server = serve(lambda key, body: [fail(429, headers={"Retry-After": "0"}), fail(503), ok("hi")])
    (generation,) = _engine(server).generate([_chat("a")])
    assert generation.error is None and generation.text == "hi"
    assert server.attempts["a"] == 3


def test_http__no_retry_on_4xx(serve):
    server = serve(lambda key, body: [fail(404), ok("never")])
    (generation,) = _engine(server).generate([_chat("a")])
    assert generation.finish_reason == "error"
    assert generation.error.startswith("HTTP 404") and "(after 1 attempt)" in generation.error
    assert server.attempts["a"] == 1


def test_http__errors_are_per_episode_and_the_batch_survives(serve):
    def script(key, body):
        return [fail(500)] if key == "poison" else [ok(f"reply to {key}")]

    server = serve(script)
    generations = _engine(server, max_retries=2).generate([_chat("a"), _chat("poison"), _chat("b")])
    assert [g.text for g in generations] == ["reply to a", "", "reply to b"]
    assert "HTTP 500" in generations[1].error and "(after 3 attempts)" in generations[1].error
    assert server.attempts["poison"] == 3


def test_http__timeouts_are_retried(serve):
    server = serve(lambda key, body: [ok("slow", delay=1.0), ok("fast")])
    (generation,) = _engine(server, timeout=0.3).generate([_chat("a")])
    assert generation.text == "fast" and server.attempts["a"] == 2


def test_http__concurrency_is_bounded(serve):
    server = serve(lambda key, body: [ok(key, delay=0.1)])
    generations = _engine(server, max_concurrency=2).generate([_chat(str(i)) for i in range(6)])
    assert [g.text for g in generations] == [str(i) for i in range(6)]
    assert server.max_in_flight == 2


def test_http__unreachable_server_is_an_error_per_request():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = OpenAIEngine(f"http://127.0.0.1:{port}/v1", "tiny", max_retries=1, timeout=1.0)
    generations = engine.generate([_chat("a"), _chat("b")])
    assert all(g.finish_reason == "error" and "connection error" in g.error for g in generations)
    assert all("(after 2 attempts)" in g.error for g in generations)


def test_http__asks_for_token_data_and_reads_it(serve):
    server = serve(
        lambda key, body: [
            ok(
                "hi",
                token_ids=[5, 6],
                logprobs={
                    "content": [{"token": "h", "logprob": -0.5}, {"token": "i", "logprob": -1.5}]
                },
            )
        ]
    )
    (generation,) = _engine(server).generate([_chat("a")])
    assert server.payloads[0]["logprobs"] is True and server.payloads[0]["return_token_ids"]
    assert generation.token_ids == [5, 6] and generation.logprobs == [-0.5, -1.5]


def test_http__server_rejecting_token_fields_is_asked_without_them(serve):
    def script(key, body):
        if "return_token_ids" in body:
            return [
                (422, {"detail": "Unexpected fields in the request: {'return_token_ids'}"}, 0, {})
            ]
        return [ok("plain")]

    server = serve(script)
    engine = _engine(server)
    generations = engine.generate([_chat("a"), _chat("b")])
    assert [g.text for g in generations] == ["plain", "plain"]
    assert generations[0].token_ids is None and not engine.ask_token_data
    engine.generate([_chat("c")])
    assert "return_token_ids" not in server.payloads[-1]


def test_http__configuration_errors():
    with pytest.raises(ValueError, match="endpoint"):
        OpenAIEngine("http://127.0.0.1:1/v1", "m", endpoint="embeddings")
    with pytest.raises(ValueError, match="tokenizer"):
        OpenAIEngine("http://127.0.0.1:1/v1", "m", endpoint="completions")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIEngine("http://127.0.0.1:1/v1", "m", max_concurrency=0)


def test_http__seeds_differ_per_request_and_bad_requests_fail_alone(serve):
    from agent_envs.adapters.loop.engine import SamplingConfig

    server = serve(lambda key, body: [ok(key)])
    engine = _engine(server, sampling=SamplingConfig(seed=10))
    generations = engine.generate([_chat("a"), GenerationRequest(max_new_tokens=4), _chat("b")])
    assert generations[1].error == "the chat endpoint needs messages in every request"
    assert [generations[0].text, generations[2].text] == ["a", "b"]
    seeds = {payload["messages"][-1]["content"]: payload["seed"] for payload in server.payloads}
    assert seeds == {"a": 10, "b": 11}


def test_http__max_retries_zero_is_one_attempt(serve):
    server = serve(lambda key, body: [fail(503), ok("never")])
    (generation,) = _engine(server, max_retries=0).generate([_chat("a")])
    assert generation.error.startswith("HTTP 503") and "(after 1 attempt)" in generation.error
    assert server.attempts["a"] == 1


def test_http__malformed_answers_are_errors_and_the_batch_survives(serve):
    answers = {
        "not json": (200, b"{not json", 0, {}),
        "no choices": (200, {"object": "chat.completion"}, 0, {}),
        "empty choices": (200, {"choices": []}, 0, {}),
        "not an object": (200, "hello", 0, {}),
        "choice not an object": (200, {"choices": ["hello"]}, 0, {}),
    }
    server = serve(lambda key, body: [answers.get(key, ok(key))])
    generations = _engine(server).generate([_chat(key) for key in [*answers, "fine"]])
    assert generations[-1].text == "fine" and generations[-1].error is None
    for generation in generations[:-1]:
        assert generation.finish_reason == "error"
        assert generation.error.startswith("malformed response: ")
        assert generation.error.endswith("(after 1 attempt)")
    assert generations[0].error == "malformed response: {not json (after 1 attempt)"
    assert all(server.attempts[key] == 1 for key in answers)


class WordTokenizer:
    """Token ``i`` is the word ``w{i}``; decoding joins words with spaces."""

    def decode(self, ids):
        return " ".join(f"w{token}" for token in ids)

    def encode(self, text, add_special_tokens=True):
        return [int(word[1:]) for word in text.split()]


def _completion(text, finish="stop", **extra):
    choice = {"index": 0, "text": text, "finish_reason": finish, **extra}
    return (200, {"choices": [choice], "usage": {"completion_tokens": 2}}, 0.0, {})


def test_http__completions_with_ids_sends_vllm_fields_and_reads_token_data(serve):
    server = serve(
        lambda key, body: [
            _completion("w7 w8", "length", token_ids=[7, 8], logprobs={"token_logprobs": [-1, -2]})
        ]
    )
    engine = _engine(server, endpoint="completions", tokenizer=WordTokenizer())
    request = GenerationRequest(max_new_tokens=2, prompt_ids=[1, 2, 3], stop_token_ids=(9,))
    (generation,) = engine.generate([request])
    assert server.payloads == [
        {
            "model": "tiny",
            "max_tokens": 2,
            "temperature": 1.0,
            "top_p": 1.0,
            "prompt": [1, 2, 3],
            "stop_token_ids": [9],
            "return_token_ids": True,
            "logprobs": 0,
        }
    ]
    assert server.headers[0]["authorization"] == "Bearer EMPTY"
    assert (generation.text, generation.token_ids, generation.logprobs) == (
        "w7 w8",
        [7, 8],
        [-1, -2],
    )
    assert generation.finish_reason == "length" and generation.usage == {"completion_tokens": 2}


def test_http__text_completions_without_token_data_continue_on_retokenized_text(serve):
    server = serve(lambda key, body: [_completion("w4 w5")])
    engine = _engine(
        server, endpoint="completions", tokenizer=WordTokenizer(), prompt_format="text",
        api_key="secret",
    )  # fmt: skip
    request = GenerationRequest(max_new_tokens=4, prompt_ids=[1, 2], stop_token_ids=(9,))
    (generation,) = engine.generate([request])
    body = server.payloads[0]
    assert (body["prompt"], body["stop"], body["logprobs"]) == ("w1 w2", ["w9"], 0)
    assert "stop_token_ids" not in body
    assert server.headers[0]["authorization"] == "Bearer secret"
    assert generation.token_ids == [4, 5, 9] and generation.logprobs is None


def test_http__chat_request_body_is_exact_and_no_environment_key_is_sent(serve, monkeypatch):
    from agent_envs.adapters.loop.engine import SamplingConfig

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    server = serve(lambda key, body: [ok(key)])
    engine = _engine(server, sampling=SamplingConfig(temperature=0.5, top_p=0.9, seed=3))
    engine.generate([_chat("a")])
    assert server.payloads == [
        {
            "model": "tiny",
            "max_tokens": 8,
            "temperature": 0.5,
            "top_p": 0.9,
            "messages": [{"role": "user", "content": "a"}],
            "seed": 3,
            "return_token_ids": True,
            "logprobs": True,
            "top_logprobs": 0,
        }
    ]
    assert server.headers[0]["authorization"] == "Bearer EMPTY"


@pytest.mark.parametrize("argument", ["backoff", "max_backoff", "seed"])
def test_http__the_retry_schedule_is_the_sdks_and_takes_no_argument(argument):
    with pytest.raises(TypeError, match=argument):
        OpenAIEngine("http://127.0.0.1:1/v1", "m", **{argument: 1})
