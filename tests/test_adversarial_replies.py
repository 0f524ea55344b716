"""Every registered id reads ~1 MB hostile replies in linear time and never raises.

The replies are the families of `agent_envs.benchmarks.parse_worst_case` (repeated openers, pairs
and closes, unclosed ``<think>``, Markdown fences, a fence followed by a million spaces,
``||`` runs, whitespace, thousands of actions, half and spaced tags, full-width and
NFKC-expanding look-alikes, NUL bytes, ``EXECUTE:`` runs, ``search[``/``click[`` runs and
unbalanced brackets, number runs), then the oracle's action after 1 MB of such text, which
must still be read. Each id steps every family once in a child process, so a
quadratic parser (seconds to hours on 1 MB: the regex cannot be interrupted) fails the test
with the family's name instead of stalling the suite. The bound per step is generous: this
is a check for super-linear behaviour, not a timing; `benchmarks/parse_worst_case.py`
measures the steps against its 50 ms target.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import gymnasium as gym
import pytest
from agent_envs.benchmarks.parse_worst_case import FAMILIES, ORACLE_AT_END, SIZE

import agent_envs  # noqa: F401  (registers the ids)
from agent_envs.core.spaces import MAX_REPLY_LENGTH

ROOT = Path(__file__).resolve().parents[1]
GRL_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("grl/"))
STEP_BOUND_S = 2.0  # a linear step takes milliseconds; a quadratic one, 10 s and more
START_BOUND_S = 180.0  # the child's imports and gym.make (WebShop builds its catalog)
FAMILY_BOUND_S = 20.0  # building one reply, reset and step, before the child is killed

#: Replies that hold no complete, non-empty answer: every id must report a format error.
UNREADABLE = (
    "openers", "openers_then_close", "pairs", "closes", "think_closes", "fences",
    "whitespace", "whitespace_answer", "half_tags", "spaced_openers", "close_variants",
    "fullwidth", "nul", "digits", "boxed", "decimals", "signs",
)  # fmt: skip


def _probe(env_id: str) -> tuple[list[dict], str | None]:
    """The child's records, and the family it stalled on (``None`` if it finished)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_envs.benchmarks.parse_worst_case", "--probe", env_id],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in child.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    records: list[dict] = []
    names = [*FAMILIES, ORACLE_AT_END]
    try:
        while len(records) < len(names):
            bound = START_BOUND_S if not records else FAMILY_BOUND_S
            try:
                line = lines.get(timeout=bound)
            except queue.Empty:
                return records, names[len(records)]
            if not line:
                child.wait(timeout=30)
                stderr = child.stderr.read()[-2000:]  # type: ignore[union-attr]
                raise AssertionError(f"{env_id}: the probe exited early:\n{stderr}")
            records.append(json.loads(line))
        return records, None
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]


def test_adversarial_replies__families_are_about_a_megabyte():
    sizes = {name: len(make(SIZE)) for name, make in FAMILIES.items()}
    small = {name: size for name, size in sizes.items() if abs(size - SIZE) > SIZE // 100}
    # nfkc_at_cap is the longest reply still normalised (NFKC makes it ~295k characters).
    assert small == {"nfkc_at_cap": MAX_REPLY_LENGTH}
    assert set(UNREADABLE) <= set(FAMILIES)


@pytest.mark.parametrize("env_id", GRL_IDS)
def test_adversarial_replies__every_id_reads_a_megabyte_in_linear_time(env_id):
    records, stalled = _probe(env_id)
    assert stalled is None, (
        f"{env_id}: one step of the {stalled!r} reply ({SIZE:,} characters) ran over "
        f"{FAMILY_BOUND_S} s: super-linear parsing"
    )
    for record in records:
        family = record["family"]
        assert "error" not in record, f"{env_id} raised on {family!r}: {record.get('error')}"
        assert record["seconds"] < STEP_BOUND_S, (
            f"{env_id}: one step of {family!r} took {record['seconds']:.2f} s"
        )
        assert record["observation_ok"], f"{env_id}: {family!r} left the observation space"
        if family == ORACLE_AT_END:
            assert record["format_ok"] and record["action_valid"], (
                f"{env_id}: the oracle's action after 1 MB of hostile text was not read"
            )
            continue
        assert not record["success"], f"{env_id}: {family!r} solved the task"
        if family in UNREADABLE:
            assert not record["format_ok"], f"{env_id}: {family!r} read as an answer"
