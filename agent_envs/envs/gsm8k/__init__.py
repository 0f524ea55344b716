"""GSM8K: `env.py` (Gymnasium shell), `grading.py` (reply → number → right or wrong),
`data.py` (official jsonl and Hugging Face loaders), `generator.py` (procedural word
problems for offline use), `prompts.py`."""

from agent_envs.envs.gsm8k.env import GSM8KEnv
from agent_envs.vector import vector_entry_point

__all__ = ["GSM8KEnv", "make_vector_env"]

make_vector_env = vector_entry_point(GSM8KEnv)
