"""Tetris: `env.py` (Gymnasium shell), `dynamics.py` (rules), `generator.py` (piece sequence),
`oracle.py` (placement search), `prompts.py`, `parsing.py`, `constants.py`, `types.py`."""

from agent_envs.envs.tetris.env import TetrisEnv
from agent_envs.vector import vector_entry_point

__all__ = ["TetrisEnv", "make_vector_env"]

make_vector_env = vector_entry_point(TetrisEnv)
