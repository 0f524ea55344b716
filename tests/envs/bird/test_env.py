"""The BIRD Gymnasium shell: presets, the contract, rewards, budgets, options, real data."""

from __future__ import annotations

import copy
import json
import pickle
import re
import sqlite3
import time
import warnings

import numpy as np
import pytest

import agent_envs
from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.envs.bird import BirdEnv, make_vector_env
from agent_envs.envs.bird.builtin_questions import QUESTIONS
from agent_envs.testing import check_text_env

#: The registered presets (kept equal to the table in BirdEnv's docstring and the registry).
PRESETS = {
    "grl/BIRD-v0": dict(max_turns=1),
    "grl/BIRD-Agentic-v0": dict(max_executions=5, max_turns=6),
    "grl/BIRD-5turn-v0": dict(max_submissions=5, submit_discount=0.5, max_turns=5),
}
WRONG = "<answer>SELECT 'wrong answer'</answer>"


def _answer(sql: str) -> str:
    return f"<answer>{sql}</answer>"


@pytest.fixture
def make(builtin_cache):
    def make_env(**kwargs) -> BirdEnv:
        return BirdEnv(cache_dir=str(builtin_cache), **kwargs)

    return make_env


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_bird_env__check_text_env_for_every_preset(make, env_id):
    check_text_env(make(**PRESETS[env_id]))


def test_bird_env__docstring_table_matches_the_presets():
    rows = re.findall(r"``(grl/BIRD[^`]*)``\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([\d.]+)",
                      BirdEnv.__doc__)  # fmt: skip
    table = {
        env_id: dict(max_turns=int(t), max_executions=int(e), max_submissions=int(s),
                     submit_discount=float(d))
        for env_id, t, e, s, d in rows
    }  # fmt: skip
    defaults = dict(max_executions=0, max_submissions=1, submit_discount=1.0)
    assert table == {env_id: {**defaults, **kwargs} for env_id, kwargs in PRESETS.items()}


def test_bird_env__registry_holds_the_presets_once_registered():
    registered = {k: v for k, v in agent_envs.PRESETS.items() if k.startswith("grl/BIRD")}
    if not registered:
        pytest.skip("the BIRD presets are not registered yet")
    assert {k: v[2] for k, v in registered.items()} == PRESETS
    assert {v[0] for v in registered.values()} == {"agent_envs.envs.bird.env:BirdEnv"}


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_bird_env__oracle_solves_every_builtin_question(make, env_id):
    env = make(**PRESETS[env_id])
    policy = OraclePolicy()
    for index in range(len(QUESTIONS)):
        observation, _ = env.reset(seed=index, options={"index": index})
        observation, reward, terminated, truncated, info = env.step(policy(env, observation))
        assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True)
        expected = f"SUBMIT 1 of {env.max_submissions}: correct.\nThe episode is over."
        assert observation == expected
        assert env.oracle_actions() == []


def test_bird_env__single_shot_wrong_error_and_timeout_score_zero(make):
    env = make()
    for reply, error in [
        (WRONG, None),
        (_answer("SELECT nope FROM teams"), "no such column: nope"),
        (_answer("DROP TABLE teams"), "only one read-only query"),
        (
            _answer(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                "SELECT MAX(x) FROM c"
            ),
            "stopped at the 0.3 s time limit",
        ),
    ]:
        env = make(submit_timeout=0.3)
        env.reset(seed=0, options={"index": 30})
        observation, reward, terminated, truncated, info = env.step(reply)
        assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, False)
        assert info["action_valid"] and info["submissions_left"] == 0
        if error is None:
            assert info["query_error"] is None
            assert observation == "SUBMIT 1 of 1: wrong result.\nThe episode is over."
        else:
            assert info["query_error"].startswith(error)
            assert observation.startswith("SUBMIT 1 of 1: error: " + error)


