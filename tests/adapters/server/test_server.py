"""The env server's HTTP and WebSocket API: sessions, JSON 4xx errors for bad input (and the
server keeps serving), the bearer token, the body cap, rendering, idle-session reaping."""

from __future__ import annotations

import json
import time

import gymnasium
import httpx
import pytest
from agent_envs.adapters.server import RemoteEnv, ServerError, create_app
from agent_envs.adapters.server.limits import Limits

import agent_envs  # noqa: F401
from tests.adapters.server.conftest import serve

JSON = {"content-type": "application/json"}


def _session(client: httpx.Client, url: str, env_id: str = "grl/Sokoban-v0") -> str:
    response = client.post(f"{url}/sessions", json={"env_id": env_id})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def test_server__health_envs_and_openapi(server_url):
    with httpx.Client() as client:
        health = client.get(f"{server_url}/health").json()
        assert health["status"] == "ok" and health["max_body_bytes"] == 8 << 20
        ids = client.get(f"{server_url}/envs").json()["env_ids"]
        assert "grl/Sokoban-v0" in ids and all(i.startswith("grl/") for i in ids)
        paths = client.get(f"{server_url}/openapi.json").json()["paths"]
        for path in ("/health", "/sessions", "/sessions/{session_id}/step", "/rollouts"):
            assert path in paths


def test_server__session_lifecycle_over_http_matches_the_local_env(server_url):
    local = gymnasium.make("grl/Sokoban-v0")
    with httpx.Client() as client:
        sid = _session(client, server_url)
        assert sid in client.get(f"{server_url}/sessions").json()["session_ids"]
        reset = client.post(f"{server_url}/sessions/{sid}/reset", json={"seed": 7}).json()
        observation, info = local.reset(seed=7)
        assert (reset["observation"], reset["info"]) == (observation, info)
        for reply in ("<answer>Up</answer>", "no tags", "<answer>Left || Down</answer>"):
            got = client.post(f"{server_url}/sessions/{sid}/step", json={"action": reply}).json()
            want = local.step(reply)
            assert (got["observation"], got["reward"], got["terminated"], got["truncated"]) == (
                want[:4]
            )
            assert got["info"] == want[4]
        assert client.delete(f"{server_url}/sessions/{sid}").json() == {"closed": sid}
        assert sid not in client.get(f"{server_url}/sessions").json()["session_ids"]


# (method, path, body bytes, status, error type); {sid} is a live session that was never reset
BAD_REQUESTS = [
    ("POST", "/sessions", b"{not json", 400, "malformed_json"),
    ("POST", "/sessions", b'{"env_id": "grl/Nope-v0"}', 404, "unknown_env"),
    ("POST", "/sessions", b'{"env_id": "CartPole-v1"}', 404, "unknown_env"),
    ("POST", "/sessions", b'{"env_id": 3}', 422, "invalid_request"),
    (
        "POST",
        "/sessions",
        b'{"env_id": "grl/Sokoban-v0", "env_kwargs": {"max_turns": -1}}',
        422,
        "bad_env_kwargs",
    ),
    (
        "POST",
        "/sessions",
        b'{"env_id": "grl/Sokoban-v0", "env_kwargs": {"no_such_kwarg": 1}}',
        422,
        "bad_env_kwargs",
    ),
    ("POST", "/sessions/deadbeef/step", b'{"action": "x"}', 404, "unknown_session"),
    ("DELETE", "/sessions/deadbeef", b"", 404, "unknown_session"),
    ("POST", "/sessions/{sid}/step", b'{"action": "x"}', 409, "reset_needed"),
    ("POST", "/sessions/{sid}/step", b"{}", 422, "invalid_request"),
    ("POST", "/sessions/{sid}/step", b'{"action": ', 400, "malformed_json"),
    ("POST", "/sessions/{sid}/reset", b'{"seed": "seven"}', 422, "invalid_request"),
    ("POST", "/sessions/{sid}/reset", b'{"options": {"bogus": 1}}', 422, "bad_reset"),
    ("GET", "/sessions/{sid}/render?format=gif", b"", 422, "invalid_request"),
    ("GET", "/no/such/route", b"", 404, "not_found"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "kind"), BAD_REQUESTS)
