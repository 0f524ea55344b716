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

Results go to ``benchmarks/results/server_load.md``. The tests run a bounded version
(`run_load` with a few clients and steps).
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
    start.wait()
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


# --------------------------------------------------------------------------- report
def _server_args(system: str, args: Args) -> list[str]:
    if system == "openenv":
        return ["--openenv", args.env_id, "--max-sessions", str(max(64, args.clients + 16))]
    return ["--session-ttl", str(args.session_ttl)]


def main(args: Args) -> str:
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
        Path(args.output).write_text(text, encoding="utf-8")
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