@pytest.mark.parametrize(
    ("reply", "feedback", "reward"),
    [
        ("<answer>EXECUTE: SELECT 1</answer>",
         "Invalid action: EXECUTE is not available here; SUBMIT your final query.", -0.1),
        ("<answer>SUBMIT:</answer>", "Invalid action: unknown.", -0.1),
        ("SELECT 1", "Invalid answer: no <answer>...</answer> found.", -0.1),
    ],
)  # fmt: skip
def test_bird_env__single_shot_ends_terminated_whatever_the_reply(make, reply, feedback, reward):
    env = make()
    env.reset(seed=0, options={"index": 30})
    observation, got, terminated, truncated, info = env.step(reply)
    assert got == pytest.approx(reward) and not info["action_valid"]
    assert (terminated, truncated, info["truncation_reason"]) == (True, False, None)
    assert info["submissions_left"] == 1 and not info["success"]
    assert observation == f"{feedback}\nThe episode is over."


def test_bird_env__agentic_execute_then_submit(make):
    env = make(**PRESETS["grl/BIRD-Agentic-v0"])
    observation, info = env.reset(seed=0, options={"index": 30})
    assert observation.startswith("Database: football\n\nCREATE TABLE teams (")
    assert observation.endswith(
        "Question: What is the average height of the Brazilian defenders? Round it to 1 decimal"
        " place.\nEvidence: Brazilian refers to nationality = 'Brazil'; defenders refers to"
        " position = 'DF'; average height = AVG(height_cm)"
    )
    assert (info["executions_left"], info["submissions_left"]) == (5, 1)
    query = "SELECT position, COUNT(*) FROM players GROUP BY position ORDER BY position"
    observation, reward, terminated, truncated, info = env.step(_answer(f"EXECUTE: {query}"))
    assert observation == (
        "EXECUTE 1 of 5: 4 rows:\nposition | COUNT(*)\n'DF' | 128\n'FW' | 80\n'GK' | 48\n"
        "'MF' | 128\nTurns left: 5; EXECUTE left: 4; SUBMIT left: 1."
    )
    assert (reward, terminated, truncated, info["action_effective"]) == (0.0, False, False, True)
    assert info["executions_left"] == 4 and info["query_error"] is None
    observation, reward, terminated, _, info = env.step(_answer("EXECUTE: SELECT x FROM teams"))
    assert observation.startswith("EXECUTE 2 of 5: error: no such column: x\n")
    assert info["query_error"] == "no such column: x" and reward == 0.0
    gold = QUESTIONS[30]["SQL"]
    observation, reward, terminated, _, info = env.step(_answer(f"SUBMIT: ```sql\n{gold}\n```"))
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def test_bird_env__agentic_budget_runs_out(make):
    env = make(max_executions=2, max_turns=3)
    env.reset(seed=0, options={"index": 0})
    for _ in range(2):
        env.step(_answer("EXECUTE: SELECT 1"))
    observation, reward, _, truncated, info = env.step(_answer("EXECUTE: SELECT 1"))
    assert observation == (
        "Invalid action: no EXECUTE left; SUBMIT your final query.\nThe episode is over."
    )
    assert reward == pytest.approx(-0.1) and not info["action_valid"]
    assert truncated and info["truncation_reason"] == "max_turns" and info["executions_left"] == 0


def test_bird_env__row_caps_for_execute_and_submit(make):
    env = make(max_executions=1, max_turns=2, max_rows=50)
    env.reset(seed=0, options={"item": {"db_id": "football", "question": "All goals?",
                                        "SQL": "SELECT * FROM goals"}})  # fmt: skip
    observation, *_ = env.step(_answer("EXECUTE: SELECT goal_id FROM goals"))
    assert observation.startswith(
        "EXECUTE 1 of 1: more than 50 rows (cut at the cap); the first 10"
    )
    observation, reward, terminated, _, info = env.step(_answer("SELECT * FROM goals"))
    assert (reward, terminated) == (0.0, True)
    assert info["query_error"] == "the result is larger than the 50-row cap"
    env = make(max_executions=1, max_turns=2)
    env.reset(seed=0, options={"index": 30})
    observation, *_ = env.step(_answer("EXECUTE: SELECT goal_id FROM goals"))
    assert "more than 1000 rows (cut at the cap)" in observation


