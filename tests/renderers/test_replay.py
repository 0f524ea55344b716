"""HTML replays: parsed back and checked; the command line on both record shapes."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
from html.parser import HTMLParser

import gymnasium as gym
import numpy as np
import pytest
from agent_envs.renderers.episodes import load_episodes, record_episode
from agent_envs.renderers.replay import main, replay_html
from PIL import Image

import agent_envs  # noqa: F401

LEADERBOARD_LINE = {
    "env_id": "grl/Sokoban-v0", "agent": "random", "seed": 0, "episode_return": -1.0,
    "success": False, "turns": 2, "actions": 3, "truncation_reason": "max_turns",
    "first_observation": "#####\n#PXO#\n#####", "last_observation": "#####\n#PXO#\n#####",
    "replies": ["<answer>Up</answer>", "<answer>Left || Down</answer>"],
}  # fmt: skip


class Page(HTMLParser):
    """Collects what the tests look at: turn sections, images, links and visible text."""

    def __init__(self):
        super().__init__()
        self.episodes, self.turns, self.images, self.urls = 0, [], [], []
        self.text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article" and attrs.get("class") == "episode":
            self.episodes += 1
        if tag == "section" and attrs.get("class") == "turn":
            self.turns.append(attrs["data-label"])
        if tag == "img":
            self.images.append(attrs["src"])
        self.urls += [attrs[key] for key in ("src", "href") if key in attrs]

    def handle_data(self, data):
        self.text.append(data)


def parse(page):
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def test_replay__turns_frames_and_text_are_in_one_offline_page():
    episode = record_episode(gym.make("grl/Sokoban-v0"), ["<answer>Up</answer>", "hi"], seed=3)
    page = parse(replay_html([episode], title="Sokoban <test>"))
    assert page.episodes == 1
    assert page.turns == ["Turn 1", "Turn 2", "End of episode"]
    assert len(page.images) == 3
    assert all(url.startswith("data:image/png;base64,") for url in page.urls)
    png = base64.b64decode(page.images[0].split(",", 1)[1])
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert image.shape == (484, 448, 3)
    text = "".join(page.text)
    assert "Sokoban <test>" in text  # escaped in the page, intact once parsed
    assert "<answer>Up</answer>" in text and "Parsed actions" in text and "-0.1" in text
    assert "http://" not in replay_html([episode]) and "https://" not in replay_html([episode])


def test_replay__command_line_reads_leaderboard_and_step_records(tmp_path, capsys):
    steps = record_episode(gym.make("grl/Blocksworld-v0"), ["<answer>move 1 to 0</answer>"])
    records = tmp_path / "episodes.jsonl"
    records.write_text(json.dumps(LEADERBOARD_LINE) + "\n" + json.dumps(steps) + "\n")
    assert len(load_episodes(records)) == 2
    out = main([str(records), "-o", str(tmp_path / "replay.html")])
    page = parse(out.read_text())
    assert page.episodes == 2
    assert page.turns == ["Turn 1", "Turn 2", "End of episode", "Turn 1", "End of episode"]
    assert len(page.images) == 2  # only the step record carries frames
    assert "wrote" in capsys.readouterr().out
    only = main([str(records), "-o", str(tmp_path / "one.html"), "--agent", "random"])
    assert parse(only.read_text()).episodes == 1


def test_replay__trajectory_records_with_info_and_token_fields():
    record = {
        "env_id": "grl/GSM8K-v0", "seed": 7, "agent": "hf", "episode_return": 1.0,
        "num_turns": 1, "messages": [], "prompt_ids": [1, 2], "final_observation": "",
        "steps": [{"observation": "Question: 1 + 1?", "reply": "<answer>2</answer>",
                   "reward": 1.0, "info": {"parsed_actions": ["2"]}, "state_hash": "ab"}],
    }  # fmt: skip
    page = parse(replay_html([record]))
    assert page.turns == ["Turn 1"] and page.images == []
    text = "".join(page.text)
    assert "grl/GSM8K-v0  hf  seed 7" in text and "turns 1" in text and "+1" in text


def test_replay__bad_records_raise_value_error():
    with pytest.raises(ValueError, match="'steps'"):
        replay_html([{"env_id": "grl/Sokoban-v0"}])


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_replay__headless_chromium_screenshot_shows_the_board(tmp_path):
    episode = record_episode(gym.make("grl/Sokoban-v0"), ["<answer>Up</answer>"], seed=3)
    page = tmp_path / "replay.html"
    page.write_text(replay_html([episode]))
    shot = tmp_path / "shot.png"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1000,800", page.as_uri()],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
    wall = (np.abs(pixels - (128, 76, 58)).max(axis=1) < 12).sum()
    assert wall > 500  # the brick walls of the first frame are on screen
