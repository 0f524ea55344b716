"""Text spaces with a truthful charset.

Every env prints ASCII only (``STYLE.md`` habit 7), so observations live in
:data:`ASCII_CHARSET`: the printable ASCII characters plus newline and tab. Actions are the
model's whole reply; the action space declares the same charset for sampling, but ``step``
accepts any string (model output is never rejected by an exception).
"""

from __future__ import annotations

import string

from gymnasium import spaces

__all__ = ["ASCII_CHARSET", "MAX_REPLY_LENGTH", "reply_space", "text_space"]

# A string, not a set: ``spaces.Text`` samples from it in order, and a set's order changes
# with the process's hash seed.
ASCII_CHARSET: str = string.ascii_letters + string.digits + string.punctuation + " \n\t"
MAX_REPLY_LENGTH = 16_384


def text_space(max_length: int) -> spaces.Text:
    """A ``spaces.Text`` over :data:`ASCII_CHARSET` (empty text allowed)."""
    return spaces.Text(max_length=max_length, min_length=0, charset=ASCII_CHARSET)


def reply_space() -> spaces.Text:
    """The action space of every text env: one model reply."""
    return text_space(MAX_REPLY_LENGTH)