def test_server__bad_input_is_a_json_4xx_and_the_server_keeps_serving(
    server_url, method, path, body, status, kind
):
    with httpx.Client() as client:
        sid = _session(client, server_url)
        response = client.request(
            method, server_url + path.format(sid=sid), content=body or None, headers=JSON
        )
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["error"]["type"] == kind
        assert response.json()["error"]["message"]
        assert client.get(f"{server_url}/health").json()["status"] == "ok"
        assert client.post(f"{server_url}/sessions/{sid}/reset", json={"seed": 1}).is_success


def test_server__body_over_the_cap_is_413_with_or_without_content_length():
    with serve(create_app(limits=Limits(max_body_bytes=4096))) as url, httpx.Client() as client:
        sid = _session(client, url)
        client.post(f"{url}/sessions/{sid}/reset", json={"seed": 0})
        big = json.dumps({"action": "x" * 5000}).encode()
        response = client.post(f"{url}/sessions/{sid}/step", content=big, headers=JSON)
        assert response.status_code == 413
        assert response.json()["error"]["type"] == "body_too_large"

        def chunks():  # no Content-Length: chunked transfer
            yield big[:3000]
            yield big[3000:]

        response = client.post(f"{url}/sessions/{sid}/step", content=chunks(), headers=JSON)
        assert response.status_code == 413
        small = json.dumps({"action": "<answer>Up</answer>"}).encode()
        response = client.post(f"{url}/sessions/{sid}/step", content=iter([small]), headers=JSON)
        assert response.status_code == 200, response.text


def test_server__a_1mb_reply_steps_as_on_the_local_env(server_url):
    reply = "\x00\u202e<answer>" * 60_000 + "é" * 500_000 + "<answer>Down</answer>"
    assert len(reply) > 1_000_000
    local = gymnasium.make("grl/Sokoban-v0")
    for transport in ("ws", "http"):
        local.reset(seed=2)
        env = RemoteEnv(server_url, "grl/Sokoban-v0", transport=transport)
        env.reset(seed=2)
        assert env.step(reply) == local.step(reply)
        env.close()


