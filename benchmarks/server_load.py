"""Load on the env server: many concurrent clients stepping one env, against OpenEnv's server.

``agent-envs bench server-load`` starts each server as its own process on
loopback (``agent-envs serve``, and ``agent-envs serve
--openenv ENV`` for OpenEnv's own server serving the same env), then runs ``--clients`` concurrent
clients, spread over ``--processes`` client processes, each doing ``--steps`` steps (an episode that
ends is reset; resets are not counted as steps). Each system is driven by its own client:

* **ours (ws)**: `agent_envs.adapters.server.RemoteEnv` (WebSocket transport, the default: a
  websocket-client connection used on the calling thread), one thread per client;
* **ours (http)**: `RemoteEnv(transport="http")` (one HTTP request per call), one thread per
  client;
* **ours (async)**: our server's WebSocket protocol (``/ws``) from asyncio clients, all
  clients of a process on one loop: OpenEnv's client architecture, so the servers compare
  like for like;
* **OpenEnv**: OpenEnv's ``GenericEnvClient`` (its WebSocket sessions), all clients of a
  process on one asyncio loop.

Reported per system and round: errors, steps/s (all steps over the wall time from the
common start to the last client's end) and p50/p99 step latency. Rounds interleave the
systems so they share the machine's noise; the summary gives each system's range and the
ratio of ours to OpenEnv's throughput per round (goal ≥ 2).

**Killed clients.** After the load, ``--killed`` more clients (one process) open sessions,
step, and are killed with SIGKILL mid-episode; the benchmark then polls ``/health`` until
the server holds no session and reports how long that took. Our server reaps sessions idle
for ``--session-ttl`` seconds. (OpenEnv's server closes a WebSocket session when its
connection drops, and shows no session count to poll, so it is not measured.)

**One greedy client** (``--greedy``): ``--clients - 1`` polite clients (each its own token,
one step every ``--polite-pace`` seconds, a new session every ``--polite-episode`` steps) play
for ``--greedy-seconds`` alone, then as long again beside one greedy client (one token,
``--greedy-connections`` WebSockets that create sessions and step as fast as they can, half
of them never closing a session, half closing each after 20 steps to open the next; its
process runs at nice 19, as if its CPU were elsewhere). Reported: the polite clients' step
latency (p50/p95/p99) alone and beside the greedy one, their refusals (any error reply: there
must be none), and what the greedy client got. The server runs with its default limits and a
tokens file naming every client.

Results go to ``benchmarks/results/server_load.md`` (``--greedy`` replaces only its own
section there). The tests run bounded versions (`run_load` with a few clients and steps,
`run_greedy` for a few seconds).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, parse

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / "server_load.md"
REPLIES = tuple(f"<answer>{move}</answer>" for move in ("Up", "Right", "Down", "Left"))
SYSTEMS = ("ours-async", "openenv", "ours-ws", "ours-http")


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env_id: str = "grl/Sokoban-v0"
    """the registered id every client steps"""
    clients: int = 64
    """concurrent clients, one session each"""
    steps: int = 1000
    """steps per client"""
    processes: int = 4
    """client processes the clients are spread over"""
    rounds: int = 1
    """rounds of all systems, interleaved"""
    systems: list[str] = field(default_factory=lambda: list(SYSTEMS))
    """systems measured, in this order each round: ours-async (our server, asyncio clients on
    its /ws protocol), openenv (OpenEnv's server and GenericEnvClient), ours-ws (RemoteEnv over
    WebSocket), ours-http (RemoteEnv over plain HTTP)"""
    killed: int = 8
    """clients killed mid-episode after the load (0: skip)"""
    session_ttl: float = 5.0
    """our server's idle-session TTL for this run"""
    start_timeout: float = 180.0
    """seconds a server may take to start"""
    output: str = str(RESULTS)
    """where the Markdown goes ("" to only print it)"""
    greedy: bool = False
    """run the greedy-client measurement instead (--clients - 1 polite clients beside one
    greedy client)"""
    greedy_seconds: float = 30.0
    """seconds of each phase of --greedy: polite clients alone, then beside the greedy one"""
    greedy_connections: int = 256
    """WebSockets the greedy client opens"""
    polite_pace: float = 0.05
    """seconds between a polite client's steps"""
    polite_episode: int = 10
    """steps a polite client plays on one session before it closes it and opens another"""


