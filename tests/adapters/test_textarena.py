"""TextArena games as TextEnvs (and ours as TextArena envs): contract, moves, rewards, network."""

from __future__ import annotations

import copy
import pickle
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ta = pytest.importorskip("textarena")

from agent_envs.adapters import textarena as ta_adapter  # noqa: E402
from agent_envs.adapters.textarena import NETWORK_GAMES, make, register_grl_games, to_textarena  # noqa: E402

from agent_envs.testing import check_text_env  # noqa: E402


def first_listed_move(observation: str) -> str:
    """A scripted opponent: the first move the game lists (TicTacToe: the lowest free cell)."""
    return re.findall(r"'(\[\d+\])'", observation.splitlines()[-1])[0]


@pytest.mark.parametrize(
    "textarena_id", ["TowerOfHanoi-v0", "Sokoban-v0", "TicTacToe-v0", "ConnectFour-v0"]
)
def test_textarena__passes_check_text_env(textarena_id):
    check_text_env(make(textarena_id))


def test_textarena__rejected_move_is_invalid_then_second_one_loses():
    env = make("TicTacToe-v0", opponent=first_listed_move, agent_player=0)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>[4]</answer>")
    assert (reward, terminated, info["action_valid"]) == (0.0, False, True)
    assert info["opponent_moves"] == ["[0]"]
    _, reward, terminated, _, info = env.step("<answer>[0]</answer>")  # occupied
    assert (reward, terminated, info["action_valid"]) == (-0.1, False, False)
    assert info["game_rewards"] is None and info["opponent_moves"] == []
    observation, reward, terminated, _, info = env.step("<answer>[4]</answer>")  # again
    assert terminated and not info["action_valid"] and not info["success"]
    assert reward == pytest.approx(-1.0 - 0.1)
    assert info["game_rewards"] == {0: -1.0, 1: 1.0}
    assert "[GAME OVER]" in observation


def test_textarena__win_pays_close_reward_and_is_success():
    env = make("TicTacToe-v0", opponent=first_listed_move, agent_player=0)
    env.reset(seed=0)
    rewards = [env.step(f"<answer>{move}</answer>")[1] for move in ("[4]", "[8]")]
    _, reward, terminated, _, info = env.step("<answer>2</answer>")  # brackets added by TA
    # opponent took 0, 1; we hold 4, 8, 2 -> no line yet; opponent takes 3; we take 6: 2-4-6
    assert not terminated and rewards == [0.0, 0.0]
    _, reward, terminated, _, info = env.step("<answer>[6]</answer>")
    assert terminated and reward == 1.0 and info["success"]
    assert info["end_reason"] and info["game_rewards"] == {0: 1.0, 1: -1.0}


def test_textarena__unreadable_reply_sends_nothing_to_the_game():
    env = make("TicTacToe-v0", opponent=first_listed_move)
    _, info = env.reset(seed=0)
    hash_before = info["state_hash"]
    for _ in range(3):  # TextArena would end the game at the second rejected move
        _, reward, terminated, _, info = env.step("I think the centre is best.")
        assert (reward, terminated, info["format_ok"]) == (-0.1, False, False)
    assert info["state_hash"] == hash_before


def test_textarena__long_move_is_invalid_without_reaching_the_game():
    env = make("ConnectFour-v0", opponent=first_listed_move)
    env.reset(seed=0)
    _, _, terminated, _, info = env.step("<answer>" + "[col " * 100_000 + "</answer>")
    assert not info["action_valid"] and not terminated and info["num_actions"] == 0


def test_textarena__second_episode_does_not_show_the_first():
    """TextArena's LLMObservationWrapper keeps old history across resets; we make a fresh
    game per episode."""
    env = make("TicTacToe-v0", opponent=first_listed_move)
    env.reset(seed=0)
    env.step("<answer>[4]</answer>")
    again, _ = env.reset(seed=0)
    fresh, _ = make("TicTacToe-v0", opponent=first_listed_move).reset(seed=0)
    assert again == fresh and "[Player 0] [4]" not in again


def test_textarena__agent_player_one_waits_for_the_opponent():
    env = make("TicTacToe-v0", opponent=first_listed_move, agent_player=1)
    observation, info = env.reset(seed=0)
    assert info["player_id"] == 1 and info["opponent_moves"] == ["[0]"]
    assert "You are Player 1" in observation


