"""BIRD text-to-SQL: `env.py` (Gymnasium shell), `data.py` (BIRD's files), `sandbox.py`
(read-only, time-limited SQLite), `grading.py` (execution accuracy), `schema.py` and
`prompts.py` (text the model reads), `parsing.py` (the answer grammar), `builtin.py` and
`builtin_questions.py` (generated offline databases), `types.py` (plain data)."""

from agent_envs.envs.bird.env import BirdEnv
from agent_envs.vector import vector_entry_point

__all__ = ["BirdEnv", "make_vector_env"]

make_vector_env = vector_entry_point(BirdEnv)
