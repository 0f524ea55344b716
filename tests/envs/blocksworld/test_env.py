"""The Blocksworld Gymnasium shell: golden text, GRL's rewards and budgets, oracle, presets."""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.envs.blocksworld.constants import OBSERVATION_MODES
from agent_envs.envs.blocksworld.env import BlocksworldEnv
from agent_envs.envs.blocksworld.parsing import decode_action
from agent_envs.envs.blocksworld.solver import optimal_plan_length
from agent_envs.testing import check_text_env

# The registered configurations (agent_envs/registration.py holds the same table).
PRESETS = {
    "grl/Blocksworld-v0": dict(
        num_blocks=3, observation_mode="text", max_turns=11, max_actions_per_turn=5,
        max_actions_per_episode=20,
    ),
    "grl/Blocksworld-4-v0": dict(
        num_blocks=4, observation_mode="text", max_turns=11, max_actions_per_turn=5,
        max_actions_per_episode=20,
    ),
    "grl/Blocksworld-5-v0": dict(
        num_blocks=5, observation_mode="text", max_turns=11, max_actions_per_turn=5,
        max_actions_per_episode=20,
    ),
    "grl/Blocksworld-1d-v0": dict(
        num_blocks=3, observation_mode="1d", max_turns=11, max_actions_per_turn=5,
        max_actions_per_episode=20,
    ),
    "grl/Blocksworld-2d-v0": dict(
        num_blocks=3, observation_mode="2d", max_turns=11, max_actions_per_turn=5,
        max_actions_per_episode=20,
    ),
}  # fmt: skip

# Block 2 on block 1, block 3 on the table; the goal is block 1 on 2 on 3.
TOWER = {"start": [0, 1, 0], "goal": [2, 3, 0]}
# One move from the goal: block 2 goes from block 1 onto block 3.
NEAR = {"start": [0, 1, 0], "goal": [0, 3, 0]}


def loaded(options=TOWER, **kwargs) -> BlocksworldEnv:
    env = BlocksworldEnv(**kwargs)
    env.reset(seed=0, options=options)
    return env


# ----------------------------------------------------------------- golden text
GOLDEN = {
    "text": (
        "Current state: Block 1 is on the table. Block 2 is on top of Block 1."
        " Block 3 is on the table.\n"
        "Goal state: Block 1 is on top of Block 2. Block 2 is on top of Block 3."
        " Block 3 is on the table."
    ),
    "1d": "Current representation:\n[0, 1, 0]\n\nGoal representation:\n[2, 3, 0]",
    "2d": (
        "Graphical representation (Current):\n"
        " _\n"
        "|2|\n"
        " -\n"
        " _   _\n"
        "|1| |3|\n"
        " -   -\n"
        "\n"
        "Graphical representation (Goal):\n"
        " _\n"
        "|1|\n"
        " -\n"
        " _\n"
        "|2|\n"
        " -\n"
        " _\n"
        "|3|\n"
        " -"
    ),
}


@pytest.mark.parametrize("mode", sorted(GOLDEN))
def test_blocksworld_env__golden_observation(mode):
    env = BlocksworldEnv(observation_mode=mode)
    observation, info = env.reset(seed=0, options=TOWER)
    assert observation == GOLDEN[mode]
    assert env.render() is None
    assert info["optimal_plan_length"] == 2 and info["blocks_in_place"] == 1
    assert info["num_blocks"] == 3 and not info["success"]


def test_blocksworld_env__golden_2d_with_taller_tower_on_the_right():
    env = BlocksworldEnv(num_blocks=5, observation_mode="2d", render_mode="ansi")
    # Towers 1 | 2-3-5 | 4; the goal has every block on the table.
    observation, _ = env.reset(seed=0, options={"start": [0, 0, 2, 0, 3], "goal": [0] * 5})
    assert observation == (
        "Graphical representation (Current):\n"
        "     _\n"
        "    |5|\n"
        "     -\n"
        "     _\n"
        "    |3|\n"
        "     -\n"
        " _   _   _\n"
        "|1| |2| |4|\n"
        " -   -   -\n"
        "\n"
        "Graphical representation (Goal):\n"
        " _   _   _   _   _\n"
        "|1| |2| |3| |4| |5|\n"
        " -   -   -   -   -"
    )
    assert env.render() == observation


