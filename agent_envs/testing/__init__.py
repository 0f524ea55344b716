"""Contract checks for text envs: :func:`check_text_env`."""

from agent_envs.testing.checker import check_text_env, garbage_replies

__all__ = ["check_text_env", "garbage_replies"]
