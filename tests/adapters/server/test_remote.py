"""RemoteEnv and RemoteVectorEnv: the same episodes as local envs, the collector driving them
unchanged, and episodes that survive a server restart (replayed) or are marked."""

from __future__ import annotations

import socket
import threading
import time

import gymnasium
import numpy as np
import pytest
from agent_envs.adapters.loop.collector import RolloutCollector
from agent_envs.adapters.loop.engine import Generation
from agent_envs.adapters.server import RemoteEnv, RemoteVectorEnv, ServerUnavailable, create_app

import agent_envs  # noqa: F401
from tests.adapters.server.conftest import serve

REPLIES = [
    "<answer>Up</answer>",
    "<think>hmm</think><answer>Left || Down</answer>",
    "nothing parseable",
    "<answer>Right</answer>",
    "",
    "<answer>Down || Down || Left</answer>",
]


@pytest.mark.parametrize("transport", ["ws", "http"])
@pytest.mark.parametrize("env_id", ["grl/Sokoban-v0", "grl/Tetris-4x4-cell-v0", "grl/GSM8K-v0"])
def test_remote__same_episode_as_the_local_env(server_url, transport, env_id):
    remote = RemoteEnv(server_url, env_id, transport=transport, max_turns=4)
    local = gymnasium.make(env_id, max_turns=4)
    assert isinstance(remote, gymnasium.Env)
    assert remote.instructions == local.unwrapped.instructions
    assert remote.action_space.max_length == local.action_space.max_length
    assert remote.reset(seed=11) == local.reset(seed=11)
    for reply in REPLIES:
        got, want = remote.step(reply), local.step(reply)
        assert got == want
        if got[2] or got[3]:
            break
    assert remote.messages() == local.unwrapped.messages()
    assert remote.resumes == 0
    remote.close()


def test_remote__reset_without_seed_reports_the_episode_seed(server_url):
    remote = RemoteEnv(server_url, "grl/Sokoban-v0")
    _, info = remote.reset()
    assert isinstance(info["episode_seed"], int)
    assert remote.reset(seed=info["episode_seed"])[1]["state_hash"] == info["state_hash"]
    remote.close()


def _restart_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_remote__episode_is_replayed_after_a_server_restart(transport):
    """The server goes away mid-episode and a new one (no sessions) comes up on the same
    port: the next step replays the episode on a new session and carries on exactly."""
    port = _restart_port()
    local = gymnasium.make("grl/Sokoban-v0")
    local.reset(seed=3)
    with serve(create_app(), port=port) as url:
        remote = RemoteEnv(url, "grl/Sokoban-v0", transport=transport)
        remote.reset(seed=3)
        for reply in REPLIES[:3]:
            assert remote.step(reply) == local.step(reply)
        old_session = remote.session_id
    with serve(create_app(), port=port):
        for reply in REPLIES[3:]:
            assert remote.step(reply) == local.step(reply)
        assert remote.resumes == 1 and remote.session_id != old_session
        assert remote.messages() == local.unwrapped.messages()
        remote.close()


def test_remote__a_websocket_closed_while_idle_carries_on_in_the_same_session():
    """websocket-client answers pings only inside a call: a client idle past the server's
    ping timeout (an agent's model thinking) finds its connection closed, and its next step
    lands on the same session over a new connection."""
    local = gymnasium.make("grl/Sokoban-v0")
    local.reset(seed=5)
    with serve(create_app(), ws_ping_interval=0.2, ws_ping_timeout=0.2) as url:
        remote = RemoteEnv(url, "grl/Sokoban-v0", transport="ws")
        remote.reset(seed=5)
        session = remote.session_id
        for reply in REPLIES:
            time.sleep(1.0)  # past the ping interval and timeout: the server closes the socket
            assert remote.step(reply) == local.step(reply)
        assert remote.session_id == session
        assert remote.messages() == local.unwrapped.messages()
        remote.close()


def test_remote__episode_that_does_not_replay_is_marked_server_restart():
    port = _restart_port()
    with serve(create_app(), port=port) as url:
        remote = RemoteEnv(url, "grl/Sokoban-v0")
        remote.reset(seed=3)
        last = remote.step("<answer>Up</answer>")[0]
        remote._episode["hashes"][1] = "0000000000000000"  # the replay cannot match this
    with serve(create_app(), port=port):
        observation, reward, terminated, truncated, info = remote.step("<answer>Up</answer>")
        assert (observation, reward, terminated, truncated) == (last, 0.0, False, True)
        assert info["truncation_reason"] == "server_restart"
        assert remote.resumes == 0
        remote.reset(seed=3)  # the env itself goes on
        remote.close()


