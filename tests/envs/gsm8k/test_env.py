"""The GSM8K Gymnasium shell: presets, retries, answer modes, data sources, golden text."""

from __future__ import annotations

import re
import sys

import pytest
from gymnasium.error import DependencyNotInstalled

from agent_envs.core.env import COMMON_INFO_KEYS
from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.core.spaces import ASCII_CHARSET
from agent_envs.envs.gsm8k import GSM8KEnv, data, make_vector_env, prompts
from agent_envs.testing import check_text_env
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "gsm8k"
needs_data = pytest.mark.skipif(
    not (DATA / "train.jsonl").is_file() or not (DATA / "test.jsonl").is_file(),
    reason=f"official GSM8K sample not found at {DATA}",
)

# The presets reported for agent_envs/registration.py (GRL's gsm8kAgent_single_turn and
# gsm8kAgent_5_turn), on the offline generator.
PRESETS = {
    "grl/GSM8K-v0": dict(source="generated", split="train", answer_mode="strict", max_turns=1),
    "grl/GSM8K-5turn-v0": dict(
        source="generated", split="train", answer_mode="strict", max_turns=5
    ),
}
NATALIA = {
    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as"
    " many clips in May. How many clips did Natalia sell altogether in April and May?",
    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 ="
    " <<48+24=72>>72 clips altogether in April and May.\n#### 72",
}
QUESTION = "Question: " + NATALIA["question"]


@pytest.mark.parametrize("kwargs", list(PRESETS.values()), ids=list(PRESETS))
def test_gsm8k_env__check_text_env_passes_for_every_preset(kwargs):
    check_text_env(GSM8KEnv(**kwargs))


@needs_data
def test_gsm8k_env__check_text_env_passes_on_the_official_test_split_flexible():
    check_text_env(
        GSM8KEnv(source="jsonl", data_path=str(DATA), split="test", answer_mode="flexible")
    )


def test_gsm8k_env__item_option_poses_the_official_item_and_the_oracle_solves_it():
    env = GSM8KEnv()
    observation, info = env.reset(seed=0, options={"item": NATALIA})
    assert observation == QUESTION
    assert info["gold_answer"] == "72" and info["problem_id"] == "item" and info["attempts"] == 0
    assert env.oracle_actions() == ["72"]
    observation, reward, terminated, truncated, info = env.step(OraclePolicy()(env, observation))
    assert observation == "Correct: 72 is the answer."
    assert reward == 1.0 and terminated and not truncated and info["success"]
    assert info["answer"] == "72" and info["parsed_actions"] == ["72"] and info["attempts"] == 1
    assert env.oracle_actions() == []


def test_gsm8k_env__oracle_rationale_is_the_solution_steps_and_still_solves():
    env = GSM8KEnv()
    observation, _ = env.reset(seed=0, options={"item": NATALIA})
    rationale = "Natalia sold 48/2 = 24 clips in May.\nNatalia sold 48+24 = 72 clips altogether"
    assert env.oracle_rationale().startswith(rationale)
    assert "<<" not in env.oracle_rationale() and "####" not in env.oracle_rationale()
    reply = OraclePolicy(rationale=True)(env, observation)
    assert reply == f"{env.oracle_rationale()}\n<answer>72</answer>"
    assert OraclePolicy()(env, observation) == "<answer>72</answer>"  # the leaderboard's oracle
    _, reward, terminated, _, info = env.step(reply)
    assert reward == 1.0 and terminated and info["success"]
    assert env.oracle_rationale() == ""


@pytest.mark.parametrize("kwargs", list(PRESETS.values()), ids=list(PRESETS))
def test_gsm8k_env__the_reasoning_oracle_solves_every_preset(kwargs):
    """Numbers in the worked steps never stand in for the tagged answer."""
    env = GSM8KEnv(**kwargs)
    policy = OraclePolicy(rationale=True)
    for seed in range(20):
        observation, _ = env.reset(seed=seed)
        reply = policy(env, observation)
        assert reply.count("\n") >= 1 and "<<" not in reply, reply
        _, reward, terminated, _, info = env.step(reply)
        assert reward == 1.0 and terminated and info["success"], (seed, reply, info)


