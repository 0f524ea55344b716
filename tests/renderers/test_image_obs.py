"""Image observations and multimodal chat messages."""

from __future__ import annotations

import base64
import io

import gymnasium as gym
import numpy as np
import pytest
from agent_envs.renderers.image_obs import ImageObservation, image_message
from PIL import Image

import agent_envs  # noqa: F401


def test_image_obs__observations_hold_text_and_the_frame():
    env = ImageObservation(gym.make("grl/Sokoban-v0"))
    observation, _ = env.reset(seed=3)
    assert observation in env.observation_space
    assert observation["text"] == env.unwrapped.messages()[-1]["content"]
    assert observation["image"].shape == (484, 448, 3)
    observation, *_ = env.step("<answer>Up</answer>")
    assert observation in env.observation_space


@pytest.mark.parametrize(
    ("style", "part"),
    [("openai", lambda p: p["image_url"]["url"]), ("transformers", lambda p: p["url"])],
)
def test_image_obs__messages_carry_one_png_per_user_turn(style, part):
    env = ImageObservation(gym.make("grl/GSM8K-5turn-v0"), style=style)
    env.reset(seed=0)
    env.step("<answer>-1</answer>")
    messages = env.messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert isinstance(messages[0]["content"], str) and isinstance(messages[2]["content"], str)
    for message in (messages[1], messages[3]):
        text, image = message["content"]
        assert text["type"] == "text" and text["text"].startswith(("Question", "Incorrect"))
        url = part(image)
        assert url.startswith("data:image/png;base64,")
        decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert decoded.size == (640, 480)
    assert len(env.messages(window=1)) == 4


def test_image_obs__image_message_and_bad_arguments():
    message = image_message("look", np.zeros((4, 6, 3), np.uint8), role="user")
    assert message["content"][1]["type"] == "image_url"
    with pytest.raises(ValueError, match="style"):
        image_message("look", np.zeros((4, 6, 3), np.uint8), style="anthropic")
    with pytest.raises(ValueError, match="frame"):
        ImageObservation(gym.make("CartPole-v1"))
