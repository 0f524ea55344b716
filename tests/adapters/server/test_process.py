"""The server as a process (``agent-envs serve``): killed with SIGKILL mid-run
and restarted on the same port, its clients' episodes go on (replayed, the token sent again);
``--auth on`` prints the token it generated; the bounded load run of
`agent_envs.benchmarks.server_load`; the listening socket turns Nagle off."""

from __future__ import annotations

import asyncio
import socket

import gymnasium
import httpx
import pytest
from agent_envs.adapters.server import RemoteEnv, RemoteVectorEnv
from agent_envs.adapters.server.__main__ import bind_socket
from agent_envs.benchmarks.server_load import ServerProcess, health, killed_clients_reaped, run_load

import agent_envs  # noqa: F401

pytestmark = pytest.mark.slow


def test_process__listening_socket_gets_tcp_nodelay_on_accepted_connections():
    """asyncio sets TCP_NODELAY only on sockets whose proto says TCP; without it each
    response waited ~40 ms for a delayed ACK (Nagle)."""
    sock = bind_socket("127.0.0.1", 0)
    assert sock.proto == socket.IPPROTO_TCP

    async def main() -> int:
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_connect(reader, writer):
            accepted.set_result(writer.get_extra_info("socket"))

        server = await asyncio.start_server(on_connect, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        peer = await asyncio.wait_for(accepted, 10)
        nodelay = peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        writer.close()
        server.close()
        return nodelay

    assert asyncio.run(main()) != 0


def test_process__auth_on_prints_the_token_it_generated():
    with ServerProcess("--auth", "on") as server:
        line = server.process.stdout.readline()
        assert line.startswith("agent_envs.adapters.server token: ")
        token = line.split(": ", 1)[1].strip()
        body = {"env_id": "grl/Sokoban-v0"}
        assert httpx.post(f"{server.url}/sessions", json=body, timeout=60).status_code == 401
        response = httpx.post(
            f"{server.url}/sessions",
            json=body,
            headers={"authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert response.status_code == 201


def test_process__server_killed_mid_run_and_restarted_loses_no_episode():
    token = ("--token", "trainer:s3cret")
    with ServerProcess(*token) as first:
        port = first.port
        single = RemoteEnv(first.url, "grl/Sokoban-v0", token="s3cret", reconnect_timeout=300)
        vector = RemoteVectorEnv(
            [first.url],
            "grl/Sokoban-v0",
            num_envs=3,
            token="s3cret",
            reconnect_timeout=300,
            max_turns=10,
        )
        local = gymnasium.make("grl/Sokoban-v0")
        locals_ = [gymnasium.make("grl/Sokoban-v0", max_turns=10) for _ in range(3)]
        assert single.reset(seed=21) == local.reset(seed=21)
        observations, _ = vector.reset(seed=[1, 2, 3])
        assert list(observations) == [
            env.reset(seed=s)[0] for env, s in zip(locals_, [1, 2, 3], strict=True)
        ]
        for reply in ("<answer>Up</answer>", "<answer>Left</answer>"):
            assert single.step(reply) == local.step(reply)
            got = vector.step([reply] * 3)
            assert list(got[0]) == [env.step(reply)[0] for env in locals_]
        first.kill()
    with ServerProcess(*token, port=port) as second:
        assert health(second.url)["sessions"] == 0  # a new process: every session is gone
        for reply in ("<answer>Down</answer>", "<answer>Right</answer>"):
            assert single.step(reply) == local.step(reply)
            got = vector.step([reply] * 3)
            wants = [env.step(reply) for env in locals_]
            assert list(got[0]) == [want[0] for want in wants]
            assert got[1].tolist() == [want[1] for want in wants]
        assert single.resumes == 1
        assert [env.resumes for env in vector.envs] == [1, 1, 1]
        single.close()
        vector.close()


@pytest.mark.parametrize("system", ["ours-async", "ours-ws", "ours-http"])
def test_process__bounded_load_has_no_errors_and_killed_clients_are_reaped(system):
    with ServerProcess("--session-ttl", "1") as server:
        result = run_load(system, server.url, "grl/Sokoban-v0", clients=6, steps=40, processes=2)
        assert result.errors == 0
        assert result.steps == 6 * 40 and len(result.latencies) == 240
        assert result.steps_per_second > 0
        held, seconds = killed_clients_reaped(system, server.url, "grl/Sokoban-v0", 3, timeout=60)
        assert held == 3 and seconds is not None


def test_process__bounded_load_against_openenv_server():
    pytest.importorskip("openenv")
    with ServerProcess("--openenv", "grl/Sokoban-v0", "--max-sessions", "8") as server:
        result = run_load("openenv", server.url, "grl/Sokoban-v0", clients=4, steps=30, processes=1)
        assert result.errors == 0 and result.steps == 120