def test_gsm8k_env__retry_preset_gives_feedback_and_the_question_again():
    env = GSM8KEnv(**PRESETS["grl/GSM8K-5turn-v0"])
    env.reset(seed=0, options={"item": NATALIA})
    turns = [
        (
            "48 + 48/2 = 70, so <answer>70</answer>",
            f"Incorrect: 70 is not the answer. Try again (4 turns left).\n{QUESTION}",
            0.0,
        ),
        (
            "It must be 72.",
            "Invalid answer: no final answer found (put the number in <answer>...</answer>).\n"
            + QUESTION,
            -0.1,
        ),
        (
            "<answer>seventy-two</answer>",
            f"Invalid action: the final answer is not a single number.\n{QUESTION}",
            -0.1,
        ),
        ("Sorry! 48 + 24 = 72.\n#### 72", "Correct: 72 is the answer.", 1.0),
    ]
    for reply, expected, expected_reward in turns:
        observation, reward, terminated, truncated, info = env.step(reply)
        assert observation == expected
        assert reward == pytest.approx(expected_reward)
    assert terminated and not truncated and info["success"]
    assert info["attempts"] == 2 and info["turn"] == 4
    assert [m["role"] for m in env.messages()] == ["system"] + ["user", "assistant"] * 4 + ["user"]


def test_gsm8k_env__single_turn_wrong_answer_terminates_and_reveals_the_gold():
    env = GSM8KEnv()
    env.reset(seed=0, options={"item": NATALIA})
    observation, reward, terminated, truncated, info = env.step("<answer>$1,000</answer>")
    assert observation == "Incorrect: 1000 is not the answer. No turns left; the answer was 72."
    assert reward == 0.0 and terminated and not truncated and not info["success"]
    assert info["action_valid"] and info["answer"] == "1000"
    assert info["parsed_actions"] == ["1,000"] and info["truncation_reason"] is None


@pytest.mark.parametrize("mode", ["strict", "flexible"])
@pytest.mark.parametrize(
    "reply", ["<answer>18 or 20</answer>", "<answer>18-20</answer>", "<answer>2+18</answer>"]
)
def test_gsm8k_env__a_hedge_earns_the_invalid_answer_penalty_never_the_reward(reply, mode):
    env = GSM8KEnv(answer_mode=mode)
    env.reset(seed=0, options={"item": {"question": "How many?", "answer": "#### 20"}})
    observation, reward, terminated, _, info = env.step(reply)
    assert reward == pytest.approx(-0.1) and terminated and not info["success"]
    assert not info["action_valid"] and info["format_ok"] and info["answer"] is None
    assert observation.startswith("Invalid action: the final answer is not a single number.")


def test_gsm8k_env__single_turn_without_an_answer_still_terminates():
    env = GSM8KEnv()
    env.reset(seed=0, options={"item": NATALIA})
    observation, reward, terminated, truncated, info = env.step("I think it is 72.")
    assert observation == (
        "Invalid answer: no final answer found (put the number in <answer>...</answer>).\n"
        "No turns left; the answer was 72."
    )
    assert reward == pytest.approx(-0.1) and terminated and not truncated
    assert info["truncation_reason"] is None and not info["format_ok"]
    assert info["answer"] is None and info["parsed_actions"] == []
    after = env.step("<answer>72</answer>")
    assert after[0] == observation and after[1] == 0.0 and not after[4]["success"]