def test_textarena__keeps_its_own_random_state():
    """Games draw from Python's global random; the env binds the module's functions to its
    own generator around calls, so the caller's random stream and bindings are untouched and
    interleaved envs replay alike."""
    caller = (random.random, random.choice, random.seed, random.getstate)
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    env = make("Minesweeper-v0")
    env.reset(seed=3)
    env.step("<answer>[3 3]</answer>")
    assert [random.random() for _ in range(3)] == expected
    assert (random.random, random.choice, random.seed, random.getstate) == caller
    with env._own_random():
        inner = random.random
        with make("Minesweeper-v0")._own_random():  # nested: restores the outer env's
            assert random.random is not inner
        assert random.random is inner and inner.__self__ is env._random
    assert random.random == caller[0]

    def play(envs):
        for env in envs:
            env.reset(seed=5)
        hashes = []
        for move in ("[2 2]", "[0 0]", "[7 7]"):
            for env in envs:
                hashes.append(env.step(f"<answer>{move}</answer>")[4]["state_hash"])
        return hashes

    together = play([make("Minesweeper-v0"), make("Minesweeper-v0")])
    alone = play([make("Minesweeper-v0")])
    assert together[0::2] == alone and together[1::2] == alone


def test_textarena__pickled_env_continues_like_the_original():
    env = make("ConnectFour-v0")
    env.reset(seed=1)
    env.step("<answer>[col 3]</answer>")
    clone = pickle.loads(pickle.dumps(env))
    twin = copy.deepcopy(env)
    for move in ("[col 3]", "[col 2]"):
        expected = env.step(f"<answer>{move}</answer>")
        for other in (clone, twin):
            got = other.step(f"<answer>{move}</answer>")
            assert got[:4] == expected[:4] and got[4]["state_hash"] == expected[4]["state_hash"]


def test_textarena__random_moves_are_legal():
    for textarena_id in ("ConnectFour-v0", "Nim-v0", "TowerOfHanoi-v0", "Othello-v0"):
        env = make(textarena_id)
        env.reset(seed=2)
        rng = np.random.default_rng(0)
        for _ in range(6):
            moves = env.random_actions(rng)
            assert moves, textarena_id
            _, _, terminated, truncated, info = env.step(f"<answer>{moves[0]}</answer>")
            assert info["action_valid"], (textarena_id, moves)
            if terminated or truncated:
                break


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"opponent": "greedy"}, "opponent"),
        ({"agent_player": 2}, "agent_player"),
        ({"reply_format": "json"}, "reply_format"),
        ({"max_turns": 0}, "max_turns"),
    ],
)
def test_textarena__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make("TicTacToe-v0", **kwargs)


def test_textarena__unknown_id_and_network_games_are_refused():
    with pytest.raises(ValueError, match="textarena_id"):
        make("NoSuchGame-v0")
    with pytest.raises(ValueError, match="allow_network"):
        make("Hangman-v0")


def test_textarena__network_table_matches_textarena_source():
    """Every game folder whose code downloads (nltk.download, directly or through the
    EnglishDictionary word list) or asks an online model is in NETWORK_GAMES, and no other."""
    root = Path(ta.__file__).parent / "envs"
    pattern = re.compile(r"nltk\.download\(|EnglishDictionary\(|OpenRouter|from openai import")
    found = set()
    for folder in root.iterdir():
        if folder.name in ("utils", "__pycache__") or not folder.is_dir():
            continue
        if any(pattern.search(path.read_text()) for path in folder.rglob("*.py")):
            found.add(folder.name)
    assert found == set(NETWORK_GAMES)


