"""Tetris rules on hand-drawn boards: one table row per rule.

Boards are drawn with the observation glyphs: ``#`` locked block, ``X`` the falling piece,
``_`` empty. After a lock, the drawing shows the next piece where it spawned.
"""

from __future__ import annotations

import pytest

from agent_envs.envs.tetris.constants import PIECE_SETS, RULES, Action
from agent_envs.envs.tetris.dynamics import board_text, fall, render, spawn, step
from agent_envs.envs.tetris.types import Game, TetrisState

STANDARD = Game(6, 6, PIECE_SETS["tetromino"], RULES["standard"])
GRL_CELL = Game(4, 4, PIECE_SETS["cell"], RULES["grl"])
GRL_DOMINO = Game(3, 3, PIECE_SETS["domino"], RULES["grl"])
KIND = {
    piece.name: index
    for pieces in (PIECE_SETS["tetromino"], PIECE_SETS["domino"], PIECE_SETS["cell"])
    for index, piece in enumerate(pieces)
}
O_NEXT = (KIND["O"], 2)  # an O spawns at columns 2-3 of a 6-wide board


def drawn(game: Game, art: tuple[str, ...], piece: str, rotation: int = 0) -> TetrisState:
    """The state drawn in `art`: ``#`` blocks; the ``X`` cells are `piece` in `rotation`."""
    rows = tuple(sum(1 << c for c, ch in enumerate(line) if ch == "#") for line in art)
    marked = {(r, c) for r, line in enumerate(art) for c, ch in enumerate(line) if ch == "X"}
    kind = KIND[piece]
    cells = game.pieces[kind].orientations[rotation].cells
    for top in range(-4, game.height):
        for left in range(-4, game.width):
            placed = {(top + r, left + c) for r, c in cells}
            if {cell for cell in placed if cell[0] >= 0} == marked:
                return TetrisState(rows, kind, rotation, top, left, 0, 0, 0)
    raise AssertionError(f"no {piece} in rotation {rotation} matches the X cells")


def picture(game: Game, state: TetrisState) -> tuple[str, ...]:
    return tuple(render(game, state).split("\n")[: game.height])


