"""The HTTP engine against a real `transformers serve` process on loopback, serving the tiny
checkpoint folder on CPU: chat and completion episodes, and a server killed mid-batch then
restarted (the batch completes through retries)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from agent_envs.adapters.engines.openai_http import OpenAIEngine
from agent_envs.adapters.loop.collector import collect_episodes
from agent_envs.adapters.loop.engine import GenerationRequest, SamplingConfig

_CLI = Path(sys.executable).with_name("transformers")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServeProcess:
    """``transformers serve FOLDER`` on 127.0.0.1:PORT; ``start`` waits for /health."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port, self.process = folder, port, None
        self.url = f"http://127.0.0.1:{port}/v1"

    def start(self, timeout: float = 90.0) -> None:
        import httpx

        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        command = [str(_CLI), "serve", str(self.folder), "--host", "127.0.0.1",
                   "--port", str(self.port), "--device", "cpu"]  # fmt: skip
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {self.process.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError("transformers serve did not become healthy")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture(scope="module")
def server(checkpoint_dir):
    if not _CLI.exists() and shutil.which("transformers") is None:
        pytest.skip("the transformers CLI is not installed")
    process = ServeProcess(checkpoint_dir, _free_port())
    process.start()
    yield process
    process.stop()


def test_serve__chat_episodes(server, checkpoint_dir):
    engine = OpenAIEngine(server.url, str(checkpoint_dir), max_concurrency=4, timeout=30)
    trajectories = collect_episodes(
        "grl/Sokoban-v0", engine, [1, 2], group_size=2, max_new_tokens=8, max_turns=2
    )
    assert all(trajectory.error is None for trajectory in trajectories)
    assert [trajectory.num_turns for trajectory in trajectories] == [2, 2, 2, 2]
    # transformers serve returns no logprobs or token ids: asked once, then evaluated as text
    assert not engine.ask_token_data
    assert not any(trajectory.has_tokens for trajectory in trajectories)


def test_serve__completion_episodes_keep_token_contexts(server, checkpoint_dir, tokenizer):
    engine = OpenAIEngine(
        server.url, str(checkpoint_dir), endpoint="completions", tokenizer=tokenizer,
        prompt_format="text", timeout=30,
    )  # fmt: skip
    (trajectory,) = collect_episodes("grl/Sokoban-v0", engine, [1], max_new_tokens=8, max_turns=2)
    assert trajectory.error is None and trajectory.num_turns == 2
    assert trajectory.has_tokens and trajectory.turn_logprobs is None
    text = tokenizer.decode(trajectory.prompt_ids + trajectory.completion_ids)
    assert text.count("<|im_start|>user\n") == 2


class CountingEngine(OpenAIEngine):
    """Counts the attempts that failed and the SDK retried (to prove the kill hit requests in
    flight)."""

    failures = 0

    def _send(self, payload):
        response = super()._send(payload)
        type(self).failures += response.retries_taken
        return response


def test_serve__server_killed_mid_batch_then_restarted(server, checkpoint_dir):
    # the SDK's first 5 retries wait ~14 s in all, 20 wait ~2 min: a restart on a loaded machine
    # can take 15+ s
    engine = CountingEngine(
        server.url, str(checkpoint_dir), max_concurrency=2, timeout=20, max_retries=20,
        sampling=SamplingConfig(temperature=1.0),
    )  # fmt: skip
    requests = [
        GenerationRequest(max_new_tokens=150, messages=[{"role": "user", "content": f"go {i}"}])
        for i in range(8)
    ]
    results = {}
    worker = threading.Thread(target=lambda: results.update(out=engine.generate(requests)))
    worker.start()
    time.sleep(0.8)
    server.stop()  # SIGKILL: in-flight requests see a reset connection
    server.start()
    worker.join(timeout=180)
    generations = results["out"]
    assert len(generations) == 8
    assert CountingEngine.failures >= 1
    assert all(generation.error is None for generation in generations), [
        generation.error for generation in generations
    ]
    # and the restarted server serves a fresh batch
    again = engine.generate(requests[:2])
    assert all(generation.error is None for generation in again)