def test_remote__no_server_within_reconnect_timeout_raises():
    port = _restart_port()
    with serve(create_app(), port=port) as url:
        remote = RemoteEnv(url, "grl/Sokoban-v0", reconnect_timeout=0.5)
        remote.reset(seed=0)
    with pytest.raises(ServerUnavailable, match="reconnect_timeout"):
        remote.step("<answer>Up</answer>")


class _CyclingEngine:
    """Replies from a fixed list, by turn: a deterministic agent needing no env."""

    name = "cycle"
    tokenizer = None

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, requests):
        reply = REPLIES[self.calls % len(REPLIES)]
        self.calls += 1
        return [Generation(text=reply) for _ in requests]


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_remote__collector_drives_a_remote_vector_env_over_two_servers_unchanged(transport):
    with serve(create_app()) as first, serve(create_app()) as second:
        remote = RemoteVectorEnv(
            [first, second],
            "grl/Sokoban-v0",
            num_envs=4,
            group_size=2,
            transport=transport,
            max_turns=5,
        )
        assert {env.transport for env in remote.envs} == {transport}
        hosts = {env.base_url for env in remote.envs}
        assert hosts == {first, second}
        got = RolloutCollector(remote, _CyclingEngine(), env_id="grl/Sokoban-v0").collect([5, 9])
        remote.close()
    local = gymnasium.make_vec(
        "grl/Sokoban-v0", num_envs=4, group_size=2, autoreset_mode="disabled", max_turns=5
    )
    want = RolloutCollector(local, _CyclingEngine(), env_id="grl/Sokoban-v0").collect([5, 9])
    local.close()
    assert [t.to_dict() for t in got] == [t.to_dict() for t in want]
    assert [t.seed for t in got] == [5, 5, 9, 9]


def test_remote__vector_env_seeds_masks_and_autoreset_follow_text_vector_env(server_url):
    remote = RemoteVectorEnv(
        [server_url], "grl/Sokoban-v0", num_envs=2, autoreset_mode="next_step", max_turns=1
    )
    local = gymnasium.make_vec("grl/Sokoban-v0", num_envs=2, max_turns=1)
    for seed in (17, [4, 8]):
        got, want = remote.reset(seed=seed), local.reset(seed=seed)
        assert got[0] == want[0]
        assert list(got[1]["episode_seed"]) == list(want[1]["episode_seed"])
    mask = np.array([True, False])
    for _ in range(3):  # episode end, then the autoreset step, then a new episode
        got = remote.step(["<answer>Up</answer>"] * 2, mask)
        want = local.step(["<answer>Up</answer>"] * 2, mask)
        assert got[0] == want[0]
        assert got[1].tolist() == want[1].tolist() and got[3].tolist() == want[3].tolist()
    with pytest.raises(ValueError, match="mask"):
        remote.step(["a", "b"], [1, 0])
    remote.close()
    local.close()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"servers": []}, "servers"),
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 3, "group_size": 2}, "group_size"),
        ({"autoreset_mode": "same_step"}, "autoreset_mode"),
    ],
)
def test_remote__vector_env_configuration_errors_name_the_argument(kwargs, name):
    arguments = {"servers": ["http://127.0.0.1:9"], "num_envs": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        RemoteVectorEnv(arguments.pop("servers"), "grl/Sokoban-v0", **arguments)


def test_remote__configuration_errors_name_the_argument():
    for kwargs, name in (
        ({"transport": "carrier-pigeon"}, "transport"),
        ({"request_timeout": 0}, "request_timeout"),
        ({"reconnect_timeout": -1}, "reconnect_timeout"),
        ({"render_mode": "human"}, "render_mode"),
    ):
        with pytest.raises(ValueError, match=name):
            RemoteEnv("http://127.0.0.1:9", "grl/Sokoban-v0", **kwargs)


def test_remote__a_server_that_never_answers_raises_timeout_in_bounded_time():
    from websockets.sync.server import serve as ws_serve

    def silent(connection):  # accepts the WebSocket, reads, never replies
        for _ in connection:
            pass

    with ws_serve(silent, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.socket.getsockname()[1]
        began = time.monotonic()
        with pytest.raises(TimeoutError, match=r"request_timeout=0\.5"):
            RemoteEnv(f"http://127.0.0.1:{port}", "grl/Sokoban-v0", request_timeout=0.5)
        assert time.monotonic() - began < 5.0
        server.shutdown()
    thread.join(timeout=5)