@dataclass
class LoadResult:
    system: str
    clients: int
    steps: int
    errors: int
    seconds: float
    latencies: list[float] = field(repr=False, default_factory=list)
    client_cpu: float = float("nan")
    """CPU seconds of all client processes during the run"""
    server_cpu: float = float("nan")
    """CPU seconds of the server process during the run (NaN: not measured)"""

    def cpu_per_step(self, seconds: float) -> float:
        return seconds / self.steps * 1e6 if self.steps else float("nan")

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- servers
class ServerProcess:
    """``agent-envs serve ARGS`` on 127.0.0.1, a free port; stopped by its
    pid."""

    def __init__(self, *args: str, port: int = 0, timeout: float = 180.0) -> None:
        command = [sys.executable, "-m", "agent_envs.adapters.server", "--host", "127.0.0.1"]
        command += ["--port", str(port), *args]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        lines: list[str] = []
        reader = threading.Thread(
            target=lambda: lines.append(self.process.stdout.readline()), daemon=True
        )
        reader.start()
        reader.join(timeout)
        if not lines or "listening on " not in lines[0]:
            self.stop()
            raise RuntimeError(f"server {command} did not start within {timeout:g} s")
        self.url = lines[0].split("listening on ", 1)[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: the server dies mid-run, as a crash would."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def health(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/health", timeout=10) as response:
        return json.loads(response.read())


# --------------------------------------------------------------------------- clients
def _ours_clients(
    url: str, env_id: str, seeds: list[int], steps: int, transport: str, start: Any
) -> tuple[list[float], int, float, float]:
    from agent_envs.adapters.server import RemoteEnv

    envs = [RemoteEnv(url, env_id, transport=transport) for _ in seeds]
    for env, seed in zip(envs, seeds, strict=True):
        env.reset(seed=seed)
    latencies: list[list[float]] = [[] for _ in envs]
    errors = [0] * len(envs)

    def drive(index: int) -> None:
        env, own = envs[index], latencies[index]
        for step in range(steps):
            begin = time.perf_counter()
            try:
                _, _, terminated, truncated, _ = env.step(REPLIES[step % 4])
            except Exception:
                errors[index] += 1
                return
            own.append(time.perf_counter() - begin)
            if terminated or truncated:
                env.reset()

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(envs))]
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ended = time.monotonic()
    for env in envs:
        env.close()
    return [x for own in latencies for x in own], sum(errors), began, ended


def _openenv_clients(
    url: str, seeds: list[int], steps: int, start: Any
) -> tuple[list[float], int, float, float]:
    from openenv.core import GenericEnvClient

    async def main() -> tuple[list[float], int, float, float]:
        clients = [GenericEnvClient(base_url=url, message_timeout_s=600) for _ in seeds]
        for client, seed in zip(clients, seeds, strict=True):
            await client.connect()
            await client.reset(seed=seed)
        latencies: list[float] = []
        errors = 0

        async def drive(client: Any) -> None:
            nonlocal errors
            for step in range(steps):
                begin = time.perf_counter()
                try:
                    result = await client.step({"message": REPLIES[step % 4]})
                except Exception:
                    errors += 1
                    return
                latencies.append(time.perf_counter() - begin)
                if result.done:
                    await client.reset()

        await asyncio.get_running_loop().run_in_executor(None, start.wait)
        began = time.monotonic()
        await asyncio.gather(*(drive(client) for client in clients))
        ended = time.monotonic()
        for client in clients:
            await client.close()
        return latencies, errors, began, ended

    return asyncio.run(main())