def test_server__token_is_required_except_on_health():
    with serve(create_app(token="s3cret")) as url, httpx.Client() as client:
        assert client.get(f"{url}/health").status_code == 200
        assert client.get(f"{url}/openapi.json").status_code == 200
        body = {"env_id": "grl/Sokoban-v0"}
        for headers, kind in (
            ({}, "missing_token"),
            ({"authorization": "Bearer wrong"}, "wrong_token"),
            ({"authorization": "s3cret"}, "wrong_token"),
        ):
            response = client.post(f"{url}/sessions", json=body, headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["type"] == kind
        response = client.post(
            f"{url}/sessions", json=body, headers={"authorization": "Bearer s3cret"}
        )
        assert response.status_code == 201
        for transport in ("ws", "http"):
            with pytest.raises(ServerError) as refused:
                RemoteEnv(url, "grl/Sokoban-v0", transport=transport, token="wrong")
            assert refused.value.status in (401, 403)
            env = RemoteEnv(url, "grl/Sokoban-v0", transport=transport, token="s3cret")
            assert env.reset(seed=0)[0] == gymnasium.make("grl/Sokoban-v0").reset(seed=0)[0]
            env.close()


def test_server__websocket_errors_answer_and_keep_the_connection(server_url):
    from websockets.sync.client import connect

    with connect(server_url.replace("http", "ws") + "/ws") as ws:

        def ask(message):
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        assert ask("{broken")["error"]["type"] == "malformed_json"
        assert ask({"op": "step", "action": "x"})["error"]["type"] == "no_session"
        assert ask({"op": "create", "env_id": "grl/Nope-v0"})["error"]["type"] == "unknown_env"
        assert ask({"op": "attach", "session_id": "zz"})["error"]["type"] == "unknown_session"
        assert ask({"op": "fly"})["error"]["type"] == "unknown_op"
        created = ask({"op": "create", "env_id": "grl/Sokoban-v0"})
        assert ask({"op": "reset", "seed": "x"})["error"]["type"] == "invalid_request"
        assert ask({"op": "reset", "seed": 4})["info"]["episode_seed"] == 4
        assert ask({"op": "step", "action": None})["info"]["action_valid"] is False  # non-text
        assert ask({"op": "step", "action": 12})["error"]["status"] == 422  # as over HTTP
        assert ask({"op": "close"}) == {"closed": created["session_id"]}


def test_server__render_png_and_html_replay(server_url):
    env = RemoteEnv(server_url, "grl/Sokoban-v0")
    env.reset(seed=5)
    env.step("<answer>Up</answer>")
    env.step("I give up")
    png = env.render_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    page = env.render_html()
    assert page.startswith("<!DOCTYPE html>") and page.count('<section class="turn"') == 3
    assert "I give up" in page and "data:image/png;base64," in page
    rgb = RemoteEnv(server_url, "grl/Sokoban-v0", render_mode="rgb_array")
    rgb.reset(seed=5)
    frame = rgb.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype.name == "uint8"
    text = RemoteEnv(server_url, "grl/GSM8K-v0")
    text.reset(seed=0)
    assert text.render_png()[:8] == b"\x89PNG\r\n\x1a\n"  # a text card
    assert "<!DOCTYPE html>" in text.render_html()
    for each in (env, rgb, text):
        each.close()


def test_server__idle_sessions_are_reaped_and_then_answer_410():
    """Clients killed mid-episode (their connections just drop) leave sessions that the
    reaper closes after the TTL; a late request on one is told it expired."""
    from websockets.sync.client import connect

    with serve(create_app(limits=Limits(session_ttl=0.5))) as url, httpx.Client() as client:
        ids = []
        for _ in range(3):
            ws = connect(url.replace("http", "ws") + "/ws").__enter__()
            ws.send(json.dumps({"op": "create", "env_id": "grl/Sokoban-v0"}))
            ids.append(json.loads(ws.recv(timeout=30))["session_id"])
            ws.send(json.dumps({"op": "reset", "seed": 1}))
            ws.recv(timeout=30)
            ws.socket.close()  # killed: no close message, no close frame
        http_sid = _session(client, url)
        assert set(ids) | {http_sid} <= set(client.get(f"{url}/sessions").json()["session_ids"])
        deadline = time.monotonic() + 30
        while client.get(f"{url}/health").json()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.get(f"{url}/sessions").json()["session_ids"] == []
        response = client.post(f"{url}/sessions/{ids[0]}/step", json={"action": "x"})
        assert response.status_code == 410
        assert response.json()["error"]["type"] == "expired_session"


def test_server__too_many_sessions_is_429():
    with serve(create_app(limits=Limits(max_sessions=2))) as url, httpx.Client() as client:
        first = _session(client, url)
        _session(client, url)
        response = client.post(f"{url}/sessions", json={"env_id": "grl/Sokoban-v0"})
        assert response.status_code == 429
        assert response.json()["error"]["type"] == "too_many_sessions"
        client.delete(f"{url}/sessions/{first}")
        _session(client, url)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"limits": Limits(max_sessions=2)}, None),
        ({"token": ""}, "token"),
        ({"token": ["a:t", "b:t"]}, "twice"),
        ({"token": ["bad name:t"]}, "names"),
        ({"inline_budget": -1}, "inline_budget"),
        ({"limits": {"max_sessions": 2}}, "limits"),
        ({"data_roots": ["/no/such/folder"]}, "data root"),
        ({"model_endpoints": ["ftp://x"]}, "model endpoint"),
    ],
)
def test_server__bad_configuration_names_the_argument(kwargs, name):
    if name is None:
        create_app(**kwargs)
        return
    with pytest.raises(ValueError, match=name):
        create_app(**kwargs)


@pytest.mark.parametrize(
    "name",
    ["session_ttl", "max_body_bytes", "max_sessions", "max_sessions_per_client", "read_timeout"],
)
def test_server__bad_limits_name_the_field(name):
    with pytest.raises(ValueError, match=name):
        Limits(**{name: 0})


def test_server__runner_sends_calls_to_threads_only_while_they_are_slow(monkeypatch):
    """One slow call (or a preemption) moves the env id's next call to a thread; fast calls
    bring it back inline; an env whose calls stay slow stays in threads."""
    import agent_envs.adapters.server.runner as runner_module

    runner = runner_module.Runner(inline_budget=0.002)
    durations = iter([0.0005, 0.2, 0.0005, 0.0005] + [0.01] * 7)
    clock = {"now": 0.0}

    def perf_counter():
        return clock["now"]

    def call():
        clock["now"] += next(durations)

    monkeypatch.setattr(runner_module.time, "perf_counter", perf_counter)
    slow_after = []
    for _ in range(11):
        runner._timed("grl/X-v0", call, (), {})
        slow_after.append("grl/X-v0" in runner.slow)
    # fast; a 100x spike (next call in a thread); fast again; then 5x-budget calls, which
    # move the env id to threads once they are the median of the window
    assert slow_after == [False, True, False, False, False, True, True, True, True, True, True]