def test_blocksworld_env__instructions_golden():
    assert BlocksworldEnv().instructions == (
        "You are playing Blocksworld with 3 blocks, numbered 1 to 3. Move the blocks until the"
        " current state equals the goal state.\n"
        "Each observation gives the current state and the goal state, one sentence per block,"
        ' such as "Block 2 is on top of Block 1." or "Block 1 is on the table."\n'
        "Each action is written as move X to Y: X is the number of the block to move, and Y is"
        " the number of the block to put it on, or table (0 also means the table). You can only"
        " move a block that has no block on top of it, and only onto the table or onto a block"
        " that has no block on top of it.\n"
        "Rewards: -1 per move, +10 instead for the move that reaches the goal, -1 for an illegal"
        " or unreadable action (the rest of that answer is not executed), -5 for a reply without"
        " a readable answer.\n"
        "You have 11 turns and 20 actions in all (illegal moves count); actions past that are"
        " ignored.\n"
        "Think as you like, then give your answer as <answer>move 2 to table || move 1 to 2"
        "</answer>. Separate several actions with '||' (at most 5 per turn; extra ones are"
        " ignored)."
    )


def test_blocksworld_env__instructions_explain_each_observation_mode():
    one_d = BlocksworldEnv(observation_mode="1d").instructions.split("\n")
    assert one_d[1] == (
        "Each observation gives the current state and the goal state as a list whose i-th"
        " number is what Block i sits on: 0 for the table, otherwise the number of the block"
        " below it. For example [0, 1, 0] means: Block 1 is on the table. Block 2 is on top of"
        " Block 1. Block 3 is on the table."
    )
    two_d = BlocksworldEnv(observation_mode="2d", num_blocks=4).instructions.split("\n")
    assert two_d[1:8] == [
        "Each observation draws the current state and the goal state as towers of blocks"
        " standing on the table, side by side; each block is drawn as |n| between _ above and"
        " - below. For example",
        " _",
        "|2|",
        " -",
        " _   _   _",
        "|1| |3| |4|",
        " -   -   -",
    ]
    assert two_d[8] == (
        "means: Block 1 is on the table. Block 2 is on top of Block 1. Block 3 is on the table."
        " Block 4 is on the table."
    )
    assert BlocksworldEnv(num_blocks=5).instructions.startswith(
        "You are playing Blocksworld with 5 blocks, numbered 1 to 5."
    )


def test_blocksworld_env__instructions_state_the_configured_penalties_and_budgets():
    text = BlocksworldEnv(
        format_penalty=-2, invalid_action_penalty=-0.5, max_turns=4, max_actions_per_episode=None
    ).instructions
    assert "-0.5 for an illegal or unreadable action" in text
    assert "-2 for a reply without a readable answer" in text
    assert "You have 4 turns.\n" in text


# ----------------------------------------------------------------- rewards, one row per rule
# reply, reward, executed actions, valid, effective, state after, terminated
TURNS = [
    ("<answer>move 2 to 3</answer>", 10.0, 1, True, True, (0, 3, 0), True),
    ("<think>2 is clear</think><answer>(move 2 to 3)</answer>", 10.0, 1, True, True, (0, 3, 0),
     True),
    ("<answer>move 3 to 2</answer>", -1.0, 1, True, True, (0, 1, 2), False),
    ("<answer>move 3 to table || move 2 to 3</answer>", 9.0, 2, True, True, (0, 3, 0), True),
    ("<answer>move 2 to 3 || move 3 to table</answer>", 10.0, 1, True, True, (0, 3, 0), True),
    ("<answer>move 3 to table</answer>", -1.0, 1, True, False, (0, 1, 0), False),
    ("<answer>move 1 to 3</answer>", -1.0, 1, False, False, (0, 1, 0), False),
    ("<answer>move 3 to 1</answer>", -1.0, 1, False, False, (0, 1, 0), False),
    ("<answer>move 2 to 1</answer>", -1.0, 1, False, False, (0, 1, 0), False),
    ("<answer>move 3 to 3</answer>", -1.0, 1, False, False, (0, 1, 0), False),
    ("<answer>move 4 to table</answer>", -1.0, 1, False, False, (0, 1, 0), False),
    ("<answer>move 2 to table || move 1 to 1 || move 2 to 3</answer>", -2.0, 2, False, True,
     (0, 0, 0), False),
    ("<answer>jump</answer>", -1.0, 0, False, False, (0, 1, 0), False),
    ("<answer>move 2 to table || stack 1 on 3</answer>", -2.0, 1, False, True, (0, 0, 0), False),
    ("move 2 to 3", -5.0, 0, False, False, (0, 1, 0), False),
    ("<answer></answer>", -5.0, 0, False, False, (0, 1, 0), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "reward", "executed", "valid", "effective", "after", "terminated"), TURNS
)
def test_blocksworld_env__turn_reward(reply, reward, executed, valid, effective, after, terminated):
    env = loaded(NEAR)
    _, got, done, truncated, info = env.step(reply)
    assert got == pytest.approx(reward)
    assert info["num_actions"] == executed
    assert info["action_valid"] is valid and info["action_effective"] is effective
    assert env.state == after
    assert done is terminated is info["success"] and not truncated
    assert info["blocks_in_place"] == sum(a == b for a, b in zip(after, (0, 3, 0), strict=True))