def _ours_async_clients(
    url: str, env_id: str, seeds: list[int], steps: int, start: Any
) -> tuple[list[float], int, float, float]:
    """Our server's WebSocket protocol from asyncio clients, one loop per process: the same
    client architecture as OpenEnv's, so the two servers compare like for like."""
    from websockets.asyncio.client import connect

    async def call(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        await ws.send(json.dumps(message).encode())
        reply = json.loads(await ws.recv())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    async def main() -> tuple[list[float], int, float, float]:
        ws_url = "ws" + url.removeprefix("http") + "/ws"
        sockets = [await connect(ws_url, max_size=None, compression=None) for _ in seeds]
        for ws, seed in zip(sockets, seeds, strict=True):
            await call(ws, {"op": "create", "env_id": env_id})
            await call(ws, {"op": "reset", "seed": seed})
        latencies: list[float] = []
        errors = 0

        async def drive(ws: Any) -> None:
            nonlocal errors
            for step in range(steps):
                begin = time.perf_counter()
                try:
                    result = await call(ws, {"op": "step", "action": REPLIES[step % 4]})
                except Exception:
                    errors += 1
                    return
                latencies.append(time.perf_counter() - begin)
                if result["terminated"] or result["truncated"]:
                    await call(ws, {"op": "reset", "seed": None})

        await asyncio.get_running_loop().run_in_executor(None, start.wait)
        began = time.monotonic()
        await asyncio.gather(*(drive(ws) for ws in sockets))
        ended = time.monotonic()
        for ws in sockets:
            await call(ws, {"op": "close"})
            await ws.close()
        return latencies, errors, began, ended

    return asyncio.run(main())


class _CpuFromStart:
    """The start barrier, noting this process's CPU time when the run begins."""

    def __init__(self, barrier: Any) -> None:
        self.barrier = barrier
        self.cpu = 0.0

    def wait(self) -> None:
        self.barrier.wait()
        self.cpu = time.process_time()

    def abort(self) -> None:
        self.barrier.abort()


def _client_process(
    system: str, url: str, env_id: str, seeds: list[int], steps: int, barrier: Any, out: Any
) -> None:
    start = _CpuFromStart(barrier)
    try:
        if system == "openenv":
            result = _openenv_clients(url, seeds, steps, start)
        elif system == "ours-async":
            result = _ours_async_clients(url, env_id, seeds, steps, start)
        else:
            transport = system.removeprefix("ours-")
            result = _ours_clients(url, env_id, seeds, steps, transport, start)
        out.put((*result, time.process_time() - start.cpu))
    except BaseException as error:  # report, never hang the parent
        start.abort()
        out.put(([], len(seeds) * steps, 0.0, 0.0, 0.0, repr(error)))


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(
    system: str,
    url: str,
    env_id: str,
    *,
    clients: int,
    steps: int,
    processes: int,
    server_pid: int | None = None,
) -> LoadResult:
    """``clients`` concurrent clients of ``system`` at ``url``, ``steps`` steps each (the CPU
    time of ``server_pid`` during the run is measured when given)."""
    context = multiprocessing.get_context("spawn")
    processes = max(1, min(processes, clients))
    start = context.Barrier(processes + 1, timeout=600)
    out = context.Queue()
    workers = []
    for worker in range(processes):
        seeds = list(range(worker, clients, processes))
        process = context.Process(
            target=_client_process, args=(system, url, env_id, seeds, steps, start, out)
        )
        process.start()
        workers.append(process)
    try:
        start.wait()
    except threading.BrokenBarrierError:  # a client process failed before the start: say why
        failures = [out.get(timeout=60) for _ in workers]
        reasons = sorted({r[5] for r in failures if len(r) > 5}) or ["(no reason reported)"]
        raise RuntimeError(f"{system}: a client process failed to start: {reasons}") from None
    server_cpu = _cpu_seconds(server_pid)
    results = [out.get(timeout=1800) for _ in workers]
    server_cpu = _cpu_seconds(server_pid) - server_cpu
    for process in workers:
        process.join(60)
    latencies = [x for result in results for x in result[0]]
    errors = sum(result[1] for result in results)
    began = min((r[2] for r in results if r[2]), default=0.0)
    ended = max((r[3] for r in results if r[3]), default=0.0)
    problems = [r[5] for r in results if len(r) > 5]
    if problems:
        print(f"{system}: client process failed: {problems[0]}", file=sys.stderr)
    client_cpu = sum(result[4] for result in results)
    return LoadResult(
        system, clients, len(latencies), errors, ended - began, latencies, client_cpu, server_cpu
    )


# --------------------------------------------------------------------------- killed clients
def _doomed_clients(system: str, url: str, env_id: str, count: int, ready: Any) -> None:
    from agent_envs.adapters.server import RemoteEnv

    transport = "http" if system == "ours-http" else "ws"
    envs = [RemoteEnv(url, env_id, transport=transport) for _ in range(count)]
    for index, env in enumerate(envs):
        env.reset(seed=index)
        env.step(REPLIES[0])
    ready.set()
    time.sleep(3600)


def killed_clients_reaped(
    system: str, url: str, env_id: str, count: int, timeout: float = 120.0
) -> tuple[int, float | None]:
    """Sessions the killed clients left (seen in ``/health``) and the seconds until the
    server held none (``None``: not within ``timeout``)."""
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    process = context.Process(target=_doomed_clients, args=(system, url, env_id, count, ready))
    process.start()
    deadline = time.monotonic() + 600
    while not ready.wait(0.5):
        if not process.is_alive() or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"{system}: the doomed clients never got ready")
    held = health(url).get("sessions", -1)
    os.kill(process.pid, signal.SIGKILL)
    process.join(30)
    killed = time.monotonic()
    while time.monotonic() - killed < timeout:
        if health(url).get("sessions", 0) == 0:
            return held, time.monotonic() - killed
        time.sleep(0.1)
    return held, None


