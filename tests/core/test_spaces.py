"""The spaces declare what the env accepts: every string is a reply, and is played."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import agent_envs  # noqa: F401
from agent_envs.core.spaces import ASCII_CHARSET, MAX_REPLY_LENGTH, ReplySpace, reply_space


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "<answer>Up</answer>",
        "Je pousse la caisse vers le haut \u2191 <answer>Up</answer>",
        "\uff1canswer\uff1eUp\uff1c/answer\uff1e",  # full-width tags, read after NFKC
        "\u4e0a <answer>Up</answer> \U0001f600",
        "x" * (MAX_REPLY_LENGTH + 1),
    ],
)
def test_reply_space__contains_every_string_the_env_plays(reply):
    assert reply_space().contains(reply)


@pytest.mark.parametrize("action", [b"<answer>Up</answer>", None, 3, ["Up"]])
def test_reply_space__excludes_what_is_not_a_string(action):
    assert not reply_space().contains(action)


def test_reply_space__a_unicode_reply_is_inside_the_space_and_played():
    env = gym.make("grl/Sokoban-v0")
    env.reset(seed=0)
    reply = "\u2191 d'abord: <answer>Up</answer>"
    assert env.action_space.contains(reply)
    _, _, _, _, info = env.step(reply)
    assert info["format_ok"] and info["parsed_actions"] == ["Up"]


def test_reply_space__samples_ascii_within_max_length():
    space = reply_space()
    space.seed(0)
    for _ in range(20):
        sample = space.sample()
        assert len(sample) <= MAX_REPLY_LENGTH and set(sample) <= set(ASCII_CHARSET)
        assert space.contains(sample)


def test_reply_space__pickles_and_compares_equal():
    space = reply_space()
    clone = pickle.loads(pickle.dumps(space))
    assert isinstance(clone, ReplySpace) and clone == space
