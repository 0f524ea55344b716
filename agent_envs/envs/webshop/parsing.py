"""Action text → ``search[...]`` / ``click[...]`` (pure; never raises).

The answer holds one action: ``search[keywords]`` or ``click[value]`` (the verb in any case,
spaces allowed around the brackets). The argument is everything between the first ``[``
and the last ``]``, with whitespace runs collapsed; it must not be empty. Search keywords are
lower-cased as WebShop does; a click value is matched case-insensitively by the page.
Anything else decodes to an :class:`Action` of kind ``"invalid"`` carrying the reason.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agent_envs.envs.webshop.text import to_ascii

__all__ = ["MAX_ARGUMENT_LENGTH", "Action", "parse_action"]

MAX_ARGUMENT_LENGTH = 500  # longer keywords or values are not actions of this shop
_ACTION = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_FORMAT = "write one action: search[keywords] or click[value]"


class Action(NamedTuple):
    """``kind`` is ``"search"``, ``"click"`` or ``"invalid"``; ``argument`` the keywords, the
    clicked value, or (invalid) why the text is not an action."""

    kind: str
    argument: str


def parse_action(text: str) -> Action:
    """Decode one action (see the module docstring)."""
    match = _ACTION.match(text)
    if match is None:
        return Action("invalid", _FORMAT)
    verb = match.group(1).lower()
    argument = " ".join(match.group(2).split())
    if not argument:
        return Action("invalid", f"{verb}[...] needs a non-empty argument")
    if len(argument) > MAX_ARGUMENT_LENGTH:
        return Action("invalid", f"the {verb} argument is over {MAX_ARGUMENT_LENGTH} characters")
    if verb == "search":
        keywords = to_ascii(argument).lower()
        if not keywords:
            return Action("invalid", "the search keywords have no ASCII text")
        return Action("search", keywords)
    return Action("click", argument)