def test_blocksworld_env__illegal_move_feedback_precedes_the_observation():
    env = loaded(NEAR, observation_mode="1d")
    observation, *_ = env.step("<answer>move 3 to 2 || move 1 to 3 || move 3 to table</answer>")
    assert observation == (
        "Invalid action 2 of 3: block 1 has a block on top of it; the rest of the answer was"
        " not executed.\n"
        "Current representation:\n[0, 1, 2]\n\nGoal representation:\n[0, 3, 0]"
    )
    assert observation in env.observation_space


# ----------------------------------------------------------------- budgets
def test_blocksworld_env__grl_action_budget_truncates_after_20_actions():
    env = loaded(NEAR)
    # Five legal moves that end where they started (the last one changes nothing).
    shuffle = (
        "<answer>"
        + " || ".join(["move 3 to 2", "move 3 to table"] * 2)
        + " || move 3 to 0</answer>"
    )
    for turn in range(1, 4):
        _, _, terminated, truncated, info = env.step(shuffle)
        assert info["num_actions"] == 5 and not (terminated or truncated), turn
    _, _, terminated, truncated, info = env.step(shuffle)
    assert info["num_actions"] == 5 and truncated and not terminated
    assert info["truncation_reason"] == "action_budget" and info["turn"] == 4


def test_blocksworld_env__illegal_moves_count_toward_the_budget_unknown_actions_do_not():
    env = loaded(NEAR, max_actions_per_episode=2)
    assert env.step("<answer>jump</answer>")[4]["num_actions"] == 0
    assert env.step("<answer>move 1 to 3</answer>")[4]["num_actions"] == 1
    _, _, _, truncated, info = env.step("<answer>move 3 to 3</answer>")
    assert truncated and info["truncation_reason"] == "action_budget" and info["turn"] == 3


def test_blocksworld_env__grl_turn_budget_truncates_after_11_turns():
    env = loaded(NEAR)
    for turn in range(1, 12):
        _, reward, terminated, truncated, info = env.step("<answer>move 3 to 3</answer>")
        assert reward == -1.0 and not terminated
        assert truncated is (turn == 11)
    assert info["truncation_reason"] == "max_turns"


# ----------------------------------------------------------------- oracle and baseline
@pytest.mark.parametrize("num_blocks", [3, 4, 5])
def test_blocksworld_env__oracle_reaches_goal_in_the_optimal_number_of_moves(num_blocks):
    env = BlocksworldEnv(num_blocks=num_blocks)
    policy = OraclePolicy()
    for seed in range(300):
        observation, info = env.reset(seed=seed)
        optimal = info["optimal_plan_length"]
        assert optimal == optimal_plan_length(env.state, env.goal) >= 1
        moves, total, turns = 0, 0.0, 0
        terminated = truncated = False
        while not (terminated or truncated):
            observation, reward, terminated, truncated, info = env.step(policy(env, observation))
            moves += info["num_actions"]
            total += reward
            turns += 1
            assert info["action_valid"] and info["action_effective"], seed
        assert terminated and info["success"], seed
        assert moves == optimal, seed
        assert total == 10.0 - (optimal - 1), seed
        assert turns == math.ceil(optimal / 5), seed
        assert env.oracle_actions() == []


def test_blocksworld_env__oracle_replans_optimally_after_a_detour():
    env = loaded(TOWER)
    assert env.oracle_actions() == ["move 2 to 3", "move 1 to 2"]
    env.step("<answer>move 3 to 2</answer>")  # off the plan: now the tower 1-2-3
    plan = env.oracle_actions()
    assert plan == ["move 3 to table", "move 2 to 3", "move 1 to 2"]
    assert len(plan) == optimal_plan_length(env.state, env.goal)
    for action in plan:
        env.step(f"<answer>{action}</answer>")
    assert env.state == env.goal


