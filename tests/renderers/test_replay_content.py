"""What replays show: values for people, BIRD's question and SQL first, a picture on every turn
(also for records that hold none), GIFs of ``Trajectory`` records, hostile text, vision ids."""

from __future__ import annotations

import base64
import io
import math
from html.parser import HTMLParser

import gymnasium as gym
import numpy as np
import pytest
from agent_envs.adapters.engines import random_engine
from agent_envs.adapters.loop import collect_episodes
from agent_envs.renderers.display import format_reward, format_value, safe_text
from agent_envs.renderers.episodes import (
    attach_frames,
    record_episode,
    replay_frames,
    with_replayed_frames,
)
from agent_envs.renderers.frames import TextFrame, frame_from_dict
from agent_envs.renderers.gif import REPLY_PANEL_HEIGHT, turn_images, write_gif
from agent_envs.renderers.raster import draw
from agent_envs.renderers.replay import replay_html, write_replay
from PIL import Image

import agent_envs  # noqa: F401
from agent_envs.core.records import Trajectory

HOSTILE = "<script>alert(1)</script> \ud800 lone \udfff \x00\x1b[31m " + "x" * 1_000_000


class Page(HTMLParser):
    """The turns of a replay page: per section its label, its images and its visible text;
    plus the page's visible text and the ``<details>`` blocks."""

    def __init__(self):
        super().__init__()
        self.sections, self.text, self.details, self.details_open = [], [], [], []
        self._skip = 0  # inside <script> or <style>
        self._in_details = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        if tag == "section" and attrs.get("class") == "turn":
            self.sections.append({"label": attrs["data-label"], "images": [], "text": []})
        if tag == "img" and self.sections:
            self.sections[-1]["images"].append(attrs["src"])
        if tag == "details":
            self._in_details += 1
            self.details.append("")
            self.details_open.append("open" in attrs)

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        if tag == "details":
            self._in_details -= 1

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._in_details:
            self.details[-1] += data
        elif self.sections:
            self.sections[-1]["text"].append(data)

    @property
    def visible(self):
        return "".join(self.text)


def parse(page):
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def picture(url):
    png = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def same_picture(shown, drawn):
    """Whether a replay's (256-colour) PNG shows ``drawn``: same size, every pixel close."""
    difference = np.abs(shown.astype(int) - drawn.astype(int))
    return shown.shape == drawn.shape and difference.mean() < 1.5 and difference.max() < 64


@pytest.fixture(scope="module")
def sokoban_trajectory():
    (trajectory,) = collect_episodes("grl/Sokoban-v0", random_engine(0), [1])
    assert isinstance(trajectory, Trajectory) and trajectory.num_turns >= 2
    return trajectory


# ------------------------------------------------------------------ values for people
@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (False, "no"),
        (True, "yes"),
        (np.bool_(False), "no"),
        (None, "—"),
        (-2.3000000000000003, "-2.3"),
        (10.700000000000001, "10.7"),
        (0.1 + 0.2, "0.3"),
        (10.0, "10"),
        (-0.0, "0"),
        (-0.00001, "-1e-05"),
        (0.12345678, "0.1235"),
        (np.float32(0.1), "0.1"),
        (3, "3"),
        (np.int64(-7), "-7"),
        (2.5e12, "2.5e+12"),
        (math.nan, "NaN"),
        (-math.inf, "-∞"),
        (["Up", 0.30000000000000004, None], "Up, 0.3, —"),
        ([], "—"),
        ("max_turns", "max_turns"),
    ],
)
def test_display__values_are_formatted_for_people(value, shown):
    assert format_value(value) == shown


@pytest.mark.parametrize(
    ("reward", "shown"), [(1.0, "+1"), (10.5, "+10.5"), (-0.1, "-0.1"), (0.0, "0"), (None, "—")]
)
def test_display__rewards_carry_their_sign(reward, shown):
    assert format_reward(reward) == shown