def test_bird_env__grl_five_turn_reward_is_discounted(make):
    env = make(**PRESETS["grl/BIRD-5turn-v0"])
    env.reset(seed=0, options={"index": 30})
    rewards = []
    for reply in (WRONG, "no answer", _answer("SELECT oops"), _answer(QUESTIONS[30]["SQL"])):
        observation, reward, terminated, truncated, info = env.step(reply)
        rewards.append(reward)
    assert rewards == [0.0, -0.1, 0.0, 0.25]  # the unreadable reply is not a submission
    assert terminated and info["success"] and info["submissions_left"] == 2
    env.reset(seed=0, options={"index": 30})
    for turn in range(5):
        observation, reward, terminated, truncated, info = env.step(WRONG)
        assert terminated == (turn == 4) and not truncated and reward == 0.0
    assert observation == "SUBMIT 5 of 5: wrong result.\nThe episode is over."


def test_bird_env__item_option_in_bird_format(make):
    env = make()
    item = {
        "db_id": "bookshop",
        "question": "How many publishers are in Lisbon? \u2014 \u201cLisboa\u201d, S\u00e3o Paulo",
        "evidence": "",
        "SQL": "SELECT COUNT(*) FROM publishers WHERE city = 'Lisbon'",
        "question_id": 999,
        "extra_key": "ignored",
    }
    observation, info = env.reset(seed=1, options={"item": item})
    assert observation.endswith(
        'Question: How many publishers are in Lisbon? - "Lisboa", S\\u00e3o Paulo\nEvidence: (none)'
    )
    assert observation in env.observation_space
    assert (info["db_id"], info["question_id"], info["difficulty"]) == ("bookshop", 999, None)
    assert env.step(_answer("SELECT 1"))[1] == 1.0  # one publisher in Lisbon


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"item": {"db_id": "nowhere", "question": "q", "SQL": "SELECT 1"}}, "'nowhere' not found"),
        ({"item": {"db_id": "clinic", "question": "q"}}, "options\\['item'\\]: missing"),
        ({"index": 36}, "options\\['index'\\] must be an int in \\[0, 36\\)"),
        ({"index": True}, "options\\['index'\\]"),
        ({"index": 0, "item": dict(QUESTIONS[0])}, "exclude each other"),
        ({"level": 1}, "unknown reset options \\['level'\\]"),
    ],
)
def test_bird_env__bad_reset_options_raise(make, options, message):
    with pytest.raises(ValueError, match=message):
        make().reset(seed=0, options=options)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_executions": -1}, "max_executions"),
        ({"max_submissions": 0}, "max_submissions"),
        ({"submit_discount": 0.0}, "submit_discount"),
        ({"submit_discount": 1.5}, "submit_discount"),
        ({"query_timeout": 0}, "query_timeout"),
        ({"query_timeout": float("inf")}, "query_timeout"),
        ({"submit_timeout": -1.0}, "submit_timeout"),
        ({"submit_timeout": "30"}, "submit_timeout"),
        ({"max_rows": 0}, "max_rows"),
        ({"max_rows": 1.5}, "max_rows"),
        ({"display_rows": 0}, "display_rows"),
        ({"sample_values": -1}, "sample_values"),
        ({"max_turns": 0}, "max_turns"),
        ({"source": "web"}, "source"),
        ({"source": "builtin", "data_path": "x.json"}, "data_path"),
    ],
)
def test_bird_env__bad_configuration_names_the_argument(make, kwargs, name):
    with pytest.raises(ValueError, match=name):
        make(**kwargs)


def test_bird_env__files_source_arguments(tmp_path):
    with pytest.raises(ValueError, match="cache_dir"):
        BirdEnv(data_path="dev.json", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="data_path is required"):
        BirdEnv(source="files")
    (tmp_path / "dev.json").write_text("[]")
    with pytest.raises(ValueError, match="db_root is required"):
        BirdEnv(data_path=str(tmp_path / "dev.json"))


