"""`check_text_env` runs from any script: fresh interpreters, never a re-import of __main__."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_envs.testing import check_text_env
from tests.core.toy_env import CounterEnv

ROOT = Path(__file__).resolve().parents[2]

# A plain script: no `if __name__ == "__main__":` guard, its own env class in __main__.
SCRIPT = textwrap.dedent(
    """
    import gymnasium as gym

    import agent_envs
    from agent_envs.core.env import ActionResult, TextEnv
    from agent_envs.testing import check_text_env


    class FlipEnv(TextEnv):
        \"\"\"Flip a coin until it shows heads: ``flip`` flips it.\"\"\"

        def __init__(self, **kwargs):
            super().__init__(max_turns=kwargs.pop("max_turns", 3), **kwargs)
            self.side = "tails"

        @property
        def instructions(self):
            return "Flip the coin until it shows heads: <answer>flip</answer>."

        def _new_episode(self, options):
            self.side = "tails"

        def _decode_action(self, text):
            return "flip" if text.strip() == "flip" else None

        def _execute(self, action):
            self.side = ("heads", "tails")[int(self.np_random.integers(2))]
            return ActionResult(float(self.side == "heads"), True, True, self.side == "heads")

        def _render_text(self):
            return f"The coin shows {self.side}."

        def _is_success(self):
            return self.side == "heads"

        def _state_bytes(self):
            return self.side.encode()

        def random_actions(self, rng):
            return ["flip"]


    print("start")
    check_text_env(gym.make("grl/Sokoban-v0"))
    check_text_env(FlipEnv())
    print("checked")
    """
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def _assert_clean(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["start", "checked"], done.stdout  # __main__ ran once
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr[-3000:]


def test_checker__runs_from_a_plain_script_without_a_main_guard(tmp_path):
    script = tmp_path / "check_my_env.py"
    script.write_text(SCRIPT)
    _assert_clean(_run([str(script)], cwd=tmp_path))


def test_checker__runs_from_python_dash_c(tmp_path):
    _assert_clean(_run(["-c", SCRIPT], cwd=tmp_path))


class HashSeededEnv(CounterEnv):
    """A CounterEnv whose observation depends on Python's str hash (PYTHONHASHSEED).

    Extra info: ``count``.
    """

    def _render_text(self):
        return f"count={self.count} {hash('count') % 1000}"


def test_checker__fresh_interpreters_differ_in_hash_seed():
    check_text_env(CounterEnv())
    with pytest.raises(AssertionError, match="differ between two fresh processes"):
        check_text_env(HashSeededEnv())