def test_display__safe_text_escapes_what_cannot_be_encoded_and_cuts_long_text():
    text = safe_text("a\ud800b\x00c\td\ne", limit=100)
    assert text == "a\\ud800b\\x00c\td\ne"
    text.encode("utf-8")  # would raise on a lone surrogate
    cut = safe_text("y" * 1_000, limit=10)
    assert cut == "y" * 10 + "\n… [990 more characters not shown]"


def test_replay__summary_and_rewards_show_values_for_people():
    record = {
        "env_id": "grl/Sokoban-v0", "agent": "random", "seed": 5,
        "episode_return": -2.3000000000000003, "success": False, "num_turns": 1,
        "truncation_reason": None,
        "steps": [{"observation": "#####", "reply": "<answer>Up</answer>",
                   "parsed_actions": ["Up"], "reward": -0.30000000000000004}],
    }  # fmt: skip
    visible = parse(replay_html([record])).visible
    assert "return -2.3" in visible and "success no" in visible and "turns 1" in visible
    assert "truncated by —" in visible and "-0.3" in visible
    for raw in ("False", "None", "0000000"):
        assert raw not in visible


def test_replay__truncation_reason_reads_as_words():
    record = {"steps": [], "truncation_reason": "max_turns", "success": True}
    visible = parse(replay_html([record])).visible
    assert "truncated by max turns" in visible and "success yes" in visible


# ------------------------------------------------------------------ BIRD
BIRD_REPLIES = [
    "Let me look first. <answer>EXECUTE: SELECT 41 + 1 AS answer</answer>",
    "<answer>SELECT 7 AS final_guess</answer>",
]


def test_replay__bird_leads_with_question_evidence_and_sql_and_folds_the_schema():
    episode = record_episode(gym.make("grl/BIRD-Agentic-v0"), BIRD_REPLIES, seed=0)
    first = episode["steps"][0]["observation"]
    question = first.split("\nQuestion: ")[1].split("\nEvidence: ")[0]
    page_html = replay_html([episode])
    page = parse(page_html)
    visible = page.visible
    order = [
        visible.index("Question"),
        visible.index(question),
        visible.index("Evidence"),
        visible.index("SELECT 41 + 1 AS answer"),
        visible.index("SELECT 7 AS final_guess"),
        visible.index("Schema (database"),
        visible.index("CREATE TABLE"),
        visible.index("SQL (EXECUTE)"),  # the first turn
    ]
    assert order == sorted(order)
    # the schema sits in one collapsed <details> and nowhere else
    assert page.details_open == [False]
    assert "CREATE TABLE" in page.details[0]
    assert all("CREATE TABLE" not in "".join(s["text"]) for s in page.sections)
    assert visible.count("CREATE TABLE") == page.details[0].count("CREATE TABLE")
    # each turn: its SQL first, then the result, then the reply
    turn = "".join(page.sections[0]["text"])
    assert turn.index("SQL (EXECUTE)") < turn.index("Result") < turn.index("Reply")
    assert "1 row" in turn and "42" in turn  # the result of this turn's query
    second = "".join(page.sections[1]["text"])
    assert second.index("SQL (SUBMIT)") < second.index("Result") < second.index("Reply")
    assert all(len(section["images"]) == 1 for section in page.sections)


def test_replay__bird_leaderboard_line_reads_question_from_the_first_observation():
    env = gym.make("grl/BIRD-v0")
    observation, _ = env.reset(seed=3)
    line = {
        "env_id": "grl/BIRD-v0", "agent": "random", "seed": 3, "episode_return": 0.0,
        "success": False, "first_observation": observation, "last_observation": "wrong result",
        "replies": ["<answer>SELECT 1</answer>"],
    }  # fmt: skip
    page = parse(replay_html([line]))
    question = observation.split("\nQuestion: ")[1].split("\nEvidence: ")[0]
    visible = page.visible
    assert visible.index(question) < visible.index("SELECT 1") < visible.index("Schema (")
    assert "Result" in "".join(page.sections[0]["text"])
    assert "wrong result" in "".join(page.sections[0]["text"])