def test_bird_env__missing_data_path_names_the_argument_and_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "dev.json"
    with pytest.raises(ValueError, match=f"data_path '{re.escape(str(missing))}' does not exist"):
        BirdEnv(data_path=str(missing))
    with pytest.raises(ValueError, match=r"data_path .* is a directory"):
        BirdEnv(data_path=str(tmp_path))


def _bird_layout(root, databases: dict[str, bytes | None]) -> str:
    """``root/dev.json`` asking one question per database, and ``root/dev_databases/``:
    ``None`` makes a real one-table database, bytes are written as the file."""
    questions = []
    for db_id, content in databases.items():
        path = root / "dev_databases" / db_id / f"{db_id}.sqlite"
        path.parent.mkdir(parents=True)
        if content is None:
            connection = sqlite3.connect(path)
            connection.execute("CREATE TABLE t (x INTEGER)")
            connection.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
            connection.commit()
            connection.close()
        else:
            path.write_bytes(content)
        questions.append({"db_id": db_id, "question": "How many?", "SQL": "SELECT COUNT(*) FROM t"})
    (root / "dev.json").write_text(json.dumps(questions))
    return str(root / "dev.json")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (np.random.default_rng(0).bytes(8192), "does not start with SQLite's header"),
        (b"", "is empty"),
        (b"SQLite format 3\x00" + b"\xff" * 200, "cannot be read"),
    ],
    ids=["random_bytes", "empty", "bad_header_fields"],
)
def test_bird_env__corrupt_database_is_refused_at_construction(tmp_path, content, why):
    data_path = _bird_layout(tmp_path, {"good": None, "broken": content})
    broken = tmp_path / "dev_databases" / "broken" / "broken.sqlite"
    with pytest.raises(ValueError, match=f"database file '{re.escape(str(broken))}'.*{why}"):
        BirdEnv(data_path=data_path)


def test_bird_env__corrupt_database_of_an_item_is_refused_at_reset(tmp_path):
    data_path = _bird_layout(tmp_path, {"good": None})
    broken = tmp_path / "dev_databases" / "broken" / "broken.sqlite"
    broken.parent.mkdir()
    broken.write_bytes(np.random.default_rng(1).bytes(4096))
    env = BirdEnv(data_path=data_path)
    assert env.reset(seed=0)[0].startswith("Database: good")
    item = {"db_id": "broken", "question": "q", "SQL": "SELECT 1"}
    with pytest.raises(ValueError, match=f"database file '{re.escape(str(broken))}' cannot be"):
        env.reset(seed=0, options={"item": item})


def test_bird_env__order_by_random_scores_like_birds_evaluator(make):
    env = make()
    env.reset(seed=0, options={"index": 30})
    gold = QUESTIONS[30]["SQL"]
    for sql, reward in [
        (f"SELECT * FROM ({gold}) ORDER BY RANDOM()", 1.0),  # same set: BIRD scores 1
        ("SELECT name FROM players ORDER BY random() LIMIT 1", 0.0),
    ]:
        env.reset(seed=0, options={"index": 30})
        _, got, terminated, _, info = env.step(_answer(sql))
        assert (got, terminated, info["query_error"]) == (reward, True, None)


def test_bird_env__graded_submissions_get_birds_settings_by_default(make):
    env = make()
    assert (env.submit_timeout, env.max_rows, env.query_timeout) == (30.0, None, 5.0)
    many = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 150000) "
        "SELECT x FROM c"
    )  # 150,000 rows: over the old 100,000-row cap, and BIRD has none
    env.reset(seed=0, options={"item": {"db_id": "football", "question": "q", "SQL": many}})
    assert env.step(_answer(f"SELECT x + 0 FROM ({many})"))[1] == 1.0


