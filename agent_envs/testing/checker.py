"""`check_text_env`: the contract every registered ``grl/*`` id must pass.

It runs Gymnasium's own ``check_env`` and then what a text env adds: garbage model output
never raises, observations stay inside the declared charset, the common info keys are always
there, episodes replay identically in two fresh Python processes (different hash seeds),
mid-episode states survive pickling and deepcopy, every render mode renders, and the chat
transcript is well formed. It raises ``AssertionError`` on the first violation and returns
nothing otherwise. :func:`check_vision_env` adds the image side of the image+text ids
(``grl/*-vision-v0``) to it.

The fresh processes are plain interpreters (``sys.executable -c``) that receive the env
pickled with ``cloudpickle`` (so an env class defined in a script or a notebook travels by
value) and the caller's ``sys.path``; nothing re-imports the caller's ``__main__``, so the
checker runs from any script (no ``if __name__ == "__main__":`` guard needed), ``python -c``
or a notebook.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from agent_envs.core.env import COMMON_INFO_KEYS, TextEnv

__all__ = ["check_text_env", "check_vision_env", "garbage_replies"]

_SEED = 20261121
_HASH_SEEDS = ("1", "2")  # one per fresh interpreter: str/bytes hashes differ between them
_FRESH_TIMEOUT_S = 600

# Run by a fresh interpreter: argv[1] holds the pickled job, argv[2] receives the record.
_FRESH_CODE = """
import pickle, sys
with open(sys.argv[1], "rb") as file:
    job = pickle.load(file)
sys.path[:] = job["sys_path"]
from agent_envs.testing.checker import _rollout
record = _rollout(pickle.loads(job["env"]), job["seed"], job["replies"])
with open(sys.argv[2], "wb") as file:
    pickle.dump(record, file)