# ------------------------------------------------------------------ pictures on every turn
def test_replay__trajectory_without_frames_gets_a_picture_on_every_turn(sokoban_trajectory):
    trajectory = sokoban_trajectory
    assert parse(replay_html(trajectory)).sections[0]["images"] == []  # the record holds none
    env = gym.make(trajectory.env_id)
    frames = replay_frames(
        env,
        [step.reply for step in trajectory.steps],
        seed=trajectory.seed,
        rewards=[step.reward for step in trajectory.steps],
    )
    assert len(frames) == trajectory.num_turns + 1
    for page_html in (
        replay_html(trajectory, frames=frames),
        replay_html([trajectory, trajectory.to_dict()], frames=[frames, frames]),
        replay_html([with_replayed_frames(trajectory, env)]),
    ):
        page = parse(page_html)
        turns = [f"Turn {i + 1}" for i in range(trajectory.num_turns)] + ["End of episode"]
        assert [section["label"] for section in page.sections][: len(turns)] == turns
        assert all(len(section["images"]) == 1 for section in page.sections)
    # each picture is the board the model saw on that turn
    page = parse(replay_html(trajectory, frames=frames))
    for section, frame, step in zip(page.sections, frames, trajectory.steps, strict=False):
        assert same_picture(picture(section["images"][0]), draw(frame_from_dict(frame)))
        assert step.observation in "".join(section["text"])


def test_replay__write_replay_takes_frames_per_episode(tmp_path, sokoban_trajectory):
    frames = replay_frames(
        gym.make("grl/Sokoban-v0"),
        [step.reply for step in sokoban_trajectory.steps],
        seed=sokoban_trajectory.seed,
    )
    path = write_replay([sokoban_trajectory], tmp_path / "r.html", frames=[frames])
    page = parse(path.read_text(encoding="utf-8"))
    assert all(len(section["images"]) == 1 for section in page.sections)


def test_replay__frames_that_do_not_fit_the_record_raise(sokoban_trajectory):
    with pytest.raises(ValueError, match="one per turn"):
        attach_frames(sokoban_trajectory, [None])
    with pytest.raises(ValueError, match="one list per episode"):
        replay_html([sokoban_trajectory], frames=[])


def test_replay__a_replay_that_earns_other_rewards_is_refused(sokoban_trajectory):
    data = sokoban_trajectory.to_dict()
    data["steps"][0]["reward"] += 1.0
    with pytest.raises(ValueError, match="turn 1: the replay earns"):
        with_replayed_frames(data, gym.make("grl/Sokoban-v0"))


# ------------------------------------------------------------------ GIF of a Trajectory
def test_gif__write_gif_takes_a_trajectory_and_replays_it_on_env(tmp_path, sokoban_trajectory):
    trajectory = sokoban_trajectory
    env = gym.make(trajectory.env_id)
    path = write_gif(trajectory, tmp_path / "trajectory.gif", env=env)
    with Image.open(path) as gif:
        assert gif.n_frames == trajectory.num_turns + 1
    images = turn_images(trajectory, env=env)
    env.reset(seed=trajectory.seed)
    board = draw(env.unwrapped.frame())
    height, width = board.shape[:2]
    left = (images[0].shape[1] - width) // 2
    assert np.array_equal(images[0][:height, left : left + width], board)


def test_gif__a_trajectory_without_env_or_frames_is_drawn_as_observation_cards(
    tmp_path, sokoban_trajectory
):
    path = write_gif(sokoban_trajectory, tmp_path / "cards.gif")
    with Image.open(path) as gif:
        assert gif.n_frames == sokoban_trajectory.num_turns + 1
    cards = turn_images(sokoban_trajectory)
    frames = replay_frames(
        gym.make("grl/Sokoban-v0"),
        [step.reply for step in sokoban_trajectory.steps],
        seed=sokoban_trajectory.seed,
    )
    boards = turn_images(sokoban_trajectory, frames=frames)
    assert len(cards) == len(boards)
    assert not np.array_equal(cards[0], boards[0])


