"""benchmarks/textarena_overhead.py on a few short games: every side replays the same moves,
and the contract floor does the contract's work on them."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("textarena")

from agent_envs.adapters.textarena import make
from agent_envs.benchmarks.textarena_overhead import (
    Args,
    main,
    play_contract,
    play_raw,
    record_moves,
)


@pytest.mark.parametrize("textarena_id", ["TicTacToe-v0", "TowerOfHanoi-v0"])
def test_contract_floor__plays_the_raw_game_turn_for_turn(textarena_id):
    players, moves = record_moves(textarena_id, 3)
    answer_format = make(textarena_id).answer_format
    raw_turns = play_raw(textarena_id, players, 3, moves)[2]
    assert play_contract(textarena_id, players, 3, moves, answer_format)[2] == raw_turns
    assert raw_turns == sum(player == 0 for player, _ in moves)


def test_report__has_the_floor_column_and_a_verdict_on_it(tmp_path):
    output = tmp_path / "ta.md"
    text = main(
        Args(games=["TowerOfHanoi-v0", "TicTacToe-v0"], episodes=2, repeats=2, output=str(output))
    )
    assert output.read_text(encoding="utf-8") == text
    assert "| contract floor / raw |" in text
    rows = [line for line in text.splitlines() if line.startswith("| TowerOfHanoi-v0")]
    assert len(rows) == 1
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert re.fullmatch(r"\d+\.\d{3} \(\d+\.\d{3}-\d+\.\d{3}\)", cells[9])  # the floor's ratio
    assert "cannot be met by a wrapper that keeps the contract: " in text