# name, game, before, piece, rotation, action, after, reward, effective, locked, cleared, over
CASES = [
    (
        "shift_left",
        STANDARD,
        ("______", "__XXX_", "___X__", "______", "______", "______"),
        "T", 2, Action.LEFT,
        ("______", "_XXX__", "__X___", "______", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "shift_into_wall_does_nothing",
        STANDARD,
        ("______", "XXXX__", "______", "______", "______", "______"),
        "I", 0, Action.LEFT,
        ("______", "XXXX__", "______", "______", "______", "______"),
        0.0, False, False, 0, False,
    ),
    (
        "shift_into_block_does_nothing",
        STANDARD,
        ("______", "_XX#__", "_XX___", "______", "______", "______"),
        "O", 0, Action.RIGHT,
        ("______", "_XX#__", "_XX___", "______", "______", "______"),
        0.0, False, False, 0, False,
    ),
    (
        "rotate_cw_in_the_open",
        STANDARD,
        ("______", "__X___", "_XXX__", "______", "______", "______"),
        "T", 0, Action.ROTATE_CW,
        ("______", "__X___", "__XX__", "__X___", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "rotate_ccw_undoes_cw",
        STANDARD,
        ("______", "__X___", "__XX__", "__X___", "______", "______"),
        "T", 1, Action.ROTATE_CCW,
        ("______", "__X___", "_XXX__", "______", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "rotation_at_left_wall_kicks_right",
        STANDARD,
        ("X_____", "X_____", "X_____", "X_____", "______", "______"),
        "I", 3, Action.ROTATE_CCW,
        ("______", "______", "XXXX__", "______", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "rotation_at_right_wall_kicks_left",
        STANDARD,
        ("_____X", "_____X", "_____X", "_____X", "______", "______"),
        "I", 1, Action.ROTATE_CW,
        ("______", "______", "__XXXX", "______", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "rotation_at_wall_kicks_t_one_column",
        STANDARD,
        ("______", "X_____", "XX____", "X_____", "______", "______"),
        "T", 1, Action.ROTATE_CW,
        ("______", "______", "XXX___", "_X____", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "rotation_with_no_room_does_nothing",
        STANDARD,
        ("#X#___", "#X#___", "#X#___", "#X#___", "##____", "##____"),
        "I", 1, Action.ROTATE_CW,
        ("#X#___", "#X#___", "#X#___", "#X#___", "##____", "##____"),
        0.0, False, False, 0, False,
    ),
    (
        "down_moves_one_row",
        STANDARD,
        ("__XX__", "__XX__", "______", "______", "______", "______"),
        "O", 0, Action.DOWN,
        ("______", "__XX__", "__XX__", "______", "______", "______"),
        0.0, True, False, 0, False,
    ),
    (
        "down_on_the_floor_locks_and_spawns_the_next_piece",
        STANDARD,
        ("______", "______", "______", "______", "XX____", "XX____"),
        "O", 0, Action.DOWN,
        ("__XX__", "__XX__", "______", "______", "##____", "##____"),
        0.0, True, True, 0, False,
    ),
    (
        "hard_drop_lands_on_the_stack",
        STANDARD,
        ("_XXX__", "__X___", "______", "______", "__#___", "_###__"),
        "T", 2, Action.DROP,
        ("__XX__", "__XX__", "_###__", "__#___", "__#___", "_###__"),
        0.0, True, True, 0, False,
    ),
    (
        "line_clear_with_pieces_above",
        STANDARD,
        ("______", "___X__", "___X__", "#__X__", "#__X##", "###_##"),
        "I", 1, Action.DROP,
        ("__XX__", "__XX__", "______", "___#__", "#__#__", "#__###"),
        1.0, True, True, 1, False,
    ),
    (
        "two_lines_at_once",
        STANDARD,
        ("__XX__", "__XX__", "______", "______", "##__##", "##__##"),
        "O", 0, Action.DROP,
        ("__XX__", "__XX__", "______", "______", "______", "______"),
        3.0, True, True, 2, False,
    ),
    (
        "spawn_collision_is_game_over",
        STANDARD,
        ("XXXX__", "______", "__#___", "__#___", "__#___", "__#___"),
        "I", 0, Action.DROP,
        ("______", "####__", "__#___", "__#___", "__#___", "__#___"),
        0.0, True, True, 0, True,
    ),
    (
        "lock_above_the_board_is_game_over",
        STANDARD,
        ("__X___", "__#___", "__#___", "__#___", "__#___", "__#___"),
        "I", 1, Action.DOWN,
        ("__#___", "__#___", "__#___", "__#___", "__#___", "__#___"),
        0.0, True, True, 0, True,
    ),
    (
        "grl_piece_locks_as_soon_as_it_rests",
        GRL_CELL,
        ("____", "__X_", "_#__", "_##_"),
        "C", 0, Action.LEFT,
        ("_X__", "_#__", "_#__", "_##_"),
        -0.1, True, True, 0, False,
    ),
    (
        "grl_down_onto_the_floor_locks_at_once",
        GRL_CELL,
        ("____", "____", "X___", "_##_"),
        "C", 0, Action.DOWN,
        ("_X__", "____", "____", "###_"),
        -0.1, True, True, 0, False,
    ),
    (
        "grl_line_clear_pays_ten",
        GRL_CELL,
        ("____", "____", "___X", "###_"),
        "C", 0, Action.DOWN,
        ("_X__", "____", "____", "____"),
        -0.1 + 10.0, True, True, 1, False,
    ),
    (
        "grl_block_in_the_top_row_is_game_over",
        GRL_CELL,
        ("_X__", "_##_", "_##_", "_##_"),
        "C", 0, Action.RIGHT,
        ("__#_", "_##_", "_##_", "_##_"),
        -0.1, True, True, 0, True,
    ),
    (
        "grl_blocked_move_while_resting_locks",
        GRL_CELL,
        ("X___", "#___", "#___", "#___"),
        "C", 0, Action.LEFT,
        ("#___", "#___", "#___", "#___"),
        -0.1, True, True, 0, True,
    ),
    (
        "grl_vertical_domino_falls_into_a_gap",
        GRL_DOMINO,
        ("_X_", "_X_", "#_#"),
        "V", 0, Action.DOWN,
        ("_X_", "___", "_#_"),
        -0.1 + 10.0, True, True, 1, False,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("game", "before", "piece", "rotation", "action", "after", "reward", "effective", "locked",
     "cleared", "over"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)  # fmt: skip
def test_tetris__rules(
    game, before, piece, rotation, action, after, reward, effective, locked, cleared, over
):
    upcoming = O_NEXT if game is STANDARD else (0, 1)
    transition = step(game, drawn(game, before, piece, rotation), action, upcoming)
    assert picture(game, transition.state) == after
    assert transition.reward == pytest.approx(reward)
    assert (transition.effective, transition.locked) == (effective, locked)
    assert (transition.cleared, transition.game_over) == (cleared, over)
    assert (transition.state.kind < 0) == over
    assert transition.state.lines == cleared
    assert transition.state.placed == int(locked)


def test_tetris__score_follows_the_guideline_table():
    state = drawn(STANDARD, ("__XX__", "__XX__", "______", "______", "##__##", "##__##"), "O")
    assert step(STANDARD, state, Action.DROP, O_NEXT).state.score == 300
    single = drawn(STANDARD, ("______", "___X__", "___X__", "#__X__", "#__X##", "###_##"), "I", 1)
    assert step(STANDARD, single, Action.DROP, O_NEXT).state.score == 100


@pytest.mark.parametrize(
    ("before", "after", "locked"),
    [
        (
            ("__XX__", "__XX__", "______", "______", "______", "______"),
            ("______", "__XX__", "__XX__", "______", "______", "______"),
            False,
        ),
        (
            ("______", "______", "______", "______", "__XX__", "##XX##"),
            ("__XX__", "__XX__", "______", "______", "______", "__##__"),
            True,
        ),
    ],
    ids=["falls_one_row", "locks_when_it_cannot_fall"],
)
def test_tetris__gravity(before, after, locked):
    transition = fall(STANDARD, drawn(STANDARD, before, "O"), O_NEXT)
    assert picture(STANDARD, transition.state) == after
    assert transition.locked == locked and transition.effective
    # Gravity costs nothing; a line it completes pays the line reward.
    assert transition.reward == (1.0 if locked else 0.0)


@pytest.mark.parametrize(
    ("game", "piece", "left", "expected"),
    [
        (Game(10, 4, PIECE_SETS["tetromino"], RULES["standard"]), "I", 3,
         ("___XXXX___", "__________")),
        (Game(10, 4, PIECE_SETS["tetromino"], RULES["standard"]), "O", 4,
         ("____XX____", "____XX____")),
        (Game(10, 4, PIECE_SETS["tetromino"], RULES["standard"]), "T", 3,
         ("____X_____", "___XXX____")),
        (GRL_DOMINO, "V", 1, ("_X_", "___")),  # its upper cell is above the board
        (GRL_DOMINO, "H", 0, ("XX_", "___")),
    ],
    ids=["I_centred", "O_centred", "T_centred", "grl_vertical_enters_from_above", "grl_h"],
)  # fmt: skip
def test_tetris__spawn_position(game, piece, left, expected):
    state = spawn(game, (0,) * game.height, (KIND[piece], left))
    assert picture(game, state)[:2] == expected
    top_cells = [state.top + r for r, _ in game.pieces[state.kind].orientations[0].cells]
    if game.rules.enter_from_above:
        assert max(top_cells) == 0
    else:
        assert min(top_cells) == 0


def test_tetris__spawn_on_a_full_spawn_area_is_game_over():
    rows = (0, 0b0000110000, 0, 0)
    game = Game(10, 4, PIECE_SETS["tetromino"], RULES["standard"])
    assert spawn(game, rows, (KIND["T"], 3)).kind == -1
    assert render(game, spawn(game, rows, (KIND["T"], 3))).endswith("Game over.")


def test_tetris__render_marks_the_piece_and_names_the_next_one():
    state = drawn(STANDARD, ("______", "__X___", "_XXX__", "______", "___#__", "#####_"), "T")
    assert render(STANDARD, state, KIND["L"]) == (
        "______\n__X___\n_XXX__\n______\n___#__\n#####_\nNext: L"
    )
    assert board_text(STANDARD, state.rows) == "______\n______\n______\n______\n___#__\n#####_"
    grl_state = drawn(GRL_CELL, ("_X__", "____", "____", "#___"), "C")
    assert render(GRL_CELL, grl_state, 0) == "_X__\n____\n____\n#___"  # GRL: no preview


def test_tetris__a_step_never_mutates_its_input():
    state = drawn(STANDARD, ("__XX__", "__XX__", "______", "______", "##__##", "##__##"), "O")
    before = tuple(state)
    for action in Action:
        step(STANDARD, state, action, O_NEXT)
    assert tuple(state) == before