def test_bird_env__execute_has_the_stricter_time_limit(make):
    slow = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) "
        "SELECT COUNT(*) FROM c"
    )  # about a second
    env = make(max_executions=1, max_turns=2, query_timeout=0.1, submit_timeout=20.0)
    env.reset(seed=0, options={"item": {"db_id": "football", "question": "q", "SQL": slow}})
    *_, info = env.step(_answer(f"EXECUTE: {slow}"))
    assert info["query_error"] == "stopped at the 0.1 s time limit"
    _, reward, terminated, _, info = env.step(_answer(slow))
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def test_bird_env__long_function_call_is_stopped_within_the_limit(make):
    env = make(max_executions=2, max_turns=3, query_timeout=1.0)
    env.reset(seed=0, options={"index": 30})
    start = time.perf_counter()
    observation, *_, info = env.step(_answer("EXECUTE: SELECT printf('%.*c', 2000000000, 'x')"))
    assert time.perf_counter() - start <= 1.2 * 1.0 + 0.1  # it ran 10-40 s before the worker
    assert info["query_error"] == "stopped at the 1 s time limit"
    observation, *_ = env.step(_answer("EXECUTE: SELECT key, value FROM json_each('[1,2]')"))
    assert observation.startswith("EXECUTE 2 of 2: 2 rows:\nkey | value\n0 | 1\n1 | 2\n")


def test_bird_env__a_sort_of_a_cross_join_is_an_error_observation_not_a_temp_file(make):
    # Before temp_store = MEMORY: 1 GiB of temporary file, then "disk I/O error", in 3-4 s.
    sort = (
        "SELECT printf('%.*c', 1000, 'x') || a.name || b.name || c.name AS x"
        " FROM players AS a, players AS b, players AS c ORDER BY x"
    )
    env = make(max_executions=2, max_turns=3, query_timeout=1.0)
    env.reset(seed=0, options={"index": 30})
    start = time.perf_counter()
    observation, reward, terminated, truncated, info = env.step(_answer(f"EXECUTE: {sort}"))
    assert time.perf_counter() - start <= 1.2 * 1.0
    error = "out of memory: the query needs more than the 64 MiB allowed"
    assert info["query_error"] == error
    assert observation.startswith(f"EXECUTE 1 of 2: error: {error}\n")
    assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, True)
    observation, *_ = env.step(_answer("EXECUTE: SELECT COUNT(*) FROM teams"))
    assert observation.startswith("EXECUTE 2 of 2: 1 row:\nCOUNT(*)\n16\n")


def test_bird_env__a_table_valued_pragma_is_refused_with_its_name(make):
    env = make(max_executions=1, max_turns=2)
    env.reset(seed=0, options={"index": 30})
    *_, info = env.step(_answer("EXECUTE: SELECT * FROM pragma_journal_mode"))
    assert info["query_error"].startswith(
        "not authorized: the table-valued function pragma_journal_mode is not allowed (only "
    )


def test_bird_env__a_first_row_over_the_cap_is_an_error_not_more_than_0_rows(make):
    env = make(max_executions=1, max_turns=2)
    env.reset(seed=0, options={"index": 30})
    wide = "SELECT " + ", ".join(["hex(zeroblob(499999))"] * 70)  # one row of 70 MB
    observation, *_ = env.step(_answer(f"EXECUTE: {wide}"))
    assert "more than 0 rows" not in observation
    assert observation.startswith("EXECUTE 1 of 1: error: out of memory: the query needs")


def test_bird_env__pickle_and_deepcopy_mid_episode(make):
    env = make(**PRESETS["grl/BIRD-Agentic-v0"])
    env.reset(seed=3)
    env.step(_answer("EXECUTE: SELECT 1"))
    clones = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    for clone in clones:
        assert clone.state == env.state and clone.state_hash() == env.state_hash()
    expected = env.step(_answer("EXECUTE: SELECT COUNT(*) FROM teams"))
    for clone in clones:
        got = clone.step(_answer("EXECUTE: SELECT COUNT(*) FROM teams"))
        assert got[:4] == expected[:4] and got[4] == expected[4]
    fresh = pickle.loads(pickle.dumps(env))  # caches and connections stay behind
    assert fresh.dataset.schemas == {}
    assert copy.deepcopy(env).dataset is env.dataset  # the immutable dataset is shared


def test_bird_env__long_text_stays_inside_the_observation_space(make):
    env = make()
    item = {"db_id": "clinic", "question": "why? " * 5_000, "evidence": "\u00e9" * 5_000,
            "SQL": "SELECT 1"}  # fmt: skip
    observation, _ = env.reset(seed=0, options={"item": item})
    assert observation in env.observation_space
    assert observation.endswith("...") and "Evidence: \\u00e9\\u00e9" in observation