# --------------------------------------------------------------------------- greedy client
@dataclass
class GreedyResult:
    """The polite clients' step latencies alone and beside the greedy client, their
    refusals, and what the greedy client did."""

    polite: int
    seconds: float
    alone: list[float] = field(repr=False)
    beside: list[float] = field(repr=False)
    refused: int
    refusals: list[str]
    greedy_steps: int
    greedy_refused: int
    greedy_sessions: int
    """the most sessions the server held while the greedy client ran"""

    @staticmethod
    def quantile(latencies: list[float], q: float) -> float:
        if not latencies:
            return float("nan")
        ordered = sorted(latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def client_identity(name: str, tokens: dict[str, str] | None) -> dict[str, str]:
    """The headers that make a request ``name``'s: its token, or ``X-Client-Id`` on a
    server without tokens."""
    if tokens is None:
        return {"x-client-id": name}
    return {"authorization": f"Bearer {tokens[name]}"}


async def _call(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message).encode())
    return json.loads(await ws.recv())


async def _polite_clients(
    url: str, env_id: str, headers: list[dict[str, str]], plan: dict[str, float]
) -> tuple[list[float], list[float], list[str]]:
    from websockets.asyncio.client import connect

    ws_url = "ws" + url.removeprefix("http") + "/ws"
    alone: list[float] = []
    beside: list[float] = []
    refusals: list[str] = []

    def refused(reply: dict[str, Any]) -> bool:
        if "error" in reply:
            refusals.append(f"{reply['error'].get('type')}: {reply['error'].get('message')}")
            return True
        return False

    async def one(index: int, own: dict[str, str]) -> None:
        try:
            ws = await connect(ws_url, additional_headers=own, max_size=None, compression=None)
        except Exception as error:
            refusals.append(f"connect: {error!r}")
            return
        seed = index * 1000
        while time.time() < plan["end"]:
            if refused(await _call(ws, {"op": "create", "env_id": env_id})):
                await asyncio.sleep(plan["pace"])
                continue
            seed += 1
            if refused(await _call(ws, {"op": "reset", "seed": seed})):
                continue
            for step in range(plan["episode"]):
                sent = time.time()
                if sent >= plan["end"]:
                    break
                began = time.perf_counter()
                reply = await _call(ws, {"op": "step", "action": REPLIES[step % 4]})
                took = time.perf_counter() - began
                if refused(reply):
                    break
                if sent < plan["greedy_from"]:
                    alone.append(took)
                elif sent >= plan["greedy_from"] + plan["settle"]:
                    beside.append(took)
                await asyncio.sleep(plan["pace"])
            refused(await _call(ws, {"op": "close"}))
        await ws.close()

    await asyncio.gather(*(one(index, own) for index, own in enumerate(headers)))
    return alone, beside, refusals


