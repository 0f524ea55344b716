"""The hostile-client suite: the outside audit's attacks on the env server, each answered as a
service must answer it (bounded: every server here listens on 127.0.0.1, with limits and
timeouts of a second or so, and the whole file runs in seconds).

Who may call and whose sessions are whose; sessions, bytes and time per client; what
``/rollouts`` may call; paths in requests; and every bad request a 4xx of the same shape over
HTTP and WebSocket, on a connection that survives it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium
import httpx
import pytest
from agent_envs.adapters.server import RemoteEnv, ServerError, create_app
from agent_envs.adapters.server.__main__ import build, limits_of, parse_args, resolve_tokens
from agent_envs.adapters.server.auth import Clients, is_loopback, read_tokens_file
from agent_envs.adapters.server.limits import Limits

import agent_envs  # noqa: F401
from tests.adapters.server.conftest import serve

ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
TOKENS = ["alice:alice-token", "bob:bob-token"]
SMALL = Limits(
    max_sessions=64,
    max_sessions_per_client=16,
    max_body_bytes=1 << 20,
    max_session_bytes=1 << 20,
    max_rollout_episodes=4,
    read_timeout=1.0,
    ws_idle_timeout=1.0,
)


@pytest.fixture(scope="module")
def url():
    with serve(create_app(token=TOKENS, limits=SMALL)) as base:
        yield base


@pytest.fixture
def http():
    with httpx.Client(timeout=30) as client:
        yield client


def _create(http, url, headers, env_id="grl/Sokoban-v0", **env_kwargs):
    response = http.post(
        f"{url}/sessions", json={"env_id": env_id, "env_kwargs": env_kwargs}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def _error(response, status, kind):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()["error"]
    assert (body["type"], body["status"]) == (kind, status) and body["message"]
    return body["message"]


def _ws(url, headers):
    from websockets.sync.client import connect

    return connect(url.replace("http", "ws", 1) + "/ws", additional_headers=headers).__enter__()


def _ask(ws, message):
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


# --------------------------------------------------------------------------- who may call
@pytest.mark.parametrize(
    ("argv", "environment", "required", "generated"),
    [
        (["--host", "127.0.0.1"], "", False, False),
        (["--host", "0.0.0.0"], "", True, True),  # beyond loopback: on by default
        (["--host", "::"], "", True, True),
        (["--host", "10.1.2.3", "--token", "a:t1"], "", True, False),
        (["--host", "0.0.0.0"], "x:from-env", True, False),
        (["--host", "127.0.0.1", "--auth", "on"], "", True, True),
        (["--host", "127.0.0.1", "--token", "t1"], "", True, False),
        (["--host", "0.0.0.0", "--auth", "off"], "x:from-env", False, False),
    ],
)
def test_hostile__token_required_beyond_loopback(
    monkeypatch, argv, environment, required, generated
):
    monkeypatch.setenv("AGENT_ENVS_SERVER_TOKEN", environment)
    args = parse_args(argv)
    tokens, made = resolve_tokens(args)
    assert (tokens is not None, made is not None) == (required, generated)
    app = build(args)
    assert app.state.clients.required is required
    assert (app.state.generated_token is not None) is generated


def test_hostile__server_built_for_0000_refuses_calls_without_its_token(monkeypatch):
    """`agent-envs serve --host 0.0.0.0` with no token: the app it builds answers 401 (the
    audit: every client was trusted with everything)."""
    import asyncio

    monkeypatch.delenv("AGENT_ENVS_SERVER_TOKEN", raising=False)
    app = build(parse_args(["--host", "0.0.0.0"]))
    token = app.state.generated_token

    async def calls():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            body = {"env_id": "grl/Sokoban-v0"}
            refused = await client.post("/sessions", json=body)
            made = await client.post(
                "/sessions", json=body, headers={"authorization": f"Bearer {token}"}
            )
            health = await client.get("/health")
            return refused, made, health

    refused, made, health = asyncio.run(calls())
    _error(refused, 401, "missing_token")
    assert refused.headers["www-authenticate"] == "Bearer"
    assert made.status_code == 201 and health.json()["auth"] is True


def test_hostile__loopback_means_this_machine_only():
    assert all(map(is_loopback, ["127.0.0.1", "127.9.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "", "10.0.0.1", "example.com"]))


def test_hostile__tokens_name_clients_and_compare_by_digest(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("# the team\nalice:a-token\n\nbob:b-token\nbob:b-rotated\n")
    clients = Clients(read_tokens_file(keys))
    assert clients.names == ["alice", "bob"]

    def who(header):
        return clients.identify({b"authorization": header.encode()})

    assert who("Bearer a-token") == "alice" and who("Bearer b-rotated") == "bob"
    assert who("Bearer b-token ") == "bob" and who("bearer a-token") == "alice"
    basic = base64.b64encode(b"anyone:a-token").decode()
    assert who(f"Basic {basic}") == "alice"
    for wrong in ("Bearer a-toke", "Bearer", "a-token", "Basic !!", "Token a-token", ""):
        assert who(wrong) is None
    assert clients.identify({b"authorization": b"Bearer a-token", b"x-client-id": b"bob"}) == (
        "alice"  # with tokens the token says who you are
    )
    open_server = Clients(None)
    assert open_server.identify({b"x-client-id": b"trainer-7"}) == "trainer-7"
    assert open_server.identify({}) == "anonymous"


def test_hostile__wrong_or_missing_token_is_401_over_http_and_refused_over_ws(url, http):
    _error(http.post(f"{url}/sessions", json={"env_id": "grl/Sokoban-v0"}), 401, "missing_token")
    for headers in ({"authorization": "Bearer nope"}, {"authorization": "alice-token"}):
        response = http.get(f"{url}/sessions", headers=headers)
        _error(response, 401, "wrong_token")
    assert http.get(f"{url}/health").status_code == 200  # open
    assert http.get(f"{url}/openapi.json").status_code == 200  # open
    with pytest.raises(Exception, match="401"):
        _ws(url, {"authorization": "Bearer nope"})
    with pytest.raises(ServerError) as refused:
        RemoteEnv(url, "grl/Sokoban-v0", token="nope")
    assert (refused.value.status, refused.value.kind) == (401, "wrong_token")


def test_hostile__remote_env_reads_its_token_from_the_environment(url, monkeypatch):
    monkeypatch.setenv("AGENT_ENVS_SERVER_TOKEN", "alice:alice-token")
    for transport in ("ws", "http"):
        env = RemoteEnv(url, "grl/Sokoban-v0", transport=transport)
        assert env.reset(seed=3)[0] == gymnasium.make("grl/Sokoban-v0").reset(seed=3)[0]
        env.close()


# --------------------------------------------------------------------------- ownership
def test_hostile__sessions_belong_to_their_creator(url, http):
    mine = _create(http, url, ALICE)
    assert mine in http.get(f"{url}/sessions", headers=ALICE).json()["session_ids"]
    assert mine not in http.get(f"{url}/sessions", headers=BOB).json()["session_ids"]
    for method, path, body in (
        ("POST", f"/sessions/{mine}/reset", {"seed": 1}),
        ("POST", f"/sessions/{mine}/step", {"action": "<answer>Up</answer>"}),
        ("GET", f"/sessions/{mine}/render?format=html", None),
        ("GET", f"/sessions/{mine}/render?format=png", None),
        ("DELETE", f"/sessions/{mine}", None),
    ):
        response = http.request(method, url + path, json=body, headers=BOB)
        assert "another" not in _error(response, 404, "unknown_session")
    with _ws(url, BOB) as ws:
        assert _ask(ws, {"op": "attach", "session_id": mine})["error"]["type"] == "unknown_session"
    assert http.post(f"{url}/sessions/{mine}/reset", json={"seed": 1}, headers=ALICE).is_success
    http.delete(f"{url}/sessions/{mine}", headers=ALICE)


# --------------------------------------------------------------------------- limits
def test_hostile__one_client_cannot_hold_every_session(http):
    limits = dataclasses.replace(SMALL, max_sessions=8, max_sessions_per_client=3)
    with serve(create_app(token=TOKENS, limits=limits)) as url:
        held = [_create(http, url, ALICE) for _ in range(limits.max_sessions_per_client)]
        message = _error(
            http.post(f"{url}/sessions", json={"env_id": "grl/Sokoban-v0"}, headers=ALICE),
            429,
            "too_many_sessions",
        )
        assert "max_sessions_per_client=3" in message
        _create(http, url, BOB)  # the others still get theirs
        http.delete(f"{url}/sessions/{held[0]}", headers=ALICE)
        _create(http, url, ALICE)
        # WebSockets count too: one more than the per-client limit is refused at the handshake
        sockets = [_ws(url, ALICE) for _ in range(limits.max_sessions_per_client)]
        with pytest.raises(Exception, match="429"):
            _ws(url, ALICE)
        with _ws(url, BOB) as ws:
            assert "session_id" in _ask(ws, {"op": "create", "env_id": "grl/Sokoban-v0"})
        for ws in sockets:
            ws.close()


def test_hostile__an_episode_keeps_at_most_max_session_bytes(url, http):
    sid = _create(http, url, ALICE, max_turns=100)
    http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
    reply = "x" * (300 << 10)
    codes = []
    for _ in range(6):
        response = http.post(f"{url}/sessions/{sid}/step", json={"action": reply}, headers=ALICE)
        codes.append(response.status_code)
    assert codes == [200, 200, 200, 413, 413, 413]
    _error(
        http.post(f"{url}/sessions/{sid}/step", json={"action": reply}, headers=ALICE),
        413,
        "session_full",
    )
    # a small reply still fits; a reset starts from zero
    assert http.post(f"{url}/sessions/{sid}/step", json={"action": "Up"}, headers=ALICE).is_success
    http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
    assert http.post(f"{url}/sessions/{sid}/step", json={"action": reply}, headers=ALICE).is_success


def test_hostile__replies_after_the_episode_ends_are_not_kept(http):
    app = create_app(token=TOKENS, limits=SMALL)
    with serve(app) as url:
        sid = _create(http, url, ALICE, max_turns=1)
        http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
        big = json.dumps({"action": "y" * (900 << 10)})
        for _ in range(20):  # 18 MB sent after the episode's one turn
            response = http.post(
                f"{url}/sessions/{sid}/step",
                content=big,
                headers={**ALICE, "content-type": "application/json"},
            )
            assert response.status_code == 200 and response.json()["truncated"] is True
        session = app.state.store.get(sid, "alice")
        assert len(session.replies) == 1 and session.kept_bytes < SMALL.max_session_bytes
        assert len(session.env.unwrapped.messages()) == 4  # system, user, assistant, user


def test_hostile__body_over_the_cap_is_413_on_both_transports(url, http):
    big = json.dumps({"action": "z" * (SMALL.max_body_bytes + 1)})
    sid = _create(http, url, ALICE)
    response = http.post(
        f"{url}/sessions/{sid}/step",
        content=big,
        headers={**ALICE, "content-type": "application/json"},
    )
    _error(response, 413, "body_too_large")
    from websockets.exceptions import ConnectionClosed

    with _ws(url, ALICE) as ws, pytest.raises(ConnectionClosed):
        _ask(ws, big)  # over the WebSocket frame cap: uvicorn closes with 1009


# --------------------------------------------------------------------------- time
def _raw(url):
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(10)
    return sock


def _read_all(sock):
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connected, silent
        b"POST /sessions HTTP/1.1\r\nHost: x\r\n",  # half the headers
        b"POST /sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token\r\n"
        b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"env_id"',  # half a body
    ],
    ids=["silent", "half-headers", "half-body"],
)
def test_hostile__half_sent_requests_are_cut_off_after_read_timeout(url, sent):
    sock = _raw(url)
    began = time.monotonic()
    sock.sendall(sent)
    answer = _read_all(sock)
    took = time.monotonic() - began
    sock.close()
    assert SMALL.read_timeout * 0.9 < took < SMALL.read_timeout + 5
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"request_timeout"' in answer


def test_hostile__a_silent_websocket_is_closed_after_ws_idle_timeout(url):
    from websockets.exceptions import ConnectionClosed

    with _ws(url, ALICE) as ws:
        sid = _ask(ws, {"op": "create", "env_id": "grl/Sokoban-v0"})["session_id"]
        began = time.monotonic()
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd.code == 1001
        assert time.monotonic() - began < SMALL.ws_idle_seconds + 5
    with _ws(url, ALICE) as ws:  # the session waits for the client to come back
        assert _ask(ws, {"op": "attach", "session_id": sid}) == {"session_id": sid, "replies": 0}


def test_hostile__a_slow_client_does_not_block_the_others(url, http):
    slow = _raw(url)
    slow.sendall(b"POST /sessions HTTP/1.1\r\nHost: x\r\n")
    began = time.monotonic()
    assert http.get(f"{url}/health").status_code == 200
    _create(http, url, BOB)
    assert time.monotonic() - began < 5
    slow.close()


# --------------------------------------------------------------------------- /rollouts
class _ModelServer:
    """A scripted OpenAI-compatible endpoint that records who called it with which key;
    ``hold`` makes it wait for ``release`` before answering."""

    def __init__(self, hold: bool = False) -> None:
        self.calls: list[str | None] = []
        self.release = threading.Event()
        if not hold:
            self.release.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                outer.calls.append(self.headers.get("authorization"))
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.release.wait(30)
                reply = {"role": "assistant", "content": "<answer>Up</answer>"}
                data = json.dumps({"choices": [{"message": reply, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _rollout(**overrides):
    body = {"env": "grl/Sokoban-v0", "model": "m", "ids": [1], "max_round": 1, "timeout": 5}
    return {**body, **overrides}


def test_hostile__rollouts_call_only_allowed_endpoints_and_keys_go_nowhere_else(http):
    with _ModelServer() as allowed, _ModelServer() as elsewhere:
        app = create_app(token=TOKENS, limits=SMALL, model_endpoints=[allowed.url])
        with serve(app) as url:
            for base_url in (
                elsewhere.url,  # loopback, but not on this server's list
                "http://10.255.255.1/v1",  # never contacted: refused before any connection
                "http://169.254.169.254/latest/meta-data",
                f"http://user:pw@{allowed.url.removeprefix('http://')}",
                allowed.url + "/../admin",
                allowed.url + "?x=1",
                "file:///etc/passwd",
            ):
                body = _rollout(base_url=base_url, api_key="sk-secret")
                response = http.post(f"{url}/rollouts", json=body, headers=ALICE)
                _error(response, 403, "endpoint_not_allowed")
            assert elsewhere.calls == []
            body = _rollout(base_url=allowed.url, api_key="sk-secret")
            response = http.post(f"{url}/rollouts", json=body, headers=ALICE)
            assert response.status_code == 200, response.text
            assert allowed.calls == ["Bearer sk-secret"]


def test_hostile__rollouts_are_bounded_in_episodes_and_concurrency(http):
    with _ModelServer(hold=True) as model, serve(create_app(token=TOKENS, limits=SMALL)) as url:
        for body, kind in (
            (_rollout(base_url=model.url, ids=list(range(5))), "too_many_episodes"),
            (_rollout(base_url=model.url, ids=[1, 2], group_size=3), "too_many_episodes"),
        ):
            _error(http.post(f"{url}/rollouts", json=body, headers=ALICE), 422, kind)
        first: list = []
        thread = threading.Thread(
            target=lambda: first.append(
                httpx.post(
                    f"{url}/rollouts",
                    json=_rollout(base_url=model.url),
                    headers=ALICE,
                    timeout=30,
                )
            )
        )
        thread.start()
        deadline = time.monotonic() + 20
        while not model.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        response = http.post(f"{url}/rollouts", json=_rollout(base_url=model.url), headers=ALICE)
        _error(response, 429, "too_many_rollouts")
        model.release.set()
        thread.join(30)
        assert first[0].status_code == 200


# --------------------------------------------------------------------------- paths
def test_hostile__paths_outside_the_data_roots_are_403_and_echo_nothing(http, tmp_path):
    inside = tmp_path / "data"
    inside.mkdir()
    item = {"question": "What is 2 + 2?", "answer": "2 + 2 = 4\n#### 4"}
    (inside / "train.jsonl").write_text(json.dumps(item) + "\n")
    (inside / "escape.jsonl").symlink_to("/etc/passwd")
    app = create_app(token=TOKENS, limits=SMALL, data_roots=[str(inside)])
    with serve(app) as url:
        for env_id, kwargs in (
            ("grl/GSM8K-v0", {"source": "jsonl", "data_path": "/etc/passwd"}),
            ("grl/GSM8K-v0", {"source": "jsonl", "data_path": str(inside / "escape.jsonl")}),
            ("grl/GSM8K-v0", {"source": "jsonl", "data_path": str(inside / ".." / "x")}),
            ("grl/GSM8K-v0", {"source": "jsonl", "data_path": "~/.ssh/id_rsa"}),
            ("grl/GSM8K-v0", {"source": "jsonl", "data_path": 7}),
            ("grl/BIRD-v0", {"source": "files", "data_path": str(inside), "db_root": "/etc"}),
            ("grl/BIRD-v0", {"cache_dir": "/tmp/elsewhere"}),
            ("grl/WebShop-v0", {"source": "webshop", "data_path": "/etc"}),
        ):
            body = {"env_id": env_id, "env_kwargs": kwargs}
            response = http.post(f"{url}/sessions", json=body, headers=ALICE)
            message = _error(response, 403, "path_not_allowed")
            assert "root:" not in response.text and "/etc" not in message
        body = {"env_id": "grl/GSM8K-v0", "env_kwargs": {"source": "jsonl", "data_path": "x"}}
        body["env_kwargs"]["data_path"] = str(inside / "train.jsonl")
        assert http.post(f"{url}/sessions", json=body, headers=ALICE).status_code == 201
        body = _rollout(env_kwargs={"data_path": "/etc/passwd"}, base_url="http://127.0.0.1:9/v1")
        _error(http.post(f"{url}/rollouts", json=body, headers=ALICE), 403, "path_not_allowed")
        sid = _create(http, url, ALICE, "grl/BIRD-v0")
        for db_id in ("../../etc/x", "/etc/x", ".hidden", "a/b"):
            options = {"item": {"db_id": db_id, "question": "q", "SQL": "SELECT 1"}}
            response = http.post(
                f"{url}/sessions/{sid}/reset", json={"options": options}, headers=ALICE
            )
            _error(response, 403, "path_not_allowed")


# --------------------------------------------------------------------------- 4xx, not 5xx
# (label, HTTP request or None, WebSocket message or None, status, type); {sid} is a fresh
# Sokoban session (reset with seed 1 unless the label says "unreset")
BAD = [
    ("negative seed", ("POST", "/sessions/{sid}/reset", {"seed": -1}),
     {"op": "reset", "seed": -1}, 422, "invalid_request"),
    ("seed as text", ("POST", "/sessions/{sid}/reset", {"seed": "7"}),
     {"op": "reset", "seed": "7"}, 422, "invalid_request"),
    ("non-string level", ("POST", "/sessions/{sid}/reset", {"options": {"level": 5}}),
     {"op": "reset", "options": {"level": 5}}, 422, "bad_reset"),
    ("level of garbage", ("POST", "/sessions/{sid}/reset", {"options": {"level": "@@@"}}),
     {"op": "reset", "options": {"level": "@@@"}}, 422, "bad_reset"),
    ("options as a list", ("POST", "/sessions/{sid}/reset", {"options": [1]}),
     {"op": "reset", "options": [1]}, 422, "invalid_request"),
    ("misspelled reset key", ("POST", "/sessions/{sid}/reset", {"sed": 3}),
     {"op": "reset", "sed": 3}, 422, "invalid_request"),
    ("misspelled create key", ("POST", "/sessions", {"env_id": "grl/Sokoban-v0", "env_kwarg": {}}),
     {"op": "create", "env_id": "grl/Sokoban-v0", "env_kwarg": {}}, 422, "invalid_request"),
    ("env_kwargs as a list", ("POST", "/sessions", {"env_id": "grl/Sokoban-v0", "env_kwargs": [1]}),
     {"op": "create", "env_id": "grl/Sokoban-v0", "env_kwargs": [1]}, 422, "invalid_request"),
    ("render_mode human", ("POST", "/sessions",
                           {"env_id": "grl/Sokoban-v0", "env_kwargs": {"render_mode": "human"}}),
     {"op": "create", "env_id": "grl/Sokoban-v0", "env_kwargs": {"render_mode": "human"}},
     422, "bad_env_kwargs"),
    ("action as a number", ("POST", "/sessions/{sid}/step", {"action": 12}),
     {"op": "step", "action": 12}, 422, "invalid_request"),
    ("misspelled step key", ("POST", "/sessions/{sid}/step", {"action": "x", "actoin": "y"}),
     {"op": "step", "action": "x", "actoin": "y"}, 422, "invalid_request"),
    ("unreset step", ("POST", "/sessions/{sid}/step", {"action": "x"}),
     {"op": "step", "action": "x"}, 409, "reset_needed"),
    ("unreset png", ("GET", "/sessions/{sid}/render?format=png", None), None, 409, "reset_needed"),
    ("unknown env", ("POST", "/sessions", {"env_id": "grl/Nope-v0"}),
     {"op": "create", "env_id": "grl/Nope-v0"}, 404, "unknown_env"),
    ("unknown session", ("POST", "/sessions/deadbeef/reset", {}),
     {"op": "attach", "session_id": "deadbeef"}, 404, "unknown_session"),
    ("close with fields", None, {"op": "close", "now": True}, 422, "invalid_request"),
    ("rollouts negative id", ("POST", "/rollouts", _rollout(ids=[-1], base_url="http://127.0.0.1:9/v1")),
     None, 422, "invalid_request"),
    ("rollouts misspelled key", ("POST", "/rollouts", _rollout(idz=[1], base_url="http://127.0.0.1:9/v1")),
     None, 422, "invalid_request"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("http_call", "ws_message", "status", "kind"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
def test_hostile__bad_requests_are_the_same_4xx_over_http_and_websocket(
    url, http, request, http_call, ws_message, status, kind
):
    unreset = "unreset" in request.node.callspec.id
    sid = _create(http, url, ALICE)
    if not unreset:
        http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
    if http_call is not None:
        method, path, body = http_call
        response = http.request(method, url + path.format(sid=sid), json=body, headers=ALICE)
        http_message = _error(response, status, kind)
        # the same connection serves on
        assert http.get(f"{url}/sessions", headers=ALICE).status_code == 200
    if ws_message is not None:
        with _ws(url, ALICE) as ws:
            assert "session_id" in _ask(ws, {"op": "attach", "session_id": sid})
            if not unreset and ws_message["op"] != "create":
                _ask(ws, {"op": "reset", "seed": 1})
            reply = _ask(ws, ws_message)["error"]
            assert (reply["type"], reply["status"]) == (kind, status)
            if http_call is not None and kind != "unknown_session":
                assert reply["message"] == http_message
            assert "observation" in _ask(ws, {"op": "reset", "seed": 2})  # still serving
    http.delete(f"{url}/sessions/{sid}", headers=ALICE)


def test_hostile__html_replays_of_any_reply_and_any_id_render(url, http):
    for env_id, reply in (
        ("grl/Sokoban-v0", "\ud800 lone <answer>Up</answer> \udfff"),
        ("grl/Sokoban-vision-v0", "<answer>Up</answer>"),
        ("grl/GSM8K-v0", "<answer>4</answer>"),
    ):
        sid = _create(http, url, ALICE, env_id)
        http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
        body = json.dumps({"action": reply}).encode()  # JSON escapes the lone surrogates
        http.post(
            f"{url}/sessions/{sid}/step",
            content=body,
            headers={**ALICE, "content-type": "application/json"},
        )
        page = http.get(f"{url}/sessions/{sid}/render?format=html", headers=ALICE)
        assert page.status_code == 200, page.text
        assert page.text.startswith("<!DOCTYPE html>")
        assert http.get(f"{url}/sessions/{sid}/render?format=png", headers=ALICE).is_success
        http.delete(f"{url}/sessions/{sid}", headers=ALICE)


def test_hostile__a_renderer_that_raises_is_a_422_and_the_connection_survives(
    url, http, monkeypatch
):
    import agent_envs.renderers.replay as replay

    def broken(*args, **kwargs):
        raise ValueError("cannot draw this")

    sid = _create(http, url, ALICE)
    http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
    monkeypatch.setattr(replay, "replay_html", broken)
    response = http.get(f"{url}/sessions/{sid}/render?format=html", headers=ALICE)
    assert "cannot draw this" in _error(response, 422, "render_failed")
    assert http.get(f"{url}/sessions", headers=ALICE).status_code == 200


class _CrashyEnv(gymnasium.Env):
    """Resets fine, raises on every step: an env bug, which must be a 500, not a hang-up."""

    observation_space = gymnasium.spaces.Text(8)
    action_space = gymnasium.spaces.Text(8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "ok", {}

    def step(self, action):
        raise RuntimeError("the env has a bug")


def test_hostile__a_500_is_json_and_keeps_the_keep_alive_connection(http):
    gymnasium.register("test/Crashy-v0", entry_point=_CrashyEnv)
    try:
        app = create_app(token=TOKENS, limits=SMALL, prefixes=("grl/", "test/"))
        with serve(app) as url:
            sid = _create(http, url, ALICE, "test/Crashy-v0")
            http.post(f"{url}/sessions/{sid}/reset", json={"seed": 1}, headers=ALICE)
            sock = _raw(url)
            body = b'{"action": "x"}'
            request = (
                f"POST /sessions/{sid}/step HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer alice-token\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            reader = sock.makefile("rb")
            for _ in range(2):  # twice on one connection: it survives the 500
                sock.sendall(request)
                status = reader.readline()
                assert status.startswith(b"HTTP/1.1 500"), status
                length = 0
                while (line := reader.readline()) != b"\r\n":
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                error = json.loads(reader.read(length))["error"]
                assert error["type"] == "env_error" and "the env has a bug" in error["message"]
            sock.close()
            with _ws(url, ALICE) as ws:
                _ask(ws, {"op": "attach", "session_id": sid})
                assert _ask(ws, {"op": "step", "action": "x"})["error"]["status"] == 500
                assert "observation" in _ask(ws, {"op": "reset", "seed": 1})
    finally:
        gymnasium.registry.pop("test/Crashy-v0", None)


# --------------------------------------------------------------------------- OpenEnv mode
def test_hostile__openenv_mode_has_the_tokens_limits_and_4xx():
    pytest.importorskip("openenv")
    from agent_envs.adapters.server.openenv import create_openenv_app
    from openenv.core import GenericEnvClient

    assert limits_of(parse_args(["--openenv", "grl/Sokoban-v0"])).max_sessions == 64
    assert limits_of(parse_args([])).max_sessions == 4096
    app = create_openenv_app(
        "grl/Sokoban-v0", max_concurrent_envs=4, token=["me:s3cret"], limits=SMALL
    )
    with serve(app) as url, httpx.Client(timeout=30) as http:
        auth = {"authorization": "Bearer s3cret"}
        _error(http.post(f"{url}/reset", json={"seed": 1}), 401, "missing_token")
        with pytest.raises(Exception, match="401"):
            _ws(url, {})
        assert http.post(f"{url}/reset", json={"seed": 1}, headers=auth).status_code == 200
        step = http.post(f"{url}/step", json={"action": {"message": "x"}}, headers=auth)
        assert step.status_code == 409 and "/ws" in step.json()["detail"]
        for path, body in (
            ("/reset", {"seed": 1, "sed": 2}),
            ("/reset", {"seed": -1}),
            ("/reset", {"options": {"level": 5}}),
            ("/step", {"action": {"message": "x"}, "timeot_s": 3}),
            ("/step", {"action": {"mesage": "x"}}),
        ):
            response = http.post(url + path, json=body, headers=auth)
            assert response.status_code == 422, (path, body, response.text)
        local = gymnasium.make("grl/Sokoban-v0")
        # OpenEnv's clients send no headers: the token rides in the URL (HTTP Basic)
        with GenericEnvClient(base_url=url.replace("://", "://me:s3cret@")).sync() as env:
            assert env.reset(seed=3).observation["text"] == local.reset(seed=3)[0]
            result = env.step({"message": "<answer>Up</answer>"})
            assert result.observation["text"] == local.step("<answer>Up</answer>")[0]


def test_hostile__a_server_bug_is_a_json_500_and_the_connection_survives(http, monkeypatch):
    from agent_envs.adapters.server.service import SessionService

    def broken(session):
        raise KeyError("a bug in the server")

    with serve(create_app(token=TOKENS, limits=SMALL)) as url:
        monkeypatch.setattr(SessionService, "describe", staticmethod(broken))
        body = {"env_id": "grl/Sokoban-v0"}
        for _ in range(2):  # the same keep-alive connection, twice
            response = http.post(f"{url}/sessions", json=body, headers=ALICE)
            assert "a bug in the server" in _error(response, 500, "internal_error")
        assert http.get(f"{url}/sessions", headers=ALICE).status_code == 200
        with _ws(url, ALICE) as ws:
            assert _ask(ws, {"op": "create", **body})["error"]["status"] == 500
            assert _ask(ws, {"op": "step", "action": "x"})["error"]["status"] == 409  # still open