def test_gif__frame_lists_still_work_and_refuse_env(tmp_path):
    frames = [np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 255, np.uint8)]
    with Image.open(write_gif(frames, tmp_path / "plain.gif")) as gif:
        assert gif.n_frames == 2
    with pytest.raises(ValueError, match="not with a list of images"):
        write_gif(frames, tmp_path / "bad.gif", env=gym.make("grl/Sokoban-v0"))


# ------------------------------------------------------------------ hostile text
def test_replay__hostile_replies_are_escaped_cut_and_never_raise():
    episode = record_episode(gym.make("grl/Sokoban-v0"), [HOSTILE, "<answer>Up</answer>"], seed=2)
    episode["agent"] = "<b>agent\ud800</b>"
    episode["success"] = "\udfff"
    page_html = replay_html([episode], title="t\ud800<i>")
    encoded = page_html.encode("utf-8")  # a lone surrogate would raise here
    assert len(encoded) < 400_000  # the 1 MB reply is cut for display
    assert "<script>alert" not in page_html and "<b>agent" not in page_html
    visible = parse(page_html).visible
    assert "<script>alert(1)</script>" in visible  # shown as text
    assert "\\ud800 lone \\udfff \\x00\\x1b[31m" in visible
    assert "more characters not shown" in visible


def test_replay__hostile_text_in_a_server_session_shape_never_raises():
    session = {
        "env_id": "grl/BIRD-v0", "seed": None, "episode_return": 0.0,
        "steps": [{"observation": HOSTILE, "reply": HOSTILE, "parsed_actions": [HOSTILE],
                   "reward": 0.0}],
        "final_observation": HOSTILE,
    }  # fmt: skip
    replay_html([session]).encode("utf-8")
    replay_html([{**session, "env_id": "grl/Sokoban-v0"}]).encode("utf-8")


def test_gif__hostile_replies_draw(tmp_path):
    episode = record_episode(gym.make("grl/Sokoban-v0"), [HOSTILE], seed=2)
    with Image.open(write_gif(episode, tmp_path / "hostile.gif")) as gif:
        assert gif.n_frames == 2


def test_raster__a_megabyte_text_card_draws_as_a_screenful_does():
    big = TextFrame("t" * 1_000_000, (("Reply", "x" * 1_000_000), ("Next", "y\n" * 100_000)))
    small = TextFrame("t" * 500, (("Reply", "x" * 20_000), ("Next", "y\n" * 200)))
    assert np.array_equal(draw(big), draw(small))


# ------------------------------------------------------------------ vision ids
def test_replay__vision_id_shows_text_and_picture_on_every_turn():
    env = gym.make("grl/Sokoban-vision-v0")
    episode = record_episode(env, ["<answer>Up</answer>", "<answer>Left</answer>"], seed=4)
    assert isinstance(episode["steps"][0]["observation"], dict)
    page = parse(replay_html([episode]))
    assert all(len(section["images"]) == 1 for section in page.sections)
    text = "".join(page.sections[0]["text"])
    assert episode["steps"][0]["observation"]["text"] in text and "'image'" not in text


def test_replay__vision_observations_without_frames_show_their_image():
    env = gym.make("grl/Sokoban-vision-v0")
    observation, _ = env.reset(seed=1)
    after, reward, *_ = env.step("<answer>Left</answer>")
    session = {
        "env_id": "grl/Sokoban-vision-v0",
        "steps": [{"observation": observation, "reply": "<answer>Left</answer>", "reward": reward}],
        "final_observation": after,
    }
    page = parse(replay_html([session]))
    assert [len(section["images"]) for section in page.sections] == [1, 1]
    assert same_picture(picture(page.sections[0]["images"][0]), observation["image"])
    assert observation["text"] in "".join(page.sections[0]["text"])
    images = turn_images(session)
    assert images[0].shape[0] == observation["image"].shape[0] + REPLY_PANEL_HEIGHT