async def _greedy_client(
    url: str, env_id: str, own: dict[str, str], connections: int, plan: dict[str, float]
) -> tuple[int, int]:
    """Hoard sessions and step as fast as possible from ``greedy_from`` to ``end``."""
    from websockets.asyncio.client import connect

    ws_url = "ws" + url.removeprefix("http") + "/ws"
    steps = refused = 0
    await asyncio.sleep(max(0.0, plan["greedy_from"] - time.time()))

    async def one(index: int) -> None:
        nonlocal steps, refused
        try:
            ws = await connect(ws_url, additional_headers=own, max_size=None, compression=None)
        except Exception:
            refused += 1
            return
        hoard = index % 2 == 0  # half the connections keep every session they open
        have = False
        while time.time() < plan["end"]:
            created = await _call(ws, {"op": "create", "env_id": env_id})
            if "error" in created:
                refused += 1
            else:
                have = "error" not in await _call(ws, {"op": "reset", "seed": index})
            if not have:
                continue
            for step in range(20):
                reply = await _call(ws, {"op": "step", "action": REPLIES[step % 4]})
                steps += 1
                if reply.get("terminated") or reply.get("truncated"):
                    await _call(ws, {"op": "reset", "seed": index})
            if not hoard:  # the other half close theirs and open new ones at once
                have = "error" in await _call(ws, {"op": "close"})
        await ws.close()

    await asyncio.gather(*(one(index) for index in range(connections)))
    return steps, refused


def _polite_process(
    url: str, env_id: str, headers: list[dict[str, str]], plan: dict[str, float], out: Any
) -> None:
    try:
        out.put(asyncio.run(_polite_clients(url, env_id, headers, plan)))
    except BaseException as error:  # report, never hang the parent
        out.put(([], [], [f"polite process failed: {error!r}"]))


def _greedy_process(
    url: str, env_id: str, own: dict[str, str], connections: int, plan: dict, out: Any
) -> None:
    os.nice(19)  # an attacker elsewhere: its own CPU does not count against the server's
    try:
        out.put(asyncio.run(_greedy_client(url, env_id, own, connections, plan)))
    except BaseException as error:
        out.put((0, -1, repr(error)))


def greedy_tokens(polite: int) -> dict[str, str]:
    """Client name -> token for ``polite`` polite clients and the greedy one."""
    import secrets

    names = [f"polite-{index}" for index in range(polite)] + ["greedy"]
    return {name: secrets.token_urlsafe(16) for name in names}


def run_greedy(
    url: str,
    env_id: str,
    *,
    polite: int = 63,
    seconds: float = 30.0,
    connections: int = 256,
    pace: float = 0.05,
    episode: int = 10,
    tokens: dict[str, str] | None = None,
) -> GreedyResult:
    """``polite`` polite clients for ``seconds`` alone, then ``seconds`` beside one greedy
    client with ``connections`` WebSockets, against the server at ``url`` (``tokens``: the
    server's, name -> token, from `greedy_tokens`; ``None``: a server without tokens, the
    clients named by ``X-Client-Id``)."""
    context = multiprocessing.get_context("spawn")
    start = time.time() + 2.0  # room for the processes to start and connect
    plan = {
        "greedy_from": start + seconds,
        "end": start + 2 * seconds,
        "settle": min(1.0, seconds / 4),
        "pace": pace,
        "episode": episode,
    }
    headers = [client_identity(f"polite-{index}", tokens) for index in range(polite)]
    polite_out, greedy_out = context.Queue(), context.Queue()
    polite_process = context.Process(
        target=_polite_process, args=(url, env_id, headers, plan, polite_out)
    )
    greedy_process = context.Process(
        target=_greedy_process,
        args=(url, env_id, client_identity("greedy", tokens), connections, plan, greedy_out),
    )
    polite_process.start()
    greedy_process.start()
    most = 0
    while time.time() < plan["end"]:
        if time.time() >= plan["greedy_from"]:
            most = max(most, health(url).get("sessions", 0))
        time.sleep(0.25)
    timeout = 2 * seconds + 120
    alone, beside, refusals = polite_out.get(timeout=timeout)
    greedy = greedy_out.get(timeout=timeout)
    for process in (polite_process, greedy_process):
        process.join(30)
        if process.is_alive():
            process.kill()
    return GreedyResult(
        polite, seconds, alone, beside, len(refusals), refusals[:5], greedy[0], greedy[1], most
    )


