"""Thin glue to the tools people already use: rollout collector, inference engines, TRL GRPO,
advantage estimators, SFT export, TextArena, PettingZoo and an HTTP env server.

Adapters may import `agent_envs` and `renderers`, never the reverse; each heavy dependency is
imported where it is used.
"""
