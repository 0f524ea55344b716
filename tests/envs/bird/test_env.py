"""The BIRD Gymnasium shell: presets, the contract, rewards, budgets, options, real data."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

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
        env = make(query_timeout=0.3)
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
    assert info["query_error"] == "the result is larger than the row or byte cap"
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
        ({"max_rows": 0}, "max_rows"),
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
    assert fresh.dataset.schemas == {} and not fresh.dataset.gold and not fresh._pool._open
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
        " values do). A query that fails or runs longer than 5 s is wrong.\n"
        "Only one read-only statement per answer (SELECT, WITH or VALUES); random() and"
        " randomblob() are disabled.\n"
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
        "<answer>EXECUTE: SELECT ...</answer> runs a query and shows you its first 10 rows or"
        " its error; <answer>SUBMIT: SELECT ...</answer>, or the SQL alone, submits your final"
        " query. You may EXECUTE at most 5 queries; you have 6 turns." in agentic
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