def greedy_report(args: Args, result: GreedyResult, server: str) -> str:
    def row(label: str, latencies: list[float]) -> str:
        cells = " | ".join(
            f"{GreedyResult.quantile(latencies, q) * 1e3:.2f}" for q in (0.5, 0.95, 0.99)
        )
        return f"| {label} | {len(latencies)} | {cells} |"

    lines = [
        GREEDY_HEADING,
        "",
        f"`agent-envs bench server-load --greedy --clients {args.clients} --greedy-seconds "
        f"{args.greedy_seconds:g} --greedy-connections {args.greedy_connections} "
        f"--polite-pace {args.polite_pace:g} --polite-episode {args.polite_episode}` on "
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()} "
        f"(shared with other work): `{args.env_id}`, {server}. {result.polite} polite "
        f"clients (a token each) step every {args.polite_pace:g} s and open a new session "
        f"every {args.polite_episode} steps; after {args.greedy_seconds:g} s one greedy client "
        f"(one token) opens {args.greedy_connections} WebSockets that create sessions and step "
        "as fast as they can, half of them never closing a session, half closing each after 20 "
        "steps to open the next (its process at nice 19, as if its CPU were elsewhere).",
        "",
        "| polite clients' steps | count | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
        row("alone", result.alone),
        row("beside the greedy client", result.beside),
        "",
        f"Polite requests refused: **{result.refused}**"
        + (f" (first: {'; '.join(result.refusals)})" if result.refusals else "")
        + f". The greedy client: {result.greedy_steps} steps, {result.greedy_refused} "
        f"refusals, the server held at most {result.greedy_sessions} sessions.",
    ]
    return "\n".join(lines) + "\n"


GREEDY_HEADING = "## One greedy client beside polite ones"


def _with_section(text: str, section: str) -> str:
    """``text`` with its greedy section (from `GREEDY_HEADING` to the next ``## ``)
    replaced by ``section``, or ``section`` appended."""
    head, found, rest = text.partition(GREEDY_HEADING)
    if not found:
        return text.rstrip("\n") + "\n\n" + section
    _, after, tail = rest.partition("\n## ")
    return head + section + (("\n## " + tail) if after else "")


def main_greedy(args: Args) -> str:
    import tempfile

    polite = max(1, args.clients - 1)
    tokens = greedy_tokens(polite)
    with tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False) as file:
        file.write("".join(f"{name}:{token}\n" for name, token in tokens.items()))
    try:
        server_args = ["--tokens-file", file.name, "--session-ttl", str(args.session_ttl)]
        with ServerProcess(*server_args, timeout=args.start_timeout) as server:
            result = run_greedy(
                server.url,
                args.env_id,
                polite=polite,
                seconds=args.greedy_seconds,
                connections=args.greedy_connections,
                pace=args.polite_pace,
                episode=args.polite_episode,
                tokens=tokens,
            )
    finally:
        os.unlink(file.name)
    section = greedy_report(args, result, "the server with its default limits")
    print(section)
    if args.output:
        path = Path(args.output)
        previous = (
            path.read_text(encoding="utf-8") if path.exists() else "# Env server under load\n"
        )
        path.write_text(_with_section(previous, section), encoding="utf-8")
    return section


# --------------------------------------------------------------------------- report
def _server_args(system: str, args: Args) -> list[str]:
    if system == "openenv":
        return ["--openenv", args.env_id, "--max-sessions", str(max(64, args.clients + 16))]
    return ["--session-ttl", str(args.session_ttl)]


