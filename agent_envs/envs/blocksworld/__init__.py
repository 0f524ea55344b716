"""Blocksworld: `env.py` (Gymnasium shell), `dynamics.py` (rules), `generator.py` ((start, goal)
pairs), `solver.py` (optimal plans by breadth-first search), `prompts.py` (instructions and
observations), `parsing.py` (the move grammar)."""

from agent_envs.envs.blocksworld.env import BlocksworldEnv
from agent_envs.vector import vector_entry_point

__all__ = ["BlocksworldEnv", "make_vector_env"]

make_vector_env = vector_entry_point(BlocksworldEnv)
