"""LockstepEngine: ranks whose episodes end at different turns make the same collective calls.

Two real processes (torch.distributed, gloo on 127.0.0.1, bounded timeouts) each run the
`RolloutCollector` on an engine that behaves like TRL's vLLM server mode: every call gathers all
ranks' prompts and each rank takes back the slice ``[rank * n, (rank + 1) * n)``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_envs.adapters.loop.engine import Generation, GenerationRequest

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import datetime, json, sys
    import gymnasium
    import torch.distributed as dist
    import agent_envs  # noqa: F401
    from agent_envs.adapters.loop.engine import Generation
    from agent_envs.adapters.engines.lockstep import LockstepEngine
    from agent_envs.adapters.loop.collector import RolloutCollector

    rank, lockstep = int(sys.argv[1]), sys.argv[2] == "1"
    dist.init_process_group(
        "gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=20)
    )

    class ServerModeEngine:
        # gathers every rank's prompts like TRL's server mode and slices by rank * n
        name, tokenizer = "server-mode", None

        def __init__(self):
            self.calls, self.foreign = 0, 0

        def generate(self, requests):
            self.calls += 1
            mine = [request.messages[-1]["content"] for request in requests]
            gathered = [None, None]
            dist.all_gather_object(gathered, mine)
            if len({len(prompts) for prompts in gathered}) != 1:
                raise RuntimeError(f"ranks sent {[len(p) for p in gathered]} prompts")
            answers = [p for prompts in gathered for p in prompts]
            taken = answers[rank * len(mine) : (rank + 1) * len(mine)]
            self.foreign += sum(a != b for a, b in zip(taken, mine))
            return [Generation(text="no answer here") for _ in requests]

    inner = ServerModeEngine()
    engine = LockstepEngine(inner) if lockstep else inner
    # rank 0: one episode of 1 turn; rank 1: two episodes of 3 turns
    vec = gymnasium.make_vec(
        "grl/Sokoban-v0", num_envs=1 + rank, autoreset_mode="disabled"
    )
    collector = RolloutCollector(vec, engine, max_turns=1 + 2 * rank)
    trajectories = collector.collect(list(range(1 + rank)))
    print(json.dumps({
        "calls": inner.calls,
        "foreign": inner.foreign,
        "turns": [t.num_turns for t in trajectories],
    }))
    dist.destroy_process_group()
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_two_ranks(lockstep: bool) -> list[dict | None]:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(rank), "1" if lockstep else "0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    results: list[dict | None] = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        results.append(json.loads(lines[-1]) if proc.returncode == 0 and lines else None)
    return results


def test_lockstep__ranks_ending_at_different_turns_make_equal_calls():
    pytest.importorskip("torch")
    rank0, rank1 = _run_two_ranks(lockstep=True)
    assert rank0 is not None and rank1 is not None
    assert rank0["turns"] == [1] and rank1["turns"] == [3, 3]
    assert rank0["calls"] == rank1["calls"] == 3  # rank 0 answers rounds 2 and 3 with dummies
    assert rank0["foreign"] == rank1["foreign"] == 0  # equal widths: each rank got its own


def test_lockstep__without_it_the_ranks_fall_out_of_step():
    """The same two ranks on the bare engine: uneven batches and call counts fail (TRL's
    server mode would mis-slice the answers, then hang)."""
    pytest.importorskip("torch")
    assert _run_two_ranks(lockstep=False) == [None, None]


class _Echo:
    name, tokenizer = "echo", None

    def __init__(self) -> None:
        self.batches: list[int] = []

    def generate(self, requests):
        self.batches.append(len(requests))
        return [Generation(text=str(index)) for index, _ in enumerate(requests)]


def test_lockstep__without_distributed_it_is_a_pass_through():
    from agent_envs.adapters.engines.lockstep import LockstepEngine

    inner = _Echo()
    engine = LockstepEngine(inner)
    replies = engine.generate([GenerationRequest(max_new_tokens=1)] * 3)
    engine.wait_for_other_ranks()
    assert [reply.text for reply in replies] == ["0", "1", "2"]
    assert inner.batches == [3]
    assert engine.name == "echo" and engine.tokenizer is None