def main(args: Args) -> str:
    if args.greedy:
        return main_greedy(args)
    results: dict[str, list[LoadResult]] = {name: [] for name in args.systems}
    reaping: dict[str, tuple[int, float | None]] = {}
    for round_index in range(args.rounds):
        for system in args.systems:
            with ServerProcess(*_server_args(system, args), timeout=args.start_timeout) as server:
                result = run_load(
                    system,
                    server.url,
                    args.env_id,
                    clients=args.clients,
                    steps=args.steps,
                    processes=args.processes,
                    server_pid=server.pid,
                )
                results[system].append(result)
                print(
                    f"round {round_index + 1} {system}: {result.steps_per_second:.0f} steps/s, "
                    f"{result.errors} errors, p50 {result.percentile(0.5) * 1e3:.1f} ms, "
                    f"p99 {result.percentile(0.99) * 1e3:.1f} ms, CPU µs/step server "
                    f"{result.cpu_per_step(result.server_cpu):.0f} clients "
                    f"{result.cpu_per_step(result.client_cpu):.0f}",
                    flush=True,
                )
                last = round_index == args.rounds - 1
                if args.killed and last and system != "openenv":  # it shows no session count
                    reaping[system] = killed_clients_reaped(
                        system, server.url, args.env_id, args.killed
                    )
    text = report(args, results, reaping)
    print(text)
    if args.output:
        path = Path(args.output)
        previous = path.read_text(encoding="utf-8") if path.exists() else ""
        kept = previous.partition(GREEDY_HEADING)[1:]
        path.write_text(text + ("\n" + "".join(kept) if kept[0] else ""), encoding="utf-8")
    return text


def report(
    args: Args,
    results: dict[str, list[LoadResult]],
    reaping: dict[str, tuple[int, float | None]],
) -> str:
    lines = [
        "# Env server under load",
        "",
        f"`agent-envs bench server-load --clients {args.clients} --steps "
        f"{args.steps} "
        f"--processes {args.processes} --rounds {args.rounds}` on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}: `{args.env_id}`, "
        f"{args.clients} concurrent clients × {args.steps} steps on loopback, clients in "
        f"{args.processes} processes, servers and clients on the same machine (shared with "
        "other work: compare within a round).",
        "",
        "| round | system | errors | steps | steps/s | p50 ms | p99 ms | server CPU µs/step "
        "| clients CPU µs/step |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for round_index in range(args.rounds):
        for system, runs in results.items():
            run = runs[round_index]
            lines.append(
                f"| {round_index + 1} | {system} | {run.errors} | {run.steps} | "
                f"{run.steps_per_second:.0f} | {run.percentile(0.5) * 1e3:.2f} | "
                f"{run.percentile(0.99) * 1e3:.2f} | {run.cpu_per_step(run.server_cpu):.0f} | "
                f"{run.cpu_per_step(run.client_cpu):.0f} |"
            )
    if "openenv" in results:
        lines += ["", "Throughput of ours over OpenEnv's, per round:", ""]
        for system, runs in results.items():
            if system == "openenv":
                continue
            ratios = [
                run.steps_per_second / base.steps_per_second
                for run, base in zip(runs, results["openenv"], strict=True)
                if base.steps_per_second > 0
            ]
            cpu = [
                base.server_cpu / base.steps / (run.server_cpu / run.steps)
                for run, base in zip(runs, results["openenv"], strict=True)
                if run.steps and base.steps and run.server_cpu > 0
            ]
            if ratios:
                lines.append(
                    f"- {system}: **{min(ratios):.2f}–{max(ratios):.2f}×** "
                    f"(median {statistics.median(ratios):.2f}×; goal ≥ 2×); server CPU per "
                    f"step: OpenEnv's / ours = {min(cpu, default=float('nan')):.2f}–"
                    f"{max(cpu, default=float('nan')):.2f}×"
                )
    lines += [
        "",
        "Server CPU µs/step is the server process's CPU time over the steps it served: what "
        "bounds a server's throughput when its clients run elsewhere. Here clients and "
        "server share 2 cores, so steps/s also pays for the clients. `RemoteEnv` uses the "
        "WebSocket transport (`ours-ws`, websocket-client) by default; `ours-http` is the "
        "plain request/response API (FastAPI routing and validation on every call), there for "
        "tools that speak HTTP.",
    ]
    if reaping:
        lines += [
            "",
            f"Killed clients: {args.killed} clients open a session each, step once and are "
            "killed with SIGKILL; then `/health` is polled until the server holds no session. "
            f"Our server's session TTL in this run: {args.session_ttl:g} s (reaper every "
            f"{min(1.0, args.session_ttl / 4):g} s).",
            "",
            "| system | sessions held after the kill | seconds until none |",
            "|---|---:|---:|",
        ]
        for system, (held, seconds) in reaping.items():
            shown = "not reaped" if seconds is None else f"{seconds:.1f}"
            lines.append(f"| {system} | {held} | {shown} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    prog = "agent-envs bench server-load"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
