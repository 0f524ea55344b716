"""BIRD text-to-SQL: `env.py` (Gymnasium shell), `data.py` (BIRD's files), `sandbox.py`
(the env's side of the read-only, killable SQL worker), `worker.py` (the worker process and
its guards), `grading.py` (execution accuracy, as BIRD's evaluator), `schema.py` and
`prompts.py` (text the model reads), `parsing.py` (the answer grammar), `builtin.py` and
`builtin_questions.py` (generated offline databases), `types.py` (plain data)."""

from agent_envs.envs.bird.env import BirdEnv
from agent_envs.vector import vector_entry_point

__all__ = ["BirdEnv", "make_vector_env"]

make_vector_env = vector_entry_point(BirdEnv)