def test_textarena__import_and_play_open_no_network_connection():
    code = textwrap.dedent(
        """
        import socket
        attempts = []
        def refuse(self, address):
            attempts.append(address)
            raise OSError("network refused by the test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        import urllib.request
        def refuse_url(url, *args, **kwargs):
            attempts.append(str(url))
            raise OSError("network refused by the test")
        urllib.request.urlopen = refuse_url
        import agent_envs.adapters.textarena as adapter
        import textarena
        for textarena_id in ("TicTacToe-v0", "Sokoban-v0", "Minesweeper-v0"):
            env = adapter.make(textarena_id)
            env.reset(seed=0)
            env.step("<answer>[1 1]</answer>")
        print("attempts", attempts)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "attempts []" in done.stdout
    assert "nltk_data" not in done.stderr


def test_textarena__importing_the_adapter_imports_no_textarena():
    code = "import sys, agent_envs.adapters.textarena; print('textarena' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


# ----------------------------------------------------------------------- ours in TextArena
def test_grl_env_as_textarena_env__oracle_solves_through_textarena_wrappers():
    import gymnasium

    game = to_textarena(
        "grl/Sokoban-v0", wrappers=("LLMObservationWrapper", "ActionFormattingWrapper")
    )
    game.reset(num_players=1, seed=0)
    player, observation = game.get_observation()
    reference = gymnasium.make("grl/Sokoban-v0").unwrapped
    first, _ = reference.reset(seed=0)
    assert player == 0 and reference.instructions in observation and first in observation

    class OracleAgent(ta.Agent):  # TextArena's agent interface: observation -> action
        def __call__(self, observation: str) -> str:
            return "<answer>" + " || ".join(reference.oracle_actions()) + "</answer>"

    agent = OracleAgent()
    done = False
    while not done:  # TextArena's own game loop
        player, observation = game.get_observation()
        action = agent(observation)
        reference.step(action)
        done, info = game.step(action)
        assert info["action_valid"]
    rewards, game_info = game.close()
    assert game_info[0]["success"] is True
    assert rewards[0] == pytest.approx(game_info[0]["episode_return"]) and rewards[0] > 0


def test_grl_env_as_textarena_env__registered_and_pickles():
    register_grl_games(("grl/Sokoban-v0",))
    register_grl_games(("grl/Sokoban-v0",))  # idempotent
    game = ta.make("grl/Sokoban-v0")
    game.reset(num_players=1, seed=1)
    _, observation = game.get_observation()
    assert isinstance(observation, str) and "Sokoban" in observation
    raw = game.env
    assert isinstance(raw, ta_adapter.GrlTextArenaEnv)
    clone = pickle.loads(pickle.dumps(raw))
    assert clone.env.unwrapped.state_hash() == raw.env.unwrapped.state_hash()
    with pytest.raises(ValueError, match="env_ids"):
        register_grl_games(("grl/NoSuch-v0",))


def test_textarena__raw_ids_without_wrappers_show_the_history():
    env = make("TicTacToe-v0-raw", opponent=first_listed_move)
    first, _ = env.reset(seed=0)
    observation, _, _, _, info = env.step("<answer>[4]</answer>")
    assert info["action_valid"] and observation.startswith(first)
    assert "[Player 1] [0]" in observation
    # no ActionFormattingWrapper on -raw ids: a bare number is not a move there
    _, _, _, _, info = env.step("<answer>8</answer>")
    assert not info["action_valid"]


def test_textarena__state_hash_is_the_hash_of_state_bytes():
    import hashlib

    env = make("ConnectFour-v0")
    _, info = env.reset(seed=3)
    for move in ("[col 0]", "[col 9]", "[col 1]"):
        expected = hashlib.blake2b(env._state_bytes(), digest_size=8).hexdigest()
        assert info["state_hash"] == expected
        info = env.step(f"<answer>{move}</answer>")[4]


def test_textarena__trying_moves_leaves_the_game_unchanged():
    """legal_moves and simulate try moves on copies: the game, and its random stream
    (Minesweeper places its mines at the first reveal), are as before."""
    plain, probed = make("Minesweeper-v0"), make("Minesweeper-v0")
    plain.reset(seed=9)
    probed.reset(seed=9)
    for move in ("[4 4]", "[0 7]", "[7 0]"):
        before = probed.state_hash()
        assert move in probed.legal_moves()
        probed.simulate([move, "[1 1]"])
        assert probed.state_hash() == before
        expected = plain.step(f"<answer>{move}</answer>")
        got = probed.step(f"<answer>{move}</answer>")
        assert got[0] == expected[0] and got[4]["state_hash"] == expected[4]["state_hash"]
        if got[2]:
            break


def test_textarena__engine_opponent_sends_the_observation_as_chat():
    from agent_envs.adapters.loop.engine import Generation
    from agent_envs.adapters.textarena import engine_opponent

    class EchoEngine:  # an engine that reads chat messages, as the HTTP chat engine does
        name, tokenizer = "echo", None

        def __init__(self):
            self.seen = []

        def generate(self, requests):
            self.seen += [request.messages for request in requests]
            return [Generation("I take the corner. [0]") for _ in requests]

    engine = EchoEngine()
    env = make("TicTacToe-v0", opponent=engine_opponent(engine, max_new_tokens=32))
    env.reset(seed=0)
    _, _, _, _, info = env.step("<answer>[4]</answer>")
    assert info["opponent_moves"] == ["I take the corner. [0]"]
    assert (
        engine.seen[0][0]["role"] == "user" and "You are Player 1" in engine.seen[0][0]["content"]
    )


def test_textarena__instructions_and_the_games_prompt_agree_on_the_move_format():
    """The game's text teaches ``[4]``; the instructions say to put that move inside the answer
    tag, and the env does what they say: ``<answer>[4]</answer>`` plays the centre, a bare
    ``[4]`` is not read (a format error, nothing sent to the game)."""
    from agent_envs.adapters.textarena import make

    env = make("TicTacToe-v0", opponent="random", agent_player=0)
    observation, _ = env.reset(seed=0)
    assert "'[4]'" in observation and "'[4]'" in env.instructions
    assert "<answer>[4]</answer>" in env.instructions
    assert "a move outside the tag is not read" in env.instructions
    _, _, _, _, info = env.step("[4]")
    assert not info["format_ok"] and info["parsed_actions"] == []
    observation, _, _, _, info = env.step("<answer>[4]</answer>")
    assert info["format_ok"] and info["action_valid"] and info["parsed_actions"] == ["[4]"]
