"""The Sokoban Gymnasium shell: XSB levels, turns, info keys, golden text."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agent_envs
from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.envs.sokoban.env import SokobanEnv

# A box two pushes right of its target... one push: player, box, target in a row.
ONE_PUSH = """
#####
#@$.#
#####
"""
TWO_BOXES = """
######
#    #
#@$ .#
# $ .#
#    #
######
"""


def test_sokoban_env__level_option_renders_the_glyphs():
    env = SokobanEnv()
    observation, info = env.reset(seed=0, options={"level": ONE_PUSH})
    assert observation == "#####\n#PXO#\n#####"
    assert info["boxes_on_target"] == 0 and info["num_boxes"] == 1 and not info["success"]


def test_sokoban_env__push_onto_target_solves_with_gym_sokoban_reward():
    env = SokobanEnv()
    env.reset(seed=0, options={"level": ONE_PUSH})
    observation, reward, terminated, truncated, info = env.step("<answer>Right</answer>")
    assert observation == "#####\n#_P*#\n#####"
    assert reward == pytest.approx(-0.1 + 1.0 + 10.0)
    assert terminated and not truncated and info["success"] and info["boxes_on_target"] == 1


def test_sokoban_env__bump_is_valid_but_not_effective():
    env = SokobanEnv()
    env.reset(seed=0, options={"level": ONE_PUSH})
    observation, reward, _, _, info = env.step("<answer>left</answer>")
    assert observation == "#####\n#PXO#\n#####"
    assert reward == pytest.approx(-0.1)
    assert info["action_valid"] and not info["action_effective"] and info["num_actions"] == 1


def test_sokoban_env__unknown_action_gets_feedback_inside_the_charset():
    env = SokobanEnv()
    env.reset(seed=0, options={"level": TWO_BOXES})
    observation, reward, _, _, info = env.step("<answer>Up || Jump</answer>")
    assert not info["action_valid"] and info["num_actions"] == 1
    assert reward == pytest.approx(-0.1 - 0.1)
    assert observation.splitlines()[0].startswith("Invalid action 2 of 2")
    assert observation in env.observation_space


def test_sokoban_env__grl_budgets_truncate_on_the_action_budget():
    env = gym.make("grl/Sokoban-v0")
    env.reset(seed=0, options={"level": TWO_BOXES})
    actions = "<answer>Down || Up || Down || Up || Down</answer>"
    assert env.step(actions)[4]["num_actions"] == 5
    _, _, terminated, truncated, info = env.step(actions)
    assert truncated and not terminated and info["truncation_reason"] == "action_budget"


def test_sokoban_env__instructions_golden():
    env = SokobanEnv()
    assert env.instructions == (
        "You are playing Sokoban. Push every box onto a target.\n"
        "The board is shown one row per line: # wall, _ floor, O target, X box, * box on a target,"
        " P you, S you on a target.\n"
        "Actions: Up, Down, Left, Right. Walking into a box pushes it one cell if the cell behind"
        " it is floor or a target; you cannot pull boxes or push two at once.\n"
        "Rewards: -0.1 per action, +1 for a box onto a target, -1 for a box off a target, +10 when"
        " every box is on a target.\n"
        "You have 6 turns and 10 actions in all; actions past that are ignored.\n"
        "Think as you like, then give your answer as <answer>Right || Up</answer>. Separate"
        " several actions with '||' (at most 5 per turn; extra ones are ignored)."
    )


def test_sokoban_env__same_seed_same_level_different_seed_different_level():
    env = SokobanEnv()
    first = env.reset(seed=3)[0]
    assert env.reset(seed=3)[0] == first
    assert len({env.reset(seed=seed)[0] for seed in range(20)}) > 10


@pytest.mark.parametrize("env_id", sorted(i for i in agent_envs.PRESETS if "Sokoban" in i))
def test_sokoban_env__oracle_solves_every_preset(env_id):
    env = gym.make(env_id)
    policy = OraclePolicy()
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            observation, _, terminated, truncated, info = env.step(
                policy(env.unwrapped, observation)
            )
        assert info["success"], f"{env_id} seed {seed}: {info}"


def test_sokoban_env__random_policy_replies_parse():
    env = SokobanEnv()
    observation, _ = env.reset(seed=0)
    policy = RandomPolicy(seed=0)
    _, _, _, _, info = env.step(policy(env, observation))
    assert info["format_ok"] and info["action_valid"]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"width": 2}, "width"), ({"num_boxes": 0}, "num_boxes"), ({"max_turns": -1}, "max_turns")],
)
def test_sokoban_env__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SokobanEnv(**kwargs)


def test_sokoban_env__bad_reset_options_name_the_option():
    env = SokobanEnv()
    with pytest.raises(ValueError, match="levle"):
        env.reset(seed=0, options={"levle": ONE_PUSH})
    with pytest.raises(ValueError):
        env.reset(seed=0, options={"level": "#####\n#@ .#\n#####"})
