"""The text-env core: the `TextEnv` contract, answer parsing, Text spaces, scripted policies."""

from agent_envs.core.env import COMMON_INFO_KEYS, ActionResult, TextEnv
from agent_envs.core.parsing import AnswerFormat, ParsedReply, parse_reply
from agent_envs.core.policies import OraclePolicy, RandomPolicy, format_answer
from agent_envs.core.records import Step, Trajectory, read_jsonl, write_jsonl
from agent_envs.core.spaces import ASCII_CHARSET, text_space

__all__ = [
    "ASCII_CHARSET",
    "COMMON_INFO_KEYS",
    "ActionResult",
    "AnswerFormat",
    "OraclePolicy",
    "ParsedReply",
    "RandomPolicy",
    "Step",
    "TextEnv",
    "Trajectory",
    "format_answer",
    "parse_reply",
    "read_jsonl",
    "text_space",
    "write_jsonl",
]
