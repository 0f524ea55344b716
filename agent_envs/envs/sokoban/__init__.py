"""Sokoban: `env.py` (Gymnasium shell), `dynamics.py` (rules), `generator.py` (levels by reverse
play), `solver.py` (optimal plans), `levels.py` (XSB), `prompts.py`, `parsing.py`."""

from agent_envs.envs.sokoban.env import SokobanEnv
from agent_envs.vector import vector_entry_point

__all__ = ["SokobanEnv", "make_vector_env"]

make_vector_env = vector_entry_point(SokobanEnv)
