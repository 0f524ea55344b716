"""``POST /rollouts`` (AgentGym-shaped) against a scripted OpenAI-compatible server, and any
grl/* id served through OpenEnv's server, driven by OpenEnv's own client."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium
import httpx
import pytest

import agent_envs  # noqa: F401
from agent_envs.core.records import Trajectory
from tests.adapters.server.conftest import serve

MOVES = ["<answer>Up</answer>", "<answer>Left</answer>", "<answer>Down</answer>"]


class _ChatServer:
    """``/v1/chat/completions`` answering the k-th assistant turn of a conversation with
    ``MOVES[k % 3]`` (chosen by how many assistant messages the request already holds)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                turn = sum(m["role"] == "assistant" for m in body["messages"])
                payload = {
                    "choices": [
                        {
                            "message": {"role": "assistant", "content": MOVES[turn % 3]},
                            "finish_reason": "stop",
                        }
                    ]
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_rollouts__episodes_come_back_as_trajectory_records(server_url):
    with _ChatServer() as chat, httpx.Client(timeout=120) as client:
        response = client.post(
            f"{server_url}/rollouts",
            json={
                "env": "grl/Sokoban-v0",
                "model": "scripted",
                "base_url": chat.url,
                "ids": [4, 6],
                "max_round": 3,
                "sampling": {"temperature": 0.0},
            },
        )
    assert response.status_code == 200, response.text
    records = [Trajectory.from_dict(item) for item in response.json()["trajectories"]]
    assert [record.seed for record in records] == [4, 6]
    for record in records:
        assert record.env_id == "grl/Sokoban-v0"
        local = gymnasium.make("grl/Sokoban-v0")
        observation, _ = local.reset(seed=record.seed)
        assert record.messages[1]["content"] == observation
        for turn, step in enumerate(record.steps):
            assert step.reply == MOVES[turn]
            _, reward, terminated, truncated, info = local.step(step.reply)
            assert (step.reward, step.state_hash) == (reward, info["state_hash"])
            if terminated or truncated:
                break
        assert len(record.steps) <= 3
        assert record.truncation_reason in (None, "max_turns")


@pytest.mark.parametrize(
    ("body", "status", "kind"),
    [
        ({"env": "grl/Nope-v0", "ids": [1]}, 404, "unknown_env"),
        ({"env": "grl/Sokoban-v0", "ids": [1], "env_kwargs": {"bad": 1}}, 422, "bad_env_kwargs"),
        ({"env": "grl/Sokoban-v0", "ids": [1], "max_round": 0}, 422, "invalid_request"),
        ({"env": "grl/Sokoban-v0", "ids": "1"}, 422, "invalid_request"),
    ],
)
def test_rollouts__bad_requests_are_json_4xx(server_url, body, status, kind):
    body = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **body}
    response = httpx.post(f"{server_url}/rollouts", json=body, timeout=60)
    assert response.status_code == status, response.text
    assert response.json()["error"]["type"] == kind


def test_rollouts__an_unreachable_model_server_ends_episodes_with_an_error(server_url):
    body = {
        "env": "grl/Sokoban-v0",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "ids": [1],
        "timeout": 2,
    }
    response = httpx.post(f"{server_url}/rollouts", json=body, timeout=120)
    assert response.status_code == 200
    (record,) = [Trajectory.from_dict(item) for item in response.json()["trajectories"]]
    assert record.truncation_reason == "error" and record.error


def test_openenv__a_grl_id_served_through_openenv_with_openenv_client():
    pytest.importorskip("openenv")
    from agent_envs.adapters.server.openenv import create_openenv_app
    from openenv.core import GenericEnvClient

    local = gymnasium.make("grl/Sokoban-v0", max_turns=3)
    with serve(create_openenv_app("grl/Sokoban-v0", max_concurrent_envs=8, max_turns=3)) as url:
        with GenericEnvClient(base_url=url).sync() as env:
            first = env.reset(seed=3)
            observation, info = local.reset(seed=3)
            assert first.observation["text"] == observation
            assert first.observation["info"] == info
            assert first.observation["instructions"] == local.unwrapped.instructions
            assert (first.reward, first.done) == (None, False)
            for reply in ["<answer>Up</answer>", "no tags", "<answer>Left</answer>"]:
                result = env.step({"message": reply})
                observation, reward, terminated, truncated, info = local.step(reply)
                assert result.observation["text"] == observation
                assert result.observation["info"] == info
                assert result.reward == reward
                assert result.done == (terminated or truncated)
            assert result.done and result.observation["truncated"]

        # concurrent sessions (a GRPO group of num_generations=4): each its own env
        clients = [GenericEnvClient(base_url=url).sync() for _ in range(4)]
        try:
            starts = [client.reset(seed=seed).observation["text"] for client, seed in
                      zip(clients, [1, 2, 1, 2], strict=True)]  # fmt: skip
            assert starts[0] == starts[2] and starts[1] == starts[3]
            clients[0].step({"message": "<answer>Down</answer>"})
            state = clients[2].step({"message": "<answer>Down</answer>"})
            assert state.observation["info"]["turn"] == 1
        finally:
            for client in clients:
                client.close()


def test_openenv__unknown_id_or_bad_kwargs_fail_before_serving():
    pytest.importorskip("openenv")
    from agent_envs.adapters.server.openenv import create_openenv_app
    from agent_envs.adapters.server.sessions import BadEnvArguments, UnknownEnv

    with pytest.raises(UnknownEnv, match="grl/Nope-v0"):
        create_openenv_app("grl/Nope-v0")
    with pytest.raises(BadEnvArguments, match="max_turns"):
        create_openenv_app("grl/Sokoban-v0", max_turns=0)
    with pytest.raises(ValueError, match="max_concurrent_envs"):
        create_openenv_app("grl/Sokoban-v0", max_concurrent_envs=0)