@pytest.mark.parametrize(
    ("reply", "strict", "flexible"),
    [
        ("<answer>72</answer>", 1.0, 1.0),
        ("The answer is 72.", -0.1, 1.0),
        ("<think>70?</think>So 48 + 24 = 72 clips.", -0.1, 1.0),
        ("\\boxed{72}", 1.0, 1.0),
        ("She sold 72 clips.\n#### 72", 1.0, 1.0),
        ("I computed 72.\n<answer>seventy-two</answer>", -0.1, 1.0),
        ("<answer>72</answer> (step 2 was easy)", 1.0, 1.0),
        ("<answer>71</answer>", 0.0, 0.0),
    ],
)
def test_gsm8k_env__strict_and_flexible_rewards(reply, strict, flexible):
    for mode, expected in (("strict", strict), ("flexible", flexible)):
        env = GSM8KEnv(answer_mode=mode)
        env.reset(seed=0, options={"item": NATALIA})
        assert env.step(reply)[1] == pytest.approx(expected), mode


def test_gsm8k_env__docstring_lists_every_info_key():
    env = GSM8KEnv()
    _, info = env.reset(seed=0)
    assert set(info) == set(COMMON_INFO_KEYS) | set(env.extra_info_keys)
    for key in env.extra_info_keys:
        assert f"``{key}``" in GSM8KEnv.__doc__
    for argument in ("source", "data_path", "split", "answer_mode", "max_turns"):
        assert f"{argument}=" in GSM8KEnv.__doc__


def test_gsm8k_env__instructions_golden():
    assert GSM8KEnv().instructions == (
        "Solve the grade-school math word problem in the next message. Reason step by step.\n"
        "Think as you like, then give your answer as <answer>42</answer>. The final answer is a"
        " single number.\n"
        "If you write <think>...</think>, only the text after </think> is read.\n"
        "Graded: the last <answer>...</answer>; without that tag, the last \\boxed{}, else the"
        " number right after the last '####'. It must hold exactly one number: two numbers, a"
        " range or an expression (18 or 20, 18-20, 5-3) is not a number. A reply with none of"
        " these has no readable answer.\n"
        "Signs, decimals, fractions (3/4, 1 1/2) and scientific notation (1e6, 1.5x10^3) count;"
        " '$', '%', thousands commas or spaces and units after the number are ignored, so 1,000,"
        " 1 000 and $1000.00 are the same answer.\n"
        "You have one turn: a correct answer earns 1, a wrong one 0.\n"
        "A reply with no readable answer earns -0.1; an answer that is not a single number earns"
        " -0.1."
    )
    retry = GSM8KEnv(answer_mode="flexible", max_turns=5).instructions.splitlines()
    assert retry[3].endswith("If none of these holds a digit, the last number in your reply is.")
    assert retry[5] == (
        "You have 5 turns: a correct answer earns 1 and ends the episode; after a wrong answer"
        " (0) you are told it is wrong and may answer again."
    )


def test_gsm8k_env__generated_source_is_seeded():
    env = GSM8KEnv()
    first, info = env.reset(seed=3)
    assert env.reset(seed=3)[0] == first and info["problem_id"].startswith("generated/")
    assert len({env.reset(seed=seed)[0] for seed in range(30)}) == 30


@pytest.mark.parametrize("kwargs", list(PRESETS.values()), ids=list(PRESETS))
def test_gsm8k_env__oracle_solves_every_preset(kwargs):
    env = GSM8KEnv(**kwargs)
    policy = OraclePolicy()
    for seed in range(20):
        observation, info = env.reset(seed=seed)
        _, reward, terminated, _, info = env.step(policy(env, observation))
        assert reward == 1.0 and terminated and info["success"], (seed, info)


def test_gsm8k_env__random_policy_guesses_a_number_from_the_question():
    env = GSM8KEnv(max_turns=5)
    observation, _ = env.reset(seed=0, options={"item": NATALIA})
    policy = RandomPolicy(seed=0)
    for _ in range(3):
        reply = policy(env, observation)
        assert reply in ("<answer>48</answer>", "<answer>3</answer>")
        observation, _, _, _, info = env.step(reply)
        assert info["format_ok"] and info["action_valid"]


