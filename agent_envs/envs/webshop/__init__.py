"""WebShop: `env.py` (Gymnasium shell), `pages.py` (browsing state and page flow),
`render.py` (observations), `parsing.py` (actions), `search.py` (BM25 / FTS5), `reward.py`
(WebShop's purchase reward), `goals.py` (synthetic and human goals, splits), `data.py`
(WebShop's files), `catalog.py` (a loaded shop), `generator.py` + `vocabulary.py` (the
built-in catalog), `oracle.py` (expert and random baseline), `prompts.py`, `text.py`."""

from agent_envs.envs.webshop.env import WebShopEnv
from agent_envs.vector import vector_entry_point

__all__ = ["WebShopEnv", "make_vector_env"]

make_vector_env = vector_entry_point(WebShopEnv)