"""


def garbage_replies(rng: np.random.Generator) -> list[Any]:
    """Model output that must be handled as invalid actions, never as exceptions."""
    random_bytes = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    return [
        "",
        " \n\t ",
        "x" * 1_000_000,
        "<answer>" + "Up || " * 100_000 + "</answer>",
        random_bytes.decode("latin-1"),
        random_bytes.decode("utf-8", errors="replace"),
        random_bytes.decode("utf-16-le", errors="surrogatepass")[:2000],
        "<answer>",
        "</answer>",
        "<answer></answer>",
        "<answer><answer></answer>",
        "<аnswer>Up</аnswer>",  # Cyrillic 'а'
        "＜answer＞ｕｐ＜/answer＞",
        "<answer>\x00\x01\x02</answer>",
        "<answer>🤖 || 中文 || עברית</answer>",
        "<answer>" + "\u200b" * 10 + "</answer>",
        "<think>" * 1000,
        None,
        b"<answer>Up</answer>",
        12345,
    ]


def _assert_info(info: dict[str, Any], env: TextEnv, where: str) -> None:
    missing = [key for key in (*COMMON_INFO_KEYS, *env.extra_info_keys) if key not in info]
    assert not missing, f"{where}: info is missing keys {missing}"
    assert isinstance(info["parsed_actions"], list), f"{where}: parsed_actions must be a list"
    assert isinstance(info["state_hash"], str), f"{where}: state_hash must be a str"
    assert info["truncation_reason"] in (None, "max_turns", "action_budget"), (
        f"{where}: bad truncation_reason {info['truncation_reason']!r}"
    )
    for key in ("action_valid", "format_ok", "action_effective", "success"):
        assert isinstance(info[key], bool), f"{where}: info[{key!r}] must be a bool"


def _assert_observation(observation: Any, env: TextEnv, where: str) -> None:
    assert isinstance(observation, str), f"{where}: observation must be a str"
    outside = sorted(set(observation) - set(env.observation_space.character_set))
    assert observation in env.observation_space, (
        f"{where}: observation outside the observation space "
        f"(length {len(observation)}, characters outside the charset {outside[:10]})"
    )


def _policy_replies(env: TextEnv, count: int) -> list[str]:
    """Replies for determinism checks: the env's random baseline if it has one."""
    from agent_envs.core.policies import format_answer

    rng = np.random.default_rng(_SEED)
    try:
        return [format_answer(env.random_actions(rng), env.answer_format) for _ in range(count)]
    except NotImplementedError:
        return ["<answer>0</answer>", "no answer here"] * (count // 2 + 1)


def _comparable(observation: Any) -> Any:
    """A text observation as is; an image+text one as its text and its image's bytes."""
    if isinstance(observation, dict):
        image = np.asarray(observation["image"])
        return (observation["text"], image.shape, image.tobytes())
    return observation


def _rollout(env: TextEnv, seed: int, replies: list[str]) -> list[tuple]:
    """Reset with ``seed``, play ``replies`` (resetting when an episode ends); the record."""
    observation, info = env.reset(seed=seed)
    record: list[tuple] = [(_comparable(observation), info["state_hash"], info["episode_seed"])]
    for reply in replies:
        observation, reward, terminated, truncated, info = env.step(reply)
        observation = _comparable(observation)
        record.append((observation, float(reward), terminated, truncated, info["state_hash"]))
        if terminated or truncated:
            observation, info = env.reset()
            record.append((_comparable(observation), info["state_hash"], info["episode_seed"]))
    return record


def _rollout_in_fresh_interpreter(
    env_bytes: bytes, seed: int, replies: list[str], hash_seed: str
) -> list[tuple]:
    """:func:`_rollout` in a new ``sys.executable -c`` process with ``PYTHONHASHSEED``."""
    with tempfile.TemporaryDirectory(prefix="check_text_env-") as folder:
        job, out = Path(folder, "job.pkl"), Path(folder, "record.pkl")
        job.write_bytes(
            pickle.dumps({"env": env_bytes, "seed": seed, "replies": replies, "sys_path": sys.path})
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", _FRESH_CODE, str(job), str(out)],
                capture_output=True,
                text=True,
                timeout=_FRESH_TIMEOUT_S,
                env={**os.environ, "PYTHONHASHSEED": hash_seed},
            )
        except subprocess.TimeoutExpired as error:
            raise AssertionError(
                f"replaying the episode in a fresh interpreter took over {_FRESH_TIMEOUT_S} s"
            ) from error
        if done.returncode != 0 or not out.exists():
            raise AssertionError(
                f"replaying the episode in a fresh interpreter failed (exit {done.returncode}):"
                f"\n{done.stderr[-4000:]}"
            )
        return pickle.loads(out.read_bytes())


def _check_garbage(env: TextEnv) -> None:
    env.reset(seed=_SEED)
    for index, reply in enumerate(garbage_replies(np.random.default_rng(_SEED))):
        where = f"garbage reply #{index}"
        try:
            observation, reward, terminated, truncated, info = env.step(reply)
        except Exception as error:  # the contract: model output never raises
            raise AssertionError(f"{where} raised {error!r}") from error
        _assert_observation(observation, env, where)
        _assert_info(info, env, where)
        assert isinstance(reward, (int, float)) and math.isfinite(reward), f"{where}: bad reward"
        if not info["format_ok"]:
            assert not info["action_valid"], f"{where}: an unreadable answer cannot be valid"
            assert info["num_actions"] == 0, f"{where}: nothing may execute without an answer"
        if terminated or truncated:
            env.reset()


def _check_determinism(env: TextEnv) -> None:
    import cloudpickle  # a Gymnasium dependency; pickles classes defined in __main__ by value

    replies = _policy_replies(env, 12)
    env_bytes = cloudpickle.dumps(env)
    here = _rollout(pickle.loads(env_bytes), _SEED, replies)
    records = [  # two fresh interpreters: different hash seeds, nothing cached
        _rollout_in_fresh_interpreter(env_bytes, _SEED, replies, hash_seed)
        for hash_seed in _HASH_SEEDS
    ]
    assert records[0] == records[1], "episodes differ between two fresh processes"
    assert records[0] == here, "episodes differ between this process and a fresh one"


def _check_copies(env: TextEnv) -> None:
    replies = _policy_replies(env, 4)
    env.reset(seed=_SEED + 1)
    env.step(replies[0])
    for name, clone in (
        ("pickle", pickle.loads(pickle.dumps(env))),
        ("deepcopy", copy.deepcopy(env)),
    ):
        assert clone.state_hash() == env.state_hash(), f"{name}: state differs after copying"
        assert clone.messages() == env.messages(), f"{name}: transcript differs after copying"
        probe = copy.deepcopy(env)
        for reply in replies[1:]:
            expected = probe.step(reply)
            got = clone.step(reply)
            assert expected[:4] == got[:4] and expected[4]["state_hash"] == got[4]["state_hash"], (
                f"{name}: a copied env does not continue like the original"
            )
            if expected[2] or expected[3]:
                break


def _check_render_modes(env: TextEnv) -> None:
    for mode in env.metadata["render_modes"]:
        clone = copy.deepcopy(env)
        clone.render_mode = mode
        clone.reset(seed=_SEED)
        frame = clone.render()
        if mode == "ansi":
            assert isinstance(frame, str) and frame, "render_mode='ansi' must return text"
        elif mode == "rgb_array":
            assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3, (
                "render_mode='rgb_array' must return an HxWx3 array"
            )
            assert frame.dtype == np.uint8, "rgb_array frames must be uint8"
        elif mode == "human":
            assert frame is None, "render_mode='human' must return None"
        clone.close()


def _check_messages(env: TextEnv) -> None:
    replies = _policy_replies(env, 3)
    env.reset(seed=_SEED)
    played = 0
    for reply in replies:
        _, _, terminated, truncated, _ = env.step(reply)
        played += 1
        if terminated or truncated:
            break
    messages = env.messages()
    assert messages[0]["role"] == "system" and messages[0]["content"] == env.instructions
    assert len(messages) == 2 + 2 * played, "one user and one assistant message per turn"
    roles = [message["role"] for message in messages[1:]]
    assert roles == ["user", "assistant"] * played + ["user"], f"bad role order {roles}"
    assert all(isinstance(message["content"], str) for message in messages)
    window = env.messages(window=1)
    assert window[0] == messages[0] and window[1:] == messages[-3:], "window=1 keeps one turn"


def check_text_env(env: gym.Env) -> None:
    """Raise ``AssertionError`` if ``env`` breaks the text-env contract; see module docstring."""
    base = env.unwrapped
    assert isinstance(base, TextEnv), f"{type(base).__name__} is not an agent_envs TextEnv"
    assert isinstance(base.observation_space, gym.spaces.Text), "observation_space must be Text"
    assert isinstance(base.action_space, gym.spaces.Text), "action_space must be Text"
    assert isinstance(base.instructions, str) and base.instructions, "instructions must be text"
    assert base.instructions.isascii(), "instructions must be ASCII"
    doc = type(base).__doc__ or ""
    undocumented = [key for key in base.extra_info_keys if f"``{key}``" not in doc]
    assert not undocumented, f"env-specific info keys missing from the docstring: {undocumented}"
    if env.spec is not None and env.spec.max_episode_steps is not None:
        assert env.spec.max_episode_steps == base.max_turns, (
            f"max_episode_steps={env.spec.max_episode_steps} must equal max_turns={base.max_turns}"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(copy.deepcopy(base), skip_render_check=False, skip_close_check=True)
    observation, info = base.reset(seed=_SEED)
    _assert_observation(observation, base, "reset")
    _assert_info(info, base, "reset")
    assert info["episode_seed"] == _SEED, "info['episode_seed'] must be the seed passed to reset"
    _check_garbage(base)
    _check_copies(base)
    _check_messages(base)
    _check_render_modes(base)
    _check_determinism(base)


def _assert_image_observation(observation: Any, env: gym.Env, where: str) -> None:
    assert isinstance(observation, dict) and set(observation) == {"text", "image"}, (
        f"{where}: an image observation is a dict with keys 'text' and 'image'"
    )
    _assert_observation(observation["text"], env.unwrapped, where)
    image = observation["image"]
    box = env.observation_space["image"]
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8, f"{where}: image not uint8"
    assert image.shape == box.shape, f"{where}: image shape {image.shape} != {box.shape}"


def check_vision_env(env: gym.Env) -> None:
    """:func:`check_text_env` for an image+text env (`agent_envs.core.vision.VisionEnv`): the
    text env inside passes the whole text contract, and the wrapper's observations are
    ``{"text", "image"}`` dicts inside its ``Dict`` space (text in the charset, the image a
    fixed-size ``uint8`` RGB array) after resets and garbage replies, equal to the text env's
    text, identical in two fresh Python processes, kept by pickle and deepcopy, and present
    as one picture per user turn in :meth:`messages`."""
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"text", "image"}, (
        "observation_space must be Dict(text=Text, image=Box)"
    )
    box = space["image"]
    assert isinstance(box, gym.spaces.Box) and box.dtype == np.uint8, "image must be a uint8 Box"
    assert len(box.shape) == 3 and box.shape[2] == 3, "image must be (H, W, 3)"
    check_text_env(env)
    inner = env
    while hasattr(inner, "env") and not callable(getattr(inner, "messages", None)):
        inner = inner.env  # past Gymnasium's own wrappers, to the image wrapper
    base = env.unwrapped
    observation, _ = env.reset(seed=_SEED)
    _assert_image_observation(observation, env, "reset")
    assert observation["text"] == base.messages()[-1]["content"], "text differs from the env's"
    for index, reply in enumerate(garbage_replies(np.random.default_rng(_SEED))):
        try:
            observation, _, terminated, truncated, _ = env.step(reply)
        except Exception as error:
            raise AssertionError(f"garbage reply #{index} raised {error!r}") from error
        _assert_image_observation(observation, env, f"garbage reply #{index}")
        if terminated or truncated:
            env.reset()
    replies = _policy_replies(base, 4)
    env.reset(seed=_SEED + 1)
    env.step(replies[0])
    for name, clone in (
        ("pickle", pickle.loads(pickle.dumps(env))),
        ("deepcopy", copy.deepcopy(env)),
    ):
        probe = copy.deepcopy(env)
        for reply in replies[1:]:
            expected, got = probe.step(reply), clone.step(reply)
            assert _comparable(expected[0]) == _comparable(got[0]), (
                f"{name}: a copied env's images differ from the original's"
            )
            if expected[2] or expected[3]:
                break
    env.reset(seed=_SEED)
    played = 0
    for reply in replies[:2]:
        _, _, terminated, truncated, _ = env.step(reply)
        played += 1
        if terminated or truncated:
            break
    users = [m for m in inner.messages() if m["role"] == "user"]
    assert len(users) == played + 1, "one user message per observation"
    for message in users:
        kinds = [part.get("type") for part in message["content"]]
        assert kinds.count("text") == 1 and len(kinds) == 2, f"bad user content {kinds}"
    import cloudpickle

    env_bytes = cloudpickle.dumps(env)
    here = _rollout(pickle.loads(env_bytes), _SEED, replies)
    fresh = _rollout_in_fresh_interpreter(env_bytes, _SEED, replies, _HASH_SEEDS[0])
    assert fresh == here, "image episodes differ between this process and a fresh one"