def test_gsm8k_env__groups_share_a_problem():
    envs = make_vector_env(num_envs=4, group_size=2, **PRESETS["grl/GSM8K-v0"])
    observations, _ = envs.reset(seed=0)
    assert observations[0] == observations[1] != observations[2]
    envs.close()


@needs_data
def test_gsm8k_env__jsonl_source_draws_from_its_split():
    env = GSM8KEnv(source="jsonl", data_path=DATA / "train.jsonl")
    observation, info = env.reset(seed=0)
    index = int(info["problem_id"].removeprefix("train/"))
    assert observation == "Question: " + prompts.ascii_text(env.problems[index].question)
    assert env.reset(seed=0)[0] == observation
    observation, info = env.reset(seed=1, options={"index": 0})
    assert observation == QUESTION and info["problem_id"] == "train/0"
    assert info["gold_answer"] == "72"


@needs_data
def test_gsm8k_env__every_official_question_renders_inside_the_charset():
    allowed = set(ASCII_CHARSET)
    for split in data.SPLITS:
        for problem in data.load_jsonl(DATA, split):
            text = prompts.ascii_text(problem.question)
            assert set(text) <= allowed, problem.id
            assert text.count("?") == problem.question.count("?"), f"{problem.id}: unspelled"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Janet\u2019s ducks \u2013 16 eggs", "Janet's ducks - 16 eggs"),
        ("2\u00bd cups and \u00be of a pie", "2 1/2 cups and 3/4 of a pie"),
        ("\u20ac5 or \u00a33 or \u00a225", "EUR 5 or GBP 3 or c25"),
        ("1800cm\u00b3, 3 \u00d7 4 \u00f7 2", "1800cm^3, 3 x 4 / 2"),
        ("Caf\u00e9 pi\u00f1ata\u00a0time\u2028next", "Cafe pinata time\nnext"),
        ("\u0410 Senior Center", "A Senior Center"),
        ("line\r\nbreak\x00", "line\nbreak "),
        ("emoji \U0001f600", "emoji ?"),
    ],
)
def test_gsm8k_env__ascii_text(text, expected):
    assert prompts.ascii_text(text) == expected


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"source": "web"}, "source"),
        ({"split": "validation"}, "split"),
        ({"answer_mode": "lenient"}, "answer_mode"),
        ({"data_path": "train.jsonl"}, "data_path"),
        ({"source": "jsonl"}, "data_path"),
        ({"split": "test"}, "split"),
        ({"max_turns": 0}, "max_turns"),
        ({"format_penalty": "low"}, "format_penalty"),
    ],
)
def test_gsm8k_env__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GSM8KEnv(**kwargs)


def test_gsm8k_env__hf_source_without_datasets_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match=re.escape("agent-envs[train]")):
        GSM8KEnv(source="hf", split="test")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"itme": NATALIA}, "itme"),
        ({"item": NATALIA, "index": 0}, "exclude each other"),
        ({"index": 0}, "needs a dataset"),
        ({"item": {"question": "Q?", "answer": "72"}}, "####"),
    ],
)
def test_gsm8k_env__bad_reset_options_say_what_is_wrong(options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        GSM8KEnv().reset(seed=0, options=options)


@needs_data
@pytest.mark.parametrize("index", [-1, 1319, True, "0"])
def test_gsm8k_env__bad_index_is_refused(index):
    env = GSM8KEnv(source="jsonl", data_path=str(DATA), split="test")
    with pytest.raises(ValueError, match="index"):
        env.reset(seed=0, options={"index": index})


def test_gsm8k_env__long_item_question_widens_the_observation_space():
    env = GSM8KEnv()
    item = {"question": "How many? " * 2000, "answer": "#### 1"}
    observation, _ = env.reset(seed=0, options={"item": item})
    assert observation in env.observation_space
