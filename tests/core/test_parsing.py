"""The answer parser over a table of realistic model replies."""

from __future__ import annotations

import re

import numpy as np
import pytest

from agent_envs.core.parsing import AnswerFormat, parse_reply
from agent_envs.core.spaces import MAX_REPLY_LENGTH

GAME = AnswerFormat(separator="||", max_actions_per_turn=5)
SQL = AnswerFormat(separator=None)

# (reply, expected actions, expected format_ok)
GAME_TABLE = [
    # plain and well formed
    ("<answer>Up</answer>", ("Up",), True),
    ("<answer>Up || Left</answer>", ("Up", "Left"), True),
    ("<answer>Up||Left||Down</answer>", ("Up", "Left", "Down"), True),
    ("<answer>  Right  </answer>", ("Right",), True),
    ("<answer>\nUp ||\nDown\n</answer>", ("Up", "Down"), True),
    # thinking first
    ("<think>The box is left of me.</think><answer>Left</answer>", ("Left",), True),
    (
        "<think>\nplan: up then right\n</think>\n\n<answer>Up || Right</answer>",
        ("Up", "Right"),
        True,
    ),
    ("Let me think. I should push the box down.\n<answer>Down</answer>", ("Down",), True),
    # an answer written while thinking is not the answer
    ("<think>maybe <answer>Up</answer>?</think><answer>Down</answer>", ("Down",), True),
    ("<think>maybe <answer>Up</answer>?</think> I am not sure.", (), False),
    # missing tags
    ("Up", (), False),
    ("I will move Up || Left", (), False),
    ("<answer>Up", (), False),
    ("Up</answer>", (), False),
    ("answer: Up", (), False),
    ("<answer/>", (), False),
    ("", (), False),
    ("   \n  ", (), False),
    # empty answers
    ("<answer></answer>", (), False),
    ("<answer>   </answer>", (), False),
    ("<answer> || || </answer>", (), False),
    # two answers: the last one counts
    ("<answer>Up</answer> wait, no: <answer>Down</answer>", ("Down",), True),
    ("<answer>Up</answer>\n<answer>Left || Left</answer>", ("Left", "Left"), True),
    # nested tags resolve to the innermost, last answer
    ("<answer><answer>Up</answer></answer>", ("Up",), True),
    ("<answer>Left <answer>Right</answer></answer>", ("Right",), True),
    # trailing text after the answer is ignored
    ("<answer>Up</answer> I hope this works!", ("Up",), True),
    ("<answer>Up</answer><|im_end|>", ("Up",), True),
    # case and spacing of tags
    ("<ANSWER>Up</ANSWER>", ("Up",), True),
    ("<Answer>Up</Answer>", ("Up",), True),
    ("< answer >Up</ answer >", ("Up",), True),
    ("<answer>Up< / answer>", ("Up",), True),
    # the per-turn limit drops extra actions, the format is still fine
    ("<answer>Up || Up || Up || Up || Up || Up || Up</answer>", ("Up",) * 5, True),
    # empty pieces between separators are skipped
    ("<answer>Up || || Left ||</answer>", ("Up", "Left"), True),
    # unicode: full-width tags are normalised, look-alike letters are not
    ("＜answer＞Up＜/answer＞", ("Up",), True),
    ("<аnswer>Up</аnswer>", (), False),  # Cyrillic а
    ("<answer>Uр</answer>", ("Uр",), True),  # Cyrillic р: parsed, unknown to the env
    ("<answer>Up ｜｜ Left</answer>", ("Up", "Left"), True),  # full-width bars
    ("<answer>\u00a0Up\u00a0</answer>", ("Up",), True),  # no-break spaces
    ("<answer>🤖</answer>", ("🤖",), True),
    # separators other than the env's stay inside one action
    ("<answer>Up, Left</answer>", ("Up, Left",), True),
    ("<answer>Up | Left</answer>", ("Up | Left",), True),
    # markdown around the answer
    ("```\n<answer>Right</answer>\n```", ("Right",), True),
    ("**Answer:** <answer>Down</answer>", ("Down",), True),
    # half-formed tags
    ("<answer>Up</answ", (), False),
    ("<answer>Up<answer>", (), False),
    ("</answer><answer>", (), False),
]

SQL_TABLE = [
    ("<answer>SELECT a || b FROM t</answer>", ("SELECT a || b FROM t",), True),
    ("<answer>\nSELECT 1;\n</answer>", ("SELECT 1;",), True),
    (
        "<think>count rows</think><answer>SELECT COUNT(*) FROM t</answer>",
        ("SELECT COUNT(*) FROM t",),
        True,
    ),
    ("```sql\nSELECT 1\n```", (), False),
]


