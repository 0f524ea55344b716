"""Inference engines behind one interface (`Engine.generate(requests) -> generations`).

``transformers``, ``vllm`` and ``openai_http`` import their dependency lazily, so importing
this package needs neither torch nor a network client.
"""

from agent_envs.adapters.engines.scripted import PolicyEngine, oracle_engine, random_engine
from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest, SamplingConfig

__all__ = [
    "Engine",
    "Generation",
    "GenerationRequest",
    "PolicyEngine",
    "SamplingConfig",
    "oracle_engine",
    "random_engine",
]
