"""One greedy client beside 63 polite ones (the bounded run of
``agent-envs bench server-load --greedy``): the polite clients are never refused and keep
their latency.

The server (``agent-envs serve``, a process on 127.0.0.1 stopped by its pid) holds at most
128 sessions, 32 per client, and names each client by its token. 63 polite clients step every
50 ms and open a new session every 10 steps; after 5 s one greedy client opens 64 WebSockets
that create sessions (half of them never closing one) and step as fast as they can, for 5 s.
Without per-client limits the greedy client takes every session the polite ones would open
next; with them it is refused (429) beyond its 32. The bound on latency: the polite clients'
p95 step latency beside the greedy client is at most 5 x their p95 alone + 25 ms (the greedy
client gets at most ``max_inflight_per_client`` = 8 calls ahead of a polite one).
"""

from __future__ import annotations

import pytest
from agent_envs.benchmarks.server_load import GreedyResult, ServerProcess, greedy_tokens, run_greedy

pytestmark = pytest.mark.slow


def test_greedy__polite_clients_are_never_refused_and_keep_their_latency(tmp_path):
    tokens = greedy_tokens(63)
    keys = tmp_path / "tokens"
    keys.write_text("".join(f"{name}:{token}\n" for name, token in tokens.items()))
    flags = ["--tokens-file", str(keys), "--max-sessions", "128", "--max-sessions-per-client", "32"]
    with ServerProcess(*flags) as server:
        result = run_greedy(
            server.url, "grl/Sokoban-v0", polite=63, seconds=5.0, connections=64, tokens=tokens
        )
    assert result.refused == 0, result.refusals
    assert result.greedy_refused > 0 and result.greedy_steps > 0  # it did push, and hit its cap
    assert result.greedy_sessions <= 128
    assert len(result.alone) > 1000 and len(result.beside) > 1000
    alone = GreedyResult.quantile(result.alone, 0.95)
    beside = GreedyResult.quantile(result.beside, 0.95)
    assert beside <= 5 * alone + 0.025, (alone, beside)


def test_greedy__the_report_replaces_only_its_own_section():
    from agent_envs.benchmarks.server_load import GREEDY_HEADING, _with_section

    table = "# Env server under load\n\n| a | b |\n"
    first = _with_section(table, f"{GREEDY_HEADING}\n\nold\n")
    assert first == table + f"\n{GREEDY_HEADING}\n\nold\n"
    again = _with_section(first + "\n## Later\n\nkept\n", f"{GREEDY_HEADING}\n\nnew\n")
    assert again == table + f"\n{GREEDY_HEADING}\n\nnew\n\n## Later\n\nkept\n"