@pytest.mark.parametrize(("reply", "actions", "format_ok"), GAME_TABLE)
def test_parse_reply__game_table(reply, actions, format_ok):
    parsed = parse_reply(reply, GAME)
    assert parsed.actions == actions
    assert parsed.format_ok is format_ok
    assert (parsed.error is None) is format_ok


@pytest.mark.parametrize(("reply", "actions", "format_ok"), SQL_TABLE)
def test_parse_reply__sql_table_keeps_the_whole_answer(reply, actions, format_ok):
    parsed = parse_reply(reply, SQL)
    assert (parsed.actions, parsed.format_ok) == (actions, format_ok)


def test_parse_reply__counts_dropped_actions():
    parsed = parse_reply("<answer>" + " || ".join(["Up"] * 8) + "</answer>", GAME)
    assert parsed.dropped == 3
    assert parse_reply("<answer>Up</answer>", GAME).dropped == 0


@pytest.mark.parametrize("reply", [None, b"<answer>Up</answer>", 3, ["<answer>Up</answer>"]])
def test_parse_reply__non_strings_are_format_errors(reply):
    parsed = parse_reply(reply, GAME)
    assert not parsed.format_ok
    assert "string" in parsed.error


def test_parse_reply__megabyte_reply_is_fine():
    parsed = parse_reply("x" * 1_000_000 + "<answer>Left</answer>", GAME)
    assert parsed.actions == ("Left",)


def test_parse_reply__table_is_large_enough():
    assert len(GAME_TABLE) + len(SQL_TABLE) >= 40


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"separator": " "}, "separator"), ({"separator": ""}, "separator"),
     ({"max_actions_per_turn": 0}, "max_actions_per_turn"),
     ({"max_actions_per_turn": 2.5}, "max_actions_per_turn")],
)  # fmt: skip
def test_answer_format__bad_settings_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AnswerFormat(**kwargs)


def test_parse_reply__normalisation_can_be_turned_off_for_exact_text():
    exact = AnswerFormat(separator=None, normalize_unicode=False)
    reply = "<answer>SELECT * FROM t WHERE unit = 'µm' AND x = 'ﬁ'</answer>"
    assert parse_reply(reply, exact).actions == ("SELECT * FROM t WHERE unit = 'µm' AND x = 'ﬁ'",)
    assert parse_reply(reply, SQL).actions == ("SELECT * FROM t WHERE unit = 'μm' AND x = 'fi'",)


def test_parse_reply__normalises_replies_up_to_the_action_space_length():
    tags = "＜answer＞ｕｐ ｜｜ Ｌｅｆｔ＜／answer＞"
    at_limit = "x" * (MAX_REPLY_LENGTH - len(tags)) + tags
    assert parse_reply(at_limit, GAME).actions == ("up", "Left")
    assert not parse_reply("x" + at_limit, GAME).format_ok  # one longer: read as written


def test_parse_reply__long_expanding_reply_is_read_as_written():
    # NFKC turns each ﷺ into 18 characters: normalising 1M of them took ~1 s and 18M characters.
    answer = "\ufdfa" * 1_000_000
    parsed = parse_reply(f"<answer>{answer}</answer>", SQL)
    assert parsed.actions == (answer,)


def test_parse_reply__ascii_answer_after_a_long_non_ascii_reply():
    parsed = parse_reply("中" * 1_000_000 + "<answer>Left || Up</answer>", GAME)
    assert parsed.actions == ("Left", "Up")


def _forward_scan(reply: str) -> tuple[str, ...] | None:
    """Rules 4-6 by a plain left-to-right scan over every tag (the parser finds the last
    tags backwards, in one scan of the reversed reply)."""
    opening = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
    closing = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
    thinks = list(re.finditer(r"<\s*/\s*think\s*>", reply, re.IGNORECASE))
    start = thinks[-1].end() if thinks else 0
    closes = list(closing.finditer(reply, start))
    if not closes:
        return None
    opens = list(opening.finditer(reply, start, closes[-1].start()))
    if not opens:
        return None
    answer = reply[opens[-1].end() : closing.search(reply, opens[-1].end()).start()]
    return tuple(piece.strip() for piece in answer.split("||") if piece.strip()) or None


@pytest.mark.parametrize("seed", range(4))
def test_parse_reply__backward_search_agrees_with_a_forward_scan(seed):
    tokens = ["<answer>", "</answer>", "< Answer >", "</ ANSWER\n>", "<think>", "</think>",
              "< / think >", "<", ">", "/", "< /", " ", "\n", "answer", "think", "Up", "||",
              "Left", "<<", ">>", "</", "x"]  # fmt: skip
    rng = np.random.default_rng(seed)
    unlimited = AnswerFormat(separator="||")
    for _ in range(2000):
        reply = "".join(rng.choice(tokens, size=int(rng.integers(0, 40))))
        parsed = parse_reply(reply, unlimited)
        assert (parsed.actions if parsed.format_ok else None) == _forward_scan(reply), reply
