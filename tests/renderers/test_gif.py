"""Episode export: one GIF frame per turn, MP4 when imageio-ffmpeg is there, RecordVideo."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest
from agent_envs.renderers.episodes import record_episode
from agent_envs.renderers.gif import REPLY_PANEL_HEIGHT, turn_images, write_gif, write_mp4
from PIL import Image

import agent_envs  # noqa: F401
from agent_envs.core.policies import format_answer

REPLIES = ["<answer>Left || Up</answer>", "I think... <answer>Down</answer>", "no answer"]


def sokoban_episode(replies=REPLIES):
    return record_episode(gym.make("grl/Sokoban-v0"), replies, seed=3)


def test_gif__one_frame_per_turn_plus_the_final_state(tmp_path):
    episode = sokoban_episode()
    path = write_gif(episode, tmp_path / "episode.gif", fps=2)
    with Image.open(path) as gif:
        assert gif.n_frames == len(episode["steps"]) + 1 == 4
        assert gif.info["duration"] == 500
        # a 6x6 room: 484 x 448 frame (48 px tiles), widened to 480 for the reply panel
        assert gif.size == (480, 484 + REPLY_PANEL_HEIGHT)


def test_gif__without_a_final_state_there_is_exactly_one_frame_per_turn(tmp_path):
    episode = sokoban_episode()
    del episode["final_observation"], episode["final_frame"]
    with Image.open(write_gif(episode, tmp_path / "turns.gif")) as gif:
        assert gif.n_frames == 3


def test_gif__reply_panel_is_drawn_under_each_frame():
    images = turn_images(sokoban_episode())
    assert len({image.shape for image in images}) == 1
    panels = [image[-REPLY_PANEL_HEIGHT:] for image in images]
    assert not np.array_equal(panels[0], panels[1])  # different replies, different panels
    frame_area = images[0][:-REPLY_PANEL_HEIGHT]
    assert frame_area.std() > panels[0].std()  # the board is busier than the text panel


def test_gif__episodes_without_frames_draw_observation_cards(tmp_path):
    episode = {
        "steps": [
            {"observation": "Question: 2 + 2?", "reply": "<answer>4</answer>", "reward": 1.0},
            {"reply": "<answer>5</answer>"},
        ]
    }
    with Image.open(write_gif(episode, tmp_path / "cards.gif")) as gif:
        assert gif.n_frames == 2


def test_gif__record_video_style_frame_lists(tmp_path):
    env = gym.make("grl/Tetris-4x4-domino-v0", render_mode="rgb_array")
    env.reset(seed=0)
    base = env.unwrapped
    rng = np.random.default_rng(1)
    frames = [env.render()]
    for _ in range(3):
        env.step(format_answer(base.random_actions(rng), base.answer_format))
        frames.append(env.render())
    assert len({frame.shape for frame in frames}) == 1
    with Image.open(write_gif(frames, tmp_path / "video.gif")) as gif:
        assert gif.size == frames[0].shape[1::-1]


@pytest.mark.skipif(
    importlib.util.find_spec("imageio_ffmpeg") is None, reason="imageio-ffmpeg not installed"
)
def test_gif__mp4_has_one_frame_per_turn(tmp_path):
    import imageio.v2 as imageio

    path = write_mp4(sokoban_episode(), tmp_path / "episode.mp4", fps=2)
    reader = imageio.get_reader(path)
    frames = [frame for frame in reader]
    reader.close()
    assert len(frames) == 4
    assert frames[0].shape[0] % 16 == 0 and frames[0].shape[1] % 16 == 0


def test_gif__record_video_wrapper_accepts_the_frames(tmp_path):
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make("grl/Sokoban-v0", render_mode="rgb_array"), str(tmp_path), disable_logger=True
    )
    env.reset(seed=0)
    env.step("<answer>Up</answer>")
    env.close()
    assert list(tmp_path.glob("*.mp4"))