def test_bird_env__vector_groups_share_a_question(builtin_cache):
    envs = make_vector_env(num_envs=4, group_size=2, cache_dir=str(builtin_cache), max_turns=1)
    observations, _ = envs.reset(seed=0)
    assert observations[0] == observations[1] != observations[2] == observations[3]
    _, rewards, terminated, truncated, _ = envs.step(["<answer>SELECT 1</answer>"] * 4)
    assert list(terminated) == [True] * 4 and not any(truncated) and not any(rewards)
    envs.close()


def test_bird_env__random_policy_is_reproducible(make):
    env = make(**PRESETS["grl/BIRD-Agentic-v0"])
    observation, _ = env.reset(seed=5)
    replies = [RandomPolicy(seed=0)(env, observation) for _ in range(2)]
    assert replies[0] == replies[1] and replies[0].startswith("<answer>")
    _, _, _, _, info = env.step(replies[0])
    assert info["format_ok"] and info["action_valid"] and info["query_error"] is None


def test_bird_env__instructions_golden(make):
    assert make().instructions == (
        "You write SQLite queries that answer questions about a database.\n"
        "You are shown the database's CREATE TABLE statements, each followed by comment lines"
        " with every column's meaning and example values, then a question and evidence (hints"
        " that map the question's words to columns, values and formulas).\n"
        "Your final query is graded by execution, as in the BIRD benchmark: it is correct when"
        " the set of rows it returns equals the set of rows of the reference query (row order,"
        " duplicate rows and column names do not matter; which columns, their order and their"
        " values do). A query that fails or runs longer than 30 s is wrong.\n"
        "Only one read-only statement per answer (SELECT, WITH or VALUES); random() is"
        " seeded, so a query gives the same rows every time.\n"
        "Characters outside ASCII are shown as escapes such as \\u00e9 (curly quotes and dashes"
        " as their ASCII look-alikes); in a query, write the character itself.\n"
        "You have one answer: the SQL inside <answer>...</answer> is your final query.\n"
        "Reward: 1 for a correct final query, 0 otherwise.\n"
        "A reply without a readable answer scores -0.1; EXECUTE is not available here and"
        " scores -0.1. Either uses up a turn.\n"
        "Think as you like, then give your answer as <answer>SELECT COUNT(*) FROM orders WHERE"
        " status = 'cancelled'</answer>."
    )
    agentic = make(**PRESETS["grl/BIRD-Agentic-v0"]).instructions
    assert (
        "<answer>EXECUTE: SELECT ...</answer> runs a query (for at most 5 s) and shows you its"
        " first 10 rows or its error; <answer>SUBMIT: SELECT ...</answer>, or the SQL alone,"
        " submits your final query. You may EXECUTE at most 5 queries; you have 6 turns." in agentic
    )
    retry = make(**PRESETS["grl/BIRD-5turn-v0"]).instructions
    assert "You have 5 submissions, one per turn" in retry
    assert "Reward: 1, 0.5, 0.25, ... for a correct first, second, third" in retry


def test_bird_env__mini_dev_gold_scores_one_and_wrong_scores_zero(mini_dev):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = BirdEnv(data_path=str(mini_dev))
    assert len(env.dataset.items) == 140
    for index in range(len(env.dataset.items)):
        observation, info = env.reset(seed=index, options={"index": index})
        assert observation in env.observation_space
        _, reward, terminated, _, info = env.step(_answer(env.oracle_actions()[0]))
        assert (reward, terminated, info["success"]) == (1.0, True, True), info
        env.reset(seed=index, options={"index": index})
        _, reward, terminated, _, info = env.step(WRONG)
        assert (reward, terminated, info["success"]) == (0.0, True, False)


def test_bird_env__mini_dev_check_text_env(mini_dev):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = BirdEnv(data_path=str(mini_dev), **PRESETS["grl/BIRD-Agentic-v0"])
    check_text_env(env)