def test_blocksworld_env__random_actions_cover_every_move_of_two_blocks():
    env = BlocksworldEnv(num_blocks=3)
    rng = np.random.default_rng(0)
    counts, moves = Counter(), Counter()
    for _ in range(2000):
        actions = env.random_actions(rng)
        counts[len(actions)] += 1
        moves.update(actions)
    assert sorted(counts) == [1, 2, 3, 4, 5]
    expected = {
        f"move {block} to {'table' if dest == 0 else dest}"
        for block in (1, 2, 3)
        for dest in (0, 1, 2, 3)
        if dest != block
    }
    assert set(moves) == expected
    assert all(decode_action(action) is not None for action in moves)
    assert max(moves.values()) < 1.3 * min(moves.values())


def test_blocksworld_env__random_policy_replies_parse():
    env = loaded(TOWER)
    observation = env.render()
    policy = RandomPolicy(seed=0)
    _, _, _, _, info = env.step(policy(env, observation))
    assert info["format_ok"] and info["num_actions"] >= 1


# ----------------------------------------------------------------- seeds, presets, config
def test_blocksworld_env__same_seed_same_episode_different_seeds_differ():
    env = BlocksworldEnv()
    first = env.reset(seed=3)
    assert env.reset(seed=3) == first
    assert len({env.reset(seed=seed)[0] for seed in range(40)}) > 20


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_blocksworld_env__check_text_env(env_id):
    check_text_env(BlocksworldEnv(**PRESETS[env_id]))


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_blocksworld_env__registered_preset_matches(env_id):
    import agent_envs  # noqa: F401  (registers the ids)

    if env_id not in gym.registry:
        pytest.skip(f"{env_id} is not registered yet")
    spec = gym.spec(env_id)
    assert spec.kwargs == PRESETS[env_id]
    assert spec.max_episode_steps is None  # the env owns its turn budget (max_turns)
    assert isinstance(gym.make(env_id).unwrapped, BlocksworldEnv)


def test_blocksworld_env__docstring_arguments_are_the_defaults():
    doc = BlocksworldEnv.__doc__
    call = re.search(r'gymnasium\.make\("grl/Blocksworld-v0", (.*?)\)``', doc, re.S)
    documented = {
        name: ast.literal_eval(value)
        for name, value in re.findall(r"(\w+)=([^,]+?)(?:,|$)", " ".join(call[1].split()))
    }
    signature = inspect.signature(BlocksworldEnv.__init__)
    defaults = {name: p.default for name, p in signature.parameters.items() if name != "self"}
    assert documented == defaults
    for key in BlocksworldEnv.extra_info_keys:
        assert f"``{key}``" in doc
    for mode in OBSERVATION_MODES:
        assert f'``"{mode}"``' in doc
    # The base id is the defaults.
    assert all(defaults[name] == value for name, value in PRESETS["grl/Blocksworld-v0"].items())


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_blocks": 1}, "num_blocks"),
        ({"num_blocks": 9}, "num_blocks"),
        ({"num_blocks": "3"}, "num_blocks"),
        ({"observation_mode": "3d"}, "observation_mode"),
        ({"observation_mode": "2d_sparse"}, "observation_mode"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_actions_per_turn": -1}, "max_actions_per_turn"),
        ({"format_penalty": "-5"}, "format_penalty"),
    ],
)
def test_blocksworld_env__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BlocksworldEnv(**kwargs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"strat": [0, 0, 0], "goal": [0, 1, 0]}, "strat"),
        ({"start": [0, 0, 0]}, "'goal' must be a list"),
        ({"start": [0, 1, 0], "goal": [0, 1, 0]}, "must differ"),
        ({"start": [0, 1], "goal": [0, 0, 0]}, "3 blocks"),
        ({"start": [0, 1, 1], "goal": [0, 0, 0]}, "two blocks sit on the same block"),
        ({"start": [2, 1, 0], "goal": [0, 0, 0]}, "cycle"),
        ({"start": "010", "goal": [0, 0, 0]}, "list of ints"),
        ({"start": [0, 1.0, 0], "goal": [0, 0, 0]}, "list of ints"),
    ],
)
def test_blocksworld_env__bad_reset_options_raise(options, message):
    with pytest.raises(ValueError, match=message):
        BlocksworldEnv().reset(seed=0, options=options)


def test_blocksworld_env__reset_options_accept_numpy_ints_and_tuples():
    env = BlocksworldEnv()
    env.reset(seed=0, options={"start": np.array([0, 1, 0]).tolist(), "goal": (2, 3, 0)})
    assert env.state == (0, 1, 0) and env.goal == (2, 3, 0)
    env.reset(seed=0, options={"start": list(np.array([0, 1, 0])), "goal": [2, 3, 0]})
    assert env.state == (0, 1, 0) and all(type(b) is int for b in env.state)
